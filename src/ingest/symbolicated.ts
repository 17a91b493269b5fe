// The stored form of an event's symbolication (the `symbolicated` column, docs/api.md
// "Event detail"): a JSON array with one entry per exception of the chain, in the
// chain's order. An entry is the exception's symbolicated frames, or null when its
// frames did not change; when symbolication also remapped the exception's type
// (ProGuard), the entry is `{"frames": …, "type": …, "module": …}`, so the event detail
// shows the original type and not only the issue title. When the stacks of `threads` changed
// too, one more entry follows the chain: `{"threads": […]}`, one frame list or null per
// thread in the detail's order (crashed first).
import type { NormalizedFrame, SymbolicationOutput } from './types.js';

/** One exception's symbolication as read back. */
export interface StoredSymbolication {
  frames: NormalizedFrame[] | null;
  type?: string;
  module?: string;
}

/** The JSON stored for a symbolication result. */
export function encodeSymbolicated(out: SymbolicationOutput): string {
  const entries: unknown[] = out.frames.map((frames, i) => {
    const t = out.types[i];
    if (!t) return frames;
    return t.module !== undefined ? { frames, type: t.type, module: t.module } : { frames, type: t.type };
  });
  if (out.threads?.some((f) => f !== null)) entries.push({ threads: out.threads });
  return JSON.stringify(entries);
}

/** The trailing `{"threads": …}` entry of a stored value with `exceptionCount` exceptions, if any. */
function threadsEntry(value: unknown, exceptionCount: number): unknown[] | null {
  if (!Array.isArray(value) || value.length !== exceptionCount + 1) return null;
  const last: unknown = value[exceptionCount];
  return last !== null && typeof last === 'object' && Array.isArray((last as Record<string, unknown>).threads)
    ? ((last as Record<string, unknown>).threads as unknown[])
    : null;
}

/** The stored symbolicated frames of each thread (null where unchanged); null when none were stored. */
export function decodeSymbolicatedThreads(value: unknown, exceptionCount: number): (NormalizedFrame[] | null)[] | null {
  const threads = threadsEntry(value, exceptionCount);
  return threads ? threads.map((f) => (Array.isArray(f) ? (f as NormalizedFrame[]) : null)) : null;
}

/**
 * The stored symbolication of each of `exceptionCount` exceptions; null when the value
 * is not a list of that length (a row changed by hand, or a chain that no longer matches).
 */
export function decodeSymbolicated(value: unknown, exceptionCount: number): StoredSymbolication[] | null {
  if (!Array.isArray(value)) return null;
  if (value.length !== exceptionCount && !threadsEntry(value, exceptionCount)) return null;
  return value.slice(0, exceptionCount).map((entry: unknown): StoredSymbolication => {
    if (Array.isArray(entry)) return { frames: entry as NormalizedFrame[] };
    if (entry === null || typeof entry !== 'object') return { frames: null };
    const e = entry as Record<string, unknown>;
    const out: StoredSymbolication = { frames: Array.isArray(e.frames) ? (e.frames as NormalizedFrame[]) : null };
    if (typeof e.type === 'string') out.type = e.type;
    if (typeof e.module === 'string') out.module = e.module;
    return out;
  });
}
