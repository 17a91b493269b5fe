// `faultline retention`: deletes expired data once (events, their tags, seen
// event ids and sessions older than RETENTION_DAYS; aggregates older than 400
// days) in small batches, with progress on stderr and a one-line summary on
// stdout. For installs without a long-lived server (run it daily from cron);
// `serve` does the same work hourly by itself; when a run (serve's, or another
// cron's) holds the database's retention lock, this one prints "skipped".
import type { Command } from 'commander';
import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import { RETENTION_DOMAINS } from '../editions/retention.js';
import { DEFAULT_BATCH_SIZE, formatSummary, runRetention, type RetentionSummary } from '../store/retention.js';
import { CliError, type CliContext } from './context.js';

export interface RetentionCommandOptions {
  config: Config;
  store: Store;
  clock?: Clock;
  batchSize?: number;
  stderr?: (line: string) => void;
  stdout?: (line: string) => void;
}

/** One retention run on an open store, reporting as the command does. */
export async function retentionCommand(options: RetentionCommandOptions): Promise<RetentionSummary> {
  const err = options.stderr ?? ((line: string) => process.stderr.write(line + '\n'));
  const out = options.stdout ?? ((line: string) => process.stdout.write(line + '\n'));
  const { config, store } = options;
  err(
    `retention: deleting events and sessions older than ${config.retentionDays} days and aggregates older than 400 days (${store.description})`,
  );
  const summary = await runRetention(store, {
    now: (options.clock ?? systemClock).now(),
    retentionDays: config.retentionDays,
    batchSize: options.batchSize ?? DEFAULT_BATCH_SIZE,
    onProgress: (p) => err(`  ${p.table}: ${p.total} deleted`),
    ...RETENTION_DOMAINS,
  });
  out(formatSummary(summary));
  return summary;
}

export function register(program: Command, cli: CliContext): void {
  program
    .command('retention')
    .description('delete events and sessions older than RETENTION_DAYS (default 30) and aggregates older than 400 days')
    .option('--batch-size <n>', 'rows deleted per transaction (1-100000)', String(DEFAULT_BATCH_SIZE))
    .action(async (opts: { batchSize: string }) => {
      const batchSize = Number(opts.batchSize);
      if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > 100_000) {
        throw new CliError(
          `--batch-size must be an integer between 1 and 100000 (got ${JSON.stringify(opts.batchSize)})`,
        );
      }
      const config = cli.config();
      const store = await cli.openMigratedStore(config);
      try {
        await retentionCommand({ config, store, batchSize });
      } finally {
        await store.close();
      }
    });
}
