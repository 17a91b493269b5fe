// What the serverless edition does after answering a request. An isolate lives only while
// it serves, so the work `serve` leaves to its background loops (the alert dispatcher
// polling every second, the re-symbolication runner) runs here instead, kept alive past
// the answer by the request's ExecutionContext.waitUntil, one bounded piece at a time:
// one pass over the outbox and due deliveries after an ingest batch recorded alerts,
// one re-symbolication step after an upload recorded a run. The Worker's ingest sink and
// symbol service report that work (deps.ts); the next request of the isolate to be
// answered takes it (index.ts). Any request will do: the work is read from D1, claimed
// there, and committed before it was reported. The crons (crons.ts) are the retry path:
// deliveries still pending, runs not finished, pieces cut short.
import { AlertDispatcher, type PassSummary } from '../../alerts/dispatcher.js';
import { webAlertRuntime } from '../../alerts/transport.js';
import { endTimeSnoozes } from '../../triage/snooze.js';
import type { AppDeps } from '../../context.js';
import { WORKER_ALERT_PASS_WAIT_MS, WORKER_RESYMBOLICATE_STEP_EVENTS } from '../../limits.js';

/** Work left in D1 by this isolate's requests, to run once the next answer is sent. */
export class AfterAnswer {
  private alerts = false;
  private resymbolication = false;

  /** An ingest batch recorded new_issue or regression alerts. */
  readonly alertsRecorded = (): void => {
    this.alerts = true;
  };

  /** An upload recorded a re-symbolication run. */
  readonly resymbolicationScheduled = (): void => {
    this.resymbolication = true;
  };

  /** Starts the reported work and forgets it: a promise for waitUntil, or null when none was reported. */
  take(deps: AppDeps): Promise<void> | null {
    const { alerts, resymbolication } = this;
    this.alerts = this.resymbolication = false;
    if (!alerts && !resymbolication) return null;
    const work: Promise<unknown>[] = [];
    if (alerts) work.push(sendRecordedAlerts(deps));
    if (resymbolication) work.push(resymbolicationStep(deps));
    return Promise.all(work).then(() => undefined);
  }
}

/**
 * One pass over the alert outbox and the due deliveries (no crash-spike check: that is
 * the cron's), waiting for retries that fall due within WORKER_ALERT_PASS_WAIT_MS.
 */
export async function sendRecordedAlerts(deps: AppDeps): Promise<PassSummary | null> {
  const dispatcher = new AlertDispatcher({
    store: deps.store,
    clock: deps.clock,
    logger: deps.logger,
    config: deps.config,
    // fetch, with the SSRF guard on literal addresses: a Worker cannot resolve names itself.
    runtime: deps.alertRuntime ?? webAlertRuntime,
    endTimeSnoozes,
  });
  try {
    const pass = await dispatcher.drain(WORKER_ALERT_PASS_WAIT_MS);
    deps.logger.debug(
      {
        alerts: pass.alerts,
        deliveries_sent: pass.sent,
        deliveries_failed: pass.failed,
        deliveries_retried: pass.retried,
      },
      'recorded alerts sent',
    );
    return pass;
  } catch (err) {
    deps.logger.warn({ err }, 'sending recorded alerts failed; the 10-minute cron sends them');
    return null;
  } finally {
    await dispatcher.stop();
  }
}

/** One bounded re-symbolication step (src/limits.ts says why its size); the cron goes on with the rest. */
export async function resymbolicationStep(deps: AppDeps): Promise<void> {
  if (!deps.symbols) return;
  try {
    const step = await deps.symbols.resymbolicationStep(WORKER_RESYMBOLICATE_STEP_EVENTS);
    deps.logger.debug({ events: step.events, pending: step.pending }, 're-symbolication step done');
  } catch (err) {
    deps.logger.warn({ err }, 're-symbolication step failed; the every-minute cron resumes the run');
  }
}
