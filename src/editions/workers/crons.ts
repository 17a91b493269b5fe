// The serverless edition's housekeeping, run by Cron Triggers instead of the timers of
// `faultline serve` (wrangler.jsonc lists the schedules; they must match these).
import { runAlertsOnce } from '../../alerts/dispatcher.js';
import { webAlertRuntime } from '../../alerts/transport.js';
import type { AppDeps } from '../../context.js';
import { pendingAlertIds, pendingAssigneeMails } from '../../alerts/store.js';
import { runMonitorCheck } from '../../monitors/store.js';
import { sendRecordedAlerts } from './background.js';
import { WORKER_RESYMBOLICATE_CRON_STEPS, WORKER_RESYMBOLICATE_STEP_EVENTS } from '../../limits.js';
import { formatSummary, runRetention } from '../../store/retention.js';
import { RETENTION_DOMAINS } from '../retention.js';
import { sweepAbandonedWrites } from '../../symbols/storage.js';
import { endTimeSnoozes } from '../../triage/snooze.js';

/** Daily at 03:17 UTC: retention, and the removal of symbol uploads left half-written. */
export const RETENTION_CRON = '17 3 * * *';
/** Every 10 minutes: the crash-spike check and one pass over the alert outbox and pending deliveries (as `faultline alerts`). */
export const ALERTS_CRON = '*/10 * * * *';
/**
 * Every minute: time snoozes that are over end, the cron monitor check (then a pass over
 * the outbox when a monitor alert waits), and bounded steps of the re-symbolication runs
 * uploads recorded (the first step ran after the upload's answer), until none is pending
 * or the cron's steps are done.
 */
export const RESYMBOLICATE_CRON = '* * * * *';
/** Every cron wrangler.jsonc must schedule. */
export const WORKER_CRONS = [RETENTION_CRON, ALERTS_CRON, RESYMBOLICATE_CRON];

/**
 * Rows per retention batch on D1: each batch is one atomic `db.batch()`, and D1 stops
 * a statement after 30 s; smaller batches also let ingest in between.
 */
export const D1_RETENTION_BATCH = 1000;

/** How long the ingest queue's receipts are kept (ingest-queue.ts): past the queue's longest retention. */
export const INGEST_RECEIPT_KEEP_MS = 15 * 24 * 3_600_000;

/** A symbol upload still writing after this long was abandoned (as on the server). */
const ABANDONED_UPLOAD_MS = 3_600_000;

export async function runCron(cron: string, deps: AppDeps): Promise<void> {
  switch (cron) {
    case RETENTION_CRON: {
      const summary = await runRetention(deps.store, {
        now: deps.clock.now(),
        retentionDays: deps.config.retentionDays,
        batchSize: D1_RETENTION_BATCH,
        blobs: deps.blobs,
        ...RETENTION_DOMAINS,
      });
      if (summary.ran)
        deps.logger.info({ deleted: summary.deleted, issues_updated: summary.issuesUpdated }, formatSummary(summary));
      else deps.logger.info('retention skipped: another run holds the lease');
      // An upload whose request ended mid-way (the isolate stopped) leaves invisible rows.
      const swept = await sweepAbandonedWrites(deps.store.db, deps.clock.now() - ABANDONED_UPLOAD_MS);
      if (swept > 0) deps.logger.info({ symbol_files: swept }, 'half-written symbol uploads removed');
      // A queue keeps a message at most 14 days: an older receipt can meet no redelivery.
      await deps.store.db
        .deleteFrom('ingest_receipts')
        .where('committed_at', '<', deps.clock.now() - INGEST_RECEIPT_KEEP_MS)
        .execute();
      return;
    }
    case ALERTS_CRON: {
      const { spikes, pass } = await runAlertsOnce({
        store: deps.store,
        clock: deps.clock,
        logger: deps.logger,
        config: deps.config,
        // fetch, with the SSRF guard on literal addresses: a Worker cannot resolve names itself.
        runtime: deps.alertRuntime ?? webAlertRuntime,
        endTimeSnoozes,
      });
      deps.logger.info(
        {
          crash_spikes: spikes.spikes.length,
          alerts: pass.alerts,
          deliveries_sent: pass.sent,
          deliveries_failed: pass.failed,
          deliveries_retried: pass.retried,
        },
        'alerts checked and sent',
      );
      return;
    }
    case RESYMBOLICATE_CRON: {
      // Time snoozes end within a minute (docs/api.md "Snoozing").
      const ended = await endTimeSnoozes(deps.store, deps.clock.now());
      if (ended > 0) deps.logger.info({ issues: ended }, 'snoozes ended');
      const monitors = await runMonitorCheck(deps.store, deps.clock.now());
      if (monitors.missed + monitors.timed_out > 0) deps.logger.info(monitors, 'cron monitors checked');
      if (
        (await pendingAlertIds(deps.store.db, 1)).length > 0 ||
        (await pendingAssigneeMails(deps.store.db, 1)).length > 0
      )
        await sendRecordedAlerts(deps);
      if (!deps.symbols) return;
      let events = 0;
      for (let step = 0; step < WORKER_RESYMBOLICATE_CRON_STEPS; step++) {
        const done = await deps.symbols.resymbolicationStep(WORKER_RESYMBOLICATE_STEP_EVENTS);
        events += done.events;
        // Nothing pending, or only runs another isolate holds (their lease runs out by the next minute).
        if (!done.pending || !done.ran) break;
      }
      if (events > 0) deps.logger.info({ events }, 're-symbolication steps done');
      return;
    }
    default:
      deps.logger.warn({ cron }, 'no housekeeping is scheduled for this cron expression');
  }
}
