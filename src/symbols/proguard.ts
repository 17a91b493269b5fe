// ProGuard / R8 mapping files (`mapping.txt`): checking one while it is uploaded,
// parsing it for lookups, and remapping JVM frames and exception types.
//
// Format, one entry per line:
//   original.Class -> obfuscated.Class:                    a class
//   # {"id":"sourceFile","fileName":"Foo.kt"}              R8 metadata of the class above
//       int field -> a                                     a field (ignored)
//       12:15:void method(int):40:43 -> a                  a method, obfuscated lines 12-15 = original 40-43
//       16:16:void callee():50:50 -> b                     consecutive lines with the same
//       16:16:void caller():60 -> b                        obfuscated range: an inline chain, innermost first
//       void other.Class.moved() -> c                      a method inlined from / moved out of another class
// Lines starting with `#` are comments (R8 puts JSON metadata there).
//
// A stored mapping is kept in memory as its bytes plus an index of class line offsets;
// a class's members are parsed the first time a frame of that class is remapped, so
// loading a 30 MB mapping is one scan for class lines, not a parse of every method.
import { sha1 } from '@noble/hashes/legacy.js';
import type { NormalizedFrame } from '../ingest/types.js';
import {
  SymbolInputError,
  type EventView,
  type FileInspector,
  type LoadedSymbols,
  type SymbolKindHandler,
  type SymbolLookup,
  type SymbolicationState,
} from './kinds.js';
import type { SymbolFileRow } from './storage.js';

// ---------------------------------------------------------------- debug ids

function uuidBytes(uuid: string): Uint8Array {
  const hex = uuid.replace(/-/g, '');
  const out = new Uint8Array(16);
  for (let i = 0; i < 16; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function uuidText(b: Uint8Array): string {
  const hex = [...b.subarray(0, 16)].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** An incremental UUID v5 (SHA-1 of namespace + name). */
export function uuid5Hasher(namespace: string) {
  const h = sha1.create();
  h.update(uuidBytes(namespace));
  return {
    update(bytes: Uint8Array) {
      h.update(bytes);
    },
    digest(): string {
      const d = h.digest();
      d[6] = (d[6] & 0x0f) | 0x50;
      d[8] = (d[8] & 0x3f) | 0x80;
      return uuidText(d);
    },
  };
}

const NAMESPACE_DNS = '6ba7b810-9dad-11d1-80b4-00c04fd430c8';

/** uuid5(DNS, "guardsquare.com"): the namespace of ProGuard debug ids (what sentry-cli computes). */
export const PROGUARD_NAMESPACE = (() => {
  const h = uuid5Hasher(NAMESPACE_DNS);
  h.update(new TextEncoder().encode('guardsquare.com'));
  return h.digest();
})();

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UUID_IN_NAME =
  /(?:^|[/\\])(?:proguard[/\\])?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})(?:\.txt)?$/i;

/** The debug id an uploader put in the name (`proguard/<uuid>.txt`), else null. */
export function debugIdFromName(name: string): string | null {
  const m = UUID_IN_NAME.exec(name);
  return m ? m[1].toLowerCase() : null;
}

export function isUuid(s: string): boolean {
  return UUID.test(s);
}

// ---------------------------------------------------------------- line grammar

const CLASS_LINE = /^(\S+)\s+->\s+(\S+?):\s*$/;
const METHOD_LINE = /^\s+(?:(\d+):(\d+):)?(\S+)\s+([^\s(]+)\(([^)]*)\)(?::(\d+)(?::(\d+))?)?\s+->\s+(\S+)\s*$/;
const FIELD_LINE = /^\s+(\S+)\s+([^\s(]+)\s+->\s+(\S+)\s*$/;

export type MappingLine =
  | { type: 'blank' }
  | { type: 'comment'; text: string }
  | { type: 'class'; original: string; obfuscated: string }
  | { type: 'field' }
  | { type: 'method'; entry: MethodEntry; obfuscated: string };

export interface MethodEntry {
  /** Obfuscated line range; 0/0 when the line has none. */
  start: number;
  end: number;
  /** Original line range; 0 when absent (`origEnd` 0 = only a start was given). */
  origStart: number;
  origEnd: number;
  /** The original method name, unqualified. */
  name: string;
  /** The original class when the name was qualified (inlined from another class), else null. */
  className: string | null;
}

/** One line of a mapping; null when it does not parse. */
export function parseMappingLine(line: string): MappingLine | null {
  if (line.trim() === '') return { type: 'blank' };
  const trimmed = line.trimStart();
  if (trimmed.startsWith('#')) return { type: 'comment', text: trimmed.slice(1).trim() };
  if (line[0] !== ' ' && line[0] !== '\t') {
    const m = CLASS_LINE.exec(line);
    return m ? { type: 'class', original: m[1], obfuscated: m[2] } : null;
  }
  const m = METHOD_LINE.exec(line);
  if (m) {
    const qualified = m[4];
    const dot = qualified.lastIndexOf('.');
    return {
      type: 'method',
      obfuscated: m[8],
      entry: {
        start: m[1] ? Number(m[1]) : 0,
        end: m[2] ? Number(m[2]) : 0,
        origStart: m[6] ? Number(m[6]) : 0,
        origEnd: m[7] ? Number(m[7]) : 0,
        name: dot >= 0 ? qualified.slice(dot + 1) : qualified,
        className: dot >= 0 ? qualified.slice(0, dot) : null,
      },
    };
  }
  return FIELD_LINE.test(line) ? { type: 'field' } : null;
}

// ---------------------------------------------------------------- upload check

/** Longest line accepted (R8 metadata lines can be long; a binary file has none this long). */
const MAX_LINE = 64 * 1024;

/**
 * Checks a mapping line by line as it streams in (never holding more than a line) and
 * computes its debug id: the one in the name (`proguard/<uuid>.txt`), else uuid5 of
 * the bytes in the ProGuard namespace (what sentry-cli uses).
 */
export function inspectProguard(name: string): FileInspector {
  const fromName = debugIdFromName(name);
  const hasher = fromName ? null : uuid5Hasher(PROGUARD_NAMESPACE);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let pending = '';
  let lineNo = 0;
  let classes = 0;
  let sawClass = false;
  const check = (line: string) => {
    lineNo++;
    const parsed = parseMappingLine(line.endsWith('\r') ? line.slice(0, -1) : line);
    if (!parsed)
      throw new SymbolInputError(
        `${name} is not a ProGuard mapping: line ${lineNo} does not parse: ${JSON.stringify(line.slice(0, 120))}`,
      );
    if (parsed.type === 'class') {
      classes++;
      sawClass = true;
    } else if ((parsed.type === 'method' || parsed.type === 'field') && !sawClass) {
      throw new SymbolInputError(`${name} is not a ProGuard mapping: line ${lineNo} is a member before any class`);
    }
  };
  const feed = (text: string) => {
    pending += text;
    let nl: number;
    let from = 0;
    while ((nl = pending.indexOf('\n', from)) >= 0) {
      check(pending.slice(from, nl));
      from = nl + 1;
    }
    pending = pending.slice(from);
    if (pending.length > MAX_LINE)
      throw new SymbolInputError(
        `${name} is not a ProGuard mapping: line ${lineNo + 1} is longer than ${MAX_LINE} characters`,
      );
  };
  return {
    push(chunk) {
      hasher?.update(chunk);
      try {
        feed(decoder.decode(chunk, { stream: true }));
      } catch (err) {
        if (err instanceof TypeError)
          throw new SymbolInputError(`${name} is not a ProGuard mapping: it is not UTF-8 text`);
        throw err;
      }
    },
    finish() {
      try {
        feed(decoder.decode());
      } catch (err) {
        if (err instanceof TypeError)
          throw new SymbolInputError(`${name} is not a ProGuard mapping: it is not UTF-8 text`);
        throw err;
      }
      if (pending !== '') check(pending);
      if (classes === 0)
        throw new SymbolInputError(
          `${name} is not a ProGuard mapping: it names no class (expected lines like "com.example.Foo -> a.a:")`,
        );
      return [{ debugId: fromName ?? hasher!.digest(), meta: { classes } }];
    },
  };
}

// ---------------------------------------------------------------- the loaded mapping

interface ClassRecord {
  original: string;
  obfuscated: string;
  /** Byte range of the class's lines (after its class line) in the file. */
  from: number;
  to: number;
  sourceFile: string | null;
  /** Obfuscated method name → entries in file order; parsed on first use. */
  methods: Map<string, MethodEntry[]> | null;
}

const SOURCE_FILE_META = /"id"\s*:\s*"sourceFile"/;

export class ProguardMapping implements LoadedSymbols {
  readonly memoryBytes: number;
  private readonly byObfuscated = new Map<string, ClassRecord>();
  private readonly byOriginal = new Map<string, ClassRecord>();
  private readonly decoder = new TextDecoder();

  constructor(private readonly bytes: Uint8Array) {
    // One pass over the bytes for class lines (lines not starting with space, tab or #).
    let lineStart = 0;
    let current: ClassRecord | null = null;
    const n = bytes.length;
    while (lineStart < n) {
      let lineEnd = bytes.indexOf(0x0a, lineStart);
      if (lineEnd < 0) lineEnd = n;
      const first = bytes[lineStart];
      if (first !== 0x20 && first !== 0x09 && first !== 0x23 && first !== 0x0a && first !== 0x0d) {
        const m = CLASS_LINE.exec(this.decoder.decode(bytes.subarray(lineStart, lineEnd)).replace(/\r$/, ''));
        if (current) current.to = lineStart;
        current = null;
        if (m) {
          current = { original: m[1], obfuscated: m[2], from: lineEnd + 1, to: n, sourceFile: null, methods: null };
          this.byObfuscated.set(m[2], current);
          this.byOriginal.set(m[1], current);
        }
      }
      lineStart = lineEnd + 1;
    }
    // The bytes, the class index, and room for the members parsed as frames ask for them
    // (a parsed method entry takes about as much as its line of text).
    this.memoryBytes = bytes.byteLength * 2 + this.byObfuscated.size * 200;
  }

  get classCount(): number {
    return this.byObfuscated.size;
  }

  private members(c: ClassRecord): Map<string, MethodEntry[]> {
    if (c.methods) return c.methods;
    const methods = new Map<string, MethodEntry[]>();
    const text = this.decoder.decode(this.bytes.subarray(c.from, Math.max(c.from, c.to)));
    for (const raw of text.split('\n')) {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      const parsed = parseMappingLine(line);
      if (!parsed) continue;
      if (parsed.type === 'comment') {
        if (SOURCE_FILE_META.test(parsed.text)) {
          try {
            const meta = JSON.parse(parsed.text) as { fileName?: unknown };
            if (typeof meta.fileName === 'string') c.sourceFile = meta.fileName;
          } catch {
            // Metadata that is not JSON is ignored, as R8's retrace does.
          }
        }
      } else if (parsed.type === 'method') {
        let list = methods.get(parsed.obfuscated);
        if (!list) methods.set(parsed.obfuscated, (list = []));
        list.push(parsed.entry);
      }
    }
    c.methods = methods;
    return methods;
  }

  /** The original name of an obfuscated class, or null when the mapping does not know it. */
  originalClass(obfuscated: string): string | null {
    return this.byObfuscated.get(obfuscated)?.original ?? null;
  }

  /** The source file of an original class: R8's `sourceFile` metadata, else `Outer.java`. */
  sourceFileOf(originalClass: string): string {
    const c = this.byOriginal.get(originalClass);
    if (c) {
      this.members(c);
      if (c.sourceFile) return c.sourceFile;
    }
    const simple = originalClass.slice(originalClass.lastIndexOf('.') + 1);
    const outer = simple.split('$')[0];
    return `${outer || simple}.java`;
  }

  /**
   * The original frames of one obfuscated frame, innermost (inlined) first; null when the
   * class is unknown. `line` 0 means the frame had none.
   */
  remapFrame(
    className: string,
    method: string,
    line: number,
  ): { className: string; method: string; line: number }[] | null {
    const c = this.byObfuscated.get(className);
    if (!c) return null;
    const entries = this.members(c).get(method);
    if (!entries || entries.length === 0) {
      // The class is known but not the method (kept name, or a synthetic one): the class is still remapped.
      return [{ className: c.original, method, line }];
    }
    const resolve = (e: MethodEntry, at: number) => ({
      className: e.className ?? c.original,
      method: e.name,
      line: originalLine(e, at),
    });
    if (line > 0) {
      const ranged = entries.filter((e) => e.end > 0 && e.start <= line && line <= e.end);
      if (ranged.length > 0) return ranged.map((e) => resolve(e, line));
      const plain = entries.filter((e) => e.end === 0);
      if (plain.length > 0) return alternatives(plain).map((e) => resolve(e, line));
    }
    // No line to choose by: the outer method of each inline chain, each distinct method once
    // (several left = ambiguous: every alternative is returned, as symbolicator does).
    return alternatives(outermost(entries)).map((e) => resolve(e, line));
  }
}

/** The original line of an entry for an obfuscated line `at` (0 = unknown). */
function originalLine(e: MethodEntry, at: number): number {
  if (e.origStart > 0) {
    if (
      e.end > 0 &&
      at >= e.start &&
      at <= e.end &&
      (e.origEnd === 0 ? e.start === e.end : e.origEnd - e.origStart === e.end - e.start)
    ) {
      return e.origStart + (at - e.start);
    }
    return e.origStart;
  }
  // Without an original range (`12:15:void m() -> a`) the lines did not change.
  return at;
}

/** The last entry of each run with the same obfuscated range (an inline chain's outer method). */
function outermost(entries: MethodEntry[]): MethodEntry[] {
  const out: MethodEntry[] = [];
  for (let i = 0; i < entries.length; i++) {
    const next = entries[i + 1];
    const sameChain = next && entries[i].end > 0 && next.start === entries[i].start && next.end === entries[i].end;
    if (!sameChain) out.push(entries[i]);
  }
  return out;
}

/** One entry per distinct original method (class + name), first seen first. */
function alternatives(entries: MethodEntry[]): MethodEntry[] {
  const seen = new Set<string>();
  const out: MethodEntry[] = [];
  for (const e of entries) {
    const key = `${e.className ?? ''}|${e.name}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(e);
  }
  return out;
}

// ---------------------------------------------------------------- frames and exceptions

/** A remapped copy of a JVM frame, one per original frame (inline chain innermost first). */
export function remapJavaFrame(mapping: ProguardMapping, frame: NormalizedFrame): NormalizedFrame[] | null {
  const module = typeof frame.module === 'string' ? frame.module : '';
  const fn = typeof frame.function === 'string' ? frame.function : '';
  if (module === '' || fn === '') return null;
  const line = typeof frame.lineno === 'number' && frame.lineno > 0 ? frame.lineno : 0;
  const mapped = mapping.remapFrame(module, fn, line);
  if (!mapped) return null;
  return mapped.map((m) => {
    const file = mapping.sourceFileOf(m.className);
    const out: NormalizedFrame = { ...frame, module: m.className, function: m.method, filename: file, abs_path: file };
    if (m.line > 0) out.lineno = m.line;
    else delete out.lineno;
    return out;
  });
}

/** The original exception type: `module` + `type` (Java SDK) or a qualified `type`. */
export function remapExceptionType(
  mapping: ProguardMapping,
  type: string,
  module: string | undefined,
): { type: string; module?: string } | null {
  const full = module ? `${module}.${type}` : type;
  const original = mapping.originalClass(full);
  if (!original) return null;
  if (!module) return { type: original };
  const dot = original.lastIndexOf('.');
  return dot >= 0 ? { module: original.slice(0, dot), type: original.slice(dot + 1) } : { type: original };
}

// ---------------------------------------------------------------- the handler

function proguardImages(event: EventView): string[] {
  const out: string[] = [];
  for (const img of event.images) {
    if (img.type !== 'proguard') continue;
    const id = typeof img.uuid === 'string' ? img.uuid : typeof img.debug_id === 'string' ? img.debug_id : '';
    if (isUuid(id)) out.push(id.toLowerCase());
  }
  return out;
}

function hasJavaFrames(event: EventView): boolean {
  for (const e of event.exceptions)
    for (const f of e.frames)
      if (typeof f.module === 'string' && f.module !== '' && typeof f.function === 'string') return true;
  return false;
}

export const proguardHandler: SymbolKindHandler<ProguardMapping> = {
  kind: 'proguard',
  recognises(name, head) {
    if (/\.(txt|map|pro|mapping)$/i.test(name) || debugIdFromName(name)) {
      const text = new TextDecoder().decode(head.subarray(0, 4096));
      return text.split('\n').some((l) => CLASS_LINE.test(l.replace(/\r$/, '')));
    }
    return false;
  },
  inspect: inspectProguard,
  load(_file: SymbolFileRow, bytes: Uint8Array) {
    return new ProguardMapping(bytes);
  },
  lookups(event) {
    if (!hasJavaFrames(event) && !event.exceptions.some((e) => e.type !== '')) return [];
    const images = proguardImages(event);
    // By the event's proguard image uuid, else by release (docs/api.md "What matching looks for").
    if (images.length > 0)
      return images.map((debugId) => ({ kind: 'proguard', by: 'debug_id', debugId }) satisfies SymbolLookup);
    if (event.release === '') return [];
    return [{ kind: 'proguard', by: 'release', release: event.release, dist: event.dist }];
  },
  symbolicate(event, state: SymbolicationState, resolve) {
    const mappings: ProguardMapping[] = [];
    for (const l of this.lookups(event)) mappings.push(...resolve(l));
    if (mappings.length === 0) return;
    for (let i = 0; i < state.frames.length; i++) {
      const frames = state.frames[i];
      let out: NormalizedFrame[] | null = null;
      for (let j = 0; j < frames.length; j++) {
        let mapped: NormalizedFrame[] | null = null;
        for (const m of mappings) if ((mapped = remapJavaFrame(m, frames[j]))) break;
        if (mapped) {
          out ??= frames.slice(0, j);
          // Frames are oldest call first; an inline chain comes innermost first, so it is reversed.
          for (let k = mapped.length - 1; k >= 0; k--) out.push(mapped[k]);
        } else if (out) out.push(frames[j]);
      }
      if (out) {
        state.frames[i] = out;
        state.changed = true;
      }
      const exc = event.exceptions[i];
      if (exc && exc.type !== '' && !state.types[i]) {
        for (const m of mappings) {
          const t = remapExceptionType(m, exc.type, exc.module);
          if (t) {
            state.types[i] = t;
            state.changed = true;
            break;
          }
        }
      }
    }
  },
};
