// The crash-spike rule (docs/api.md "Alerts"): crashes in the last 60 minutes are at
// least 10 and at least 3 × the hourly average of the 24 hours before. Read from the
// hourly aggregates (project_hourly), never from events. An hour bucket that the
// window covers only in part counts in proportion (the check runs every 10 minutes,
// not on the hour), as if its crashes were spread evenly over the part of the hour
// that has passed: the current hour's crashes all count as recent, the hour before
// counts for the minutes of it still inside the last 60. On the hour the figures are
// exact counts.
import { HOUR_MS, hourBucket } from '../clock.js';
import type { Store } from '../store/database.js';
import { recordAlert } from './store.js';

export const SPIKE_MIN_CRASHES = 10;
export const SPIKE_FACTOR = 3;
export const SPIKE_RECENT_MS = 60 * 60_000;
export const SPIKE_BASELINE_HOURS = 24;

export interface HourCrashes {
  bucket: number;
  crashes: number;
}

/**
 * Crashes in [from, to) at time `now`, counting a partly covered hour in proportion to
 * the part of it that has passed by `now`.
 */
export function crashesBetween(hours: HourCrashes[], from: number, to: number, now: number): number {
  let total = 0;
  for (const h of hours) {
    const end = Math.min(h.bucket + HOUR_MS, now);
    const span = end - h.bucket;
    if (span <= 0) {
      // An hour starting exactly now (or a stray future one) holds crashes of this instant.
      if (h.bucket <= now && h.bucket >= from && h.bucket < to + 1) total += h.crashes;
      continue;
    }
    const overlap = Math.min(end, to) - Math.max(h.bucket, from);
    if (overlap > 0) total += (h.crashes * overlap) / span;
  }
  return total;
}

export interface SpikeVerdict {
  /** Crashes in the last 60 minutes. */
  recent: number;
  /** Hourly average of the 24 hours before them. */
  baseline: number;
  fires: boolean;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

export function evaluateCrashSpike(hours: HourCrashes[], now: number): SpikeVerdict {
  const recentFrom = now - SPIKE_RECENT_MS;
  const recent = crashesBetween(hours, recentFrom, now, now);
  const baseline =
    crashesBetween(hours, recentFrom - SPIKE_BASELINE_HOURS * HOUR_MS, recentFrom, now) / SPIKE_BASELINE_HOURS;
  // A tiny tolerance so proportions that should add up to a whole count do.
  const fires = recent + 1e-9 >= SPIKE_MIN_CRASHES && recent + 1e-9 >= SPIKE_FACTOR * baseline;
  return { recent: round2(recent), baseline: round2(baseline), fires };
}

export interface SpikeCheckResult {
  /** Projects whose last hour could hold a spike (enabled rule, a channel, no cooldown, ≥ 10 crashes in the hours it touches). */
  candidates: number;
  /** Projects a crash_spike alert was recorded for. */
  spikes: { project_id: number; recent: number; baseline: number }[];
}

/**
 * One check over every project: first the projects whose hours touching the last 60
 * minutes hold at least 10 crashes (an upper bound of `recent`) and that could be
 * alerted at all (rule enabled and out of cooldown, a channel), then their 24 hours
 * before. Records one crash_spike alert per project that spikes; the dispatcher claims
 * the cooldown, so two instances checking at once still send one.
 */
export async function runCrashSpikeCheck(store: Store, now: number): Promise<SpikeCheckResult> {
  const db = store.db;
  const recentFrom = now - SPIKE_RECENT_MS;
  const candidates = await db
    .selectFrom('alert_rules as r')
    .innerJoin('project_hourly as h', 'h.project_id', 'r.project_id')
    .select('r.project_id')
    .where('r.type', '=', 'crash_spike')
    .where('r.enabled', '=', 1)
    .where((eb) =>
      eb.or([
        eb('r.last_triggered', 'is', null),
        eb(eb('r.last_triggered', '+', eb('r.cooldown_minutes', '*', 60_000)), '<=', now),
      ]),
    )
    .where((eb) =>
      eb.exists(eb.selectFrom('alert_channels as c').select('c.id').whereRef('c.project_id', '=', 'r.project_id')),
    )
    .where('h.bucket', '>=', hourBucket(recentFrom))
    .where('h.bucket', '<=', now)
    .groupBy('r.project_id')
    .having((eb) => eb.fn.sum<number>('h.crashes'), '>=', SPIKE_MIN_CRASHES)
    .execute();
  const result: SpikeCheckResult = { candidates: candidates.length, spikes: [] };
  if (candidates.length === 0) return result;
  const ids = candidates.map((c) => Number(c.project_id));
  const byProject = new Map<number, HourCrashes[]>(ids.map((id) => [id, []]));
  for (let i = 0; i < ids.length; i += 1000) {
    const rows = await db
      .selectFrom('project_hourly')
      .select(['project_id', 'bucket', (eb) => eb.fn.sum<number>('crashes').as('crashes')])
      .where('project_id', 'in', ids.slice(i, i + 1000))
      .where('bucket', '>=', hourBucket(recentFrom - SPIKE_BASELINE_HOURS * HOUR_MS))
      .where('bucket', '<=', now)
      .groupBy(['project_id', 'bucket'])
      .execute();
    for (const r of rows)
      byProject.get(Number(r.project_id))!.push({ bucket: Number(r.bucket), crashes: Number(r.crashes) });
  }
  for (const [projectId, hours] of byProject) {
    const verdict = evaluateCrashSpike(hours, now);
    if (!verdict.fires) continue;
    await recordAlert(db, projectId, 'crash_spike', { recent: verdict.recent, baseline: verdict.baseline }, now);
    result.spikes.push({ project_id: projectId, recent: verdict.recent, baseline: verdict.baseline });
  }
  return result;
}
