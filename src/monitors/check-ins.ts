// Cron monitors (docs/api.md "Cron monitors"): this folder owns monitors and their
// check-ins — what a check-in may say (config.ts), schedules (schedule.ts), the health
// state machine (state.ts, pure), the `monitor` alert's payload (alert.ts), the tables and
// the minutely check (store.ts), and this entry point the ingest paths call (envelope
// `check_in` items and the legacy cron route, src/ingest).
import type { Logger } from '../logger.js';
import type { Store } from '../store/database.js';
import type { CheckInInput } from './config.js';
import { Schedules } from './schedule.js';
import { recordCheckIn, type CheckInOutcome } from './store.js';

/** Records a request's check-ins in order; what became of each is logged (debug), never answered. */
export async function recordCheckIns(
  deps: { store: Store; logger: Logger },
  projectId: number,
  checkIns: CheckInInput[],
  now: number,
): Promise<CheckInOutcome[]> {
  const schedules = new Schedules();
  const outcomes: CheckInOutcome[] = [];
  for (const ci of checkIns) {
    const outcome = await recordCheckIn(deps.store, projectId, ci, now, schedules);
    outcomes.push(outcome);
    if (outcome !== 'stored')
      deps.logger.debug({ project: projectId, monitor: ci.slug, outcome }, 'check-in not stored');
  }
  return outcomes;
}
