// Snoozing (docs/api.md "Snoozing"): `ignored` until a time, a number of events more or
// a number of users more. The request's rules (one condition, a future time, positive
// counts) are here; the rule that ends a snooze is the planner's (src/ingest/plan.ts
// snoozeEnded), applied by ingest for counts and by the periodic job below for time.
import { sql, type CompiledQuery } from 'kysely';
import { snoozeEndedSql } from '../ingest/plan.js';
import { ReadInputError } from '../errors.js';
import type { Store } from '../store/database.js';

export type Snooze = { until: number } | { count: number } | { users: number };

/** The request fields of a snooze, and the most a count may be. */
export const SNOOZE_FIELDS = ['ignore_until', 'ignore_count', 'ignore_users'] as const;
export const MAX_SNOOZE_COUNT = 1_000_000_000;

const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

/**
 * The snooze a status change asks for, or null (plain `ignored` is forever; other
 * statuses take none). At most one condition; a time must lie ahead of `now`; counts
 * are whole numbers from 1.
 */
export function parseSnooze(body: Record<string, unknown>, status: string, now: number): Snooze | null {
  const given = SNOOZE_FIELDS.filter((f) => body[f] !== undefined && body[f] !== null);
  if (given.length === 0) return null;
  if (given.length > 1) throw new ReadInputError(`a snooze takes one condition; got ${given.join(' and ')}`);
  const field = given[0];
  if (status !== 'ignored') throw new ReadInputError(`${field} needs status "ignored" (got ${JSON.stringify(status)})`);
  const value = body[field];
  if (field === 'ignore_until') {
    const ms = typeof value === 'string' && RFC3339.test(value) ? Date.parse(value) : Number.NaN;
    if (!Number.isFinite(ms))
      throw new ReadInputError(`ignore_until must be an RFC 3339 time (got ${JSON.stringify(value)})`);
    if (ms <= now) throw new ReadInputError(`ignore_until must be in the future (got ${value})`);
    return { until: ms };
  }
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_SNOOZE_COUNT) {
    throw new ReadInputError(
      `${field} must be a whole number from 1 to ${MAX_SNOOZE_COUNT} (got ${JSON.stringify(value)})`,
    );
  }
  return field === 'ignore_count' ? { count: value } : { users: value };
}

/** The snooze as the activity entry of the status change shows it. */
export function snoozeData(snooze: Snooze | null): Record<string, unknown> {
  if (snooze === null) return {};
  if ('until' in snooze) return { ignore_until: new Date(snooze.until).toISOString() };
  if ('count' in snooze) return { ignore_count: snooze.count };
  return { ignore_users: snooze.users };
}

/** Time snoozes ended by `now`, per statement (kept small for D1). */
const WAKE_BATCH = 500;

function wakeStatements(store: Store, now: number): CompiledQuery[] {
  // The time as a literal (a number this code made) keeps each dialect's parameters in order.
  const ended = sql.raw(snoozeEndedSql(String(Math.trunc(now))));
  const due = sql`select id from issues where ignore_until is not null and ignore_until <= ${now} and status = 'ignored' order by id limit ${WAKE_BATCH}`;
  return [
    sql`insert into issue_changes (project_id, issue_id, kind, at, release)
      select project_id, id, 'snooze_ended', cast(${now} as bigint), last_release from issues where id in (${due}) and ${ended}`,
    sql`update issues set status = 'unresolved', updated_at = cast(${now} as bigint) where id in (${due}) and ${ended}`,
  ].map((q) => q.compile(store.db));
}

/**
 * The periodic job's part (serve's dispatcher, `faultline alerts`, the Worker's minute
 * cron; the dispatcher receives it as its deps' `endTimeSnoozes`): every issue whose time snooze has ended goes back to `unresolved` with a
 * `snooze_ended` activity entry. Returns how many.
 */
export async function endTimeSnoozes(store: Store, now: number): Promise<number> {
  let total = 0;
  for (;;) {
    const statements = wakeStatements(store, now);
    const results = await store.atomic(statements);
    const n = Number(results[1].numAffectedRows ?? 0);
    total += n;
    if (n < WAKE_BATCH) return total;
  }
}
