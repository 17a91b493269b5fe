// Input hygiene for JSON that ingest stores (docs/ingest-normalisation.md "Input hygiene"): text is kept
// as well-formed UTF-8 (NUL and lone surrogates become U+FFFD, identically on SQLite,
// which would store a lone surrogate as invalid UTF-8, and PostgreSQL, which refuses
// NUL in text), and nesting deeper than MAX_JSON_DEPTH is cut there, so every stored
// event can be serialised and read back. Nothing here recurses: the depth of the input
// never decides the depth of the call stack.
import { MAX_JSON_DEPTH } from '../limits.js';

/** What a container below MAX_JSON_DEPTH is replaced with. */
export const DEPTH_LIMIT_MARK = '[depth limit]';

const QUOTE = 0x22;
const LOWER_U = 0x75;

function isHexSurrogateLead(json: string, at: number): boolean {
  // \uD800-\uDFFF: "d" then 8-f.
  const d = json.charCodeAt(at) | 0x20;
  if (d !== 0x64) return false;
  const n = json.charCodeAt(at + 1) | 0x20;
  return (n >= 0x38 && n <= 0x39) || (n >= 0x61 && n <= 0x66);
}

/** The text of a NUL or surrogate escape; a match may still be an escaped backslash (`\\u0000`). */
const SUSPECT_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/** Whether `json` has at most `max` of `{` and `[` (then it cannot nest deeper than `max`). */
function openersAtMost(json: string, max: number): boolean {
  let n = 0;
  for (const opener of ['{', '[']) {
    for (let i = json.indexOf(opener); i >= 0; i = json.indexOf(opener, i + 1)) if (++n > max) return false;
  }
  return true;
}

/**
 * Whether parsing `json` (valid JSON) may give something `cleanJsonValue` changes:
 * nesting deeper than MAX_JSON_DEPTH, or a `\u0000` or surrogate escape (a surrogate
 * pair is well-formed, but telling it from a lone one is left to the cleaner). `value` is
 * `json` already parsed, when the caller has it. A regular expression rules escapes out
 * for almost every payload; depth is then decided by a count of `{` and `[`, else by a
 * walk of the parsed value's containers (a character scan of the text cost about a third
 * of ingest's main thread on 30-frame events).
 */
export function jsonNeedsCleaning(json: string, value?: unknown): boolean {
  // Most payloads have no `\u` escape at all; `includes` rules that out at a twentieth of
  // the expression's cost (2.2 → 0.1 µs on the benchmark's events).
  if (json.includes('\\u') && SUSPECT_ESCAPE.test(json)) return scanNeedsCleaning(json);
  if (openersAtMost(json, MAX_JSON_DEPTH)) return false;
  return nestedDeeperThan(value === undefined ? JSON.parse(json) : value, MAX_JSON_DEPTH);
}

/**
 * Whether a parsed JSON value holds a container deeper than `max` (the value itself is
 * level 1). Iterative; objects are walked with for-in (parsed JSON has only own, plain,
 * enumerable properties, `__proto__` included), without the array Object.values made
 * for each: 5.8 → 1.5 µs on the benchmark's events with more than `max` brackets.
 */
export function nestedDeeperThan(root: unknown, max: number): boolean {
  if (typeof root !== 'object' || root === null) return false;
  if (max < 1) return true;
  const containers: object[] = [root];
  const depths: number[] = [1];
  while (containers.length > 0) {
    const container = containers.pop()!;
    const depth = depths.pop()!;
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const child: unknown = container[i];
        if (typeof child === 'object' && child !== null) {
          if (depth >= max) return true;
          containers.push(child);
          depths.push(depth + 1);
        }
      }
    } else {
      const from = container as Record<string, unknown>;
      for (const key in from) {
        const child = from[key];
        if (typeof child === 'object' && child !== null) {
          if (depth >= max) return true;
          containers.push(child);
          depths.push(depth + 1);
        }
      }
    }
  }
  return false;
}

function scanNeedsCleaning(json: string): boolean {
  let depth = 0;
  let nextBackslash = json.indexOf('\\');
  const n = json.length;
  for (let i = 0; i < n; i++) {
    const c = json.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string, looking only at its escapes.
      let from = i + 1;
      for (;;) {
        const quote = json.indexOf('"', from);
        if (quote < 0) return false;
        if (nextBackslash >= 0 && nextBackslash < from) nextBackslash = json.indexOf('\\', from);
        if (nextBackslash < 0 || nextBackslash > quote) {
          i = quote;
          break;
        }
        const b = nextBackslash;
        if (json.charCodeAt(b + 1) === LOWER_U) {
          if (json.startsWith('0000', b + 2) || isHexSurrogateLead(json, b + 2)) return true;
        }
        from = b + 2;
        nextBackslash = json.indexOf('\\', from);
      }
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > MAX_JSON_DEPTH) return true;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return false;
}

type WellFormed = string & { isWellFormed(): boolean; toWellFormed(): string };

/** The string with NUL and lone surrogates replaced by U+FFFD. */
export function cleanText(s: string): string {
  let out = s.includes('\0') ? s.replaceAll('\0', '\uFFFD') : s;
  if (!(out as WellFormed).isWellFormed()) out = (out as WellFormed).toWellFormed();
  return out;
}

/** Whether `s` holds NUL or a lone surrogate. */
export function hasUnsafeText(s: string): boolean {
  return s.includes('\0') || !(s as WellFormed).isWellFormed();
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  // `__proto__` from JSON.parse is an own property; plain assignment would set the prototype.
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/**
 * A copy of a parsed JSON value with every string and key cleaned (cleanText) and every
 * container deeper than MAX_JSON_DEPTH replaced by DEPTH_LIMIT_MARK. Iterative.
 */
export function cleanJsonValue(root: unknown): unknown {
  return cleanJson(root).value;
}

/** cleanJsonValue, and whether anything was replaced or cut. */
function cleanJson(root: unknown): CleanParse {
  let cleaned = false;
  const text = (s: string): string => {
    const out = cleanText(s);
    if (out !== s) cleaned = true;
    return out;
  };
  if (typeof root === 'string') return { value: text(root), cleaned };
  if (typeof root !== 'object' || root === null) return { value: root, cleaned };
  const top: unknown = Array.isArray(root) ? [] : {};
  const stack: Array<{ src: object; dst: object; depth: number }> = [{ src: root, dst: top as object, depth: 1 }];
  while (stack.length > 0) {
    const { src, dst, depth } = stack.pop()!;
    const copy = (value: unknown): unknown => {
      if (typeof value === 'string') return text(value);
      if (typeof value !== 'object' || value === null) return value;
      if (depth + 1 > MAX_JSON_DEPTH) {
        cleaned = true;
        return DEPTH_LIMIT_MARK;
      }
      const child: object = Array.isArray(value) ? [] : {};
      stack.push({ src: value, dst: child, depth: depth + 1 });
      return child;
    };
    if (Array.isArray(src)) {
      const out = dst as unknown[];
      for (let i = 0; i < src.length; i++) out.push(copy(src[i]));
    } else {
      const out = dst as Record<string, unknown>;
      const from = src as Record<string, unknown>;
      for (const key of Object.keys(from)) setOwn(out, text(key), copy(from[key]));
    }
  }
  return { value: top, cleaned };
}

/** A parsed JSON text made safe to store, and whether it differs from what was sent. */
export interface CleanParse {
  value: unknown;
  cleaned: boolean;
}

/**
 * JSON.parse, then the hygiene rules when the text needs them (jsonNeedsCleaning).
 * Throws what JSON.parse throws.
 */
export function parseCleanJson(json: string): CleanParse {
  const value: unknown = JSON.parse(json);
  if (!jsonNeedsCleaning(json, value)) return { value, cleaned: false };
  // A payload whose escapes are all well-formed pairs keeps its parsed value (and its bytes).
  const out = cleanJson(value);
  return out.cleaned ? out : { value, cleaned: false };
}

/**
 * Why parsed JSON (a management body, an artifact bundle's manifest: `what` names it)
 * cannot be stored as sent, or null: a string or key with NUL or a lone surrogate, or
 * nesting deeper than MAX_JSON_DEPTH. Iterative.
 */
export function unsafeJsonProblem(root: unknown, what = 'request body'): string | null {
  const stack: Array<[unknown, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value === 'string') {
      if (hasUnsafeText(value)) return `${what} holds a NUL character or a lone surrogate, which is not allowed`;
    } else if (typeof value === 'object' && value !== null) {
      if (depth >= MAX_JSON_DEPTH) return `${what} is nested deeper than ${MAX_JSON_DEPTH} levels`;
      for (const key of Object.keys(value)) {
        if (hasUnsafeText(key)) return `${what} holds a NUL character or a lone surrogate, which is not allowed`;
        stack.push([(value as Record<string, unknown>)[key], depth + 1]);
      }
    }
  }
  return null;
}
