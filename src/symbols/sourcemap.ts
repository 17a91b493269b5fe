// Source maps (JavaScript): checking one at upload, loading it with
// @jridgewell/trace-mapping (indexed maps with `sections` included) and mapping
// minified frames to original file, line, column, function name and context lines.
//
// Matching (DECISIONS "Symbols"): a frame's debug id (`debug_meta.images[type=sourcemap]`
// whose `code_file` is the frame's `abs_path`), else the event's release and dist and
// the frame's file name against the minified file the map serves: its `file` field, or
// the uploaded name without `.map`, compared as a full URL, as `~/path`, or by basename
// (in that order of preference).
import { AnyMap, decodedMappings, traceSegment, TraceMap, type SourceMapInput } from '@jridgewell/trace-mapping';
import type { NormalizedFrame } from '../ingest/types.js';
import { SymbolInputError, type EventView, type FileInspector, type LoadedSymbols, type SymbolKindHandler, type SymbolLookup, type SymbolicationState } from './kinds.js';
import { basenameOf, type SymbolFileRow } from './storage.js';
import { enclosingFunctionName, frameFiles, mappedFunctionName, namedMappingsBefore } from './sourcemap-frames.js';

/** Lines of context on each side of the frame's line (Sentry shows 5 + 1 + 5). */
export const CONTEXT_LINES = 5;
/** Context lines longer than this are cut (minified sources would otherwise fill the event). */
const MAX_CONTEXT_LINE = 300;

const UUID = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;

function dashedUuid(v: unknown): string {
  if (typeof v !== 'string' || !UUID.test(v)) return '';
  const hex = v.replace(/-/g, '').toLowerCase();
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The minified file a map serves: its `file`, else the uploaded name without `.map`. */
export function servedFileOf(map: Json, uploadedName: string): string {
  if (typeof map.file === 'string' && map.file.trim() !== '') return map.file.trim();
  return uploadedName.replace(/\.map$/i, '');
}

/** Builds the TraceMap and checks every segment's source and name index; throws SymbolInputError. */
function checkedTraceMap(json: Json, name: string): TraceMap {
  let map: TraceMap;
  try {
    map = Array.isArray(json.sections) ? new AnyMap(json as unknown as SourceMapInput) : new TraceMap(json as unknown as SourceMapInput);
  } catch (err) {
    throw new SymbolInputError(`${name} is not a usable source map: ${(err as Error).message}`);
  }
  const sources = map.sources.length;
  const names = map.names.length;
  let lines: ReturnType<typeof decodedMappings>;
  try {
    lines = decodedMappings(map);
  } catch (err) {
    throw new SymbolInputError(`${name} is not a usable source map: its mappings do not decode (${(err as Error).message})`);
  }
  for (let l = 0; l < lines.length; l++) {
    for (const seg of lines[l] as readonly number[][]) {
      if (seg.length === 1) continue;
      if (seg.length !== 4 && seg.length !== 5) throw new SymbolInputError(`${name}: a mapping on generated line ${l + 1} has ${seg.length} fields`);
      if (seg[1]! < 0 || seg[1]! >= sources || seg[2]! < 0 || seg[3]! < 0) {
        throw new SymbolInputError(`${name}: a mapping on generated line ${l + 1} points to source ${seg[1]}, but the map has ${sources} sources`);
      }
      if (seg.length === 5 && (seg[4]! < 0 || seg[4]! >= names)) {
        throw new SymbolInputError(`${name}: a mapping on generated line ${l + 1} names name ${seg[4]}, but the map has ${names} names`);
      }
    }
  }
  return map;
}

function parseMapJson(text: string, name: string): Json {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SymbolInputError(`${name} is not a source map: it is not JSON`);
  }
  if (!isObject(json) || json.version !== 3) throw new SymbolInputError(`${name} is not a source map: "version" must be 3`);
  const indexed = Array.isArray(json.sections);
  if (!indexed && typeof json.mappings !== 'string') throw new SymbolInputError(`${name} is not a source map: it has no "mappings" string`);
  if (!indexed && !Array.isArray(json.sources)) throw new SymbolInputError(`${name} is not a source map: it has no "sources" list`);
  return json;
}

/**
 * Collects the map's text as it streams in (JSON must be parsed whole; the text is the one
 * copy held) and, at the end, parses and checks it: version 3, mappings that decode, every
 * segment's source and name inside the map.
 */
export function inspectSourceMap(name: string): FileInspector {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const parts: string[] = [];
  const decode = (chunk?: Uint8Array) => {
    try {
      return chunk ? decoder.decode(chunk, { stream: true }) : decoder.decode();
    } catch {
      throw new SymbolInputError(`${name} is not a source map: it is not UTF-8 text`);
    }
  };
  return {
    push(chunk) {
      if (parts.length === 0 && chunk.byteLength > 0) {
        const first = chunk.find((b) => b !== 0x20 && b !== 0x0a && b !== 0x0d && b !== 0x09 && b !== 0xef && b !== 0xbb && b !== 0xbf);
        if (first !== undefined && first !== 0x7b) throw new SymbolInputError(`${name} is not a source map: it does not start with a JSON object`);
      }
      parts.push(decode(chunk));
    },
    finish() {
      parts.push(decode());
      const json = parseMapJson(parts.join('').replace(/^\uFEFF/, ''), name);
      parts.length = 0;
      checkedTraceMap(json, name);
      return [{ debugId: dashedUuid(json.debugId ?? json.debug_id), serves: servedFileOf(json, name) }];
    },
  };
}

// ---------------------------------------------------------------- the loaded map

export class LoadedSourceMap implements LoadedSymbols {
  readonly memoryBytes: number;
  readonly map: TraceMap;
  private readonly contentLines = new Map<number, string[] | null>();

  constructor(bytes: Uint8Array, name: string) {
    this.map = checkedTraceMap(parseMapJson(new TextDecoder().decode(bytes), name), name);
    // The parsed map (decoded segments, sources content) is a few times its text.
    this.memoryBytes = bytes.byteLength * 3 + 4096;
  }

  private lines(source: number): string[] | null {
    let lines = this.contentLines.get(source);
    if (lines === undefined) {
      const content = this.map.sourcesContent?.[source];
      lines = typeof content === 'string' ? content.split(/\r\n|\r|\n/) : null;
      this.contentLines.set(source, lines);
    }
    return lines;
  }

  /** The original position of a 1-based line and column of the minified file; null when unmapped. */
  lookup(line: number, column: number): { source: number; line: number; column: number; name: string | null } | null {
    if (!(line >= 1) || !(column >= 1)) return null;
    let seg: ReturnType<typeof traceSegment>;
    try {
      seg = traceSegment(this.map, line - 1, column - 1);
    } catch {
      return null;
    }
    if (!seg || seg.length === 1) return null;
    const source = seg[1]!;
    if (source >= this.map.sources.length) return null;
    const name = seg.length === 5 ? (this.map.names[seg[4]!] ?? null) : null;
    return { source, line: seg[2]! + 1, column: seg[3]! + 1, name };
  }

  /** The original source's text as the map embeds it; null when it does not. */
  sourceContent(source: number): string | null {
    const content = this.map.sourcesContent?.[source];
    return typeof content === 'string' ? content : null;
  }

  sourcePath(source: number): string {
    return this.map.sources[source] ?? '';
  }

  context(source: number, line: number): Pick<NormalizedFrame, 'pre_context' | 'context_line' | 'post_context'> | null {
    const lines = this.lines(source);
    if (!lines || line < 1 || line > lines.length) return null;
    const cut = (s: string) => (s.length > MAX_CONTEXT_LINE ? s.slice(0, MAX_CONTEXT_LINE) : s);
    return {
      pre_context: lines.slice(Math.max(0, line - 1 - CONTEXT_LINES), line - 1).map(cut),
      context_line: cut(lines[line - 1]),
      post_context: lines.slice(line, line + CONTEXT_LINES).map(cut),
    };
  }
}

export { displayPath } from './sourcemap-frames.js';

// ---------------------------------------------------------------- the handler

function frameFile(f: NormalizedFrame): string {
  if (typeof f.abs_path === 'string' && f.abs_path !== '') return f.abs_path;
  if (typeof f.filename === 'string') return f.filename;
  return '';
}

function isJsFrame(f: NormalizedFrame): boolean {
  return frameFile(f) !== '' && typeof f.lineno === 'number' && typeof f.colno === 'number';
}

/** The debug id the event's images give for a minified file, else ''. */
function debugIdFor(event: EventView, file: string): string {
  for (const img of event.images) {
    if (img.type !== 'sourcemap') continue;
    if (img.code_file === file) return dashedUuid(img.debug_id);
  }
  return '';
}

/** How well a stored map's served name matches a frame's file (0 best); -1 when it does not. */
export function servesRank(serves: string, frameFileName: string): number {
  if (serves === '') return -1;
  const file = frameFileName.replace(/[?#].*$/, '');
  if (serves === file) return 0;
  let path = file;
  const m = /^[a-z][a-z0-9+.-]*:\/\/[^/]*(\/[^?#]*)/i.exec(file);
  if (m) path = m[1];
  if (serves.startsWith('~') && serves.slice(1) === path) return 1;
  if (basenameOf(serves) === basenameOf(file)) return 2;
  return -1;
}

/** Maps one minified frame; null when the map has nothing for it. File and function names: sourcemap-frames.ts. */
export function mapJsFrame(map: LoadedSourceMap, frame: NormalizedFrame): NormalizedFrame | null {
  const pos = map.lookup(frame.lineno as number, frame.colno as number);
  if (!pos) return null;
  const source = map.sourcePath(pos.source);
  const out: NormalizedFrame = { ...frame, ...frameFiles(source), lineno: pos.line, colno: pos.column };
  const enclosing = enclosingFunctionName(frame.function, namedMappingsBefore((l, c) => map.lookup(l, c), frame.lineno as number, frame.colno as number), (s) => map.sourceContent(s));
  const name = mappedFunctionName(frame.function, enclosing);
  if (name !== undefined) out.function = name;
  delete out.pre_context;
  delete out.context_line;
  delete out.post_context;
  const ctx = map.context(pos.source, pos.line);
  if (ctx) Object.assign(out, ctx);
  if (/\/node_modules\//.test(source)) out.in_app = false;
  return out;
}

export const sourceMapHandler: SymbolKindHandler<LoadedSourceMap> = {
  kind: 'sourcemap',
  recognises(name, head) {
    if (/\.map$/i.test(name)) return true;
    const text = new TextDecoder().decode(head.subarray(0, 512)).trimStart();
    return text.startsWith('{') && /"version"\s*:\s*3/.test(text) && /"(mappings|sections)"/.test(new TextDecoder().decode(head));
  },
  inspect: inspectSourceMap,
  load(file: SymbolFileRow, bytes: Uint8Array) {
    return new LoadedSourceMap(bytes, file.filename);
  },
  lookups(event) {
    const out: SymbolLookup[] = [];
    const seen = new Set<string>();
    for (const e of event.exceptions) {
      for (const f of e.frames) {
        if (!isJsFrame(f)) continue;
        const file = frameFile(f);
        if (seen.has(file)) continue;
        seen.add(file);
        const debugId = debugIdFor(event, file);
        if (debugId) out.push({ kind: 'sourcemap', by: 'debug_id', debugId });
        else if (event.release !== '') out.push({ kind: 'sourcemap', by: 'release', release: event.release, dist: event.dist, name: file });
      }
    }
    return out;
  },
  symbolicate(event, state: SymbolicationState, resolve) {
    for (let i = 0; i < state.frames.length; i++) {
      const frames = state.frames[i];
      let out: NormalizedFrame[] | null = null;
      for (let j = 0; j < frames.length; j++) {
        const f = frames[j];
        let mapped: NormalizedFrame | null = null;
        if (isJsFrame(f)) {
          const file = frameFile(f);
          const debugId = debugIdFor(event, file);
          const lookup: SymbolLookup | null = debugId
            ? { kind: 'sourcemap', by: 'debug_id', debugId }
            : event.release !== ''
              ? { kind: 'sourcemap', by: 'release', release: event.release, dist: event.dist, name: file }
              : null;
          const map = lookup ? resolve(lookup)[0] : undefined;
          if (map) mapped = mapJsFrame(map, f);
        }
        if (mapped) {
          out ??= frames.slice(0, j);
          out.push(mapped);
        } else if (out) out.push(f);
      }
      if (out) {
        state.frames[i] = out;
        state.changed = true;
      }
    }
  },
};
