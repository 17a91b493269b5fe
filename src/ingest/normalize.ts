// Event normalisation: one raw event payload (envelope `event` item or /store/
// body) into the NormalizedEvent row shape, following docs/ingest-normalisation.md
// "Event normalisation". One JSON.parse per payload; sub-objects of the parsed event are
// referenced, not copied, unless they need repair.
import { InvalidItemError } from '../errors.js';
import { cleanUuid, parseTimestamp, randomId } from '../protocol-values.js';
import { parseCleanJson, type CleanParse } from './hygiene.js';
import { withUserAgentContexts } from './user-agent.js';
import { encodeSymbolicated } from './symbolicated.js';
import {
  groupingInput,
  hashGroupingInput,
  isAnrException,
  locationOf,
  mainExceptionIndex,
  type Md5Hex,
} from './grouping.js';
import type {
  EventDetailData,
  EventSymbolicator,
  Level,
  NormalizedEvent,
  NormalizedException,
  NormalizedFrame,
  NormalizedThread,
  SymbolicationInput,
} from './types.js';
import { REPORT_KEY, storedReport, type Scrubber } from '../privacy/scrub.js';
import {
  MAX_BREADCRUMBS,
  MAX_EVENT_CLOCK_AHEAD_MS,
  MAX_MESSAGE,
  MAX_TAGS,
  MAX_TAG_KEY,
  MAX_TAG_VALUE,
  MAX_TITLE,
} from '../limits.js';

export interface NormalizeContext {
  /** Receive time, epoch ms. */
  receivedAt: number;
  /** The envelope header's `sent_at`, epoch ms (null for /store/ or when absent). */
  sentAt: number | null;
  /** The envelope header's `event_id` when this event may take it (the first one without its own id), else null. */
  envelopeEventId: string | null;
  /** The client's address, used for `user.ip_address: "{{auto}}"`. */
  clientIp: string | null;
  /** The MD5 the fingerprint is hashed with (injected by the edition). */
  md5Hex: Md5Hex;
  /** The payload already parsed by parseEventPayload (symbolication's pre-pass), so it is parsed once. */
  parsed?: ParsedEventPayload;
  /**
   * Symbolicates the event with symbol files loaded beforehand (src/symbols); its frames
   * then drive grouping, title, error type and location, and are stored beside the originals.
   */
  symbolicate?: EventSymbolicator;
  /**
   * The project's scrubber (src/privacy/scrub.ts), run on the parsed event before
   * anything else reads it, so grouping, the row's columns and the stored raw payload
   * only ever see the scrubbed values.
   */
  scrub?: Scrubber | null;
}

const utf8 = new TextDecoder();
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const utf8Encoder = new TextEncoder();

type Obj = Record<string, unknown>;

function isObject(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function clip(s: string, max: number): string {
  if (s.length <= max) return s;
  // Do not cut a surrogate pair in half.
  let end = max;
  const c = s.charCodeAt(end - 1);
  if (c >= 0xd800 && c <= 0xdbff) end--;
  return s.slice(0, end);
}

/** A trimmed, capped, non-empty string from a string or number; null otherwise. */
function text(v: unknown, max: number): string | null {
  let s: string;
  if (typeof v === 'string') s = v.trim();
  else if (typeof v === 'number' && Number.isFinite(v)) s = String(v);
  else return null;
  return s === '' ? null : clip(s, max);
}

// ---------------------------------------------------------------- payload

// Strings are matched whole so NaN / Infinity inside them are left alone.
const NON_FINITE = /"(?:[^"\\]|\\[\s\S])*"|-?\bInfinity\b|\bNaN\b/g;

/**
 * Python SDKs can emit NaN / Infinity (json.dumps allows them); Relay rewrites
 * them for Python clients. Returns the text with those tokens as null, or null
 * when there was nothing to rewrite.
 */
function withoutNonFinite(json: string): string | null {
  let changed = false;
  const out = json.replace(NON_FINITE, (m) => {
    if (m.charCodeAt(0) === 0x22) return m;
    changed = true;
    return 'null';
  });
  return changed ? out : null;
}

/** An event payload parsed and made safe to store; `cleaned` when it differs from the bytes sent. */
export interface ParsedEventPayload {
  ev: Obj;
  cleaned: boolean;
}

/** An event payload as a JSON object (hygiene applied); InvalidItemError when it is not one. */
export function parseEventPayload(payload: Uint8Array): ParsedEventPayload {
  return parsePayload(payload);
}

function imagesOf(ev: Obj): Obj[] {
  const debugMeta = ev.debug_meta;
  return isObject(debugMeta) && Array.isArray(debugMeta.images) ? (debugMeta.images as unknown[]).filter(isObject) : [];
}

/** What symbolication needs of a parsed event, by the same rules the normaliser applies. */
export function symbolicationInputOf(ev: Obj): SymbolicationInput {
  return {
    platform: text(ev.platform, 64)?.toLowerCase() ?? 'other',
    release: text(ev.release, 200) ?? '',
    dist: text(ev.dist, 64) ?? '',
    images: imagesOf(ev),
    exceptions: normalizeExceptions(ev).exceptions,
    threads: normalizeThreads(ev.threads),
  };
}

/**
 * The payload's JSON object, made safe to store (hygiene.ts); `cleaned` when it differs
 * from the bytes sent (then the stored raw payload is the cleaned object re-encoded).
 */
function parsePayload(payload: Uint8Array): ParsedEventPayload {
  let json: string;
  let badUtf8 = false;
  try {
    json = strictUtf8.decode(payload);
  } catch {
    json = utf8.decode(payload);
    badUtf8 = true;
  }
  let parsed: CleanParse;
  try {
    parsed = parseCleanJson(json);
  } catch (err) {
    const repaired = withoutNonFinite(json);
    try {
      if (repaired === null) throw err;
      parsed = parseCleanJson(repaired);
    } catch {
      throw new InvalidItemError('event payload is not valid JSON');
    }
  }
  if (!isObject(parsed.value)) throw new InvalidItemError('event payload must be a JSON object');
  return { ev: parsed.value, cleaned: parsed.cleaned || badUtf8 };
}

// ---------------------------------------------------------------- levels

/** Level names SDKs send, lowercased, with the level each stands for. */
const LEVEL_NAMES = new Map<string, Level>([
  ['fatal', 'fatal'],
  ['critical', 'fatal'],
  ['error', 'error'],
  ['', 'error'],
  ['warning', 'warning'],
  ['warn', 'warning'],
  ['info', 'info'],
  ['log', 'info'],
  ['debug', 'debug'],
  // Python logging levels, as Relay accepts them.
  ['10', 'debug'],
  ['20', 'info'],
  ['30', 'warning'],
  ['40', 'error'],
  ['50', 'fatal'],
]);

/** Levels (docs/ingest-normalisation.md "Event normalisation"): lowercased; warn → warning, critical → fatal, empty/missing → error, unknown → info. */
export function normalizeLevel(v: unknown): Level {
  if (v === undefined || v === null) return 'error';
  if (typeof v === 'number') return LEVEL_NAMES.get(String(v)) ?? 'info';
  if (typeof v !== 'string') return 'info';
  return LEVEL_NAMES.get(v.trim().toLowerCase()) ?? 'info';
}

// ---------------------------------------------------------------- tags, breadcrumbs

function tagValue(v: unknown): string | null {
  let s: string;
  if (typeof v === 'string') s = v;
  else if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') s = String(v);
  else if (v === null || v === undefined) return null;
  else s = JSON.stringify(v);
  return clip(s, MAX_TAG_VALUE);
}

/** Tags from an object or a list of [key, value] pairs; values stringified; keys and values capped. */
export function normalizeTags(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  let count = 0;
  const add = (k: unknown, val: unknown): void => {
    const key = text(k, MAX_TAG_KEY);
    if (key === null || key === '__proto__') return;
    const value = tagValue(val);
    if (value === null) return;
    if (!(key in out)) {
      if (count >= MAX_TAGS) return;
      count++;
    }
    out[key] = value;
  };
  if (Array.isArray(v)) {
    for (const pair of v) if (Array.isArray(pair) && pair.length >= 2) add(pair[0], pair[1]);
  } else if (isObject(v)) {
    for (const k of Object.keys(v)) add(k, v[k]);
  }
  return out;
}

/** `{values: [...]}` or a bare list; objects only; the newest MAX_BREADCRUMBS kept (oldest first). */
export function normalizeBreadcrumbs(v: unknown): Obj[] {
  const list: unknown[] = Array.isArray(v) ? v : isObject(v) && Array.isArray(v.values) ? v.values : [];
  const from = list.length > MAX_BREADCRUMBS ? list.length - MAX_BREADCRUMBS : 0;
  let clean = from === 0;
  if (clean) for (const b of list) if (!isObject(b)) clean = false;
  if (clean) return list as Obj[];
  const out: Obj[] = [];
  for (let i = from; i < list.length; i++) if (isObject(list[i])) out.push(list[i] as Obj);
  return out;
}

// ---------------------------------------------------------------- exceptions and frames

const FRAME_STRINGS = [
  'filename',
  'abs_path',
  'function',
  'raw_function',
  'module',
  'package',
  'platform',
  'context_line',
  'instruction_addr',
  'image_addr',
  'symbol_addr',
] as const;
const ADDRESS_FIELDS = new Set(['instruction_addr', 'image_addr', 'symbol_addr']);

function frameNeedsRepair(f: Obj): boolean {
  for (const k of FRAME_STRINGS) {
    const x = f[k];
    if (x !== undefined && typeof x !== 'string') return true;
  }
  for (const k of ['lineno', 'colno'] as const) {
    const x = f[k];
    if (x !== undefined && !(typeof x === 'number' && Number.isInteger(x))) return true;
  }
  return f.in_app !== undefined && typeof f.in_app !== 'boolean';
}

/** The frame itself when its known fields have the right types, else a repaired copy. */
function normalizeFrame(f: unknown): NormalizedFrame | null {
  if (!isObject(f)) return null;
  if (!frameNeedsRepair(f)) return f as NormalizedFrame;
  const out: Obj = { ...f };
  for (const k of FRAME_STRINGS) {
    const x = out[k];
    if (x === undefined || typeof x === 'string') continue;
    if (typeof x === 'number' && Number.isFinite(x)) out[k] = ADDRESS_FIELDS.has(k) ? `0x${x.toString(16)}` : String(x);
    else delete out[k];
  }
  for (const k of ['lineno', 'colno'] as const) {
    const x = out[k];
    if (x === undefined || (typeof x === 'number' && Number.isInteger(x))) continue;
    const n = typeof x === 'string' ? Number(x) : NaN;
    if (Number.isInteger(n)) out[k] = n;
    else delete out[k];
  }
  if (out.in_app !== undefined && typeof out.in_app !== 'boolean') delete out.in_app;
  return out as NormalizedFrame;
}

function stackFrames(stacktrace: unknown): NormalizedFrame[] {
  if (!isObject(stacktrace) || !Array.isArray(stacktrace.frames)) return [];
  const frames = stacktrace.frames as unknown[];
  const out: NormalizedFrame[] = new Array(frames.length);
  let n = 0;
  for (const f of frames) {
    const nf = normalizeFrame(f);
    if (nf) out[n++] = nf;
  }
  out.length = n;
  return out;
}

function exceptionList(v: unknown): unknown[] {
  if (Array.isArray(v)) return v;
  if (isObject(v)) {
    if (Array.isArray(v.values)) return v.values;
    // A single exception object (old clients).
    if (v.type !== undefined || v.value !== undefined || v.stacktrace !== undefined) return [v];
  }
  return [];
}

function threadList(v: unknown): Obj[] {
  const list: unknown[] = Array.isArray(v) ? v : isObject(v) && Array.isArray(v.values) ? v.values : [];
  return list.filter(isObject);
}

/**
 * `threads` for the event detail: the crashed thread first (a reader opens an event to
 * see the crash), the others in the order sent. Ids may be numbers or strings on the wire.
 */
export function normalizeThreads(v: unknown): NormalizedThread[] {
  const out = threadList(v).map(
    (t): NormalizedThread => ({
      id: text(t.id, 64),
      name: text(t.name, 256),
      crashed: t.crashed === true,
      current: t.current === true,
      main: t.main === true,
      state: text(t.state, 64),
      frames: stackFrames(t.stacktrace),
    }),
  );
  // Array.prototype.sort is stable: the others keep their order.
  return out.sort((a, b) => Number(b.crashed) - Number(a.crashed));
}

function valueText(v: unknown): string {
  if (typeof v === 'string') return clip(v, MAX_MESSAGE);
  if (v === undefined || v === null) return '';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return clip(JSON.stringify(v), MAX_MESSAGE);
}

function normalizeException(e: Obj): NormalizedException {
  const out: NormalizedException = {
    type: text(e.type, 256) ?? '',
    value: valueText(e.value),
    frames: stackFrames(e.stacktrace),
  };
  if (typeof e.module === 'string' && e.module !== '') out.module = e.module;
  if (isObject(e.mechanism)) out.mechanism = e.mechanism as NormalizedException['mechanism'];
  return out;
}

/**
 * The exception chain, oldest (cause) first. An exception without a stack takes
 * the stack of its thread (`thread_id`); the main exception falls back to the
 * crashed thread's stack (native and mobile SDKs put the stack there).
 */
function normalizeExceptions(ev: Obj): { exceptions: NormalizedException[]; main: NormalizedException | null } {
  const raw = exceptionList(ev.exception);
  if (raw.length === 0) return { exceptions: [], main: null };
  const exceptions: NormalizedException[] = [];
  const threadIds: unknown[] = [];
  for (const e of raw) {
    if (!isObject(e)) continue;
    exceptions.push(normalizeException(e));
    threadIds.push(e.thread_id);
  }
  const mainIdx = mainExceptionIndex(exceptions);
  let threads: Obj[] | null = null;
  for (let i = 0; i < exceptions.length; i++) {
    const e = exceptions[i];
    if (e.frames.length > 0) continue;
    const threadId = threadIds[i];
    if ((threadId === undefined || threadId === null) && i !== mainIdx) continue;
    threads ??= threadList(ev.threads);
    let thread: Obj | undefined;
    if (threadId !== undefined && threadId !== null) {
      const id = String(threadId);
      thread = threads.find((t) => t.id !== undefined && t.id !== null && String(t.id) === id);
    }
    if (!thread && i === mainIdx) thread = threads.find((t) => t.crashed === true);
    // An ANR names no crashed thread: its stack is the main thread's.
    if (!thread && i === mainIdx && isAnrException(e))
      thread = threads.find((t) => t.main === true || t.name === 'main' || t.name === 'com.apple.main-thread');
    if (thread) e.frames = stackFrames(thread.stacktrace);
  }
  return { exceptions, main: mainIdx >= 0 ? exceptions[mainIdx] : null };
}

// ---------------------------------------------------------------- message, title

const FORMAT_SPEC = /%[sdif%]/g;

function formatLogentry(message: string, params: unknown): string {
  if (!Array.isArray(params) || params.length === 0 || !message.includes('%')) return message;
  let i = 0;
  return message.replace(FORMAT_SPEC, (spec) => {
    if (spec === '%%') return '%';
    return i < params.length ? valueText(params[i++]) : spec;
  });
}

function messageOf(m: unknown): string {
  if (typeof m === 'string') return m;
  if (!isObject(m)) return '';
  if (typeof m.formatted === 'string' && m.formatted !== '') return m.formatted;
  if (typeof m.message === 'string') return formatLogentry(m.message, m.params);
  return '';
}

/** logentry (formatted, else message with params), else `message` (string or object). */
function eventMessage(ev: Obj): string {
  let m = messageOf(ev.logentry);
  if (m === '') m = messageOf(ev.message);
  return clip(m, MAX_MESSAGE);
}

function firstLine(s: string): string {
  const nl = s.search(/[\r\n]/);
  return (nl >= 0 ? s.slice(0, nl) : s).trim();
}

function makeTitle(main: NormalizedException | null, message: string): string {
  let t = '';
  if (main && main.mechanism?.synthetic !== true) {
    const first = firstLine(main.value);
    t = main.type && first ? `${main.type}: ${first}` : main.type || first;
  }
  if (t === '') t = firstLine(message);
  if (t === '' && main) t = firstLine(main.value);
  if (t === '') t = '<unlabeled event>';
  return clip(t, MAX_TITLE);
}

// ---------------------------------------------------------------- contexts, user

function findContext(contexts: Obj, kind: string): Obj | null {
  const c = contexts[kind];
  if (isObject(c)) return c;
  for (const k of Object.keys(contexts)) {
    const x = contexts[k];
    if (isObject(x) && x.type === kind) return x;
  }
  return null;
}

interface UserFacts {
  detail: Obj | null;
  id: string | null;
  email: string | null;
  username: string | null;
  ip: string | null;
}

function normalizeUser(u: unknown, clientIp: string | null): UserFacts {
  if (!isObject(u)) return { detail: null, id: null, email: null, username: null, ip: null };
  let detail = u;
  let ip: string | null;
  if (u.ip_address === '{{auto}}') {
    ip = clientIp;
    detail = { ...u, ip_address: clientIp };
  } else {
    ip = text(u.ip_address, 64);
  }
  return { detail, id: text(u.id, 256), email: text(u.email, 256), username: text(u.username, 256), ip };
}

/** Distinct-user identity: id, else email, else username, else ip; prefixed so different kinds never collide. */
function userKeyOf(u: UserFacts): string | null {
  if (u.id !== null) return `id:${u.id}`;
  if (u.email !== null) return `email:${u.email}`;
  if (u.username !== null) return `username:${u.username}`;
  if (u.ip !== null) return `ip:${u.ip}`;
  return null;
}

/**
 * Device id: the `device_id` tag (what apps set by hand), else contexts.device.id
 * (Android's installation id), else device.device_unique_identifier, else
 * contexts.app.device_app_hash (Apple). Never the user id: that is a person.
 */
function deviceIdOf(tags: Record<string, string>, device: Obj | null, contexts: Obj): string | null {
  return (
    text(tags.device_id, 256) ??
    text(device?.id, 256) ??
    text(device?.device_unique_identifier, 256) ??
    text(findContext(contexts, 'app')?.device_app_hash, 256)
  );
}

// ---------------------------------------------------------------- the event

/**
 * Normalises one event payload. Throws InvalidItemError when it is not a JSON
 * object (the item is skipped). `raw` is the payload bytes exactly as received.
 */
export function normalizeEvent(payload: Uint8Array, ctx: NormalizeContext): NormalizedEvent {
  return normalize(payload, ctx, false);
}

/**
 * normalizeEvent, or with `detailOnly` the event's detail. One body, so ingest and the
 * read API apply the same rules.
 */
function normalize(payload: Uint8Array, ctx: NormalizeContext, detailOnly: false): NormalizedEvent;
function normalize(payload: Uint8Array, ctx: NormalizeContext, detailOnly: true): EventDetailData;
function normalize(payload: Uint8Array, ctx: NormalizeContext, detailOnly: boolean): NormalizedEvent | EventDetailData {
  const parsedPayload = ctx.parsed ?? parsePayload(payload);
  const ev = parsedPayload.ev;
  let cleaned = parsedPayload.cleaned;
  if (!detailOnly) {
    if (ctx.scrub) {
      if (ctx.scrub(ev) !== null) cleaned = true;
    } else if (Object.hasOwn(ev, REPORT_KEY)) {
      // Only the server says what it filtered.
      delete ev[REPORT_KEY];
      cleaned = true;
    }
  }

  const eventId = cleanUuid(ev.event_id) ?? cleanUuid(ctx.envelopeEventId) ?? randomId();

  let timestamp = parseTimestamp(ev.timestamp) ?? ctx.sentAt ?? ctx.receivedAt;
  if (timestamp > ctx.receivedAt + MAX_EVENT_CLOCK_AHEAD_MS) timestamp = ctx.receivedAt;

  const level = normalizeLevel(ev.level);
  const platform = text(ev.platform, 64)?.toLowerCase() ?? 'other';
  const tags = normalizeTags(ev.tags);
  const contexts = withUserAgentContexts(isObject(ev.contexts) ? ev.contexts : {}, ev.request, platform);
  const user = normalizeUser(ev.user, ctx.clientIp);

  const device = findContext(contexts, 'device');
  let os = findContext(contexts, 'os');
  if (!os || (os.name === undefined && os.version === undefined)) os = findContext(contexts, 'client_os') ?? os;

  const { exceptions, main: originalMain } = normalizeExceptions(ev);
  let message = eventMessage(ev);
  const images = imagesOf(ev);
  const release = text(ev.release, 200) ?? '';
  const dist = text(ev.dist, 64) ?? '';

  // Symbols present at ingest: grouping, title, type and location use the symbolicated frames.
  let main = originalMain;
  let symbolicated: string | null = null;
  const threads = ctx.symbolicate && !detailOnly ? normalizeThreads(ev.threads) : [];
  if (ctx.symbolicate && !detailOnly && (exceptions.length > 0 || threads.some((t) => t.frames.length > 0))) {
    const out = ctx.symbolicate({ platform, release, dist, images, exceptions, threads });
    if (out) {
      symbolicated = encodeSymbolicated(out);
      const i = main ? exceptions.indexOf(main) : -1;
      if (main && i >= 0) main = { ...main, frames: out.frames[i] ?? main.frames, ...out.types[i] };
    }
  }

  const input = groupingInput(ev, { platform, main, message, images });
  const fingerprint = hashGroupingInput(input, ctx.md5Hex);
  const title = makeTitle(main, message);
  if (message === '' && main) message = main.value;

  const isCrash = level === 'fatal' || exceptions.some((e) => e.mechanism?.handled === false);
  const sdk = isObject(ev.sdk) ? ev.sdk : null;

  if (detailOnly) {
    return {
      message,
      exceptions,
      breadcrumbs: normalizeBreadcrumbs(ev.breadcrumbs),
      contexts,
      user: user.detail,
      request: isObject(ev.request) ? ev.request : null,
      extra: isObject(ev.extra) ? ev.extra : null,
      sdk,
      debug_images: images,
      threads: normalizeThreads(ev.threads),
      fingerprint_input: input,
      logger: text(ev.logger, 128),
      server_name: text(ev.server_name, 256),
      scrubbed: storedReport(ev),
    };
  }

  // Plain data only. The event waits for its batch's commit: a parsed tree kept alive that
  // long (a closure over `ev`) would be copied by young-generation GCs and promoted, and
  // an accessor (a lazy `detail` getter over `payload`) would keep every request body
  // until the next full collection. The detail is rebuilt from the stored raw payload when asked
  // for (eventDetailFromRaw).
  return {
    eventId,
    timestamp,
    level,
    platform,
    release,
    dist,
    environment: text(ev.environment, 64) ?? 'production',
    userId: user.id,
    userEmail: user.email,
    userUsername: user.username,
    userIp: user.ip,
    userKey: userKeyOf(user),
    deviceId: deviceIdOf(tags, device, contexts),
    deviceModel: text(device?.model, 128),
    osName: text(os?.name, 64),
    osVersion: text(os?.version, 64),
    screen: text(ev.transaction, 200) ?? '',
    title,
    message,
    errorType: main && main.mechanism?.synthetic !== true ? main.type : '',
    location: locationOf(main),
    isCrash,
    sdkName: text(sdk?.name, 128) ?? '',
    tags,
    fingerprint,
    // Cleaned payloads are stored as cleaned, so the detail rebuilt from them is the same.
    raw: cleaned ? utf8Encoder.encode(JSON.stringify(ev)) : payload,
    ...(symbolicated !== null ? { symbolicated } : {}),
  };
}

/**
 * The detail of a stored event, rebuilt from its raw payload by the same rules ingest
 * applied. `clientIp` is the event's stored user IP, which is what `{{auto}}` resolved to.
 */
export function eventDetailFromRaw(raw: Uint8Array, clientIp: string | null): EventDetailData {
  // Only the detail is wanted: the receive time and the fingerprint hash do not enter it.
  return normalize(raw, { receivedAt: 0, sentAt: null, envelopeEventId: null, clientIp, md5Hex: () => '' }, true);
}
