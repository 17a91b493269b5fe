#!/usr/bin/env node
// The `faultline` command line. Each command lives in its own module exporting
// `register(program, cli)`; adding a command is one file plus one line below.
// Failures print one plain line to stderr and exit 1.
import { Command } from 'commander';
import { cliContext, describeFailure, VERSION } from './context.js';
import { register as registerAlerts } from './alerts.js';
import { register as registerBackup } from './backup.js';
import { register as registerMigrate } from './migrate.js';
import { register as registerRetention } from './retention.js';
import { register as registerSeed } from './seed.js';
import { register as registerServe } from './serve.js';
import { register as registerTransfer } from './transfer.js';
import { register as registerUsers } from './users.js';

export function createProgram(): Command {
  const program = new Command('faultline')
    .description('Self-hosted crash and error reporting, compatible with Sentry SDKs and sentry-cli')
    .version(VERSION, '-v, --version', 'print the version')
    .helpOption('-h, --help', 'show help')
    // A usage error is one `faultline:` line like every other failure, and a pointer to
    // the help rather than the whole of it.
    .configureOutput({ outputError: (text, write) => write(`faultline: ${text.replace(/^error: /, '')}`) })
    .showHelpAfterError('(add --help to see the commands and options)')
    .enablePositionalOptions();
  registerServe(program, cliContext);
  registerMigrate(program, cliContext);
  registerRetention(program, cliContext);
  registerSeed(program, cliContext);
  registerAlerts(program, cliContext);
  registerTransfer(program, cliContext);
  registerUsers(program, cliContext);
  registerBackup(program, cliContext);
  return program;
}

try {
  await createProgram().parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`faultline: ${describeFailure(err)}\n`);
  if (process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace')
    process.stderr.write(`${(err as Error)?.stack ?? ''}\n`);
  process.exit(1);
}
