// Time windows shared by every read route: `days`, `from`, `to` (docs/api.md
// "Time window"), and how a window maps onto the hourly aggregates.
import { DAY_MS, HOUR_MS, utcDay } from '../clock.js';
import { ReadInputError } from '../errors.js';
import { DEFAULT_DAYS, MAX_DAYS } from '../limits.js';

export const MAX_SPAN_MS = MAX_DAYS * DAY_MS;

/** A half-open interval [from, to) of epoch milliseconds. */
export interface TimeWindow {
  from: number;
  to: number;
}

export type QueryParams = Record<string, string | undefined>;

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/** Epoch ms of an RFC 3339 date-time, or null when the text is not one (including impossible dates). */
export function parseRfc3339(text: string): number | null {
  const m = RFC3339.exec(text.trim());
  if (!m) return null;
  const [, y, mo, d, h, mi, s, frac, zone] = m;
  const month = Number(mo);
  const day = Number(d);
  if (month < 1 || month > 12 || day < 1 || Number(h) > 23 || Number(mi) > 59 || Number(s) > 60) return null;
  const leap = (Number(y) % 4 === 0 && Number(y) % 100 !== 0) || Number(y) % 400 === 0;
  const daysInMonth = month === 2 ? (leap ? 29 : 28) : [4, 6, 9, 11].includes(month) ? 30 : 31;
  if (day > daysInMonth) return null;
  const ms = frac ? Math.floor(Number(`0${frac}`) * 1000) : 0;
  const date = new Date(Date.UTC(2000, month - 1, day, Number(h), Number(mi), Math.min(Number(s), 59), ms));
  date.setUTCFullYear(Number(y)); // Date.UTC reads years 0-99 as 1900-1999
  let t = date.getTime();
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone[0] === '-' ? -1 : 1;
    const [zh, zm] = zone.slice(1).split(':').map(Number);
    if (zh > 23 || zm > 59) return null;
    t -= sign * (zh * 60 + zm) * 60_000;
  }
  return Number.isFinite(t) ? t : null;
}

function parseDays(raw: string): number {
  const text = raw.trim();
  const n = /^[0-9]{1,3}$/.test(text) ? Number(text) : NaN;
  if (!Number.isInteger(n) || n < 1 || n > MAX_DAYS) {
    throw new ReadInputError(`days must be an integer from 1 to ${MAX_DAYS} (got ${JSON.stringify(raw)})`);
  }
  return n;
}

function parseTime(name: 'from' | 'to', raw: string): number {
  const t = parseRfc3339(raw);
  if (t === null) {
    throw new ReadInputError(
      `${name} must be an RFC 3339 date-time such as 2025-01-31T00:00:00Z (got ${JSON.stringify(raw)})`,
    );
  }
  return t;
}

function present(v: string | undefined): v is string {
  return v !== undefined;
}

/**
 * The window named by `days`, `from` and `to`. `to` defaults to now; `from`
 * defaults to `to` minus `days` (default 7). With `optional`, no parameter at all
 * means "no window" (the events list pages through everything retained).
 */
export function parseWindow(query: QueryParams, now: number, options: { optional: true }): TimeWindow | null;
export function parseWindow(query: QueryParams, now: number, options?: { optional?: false }): TimeWindow;
export function parseWindow(query: QueryParams, now: number, options: { optional?: boolean } = {}): TimeWindow | null {
  const { days: rawDays, from: rawFrom, to: rawTo } = query;
  if (options.optional && !present(rawDays) && !present(rawFrom) && !present(rawTo)) return null;
  const days = present(rawDays) ? parseDays(rawDays) : DEFAULT_DAYS;
  const to = present(rawTo) ? parseTime('to', rawTo) : now;
  const from = present(rawFrom) ? parseTime('from', rawFrom) : to - days * DAY_MS;
  if (from >= to) throw new ReadInputError('from must be before to (the window is [from, to), to exclusive)');
  if (to - from > MAX_SPAN_MS) throw new ReadInputError(`the window from..to may span at most ${MAX_DAYS} days`);
  return { from, to };
}

/**
 * The hourly buckets that belong to a window: those whose start hour lies in
 * [from, to). For a window ending now that is `days × 24` buckets, the last one
 * being the current hour. Returns first and last bucket start, or null when no
 * hour starts inside the window.
 */
export function windowBuckets(w: TimeWindow): { first: number; last: number } | null {
  const first = Math.ceil(w.from / HOUR_MS) * HOUR_MS;
  const last = Math.ceil(w.to / HOUR_MS) * HOUR_MS - HOUR_MS;
  return first <= last ? { first, last } : null;
}

/** Every bucket start of the window, oldest first. */
export function bucketList(w: TimeWindow): number[] {
  const b = windowBuckets(w);
  const out: number[] = [];
  if (!b) return out;
  for (let t = b.first; t <= b.last; t += HOUR_MS) out.push(t);
  return out;
}

/** Every UTC day touched by the window's buckets, oldest first. */
export function dayList(w: TimeWindow): number[] {
  const b = windowBuckets(w);
  const out: number[] = [];
  if (!b) return out;
  for (let d = utcDay(b.first); d <= b.last; d += DAY_MS) out.push(d);
  return out;
}
