// `faultline export [project_slug]` and `faultline import`: the CLI side of
// src/transfer. Export writes the file to standard output; import reads it from
// standard input; both show progress on standard error and end with a summary
// (export's on standard error, as standard output is the file; import's on standard
// output). Import exits 1 when lines were not imported, after importing the rest.
import { once } from 'node:events';
import type { Command } from 'commander';
import { nodeTransferRuntime } from '../editions/node/transfer.js';
import type { Store } from '../store/database.js';
import { ExportInputError, prepareExport } from '../transfer/export.js';
import {
  BATCH_LINES,
  endsEarlyMessage,
  formatImportSummary,
  ImportRefusedError,
  importNdjson,
  type ImportSummary,
} from '../transfer/import.js';
import { CliError, type CliContext, firstApiKey, VERSION } from './context.js';
import { progressReporter } from './progress.js';
import { exportFromRemote, importToRemote } from './transfer-remote.js';
import { IMPORT_REQUEST_LINES } from '../limits.js';

export interface ExportCommandOptions {
  store: Store;
  project?: string;
  out: NodeJS.WritableStream;
  err: NodeJS.WriteStream;
}

export async function exportCommand(options: ExportCommandOptions): Promise<Record<string, number>> {
  let prepared;
  try {
    prepared = await prepareExport(options.store, nodeTransferRuntime, { project: options.project, version: VERSION });
  } catch (err) {
    if (err instanceof ExportInputError) throw new CliError(err.message);
    throw err;
  }
  const what = options.project === undefined ? 'every project' : `project "${options.project}"`;
  options.err.write(`export: ${what} from ${options.store.description}, about ${prepared.expected} lines\n`);
  const bar = progressReporter('export', 'lines', options.err);
  let counts: Record<string, number> = {};
  try {
    for await (const text of prepared.chunks({
      onProgress: (p) => {
        counts = p.counts;
        bar.update(p.lines, p.expected);
      },
    })) {
      if (!options.out.write(text)) await once(options.out, 'drain');
    }
  } finally {
    bar.stop();
  }
  const written = Object.entries(counts).filter(([, n]) => n > 0);
  options.err.write(
    `export: wrote ${1 + written.reduce((s, [, n]) => s + n, 0)} lines (meta and ${written.map(([t, n]) => `${n} ${t}`).join(', ') || 'nothing else'})\n`,
  );
  return counts;
}

export interface ImportCommandOptions {
  store: Store;
  /** Lines per transaction (default BATCH_LINES). */
  batchLines?: number;
  input: AsyncIterable<Uint8Array | string>;
  out: (line: string) => void;
  err: NodeJS.WriteStream;
}

export async function importCommand(options: ImportCommandOptions): Promise<ImportSummary> {
  options.err.write(`import: into ${options.store.description}\n`);
  const bar = progressReporter('import', 'lines', options.err);
  let summary: ImportSummary;
  try {
    summary = await importNdjson(options.store, nodeTransferRuntime, options.input, {
      batchLines: options.batchLines,
      notice: (message) => options.err.write(`import: ${message}\n`),
      onProgress: (p) => {
        const events = p.summary.types.event;
        bar.update(
          p.lines,
          p.expected,
          events && events.added + events.kept > 0 ? `| events ${events.added} added, ${events.kept} kept` : '',
        );
      },
    });
  } catch (err) {
    if (err instanceof ImportRefusedError) throw new CliError(`import refused, nothing written: ${err.message}`);
    throw err;
  } finally {
    bar.stop();
  }
  options.out(`Imported ${summary.lines} lines (format ${summary.format}) into ${options.store.description}:`);
  for (const line of formatImportSummary(summary)) options.out(line);
  return summary;
}

export function register(program: Command, cli: CliContext): void {
  program
    .command('export')
    .description(
      'write every project (or one) with its issues, aggregates, events and sessions as newline-delimited JSON to standard output',
    )
    .argument('[project_slug]', 'export only this project')
    .option(
      '--from <url>',
      "export from a remote instance's GET /api/export (the serverless edition) instead of DATABASE_URL",
    )
    .option('--api-key <key>', 'API key of the remote instance (default: the first of API_KEYS)')
    .action(async (slug: string | undefined, opts: { from?: string; apiKey?: string }) => {
      // `faultline export | head` closes the pipe early: stop quietly.
      process.stdout.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'EPIPE') process.exit(0);
      });
      if (opts.from) {
        const lines = await exportFromRemote({
          url: opts.from,
          apiKey: opts.apiKey ?? firstApiKey(),
          project: slug,
          out: process.stdout,
          err: process.stderr,
        });
        process.stderr.write(`export: wrote ${lines} lines from ${opts.from}\n`);
        return;
      }
      const config = cli.config();
      const store = await cli.openMigratedStore(config);
      try {
        await exportCommand({ store, project: slug, out: process.stdout, err: process.stderr });
      } finally {
        await store.close();
      }
    });

  program
    .command('import')
    .description(
      'read an export file from standard input: add what is missing, keep what exists (safe to repeat, safe beside a running server)',
    )
    .option('--batch-size <n>', `lines written per transaction (1-10000)`, String(BATCH_LINES))
    .option(
      '--to <url>',
      "import into a remote instance's POST /api/import (the serverless edition) instead of DATABASE_URL",
    )
    .option('--api-key <key>', 'API key of the remote instance (default: the first of API_KEYS)')
    .option('--request-lines <n>', 'with --to: lines per request (1-100000)', String(IMPORT_REQUEST_LINES))
    .action(async (opts: { batchSize: string; to?: string; apiKey?: string; requestLines: string }) => {
      const batchLines = Number(opts.batchSize);
      if (!Number.isInteger(batchLines) || batchLines < 1 || batchLines > 10_000) {
        throw new CliError(
          `--batch-size must be an integer between 1 and 10000 (got ${JSON.stringify(opts.batchSize)})`,
        );
      }
      if (process.stdin.isTTY) throw new CliError('pipe an export file into it: faultline import < export.ndjson');
      let summary: ImportSummary;
      if (opts.to) {
        const requestLines = Number(opts.requestLines);
        if (!Number.isInteger(requestLines) || requestLines < 1 || requestLines > 100_000) {
          throw new CliError(
            `--request-lines must be an integer between 1 and 100000 (got ${JSON.stringify(opts.requestLines)})`,
          );
        }
        summary = await importToRemote({
          url: opts.to,
          apiKey: opts.apiKey ?? firstApiKey(),
          input: process.stdin,
          err: process.stderr,
          requestLines,
        });
        process.stdout.write(`Imported ${summary.lines} lines (format ${summary.format}) into ${opts.to}:\n`);
        for (const line of formatImportSummary(summary)) process.stdout.write(line + '\n');
        failOnProblems(summary);
        return;
      }
      const config = cli.config();
      const store = await cli.openMigratedStore(config);
      try {
        summary = await importCommand({
          store,
          batchLines,
          input: process.stdin,
          out: (line) => process.stdout.write(line + '\n'),
          err: process.stderr,
        });
      } finally {
        await store.close();
      }
      failOnProblems(summary);
    });
}

function failOnProblems(summary: ImportSummary): void {
  if (summary.endsEarly)
    throw new CliError(`${endsEarlyMessage(summary.endsEarly)}; the lines before it were imported`);
  if (summary.problemCount > 0) {
    throw new CliError(
      `${summary.problemCount} line${summary.problemCount === 1 ? ' was' : 's were'} not imported (first at line ${summary.problems[0].line}); the other lines were imported`,
    );
  }
}
