// Pure formatting of event data for the event view (no markup, no database): the raw
// stack trace in the platform's own form, a frame's context lines with their numbers,
// runs of library frames to collapse, readable byte sizes, breadcrumb data as
// key/value pairs, and a title cut at ingest shown with an ellipsis. See docs/api.md
// "Event detail" for the fields these read.
import type { NormalizedFrame } from '../ingest/types.js';

/** One exception of the chain as the event detail lists it (oldest first). */
export interface ChainException {
  type: string;
  value: string;
  module?: string;
  frames: NormalizedFrame[];
}

/** How a platform prints a stack trace. */
export type StackStyle = 'jvm' | 'python' | 'javascript';

/** The trace form of an event's platform: the JVM's, Python's, or JavaScript's (also for every other platform). */
export function stackStyle(platform: string): StackStyle {
  const p = platform.toLowerCase();
  if (p === 'java' || p === 'kotlin' || p === 'scala' || p === 'groovy' || p === 'clojure') return 'jvm';
  if (p === 'python') return 'python';
  return 'javascript';
}

/** The first line of a value (a trace prints one line per exception head). */
function firstLine(s: string): string {
  const nl = s.search(/[\r\n]/);
  return nl >= 0 ? s.slice(0, nl) : s;
}

function head(e: ChainException, qualified: boolean): string {
  const type = qualified && e.module && e.type && !e.type.includes('.') ? `${e.module}.${e.type}` : e.type;
  const value = firstLine(e.value);
  if (type && value) return `${type}: ${value}`;
  return type || value || 'Error';
}

function jvmFrame(f: NormalizedFrame): string {
  const fn = f.function ?? '<unknown>';
  const method = f.module ? `${f.module}.${fn}` : fn;
  const file = f.filename ?? 'Unknown Source';
  return `\tat ${method}(${f.lineno !== undefined ? `${file}:${f.lineno}` : file})`;
}

function pythonFrame(f: NormalizedFrame): string {
  const file = f.abs_path ?? f.filename ?? f.module ?? '<unknown>';
  const line = `  File "${file}", line ${f.lineno ?? '?'}, in ${f.function ?? '<module>'}`;
  const code = f.context_line?.trim();
  return code ? `${line}\n    ${code}` : line;
}

function javascriptFrame(f: NormalizedFrame): string {
  const file = f.abs_path ?? f.filename ?? f.module ?? '<anonymous>';
  const where = [file, f.lineno, f.lineno !== undefined ? f.colno : undefined].filter((x) => x !== undefined).join(':');
  const fn = f.function && f.function !== '?' ? f.function : null;
  return fn ? `    at ${fn} (${where})` : `    at ${where}`;
}

/**
 * The chain as the platform prints it. JVM and JavaScript: the outermost exception
 * first, innermost call first, then each cause (`Caused by: …`). Python: the cause
 * first, oldest call first, each exception's head after its frames, as a traceback
 * reads. `exceptions` and their frames are in the detail's order (oldest first).
 */
export function rawStackTrace(platform: string, exceptions: ChainException[]): string {
  const style = stackStyle(platform);
  if (style === 'python') {
    return exceptions
      .map((e) => ['Traceback (most recent call last):', ...e.frames.map(pythonFrame), head(e, false)].join('\n'))
      .join('\n\nThe above exception was the direct cause of the following exception:\n\n');
  }
  const frame = style === 'jvm' ? jvmFrame : javascriptFrame;
  return [...exceptions]
    .reverse()
    .map((e, i) =>
      [`${i === 0 ? '' : 'Caused by: '}${head(e, style === 'jvm')}`, ...[...e.frames].reverse().map(frame)].join('\n'),
    )
    .join('\n');
}

/** One line of source around a frame; `current` is the frame's own line. */
export interface ContextLine {
  lineno: number | null;
  text: string;
  current: boolean;
}

/** Lines shown on each side of a frame's line (what SDKs send). */
export const CONTEXT_LINES = 5;

function stringList(v: unknown): string[] {
  return Array.isArray(v)
    ? v.map((x) => (typeof x === 'string' ? x : x === null || x === undefined ? '' : String(x)))
    : [];
}

/**
 * The frame's source lines (pre_context, context_line, post_context), at most five on
 * each side, numbered from the frame's `lineno` (null numbers without one); empty when
 * the SDK sent no context line.
 */
export function contextLines(f: NormalizedFrame): ContextLine[] {
  if (typeof f.context_line !== 'string') return [];
  const pre = stringList(f.pre_context).slice(-CONTEXT_LINES);
  const post = stringList(f.post_context).slice(0, CONTEXT_LINES);
  const at = typeof f.lineno === 'number' && f.lineno > 0 ? f.lineno : null;
  const number = (offset: number) => (at === null || at + offset < 1 ? null : at + offset);
  return [
    ...pre.map((text, i) => ({ lineno: number(i - pre.length), text, current: false })),
    { lineno: at, text: f.context_line, current: true },
    ...post.map((text, i) => ({ lineno: number(i + 1), text, current: false })),
  ];
}

/** A frame shown as it is, or a run of library frames collapsed behind an expander. */
export type FrameRun = { kind: 'frame'; frame: NormalizedFrame } | { kind: 'collapsed'; frames: NormalizedFrame[] };

/**
 * Frames (in display order) with each run of non-app frames collapsed. When no frame is
 * marked in-app there is nothing to single out, and every frame is shown.
 */
export function frameRuns(frames: NormalizedFrame[]): FrameRun[] {
  if (!frames.some((f) => f.in_app === true)) return frames.map((frame) => ({ kind: 'frame', frame }));
  const out: FrameRun[] = [];
  for (const frame of frames) {
    if (frame.in_app === true) {
      out.push({ kind: 'frame', frame });
      continue;
    }
    const last = out[out.length - 1];
    if (last?.kind === 'collapsed') last.frames.push(frame);
    else out.push({ kind: 'collapsed', frames: [frame] });
  }
  return out;
}

const UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** `1.5 KiB`, `3.7 GiB`, `512 bytes`: binary units, three significant digits at most. */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  const sign = n < 0 ? '-' : '';
  let v = Math.abs(n);
  let unit = 0;
  while (v >= 1024 && unit < UNITS.length - 1) {
    v /= 1024;
    unit++;
  }
  if (unit === 0) return `${sign}${v} ${v === 1 ? 'byte' : 'bytes'}`;
  const digits = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return `${sign}${Number(v.toFixed(digits))} ${UNITS[unit]}`;
}

/** Context keys the SDKs send in bytes (device and app contexts). */
const BYTE_KEYS = new Set([
  'memory_size',
  'free_memory',
  'usable_memory',
  'storage_size',
  'free_storage',
  'external_storage_size',
  'external_free_storage',
  'app_memory',
  'total_memory',
  'used_memory',
]);

/** Whether a context field holds a byte count, so it reads as `3.7 GiB`. */
export function isByteField(key: string, value: unknown): value is number {
  return BYTE_KEYS.has(key) && typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

/** A value of event data as one line of text: strings as they are, the rest as JSON. */
export function valueText(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

/** Whether a field has nothing to show (hidden rather than shown empty). */
export function isEmptyValue(value: unknown): boolean {
  if (value === null || value === undefined || value === '') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.keys(value).length === 0;
  return false;
}

/** An object's fields worth showing, in the order sent: empty ones dropped. */
export function shownEntries(value: unknown): [string, unknown][] {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return [];
  return Object.entries(value as Record<string, unknown>).filter(([, v]) => !isEmptyValue(v));
}

/**
 * A breadcrumb's data as key/value lines. An HTTP breadcrumb reads as the request line
 * (`GET https://… → 500`) before its other fields; a key whose value is an object shows
 * it as JSON.
 */
export function breadcrumbData(type: unknown, data: unknown): { summary: string | null; entries: [string, string][] } {
  const entries = shownEntries(data);
  if (type === 'http' && data && typeof data === 'object') {
    const d = data as Record<string, unknown>;
    if (typeof d.url === 'string') {
      const method = typeof d.method === 'string' ? `${d.method} ` : '';
      const status =
        typeof d.status_code === 'number' || typeof d.status_code === 'string' ? ` → ${d.status_code}` : '';
      const rest = entries.filter(([k]) => k !== 'url' && k !== 'method' && k !== 'status_code');
      return { summary: `${method}${d.url}${status}`, entries: rest.map(([k, v]) => [k, valueText(v)]) };
    }
  }
  return { summary: null, entries: entries.map(([k, v]) => [k, valueText(v)]) };
}

/**
 * The title as stored (cut at ingest to a maximum length) with an ellipsis when it was
 * cut, and the whole title when one of `candidates` (what the title was made from)
 * begins with it and goes on.
 */
export function titleDisplay(
  title: string,
  candidates: string[],
  maxLength: number,
): { text: string; full: string | null } {
  if (title.length < maxLength) return { text: title, full: null };
  const full = candidates.map(firstLine).find((c) => c.length > title.length && c.startsWith(title));
  return full ? { text: `${title}…`, full } : { text: title, full: null };
}
