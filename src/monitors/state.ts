// The monitor's state machine (docs/api.md "Cron monitors"), pure and clock-free: the
// caller passes the times. A monitor is `ok` or `failing`. Failures (a check-in with
// status error, a missed check-in, an in-progress one past max_runtime) count in a row;
// the failure_issue_threshold-th opens an incident (the `monitor` alert). While failing,
// recovery_threshold ok check-ins in a row close it (the recovery alert). Failures inside
// an open incident are recorded and counted, not alerted again: one alert per incident.
import type { MonitorConfig } from './config.js';
import type { Schedule, Schedules } from './schedule.js';

export type Outcome = 'ok' | 'error' | 'missed' | 'timeout';
export type Transition = 'incident' | 'recovery' | null;

export interface Health {
  health: 'ok' | 'failing';
  failures: number;
  successes: number;
}

export type Thresholds = Pick<MonitorConfig, 'failure_issue_threshold' | 'recovery_threshold'>;

export function applyOutcome(h: Health, outcome: Outcome, t: Thresholds): { next: Health; transition: Transition } {
  if (outcome === 'ok') {
    if (h.health === 'ok') return { next: { health: 'ok', failures: 0, successes: 0 }, transition: null };
    const successes = h.successes + 1;
    if (successes >= t.recovery_threshold)
      return { next: { health: 'ok', failures: 0, successes: 0 }, transition: 'recovery' };
    return { next: { health: 'failing', failures: h.failures, successes }, transition: null };
  }
  const failures = h.failures + 1;
  if (h.health === 'failing') return { next: { health: 'failing', failures, successes: 0 }, transition: null };
  if (failures >= t.failure_issue_threshold)
    return { next: { health: 'failing', failures, successes: 0 }, transition: 'incident' };
  return { next: { health: 'ok', failures, successes: 0 }, transition: null };
}

/** When a monitor whose check-in is expected at `expected` counts as missed. */
export function deadlineOf(expected: number, checkinMarginMinutes: number): number {
  return expected + checkinMarginMinutes * 60_000;
}

/**
 * After a miss at `expected` seen at `now`: the next expected time, never one whose
 * deadline has already passed (a server that was down records one miss, not one per
 * tick it slept through).
 */
export function nextAfterMiss(
  schedules: Schedules,
  schedule: Schedule,
  expected: number,
  marginMinutes: number,
  now: number,
): number {
  return schedules.next(schedule, Math.max(expected, now - marginMinutes * 60_000));
}

/**
 * The next expected time after a check-in that starts a run (in_progress, or a lone
 * ok/error) at `at`: the schedule's next time after it, never earlier than what was
 * already expected (an early check-in does not pull the schedule back).
 */
export function nextAfterCheckIn(
  schedules: Schedules,
  schedule: Schedule,
  at: number,
  expected: number | null,
): number {
  const next = schedules.next(schedule, at);
  return expected !== null && expected > next ? expected : next;
}

/** Whether an in-progress check-in that began at `startedAt` has run past max_runtime at `now`. */
export function timedOut(startedAt: number, maxRuntimeMinutes: number, now: number): boolean {
  return now >= startedAt + maxRuntimeMinutes * 60_000;
}

/** What a closing check-in's duration is: the one sent (seconds), else the time since its start. */
export function durationMs(sentSeconds: number | null, startedAt: number, now: number): number {
  return sentSeconds !== null ? Math.round(sentSeconds * 1000) : Math.max(0, now - startedAt);
}
