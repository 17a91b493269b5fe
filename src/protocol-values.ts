// The Sentry protocol's event ids and timestamps as SDKs spell them, read the same way by
// every item parser: events and sessions (src/ingest), user feedback (src/feedback).
// A base module, so that feedback does not import ingest for them.

const HEX32 = /^[0-9a-fA-F]{32}$/;
const NIL_ID = '00000000000000000000000000000000';

/** A UUID as 32 lowercase hex (dashes and braces removed), or null when it is not one. */
export function cleanUuid(v: unknown): string | null {
  if (typeof v !== 'string') return null;
  let s = v;
  if (s.length !== 32) s = s.replace(/[-{}]/g, '');
  if (!HEX32.test(s)) return null;
  s = s.toLowerCase();
  return s === NIL_ID ? null : s;
}

export function randomId(): string {
  return globalThis.crypto.randomUUID().replace(/-/g, '');
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:([Zz])|([+-])(\d{2}):?(\d{2}))?$/;
const NUMERIC = /^\s*\d+(?:\.\d+)?\s*$/;

function fromEpochNumber(n: number): number | null {
  if (!Number.isFinite(n) || n <= 0) return null;
  return Math.round(n > 1e12 ? n : n * 1000);
}

/**
 * Epoch ms from an RFC 3339 string (a missing offset is UTC) or a number of
 * seconds (milliseconds when > 1e12; numeric strings too). Null when invalid.
 */
export function parseTimestamp(value: unknown): number | null {
  if (typeof value === 'number') return fromEpochNumber(value);
  if (typeof value !== 'string') return null;
  const m = RFC3339.exec(value.trim());
  if (!m) return NUMERIC.test(value) ? fromEpochNumber(Number(value)) : null;
  const year = +m[1];
  const month = +m[2];
  const day = +m[3];
  const hour = +m[4];
  const minute = +m[5];
  const second = +m[6];
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 60) return null;
  const ms = m[7] ? Math.round(Number(`0.${m[7]}`) * 1000) : 0;
  let t = Date.UTC(year, month - 1, day, hour, minute, Math.min(second, 59), 0);
  // Date.UTC rolls 31 February over to March: reject instead.
  if (new Date(t).getUTCDate() !== day) return null;
  t += ms;
  if (m[9]) {
    const offset = (+m[10] * 60 + +m[11]) * 60_000;
    t += m[9] === '+' ? -offset : offset;
  }
  return fromEpochNumber(t);
}
