// Runs the real sentry-cli binaries (3.x and the 2.x npm alias) against a test server.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export const CLIS = {
  '3': path.join(root, 'node_modules/@sentry/cli/bin/sentry-cli'),
  '2': path.join(root, 'node_modules/sentry-cli-2/bin/sentry-cli'),
} as const;
export type CliVersion = keyof typeof CLIS;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliTarget {
  url: string;
  token: string;
  project: string;
  org?: string;
}

/** Runs `sentry-cli <args>` with SENTRY_URL etc. pointing at the target; never throws on exit codes. */
export function runCli(
  version: CliVersion,
  target: CliTarget,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(CLIS[version], args, {
      cwd: options.cwd,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: process.env.HOME ?? '/tmp',
        SENTRY_URL: target.url,
        SENTRY_AUTH_TOKEN: target.token,
        SENTRY_ORG: target.org ?? 'acme',
        SENTRY_PROJECT: target.project,
        SENTRY_DISABLE_UPDATE_CHECK: '1',
        SENTRY_LOG_LEVEL: 'warn',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** Fails with the CLI's output when it did not exit 0. */
export function ok(result: CliResult): CliResult {
  if (result.code !== 0)
    throw new Error(`sentry-cli exited ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`);
  return result;
}
