// Time source, injected everywhere "now" matters so tests can move it (quota
// reset at UTC midnight, retention, windows).
export interface Clock {
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock tests can set and advance. */
export class ManualClock implements Clock {
  constructor(private current: number) {}
  now() {
    return this.current;
  }
  set(ms: number) {
    this.current = ms;
  }
  advance(ms: number) {
    this.current += ms;
  }
}

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export function hourBucket(ms: number): number {
  return Math.floor(ms / HOUR_MS) * HOUR_MS;
}

export function utcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** RFC 3339 UTC with milliseconds and Z, as every JSON time is written. */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}
