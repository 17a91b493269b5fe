// `faultline alerts`: one cron monitor check, one crash-spike check and one pass over
// the alert outbox and the pending deliveries (waiting for retries due within 15 s),
// then exit. For installs without a long-lived server: run it every minute from cron
// (crash spikes are then checked every minute too). `serve` does the same continuously.
// Progress on stderr, a one-line summary on stdout.
import type { Command } from 'commander';
import type { Logger } from '../logger.js';
import { systemClock, type Clock } from '../clock.js';
import type { Config } from '../config.js';
import type { Store } from '../store/database.js';
import type { AlertRuntime } from '../alerts/transport.js';
import { runAlertsOnce, type DispatcherOptions, type PassSummary } from '../alerts/dispatcher.js';
import type { SpikeCheckResult } from '../alerts/spike.js';
import type { CliContext } from './context.js';
import { runMonitorCheck, type MonitorCheckResult } from '../monitors/store.js';
import { endTimeSnoozes } from '../triage/snooze.js';

export interface AlertsCommandOptions {
  config: Config;
  store: Store;
  runtime: AlertRuntime;
  logger: Logger;
  clock?: Clock;
  dispatcher?: Partial<DispatcherOptions>;
  stderr?: (line: string) => void;
  stdout?: (line: string) => void;
}

const plural = (n: number, word: string, words = `${word}s`) => `${n} ${n === 1 ? word : words}`;

export function formatAlertsSummary(spikes: SpikeCheckResult, pass: PassSummary): string {
  const a = pass.alerts;
  const set = [
    a.held && `${a.held} held for a digest`,
    a.filtered && `${a.filtered} outside the rule's filters`,
    a.disabled && `${a.disabled} of disabled rules`,
    a.no_channel && `${a.no_channel} without a channel`,
  ]
    .filter(Boolean)
    .join(', ');
  return (
    `alerts: ${plural(spikes.spikes.length, 'crash spike')} found; ${plural(a.sent, 'alert')} sent out` +
    (set ? ` (${set} set aside)` : '') +
    `; ${plural(pass.sent, 'delivery', 'deliveries')} sent, ${pass.failed} failed, ${pass.retried} retried`
  );
}

export async function alertsCommand(
  options: AlertsCommandOptions,
): Promise<{ monitors: MonitorCheckResult; spikes: SpikeCheckResult; pass: PassSummary }> {
  const err = options.stderr ?? ((line: string) => process.stderr.write(line + '\n'));
  const out = options.stdout ?? ((line: string) => process.stdout.write(line + '\n'));
  err(`alerts: checking cron monitors and crash spikes and sending pending alerts (${options.store.description})`);
  const monitors = await runMonitorCheck(options.store, (options.clock ?? systemClock).now());
  err(
    `  cron monitors: ${plural(monitors.missed, 'missed check-in')}, ${plural(monitors.timed_out, 'time-out')}, ${plural(monitors.incidents, 'incident')} opened`,
  );
  const { spikes, pass } = await runAlertsOnce(
    {
      store: options.store,
      clock: options.clock ?? systemClock,
      logger: options.logger,
      config: options.config,
      runtime: options.runtime,
      endTimeSnoozes,
    },
    {
      dispatcher: options.dispatcher,
      onSpikes: (found) =>
        err(`  crash spikes: ${found.spikes.length} of ${plural(found.candidates, 'candidate project')}`),
    },
  );
  out(formatAlertsSummary(spikes, pass));
  return { monitors, spikes, pass };
}

export function register(program: Command, cli: CliContext): void {
  program
    .command('alerts')
    .description(
      'check cron monitors and crash spikes once and send pending alerts, then exit (run every minute without a long-lived server)',
    )
    .action(async () => {
      const config = cli.config();
      const { default: pino } = await import('pino');
      const { nodeAlertRuntimeFor } = await import('../editions/node/alerts.js');
      // Log lines go to stderr with the progress; stdout keeps only the summary.
      const logger = pino(
        { level: config.logLevel, base: undefined, timestamp: pino.stdTimeFunctions.isoTime },
        pino.destination(2),
      );
      const store = await cli.openMigratedStore(config, logger);
      try {
        await alertsCommand({ config, store, runtime: nodeAlertRuntimeFor(config), logger });
      } finally {
        await store.close();
      }
    });
}
