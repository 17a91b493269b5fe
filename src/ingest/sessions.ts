// Release-health items (docs/ingest-normalisation.md "Sessions" and "Release health"):
// `session` updates and `sessions` aggregates, parsed and validated into the
// shapes the writer stores.
import { HOUR_MS } from '../clock.js';
import { InvalidItemError } from '../errors.js';
import { parseCleanJson } from './hygiene.js';
import { cleanUuid, parseTimestamp, randomId } from '../protocol-values.js';
import type { SessionAggregate, SessionStatus, SessionUpdate } from './types.js';
import { MAX_SESSION_COUNT } from '../limits.js';

const STATUSES = new Set<string>(['ok', 'exited', 'crashed', 'abnormal', 'errored', 'unhandled']);

/** Whether `value` is a status a stored session can have. */
export function isSessionStatus(value: unknown): value is SessionStatus {
  return typeof value === 'string' && STATUSES.has(value);
}

const utf8 = new TextDecoder();

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseObject(payload: Uint8Array, what: string): Obj {
  let v: unknown;
  try {
    v = parseCleanJson(utf8.decode(payload)).value;
  } catch {
    throw new InvalidItemError(`${what} payload is not valid JSON`);
  }
  if (!isObject(v)) throw new InvalidItemError(`${what} payload must be a JSON object`);
  return v;
}

function str(v: unknown, max: number): string | null {
  if (typeof v !== 'string') return null;
  const s = v.trim();
  return s === '' ? null : s.length > max ? s.slice(0, max) : s;
}

function count(v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) return 0;
  return Math.min(Math.floor(v), MAX_SESSION_COUNT);
}

/** A time no later than one hour after receipt (later is the receive time, as for events). */
function notFuture(t: number, receivedAt: number): number {
  return t > receivedAt + HOUR_MS ? receivedAt : t;
}

/** attrs.release (required) and attrs.environment (default `production`, as for events). */
function attrsOf(p: Obj, what: string): { release: string; environment: string } {
  const attrs = p.attrs;
  if (!isObject(attrs)) throw new InvalidItemError(`${what} needs an attrs object with a release`);
  const release = str(attrs.release, 200);
  if (release === null) throw new InvalidItemError(`${what} needs attrs.release (a non-empty string)`);
  return { release, environment: str(attrs.environment, 64) ?? 'production' };
}

/**
 * One `session` update. Required: `started` (a valid time) and `attrs.release`.
 * `sid` may be omitted (a one-shot session; a random one is made) but, when
 * present, must be a UUID. `status` defaults to ok; an unknown status is read as
 * ok (the session still counts; a later valid status decides its end).
 */
export function parseSessionUpdate(payload: Uint8Array, ctx: { receivedAt: number }): SessionUpdate {
  const p = parseObject(payload, 'session');
  let sid: string;
  if (p.sid === undefined || p.sid === null) sid = randomId();
  else {
    const clean = cleanUuid(p.sid);
    if (clean === null) throw new InvalidItemError('session sid must be a UUID (32 hex characters, dashes allowed)');
    sid = clean;
  }
  const startedRaw = parseTimestamp(p.started);
  if (startedRaw === null) throw new InvalidItemError('session needs `started` (an RFC 3339 time or epoch seconds)');
  const { release, environment } = attrsOf(p, 'session');
  const rawStatus = typeof p.status === 'string' ? p.status.trim().toLowerCase() : 'ok';
  const status = (STATUSES.has(rawStatus) ? rawStatus : 'ok') as SessionStatus;
  let did: string | null = null;
  if (typeof p.did === 'string') did = str(p.did, 256);
  else if (typeof p.did === 'number' && Number.isFinite(p.did)) did = String(p.did);
  return {
    sid,
    did,
    init: p.init === true,
    started: notFuture(startedRaw, ctx.receivedAt),
    timestamp: notFuture(parseTimestamp(p.timestamp) ?? ctx.receivedAt, ctx.receivedAt),
    status,
    errors: count(p.errors),
    release,
    environment,
    anr: typeof p.abnormal_mechanism === 'string' && p.abnormal_mechanism.startsWith('anr_'),
  };
}

/**
 * One `sessions` item: a bucket per `started` with counts (missing = 0).
 * Required: `attrs.release`. Buckets without a valid `started` or with all
 * counts zero are left out; `aggregates` missing means no buckets.
 */
export function parseSessionAggregates(payload: Uint8Array, ctx: { receivedAt: number }): SessionAggregate[] {
  const p = parseObject(payload, 'sessions');
  const { release, environment } = attrsOf(p, 'sessions');
  const list = p.aggregates;
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new InvalidItemError('sessions `aggregates` must be a list');
  const out: SessionAggregate[] = [];
  for (const b of list) {
    if (!isObject(b)) continue;
    const started = parseTimestamp(b.started);
    if (started === null) continue;
    const agg: SessionAggregate = {
      started: notFuture(started, ctx.receivedAt),
      release,
      environment,
      exited: count(b.exited),
      errored: count(b.errored),
      abnormal: count(b.abnormal),
      crashed: count(b.crashed),
      unhandled: count(b.unhandled),
    };
    if (agg.exited + agg.errored + agg.abnormal + agg.crashed + agg.unhandled > 0) out.push(agg);
  }
  return out;
}
