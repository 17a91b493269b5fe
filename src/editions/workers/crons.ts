// The serverless edition's housekeeping, run by Cron Triggers instead of the timers of
// `faultline serve` (wrangler.jsonc lists the schedules; they must match these).
import type { AppDeps } from '../../context.js';
import { formatSummary, runRetention } from '../../store/retention.js';

/** Daily at 03:17 UTC: retention. */
export const RETENTION_CRON = '17 3 * * *';
/** Every 10 minutes: the crash-spike check and pending alert deliveries. */
export const ALERTS_CRON = '*/10 * * * *';

/**
 * Rows per retention batch on D1: each batch is one atomic `db.batch()`, and D1 stops
 * a statement after 30 s; smaller batches also let ingest in between.
 */
export const D1_RETENTION_BATCH = 1000;

export async function runCron(cron: string, deps: AppDeps): Promise<void> {
  switch (cron) {
    case RETENTION_CRON: {
      const summary = await runRetention(deps.store, {
        now: deps.clock.now(),
        retentionDays: deps.config.retentionDays,
        batchSize: D1_RETENTION_BATCH,
      });
      if (summary.ran) deps.logger.info({ deleted: summary.deleted, issues_updated: summary.issuesUpdated }, formatSummary(summary));
      else deps.logger.info('retention skipped: another run holds the lease');
      return;
    }
    case ALERTS_CRON:
      await checkCrashSpikes(deps);
      await deliverPendingAlerts(deps);
      return;
    default:
      deps.logger.warn({ cron }, 'no housekeeping is scheduled for this cron expression');
  }
}

/**
 * The crash-spike check of the alerts domain (src/alerts), once it exists: compares
 * the last window's crashes with the baseline and records the alerts it raises.
 */
async function checkCrashSpikes(_deps: AppDeps): Promise<void> {}

/** Retries the alert deliveries recorded and not yet sent (src/alerts), once it exists. */
async function deliverPendingAlerts(_deps: AppDeps): Promise<void> {}
