// Privacy: server-side scrubbing of event payloads (docs/privacy.md "Scrubbing"). A
// project's settings compile once into a Scrubber; ingest runs it on the parsed event
// before grouping and before anything (raw payload included) is stored. Pure functions
// over plain JSON values, so every edition runs the same rules and they are tested
// without a database.
//
// What is replaced, with "[Filtered]":
// - the value (of any type) under a key containing one of the default words (when
//   `scrub_defaults`) or a `scrub_fields` entry, case-insensitively (`_` in a word also
//   matches `-`); keys named in
//   `safe_fields` (exact, case-insensitive) are exempt;
// - key/value pairs inside strings shaped as query strings, form bodies and cookie
//   headers (`request.query_string`, `request.data`, `request.cookies`, the query of
//   `request.url`), and pair lists (`[["Authorization", "…"], …]`, as SDKs send headers);
// - in any string of the event's data: Luhn-valid card numbers, bearer tokens and PEM
//   private keys. Stack frames are code, not data: only their `vars` are walked;
//   breadcrumbs without their `type`, `category`, `level`, `timestamp`; `sdk`, `modules`
//   and `debug_meta` describe the program and are not walked at all.
// With `scrub_ip_addresses`, `user.ip_address` and `request.env.REMOTE_ADDR` are removed
// (and `{{auto}}` is never resolved).

export const FILTERED = '[Filtered]';

/** The key words scrubbed by default (substrings of a key, case-insensitive). */
export const DEFAULT_SCRUB_WORDS: readonly string[] = [
  'password',
  'passwd',
  'secret',
  'token',
  'api_key',
  'apikey',
  'auth',
  'authorization',
  'credentials',
  'cookie',
  'session',
  'csrf',
  'private_key',
];

export interface ScrubSettings {
  scrub_defaults: boolean;
  scrub_ip_addresses: boolean;
  scrub_fields: readonly string[];
  safe_fields: readonly string[];
}

/** Why a value was filtered: a key rule, or one of the value rules. */
export type ScrubRule = 'key' | 'creditcard' | 'bearer' | 'pemkey' | 'ip';

/** What scrubbing changed in one event (stored with it as `_scrubbed`; shown in the event detail). */
export interface ScrubReport {
  /** Values replaced or removed. */
  total: number;
  rules: Partial<Record<ScrubRule, number>>;
  /** Where, as dotted paths (the first MAX_REPORTED_PATHS). */
  paths: string[];
}

/** The key stored beside the event's own fields; a client's own value for it is dropped. */
export const REPORT_KEY = '_scrubbed';
const MAX_REPORTED_PATHS = 50;
/** Deeper values are left as they are (the hygiene pass already caps nesting). */
const MAX_DEPTH = 64;

/** Runs a project's rules over a parsed event, in place; returns what changed, or null when nothing did. */
export type Scrubber = (event: Record<string, unknown>) => ScrubReport | null;

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

// A card number by its issuer prefix and length (Amex 15, the others 16 digits, spaces or
// dashes allowed between digits), then checked with Luhn: the prefixes keep timestamps,
// ids and addresses out, the checksum most other long numbers.
const CARD = /\b(?:3[47]\d|4\d{3}|5[1-5]\d\d|6011|65\d\d)(?:[- ]?\d){11,12}\b/g;
const BEARER = /\b(bearer\s+)[^\s"',;]+/gi;
const PEM = /(-----BEGIN[A-Z ]*PRIVATE KEY-----)[\s\S]*?(-----END[A-Z ]*PRIVATE KEY-----)/g;
const BEARER_WORD = /bearer/i;

/** A digit, a space or a dash: what a card number's run of 13 digits is made of. */
function inDigitRun(c: number): boolean {
  return (c >= 48 && c <= 57) || c === 32 || c === 45;
}

/**
 * Whether a value rule can apply to a string: `PRIVATE KEY`, `bearer` (any case), or 13
 * digits with at most spaces or dashes between them. The words are native searches; the
 * digits are looked for 13 characters apart, since a character outside the run's
 * alphabet rules out every run that covers it, so text reads about one character in
 * thirteen (2.6 times faster than reading every character, BENCHMARKS.md "Scrubbing").
 */
export function maybeSensitive(s: string): boolean {
  if (s.includes('PRIVATE KEY') || BEARER_WORD.test(s)) return true;
  const n = s.length;
  let i = 12;
  while (i < n) {
    if (!inDigitRun(s.charCodeAt(i))) {
      i += 13;
      continue;
    }
    let start = i;
    while (start > 0 && inDigitRun(s.charCodeAt(start - 1))) start--;
    let digits = 0;
    let j = start;
    for (; j < n; j++) {
      const c = s.charCodeAt(j);
      if (c >= 48 && c <= 57) {
        if (++digits >= 13) return true;
      } else if (c !== 32 && c !== 45) break;
    }
    // A later run starts after j, so it covers j + 13.
    i = j + 13;
  }
  return false;
}

/** Shorter strings hold none of those (a card has 15 digits; `Bearer ` and a token of 3). */
const MIN_VALUE_RULE_LENGTH = 10;

/** Luhn's checksum over the digits of `s` (other characters ignored). */
export function luhnValid(s: string): boolean {
  let sum = 0;
  let double = false;
  let digits = 0;
  for (let i = s.length - 1; i >= 0; i--) {
    const c = s.charCodeAt(i) - 48;
    if (c < 0 || c > 9) continue;
    digits++;
    let d = c;
    if (double) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
    double = !double;
  }
  return digits >= 13 && sum % 10 === 0;
}

function cardDigits(match: string): number {
  let n = 0;
  for (let i = 0; i < match.length; i++) {
    const c = match.charCodeAt(i);
    if (c >= 48 && c <= 57) n++;
  }
  return n;
}

/**
 * The string with card numbers, bearer tokens and PEM private keys replaced, and the
 * count per rule; the same string object when nothing matched.
 */
export function scrubString(s: string, counts?: Partial<Record<ScrubRule, number>>): string {
  if (s.length < MIN_VALUE_RULE_LENGTH || !maybeSensitive(s)) return s;
  let out = s;
  const bump = (rule: ScrubRule) => {
    if (counts) counts[rule] = (counts[rule] ?? 0) + 1;
  };
  if (out.includes('PRIVATE KEY-----')) {
    out = out.replace(PEM, (_m, begin: string, end: string) => {
      bump('pemkey');
      return `${begin}\n${FILTERED}\n${end}`;
    });
  }
  out = out.replace(BEARER, (m, prefix: string) => {
    if (m.slice(prefix.length) === FILTERED) return m;
    bump('bearer');
    return `${prefix}${FILTERED}`;
  });
  out = out.replace(CARD, (m) => {
    const n = cardDigits(m);
    const amex = m.charCodeAt(0) === 51; // '3'
    if ((amex ? n !== 15 : n !== 16) || !luhnValid(m)) return m;
    bump('creditcard');
    return FILTERED;
  });
  return out === s ? s : out;
}

interface Compiled {
  /** Tests a key against the key rules; null when there are none. */
  keyRule: RegExp | null;
  safe: Set<string>;
  ip: boolean;
  /** Each key's answer, remembered (bounded by KEY_CACHE_MAX). */
  keys: Map<string, boolean>;
}

/** Compiles a project's settings into its scrubber (done once per settings, not per event). */
export function compileScrubber(settings: ScrubSettings): Scrubber {
  const words = [...(settings.scrub_defaults ? DEFAULT_SCRUB_WORDS : []), ...settings.scrub_fields]
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w !== '');
  const compiled: Compiled = {
    // `_` in a word also matches `-`, as header names spell it (X-Api-Key for api_key).
    keyRule:
      words.length > 0
        ? new RegExp([...new Set(words)].map((w) => escapeRegExp(w).replace(/_/g, '[-_]')).join('|'), 'i')
        : null,
    safe: new Set(settings.safe_fields.map((f) => f.trim().toLowerCase())),
    ip: settings.scrub_ip_addresses,
    keys: new Map(),
  };
  const valueRules = settings.scrub_defaults;
  return (event) => scrubEvent(event, compiled, valueRules);
}

/**
 * Parts of an event that describe the program, not its data (the SDK, loaded modules and
 * their versions, debug images): not walked.
 */
const OPAQUE_KEYS = new Set(['sdk', 'modules', 'debug_meta']);

/** Keys seen per compiled scrubber and whether they match: SDK events repeat the same few hundred keys. */
const KEY_CACHE_MAX = 4096;

class Walk {
  total = 0;
  rules: Partial<Record<ScrubRule, number>> = {};
  paths: string[] = [];
  /** The keys from the event's root to the value being walked. */
  private readonly stack: (string | number)[] = [];
  constructor(
    readonly c: Compiled,
    readonly valueRules: boolean,
  ) {}

  private path(last?: string | number): string {
    return (last === undefined ? this.stack : [...this.stack, last]).join('.');
  }

  note(rule: ScrubRule, path: string, n = 1): void {
    this.total += n;
    this.rules[rule] = (this.rules[rule] ?? 0) + n;
    if (this.paths.length < MAX_REPORTED_PATHS) this.paths.push(path);
  }

  keyMatches(key: string): boolean {
    const { keyRule, keys } = this.c;
    if (keyRule === null) return false;
    let hit = keys.get(key);
    if (hit === undefined) {
      hit = keyRule.test(key) && !this.c.safe.has(key.toLowerCase());
      if (keys.size >= KEY_CACHE_MAX) keys.clear();
      keys.set(key, hit);
    }
    return hit;
  }

  /** Walks a container in place. */
  container(v: object, depth: number): void {
    if (depth >= MAX_DEPTH) return;
    const stack = this.stack;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const item: unknown = v[i];
        if (typeof item === 'string') {
          if (this.valueRules && item.length >= MIN_VALUE_RULE_LENGTH) {
            const s = this.string(item, i);
            if (s !== item) v[i] = s;
          }
        } else if (typeof item === 'object' && item !== null) {
          if (Array.isArray(item) && item.length === 2 && typeof item[0] === 'string') {
            // A pair list entry: [key, value] as SDKs send headers, cookies and query strings.
            const key = item[0];
            stack.push(i);
            this.entry(item, 1, key, depth + 1);
            stack.pop();
          } else {
            stack.push(i);
            this.container(item, depth + 1);
            stack.pop();
          }
        }
      }
      return;
    }
    const o = v as Obj;
    // Parsed JSON has only own, enumerable, plain properties: for-in walks them without
    // the array Object.keys would allocate for every object.
    for (const key in o) this.entry(o, key, key, depth);
  }

  /** The value at holder[slot], whose key is `key`. */
  private entry(holder: Obj | unknown[], slot: string | number, key: string, depth: number): void {
    const h = holder as Record<string | number, unknown>;
    const x = h[slot];
    if (this.keyMatches(key)) {
      if (x !== FILTERED && x !== null && x !== undefined && x !== '') {
        h[slot] = FILTERED;
        this.note('key', this.path(key));
      }
      return;
    }
    if (typeof x === 'string') {
      if (this.valueRules && x.length >= MIN_VALUE_RULE_LENGTH) {
        const s = this.string(x, key);
        if (s !== x) h[slot] = s;
      }
    } else if (typeof x === 'object' && x !== null) {
      this.stack.push(key);
      if (key === 'stacktrace' || key === 'raw_stacktrace') this.frameVars(x, depth + 1);
      else if (key === 'breadcrumbs' && depth === 0) this.breadcrumbs(x, depth + 1);
      else if (!OPAQUE_KEYS.has(key)) this.container(x, depth + 1);
      this.stack.pop();
    }
  }

  /**
   * The event's breadcrumbs: of each, the fields that carry data (`message`, `data`, and
   * any key an SDK or app added); `type`, `category`, `level` and `timestamp` are the
   * SDK's own words and are not walked (most of an event's keys are breadcrumbs').
   */
  private breadcrumbs(v: object, depth: number): void {
    const list = Array.isArray(v) ? v : (v as Obj).values;
    if (!Array.isArray(list)) {
      this.container(v, depth);
      return;
    }
    const stack = this.stack;
    if (!Array.isArray(v)) stack.push('values');
    for (let i = 0; i < list.length; i++) {
      const crumb: unknown = list[i];
      if (!isObject(crumb)) continue;
      stack.push(i);
      for (const key in crumb) {
        if (key === 'type' || key === 'category' || key === 'level' || key === 'timestamp') continue;
        this.entry(crumb, key, key, depth + 2);
      }
      stack.pop();
    }
    if (!Array.isArray(v)) stack.pop();
  }

  /**
   * A stack trace: only its frames' `vars` (local variables) hold application data, and
   * the query string of a file name that is a URL (a browser page's `?token=…` is the
   * page's URL, as in `request.url`); the rest is code and addresses (paths, functions,
   * source lines), which Relay does not scrub by default either, and which is most of an
   * event's strings. Grouping and source-map lookup use the path without its query.
   */
  private frameVars(stacktrace: object, depth: number): void {
    const frames = (stacktrace as Obj).frames;
    if (!Array.isArray(frames)) return;
    const stack = this.stack;
    stack.push('frames');
    for (let i = 0; i < frames.length; i++) {
      const frame: unknown = frames[i];
      if (!isObject(frame)) continue;
      stack.push(i);
      for (const key of ['filename', 'abs_path']) {
        const name = frame[key];
        if (typeof name !== 'string' || !name.includes('?')) continue;
        const out = this.urlQuery(name, this.path(key));
        if (out !== null) frame[key] = out;
      }
      if (frame.vars !== undefined) this.entry(frame, 'vars', 'vars', depth + 2);
      stack.pop();
    }
    stack.pop();
  }

  /** A URL with the values of its query string under matching keys replaced; null when nothing matched. */
  urlQuery(url: string, path: string): string | null {
    const q = url.indexOf('?');
    if (q < 0) return null;
    const hash = url.indexOf('#', q);
    const end = hash < 0 ? url.length : hash;
    const out = this.pairs(url.slice(q + 1, end), '&', path);
    return out === null ? null : `${url.slice(0, q + 1)}${out}${url.slice(end)}`;
  }

  private string(s: string, last: string | number): string {
    if (!maybeSensitive(s)) return s;
    const counts: Partial<Record<ScrubRule, number>> = {};
    const out = scrubString(s, counts);
    if (out === s) return s;
    const p = this.path(last);
    for (const [rule, n] of Object.entries(counts) as [ScrubRule, number][]) this.note(rule, p, n);
    return out;
  }

  /** `a=1&b=2` or `a=1; b=2`: values under matching keys replaced; null when nothing matched. */
  pairs(s: string, separator: '&' | ';', path: string): string | null {
    if (this.c.keyRule === null || !s.includes('=')) return null;
    const parts = s.split(separator);
    let changed = false;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      const eq = part.indexOf('=');
      if (eq < 0) continue;
      const rawKey = part.slice(0, eq);
      const key = pairKey(rawKey);
      if (!this.keyMatches(key) || part.slice(eq + 1) === FILTERED) continue;
      changed = true;
      this.note('key', `${path}.${key}`);
      parts[i] = `${rawKey}=${FILTERED}`;
    }
    return changed ? parts.join(separator) : null;
  }
}

/** A pair's key as its rules match it: trimmed, `+` and percent escapes decoded (only when it has them). */
function pairKey(rawKey: string): string {
  const key = rawKey.trim();
  if (!key.includes('%') && !key.includes('+')) return key;
  try {
    return decodeURIComponent(key.replace(/\+/g, ' '));
  } catch {
    return key; // a malformed escape: the key is matched as sent
  }
}

function looksLikeForm(s: string): boolean {
  // A form body or query string: no spaces or JSON/XML brackets, and at least one `k=v`.
  return s.includes('=') && !/[\s{}<>[\]]/.test(s.trim());
}

function scrubRequest(w: Walk, request: Obj): void {
  // Strings holding key/value pairs are split first; what the key rules leave is walked as usual.
  if (typeof request.query_string === 'string') {
    const qs = request.query_string.startsWith('?') ? request.query_string.slice(1) : request.query_string;
    const out = w.pairs(qs, '&', 'request.query_string');
    if (out !== null) request.query_string = out;
  }
  if (typeof request.data === 'string' && looksLikeForm(request.data)) {
    const out = w.pairs(request.data, '&', 'request.data');
    if (out !== null) request.data = out;
  }
  if (typeof request.cookies === 'string') {
    const out = w.pairs(request.cookies, ';', 'request.cookies');
    if (out !== null) request.cookies = out;
  }
  if (typeof request.url === 'string') {
    const out = w.urlQuery(request.url, 'request.url');
    if (out !== null) request.url = out;
  }
  if (isObject(request.headers)) {
    // A Cookie header under another key name (the key rules catch `Cookie` itself).
    for (const k of Object.keys(request.headers)) {
      const h = request.headers[k];
      if (typeof h === 'string' && k.toLowerCase() === 'set-cookie' && !w.keyMatches(k)) {
        const out = w.pairs(h, ';', `request.headers.${k}`);
        if (out !== null) request.headers[k] = out;
      }
    }
  }
}

function removeIps(w: Walk, event: Obj): void {
  const user = event.user;
  if (isObject(user) && user.ip_address !== undefined && user.ip_address !== null) {
    delete user.ip_address;
    w.note('ip', 'user.ip_address');
  }
  const request = event.request;
  if (isObject(request) && isObject(request.env) && request.env.REMOTE_ADDR !== undefined) {
    delete request.env.REMOTE_ADDR;
    w.note('ip', 'request.env.REMOTE_ADDR');
  }
}

function scrubEvent(event: Obj, c: Compiled, valueRules: boolean): ScrubReport | null {
  // The report is the server's: a client cannot claim what was filtered.
  const claimed = Object.hasOwn(event, REPORT_KEY);
  if (claimed) delete event[REPORT_KEY];
  const w = new Walk(c, valueRules);
  if (c.ip) removeIps(w, event);
  if (isObject(event.request)) scrubRequest(w, event.request);
  w.container(event, 0);
  if (w.total === 0) return claimed ? { total: 0, rules: {}, paths: [] } : null;
  const report: ScrubReport = { total: w.total, rules: w.rules, paths: w.paths };
  event[REPORT_KEY] = report;
  return report;
}

/** The scrub report stored with an event, if any (for the event detail). */
export function storedReport(event: Record<string, unknown>): ScrubReport | null {
  const r = event[REPORT_KEY];
  if (!isObject(r) || typeof r.total !== 'number' || r.total <= 0) return null;
  return {
    total: r.total,
    rules: isObject(r.rules) ? (r.rules as ScrubReport['rules']) : {},
    paths: Array.isArray(r.paths) ? r.paths.filter((p): p is string => typeof p === 'string') : [],
  };
}

/** A project row's scrub settings (the lists are stored as JSON text). */
export function scrubSettingsOf(row: {
  scrub_defaults: number | boolean;
  scrub_ip_addresses: number | boolean;
  scrub_fields: string;
  safe_fields: string;
}): ScrubSettings {
  return {
    scrub_defaults: Boolean(row.scrub_defaults),
    scrub_ip_addresses: Boolean(row.scrub_ip_addresses),
    scrub_fields: parseList(row.scrub_fields),
    safe_fields: parseList(row.safe_fields),
  };
}

export function parseList(json: string): string[] {
  try {
    const v: unknown = JSON.parse(json);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * The scrubber of a project row, compiled once per row object (the ingest path reuses
 * its cached rows, so a burst of events compiles the rules once). Null when the project
 * scrubs nothing.
 */
const compiledByRow = new WeakMap<object, Scrubber | null>();

export function scrubberFor(row: {
  scrub_defaults: number | boolean;
  scrub_ip_addresses: number | boolean;
  scrub_fields: string;
  safe_fields: string;
}): Scrubber | null {
  let s = compiledByRow.get(row);
  if (s === undefined) {
    const settings = scrubSettingsOf(row);
    s =
      settings.scrub_defaults || settings.scrub_ip_addresses || settings.scrub_fields.length > 0
        ? compileScrubber(settings)
        : null;
    compiledByRow.set(row, s);
  }
  return s;
}
