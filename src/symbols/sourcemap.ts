// Source maps (JavaScript): checking one at upload (a scan of the streaming bytes,
// sourcemap-scan.ts), loading it into a lookup index whose memory is about the size of
// its mappings (sourcemap-index.ts; indexed maps with `sections` included) and mapping
// minified frames to original file, line, column, function name and context lines.
//
// Matching (docs/api.md "What matching looks for"): a frame's debug id (`debug_meta.images[type=sourcemap]`
// whose `code_file` is the frame's `abs_path`), else the event's release and dist and
// the frame's file name against the minified file the map serves: its `file` field, or
// the uploaded name without `.map`, compared as a full URL, as `~/path`, or by basename
// (in that order of preference).
import { TraceMap, type SourceMapInput } from '@jridgewell/trace-mapping';
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
import { basenameOf, type SymbolFileRow } from './storage.js';
import {
  indexBytes,
  indexMappings,
  lookupSegment,
  SOURCE_MAP_LIMITS,
  type MappingsIndex,
  type SourceMapLimits,
} from './sourcemap-index.js';
import { SourceMapScanner } from './sourcemap-scan.js';
import { functionMapsOf, functionNameAt, type FunctionMap } from './sourcemap-functions.js';
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

/** Scans an upload as it streams in (sourcemap-scan.ts): nothing of the map is built. */
export function inspectSourceMap(name: string, limits: SourceMapLimits = SOURCE_MAP_LIMITS): FileInspector {
  const scanner = new SourceMapScanner(name, limits);
  return {
    push: (chunk) => scanner.push(chunk),
    finish() {
      const facts = scanner.finish();
      return [{ debugId: dashedUuid(facts.debugId), serves: servedFileOf({ file: facts.file }, name) }];
    },
  };
}

// ---------------------------------------------------------------- the loaded map

/** One plain map, or one section of an indexed map, where it starts in the generated file. */
interface MapPart {
  line: number;
  column: number;
  index: MappingsIndex;
  /** Where the part's sources and names start in the map's lists. */
  sourceBase: number;
  nameBase: number;
}

/** Strings as UTF-8 in one buffer: string i is `bytes[offsets[i], offsets[i + 1])`. */
interface PackedStrings {
  bytes: Uint8Array;
  offsets: Uint32Array;
}

/**
 * A parsed map as plain data, nothing but typed arrays and a few numbers, so a thread
 * that builds it hands it over without a copy (Node: the parse thread) and its memory is
 * what its arrays hold: the mappings' lookup indexes; sources, names and sources'
 * contents as UTF-8; the offsets of every line of every content.
 */
export interface SourceMapData {
  parts: MapPart[];
  sources: PackedStrings;
  names: PackedStrings;
  contents: PackedStrings;
  /** 1 where the source has content (else it has none, not an empty one). */
  hasContent: Uint8Array;
  /** Byte offsets (into contents.bytes) where lines start; source i's are `lineIndex[i]` to `lineIndex[i + 1]`. */
  lineStarts: Uint32Array;
  lineIndex: Uint32Array;
  /** React Native function maps by source (`x_facebook_sources`, sourcemap-functions.ts); null when the map has none. */
  functionMaps: (FunctionMap | null)[] | null;
  memoryBytes: number;
}

/** What a loaded map holds besides its arrays (the objects around them, measured: BENCHMARKS.md "Source maps"). */
const MAP_OVERHEAD = 4096;
const PART_OVERHEAD = 128;

/** Packs strings (null and non-strings as '') as UTF-8, growing the buffer as needed. */
function packStrings(list: readonly unknown[], encoder: TextEncoder): PackedStrings {
  let bytes: Uint8Array = new Uint8Array(1024);
  const offsets = new Uint32Array(list.length + 1);
  let at = 0;
  for (let i = 0; i < list.length; i++) {
    let rest = typeof list[i] === 'string' ? (list[i] as string) : '';
    while (rest.length > 0) {
      const { read, written } = encoder.encodeInto(rest, bytes.subarray(at));
      at += written;
      rest = read < rest.length ? rest.slice(read) : '';
      // Full: twice the size, or what the rest needs at most (bounded, so one huge string grows in steps).
      if (rest.length > 0)
        bytes = growTo(bytes, at, Math.max(bytes.length * 2, at + Math.min(rest.length * 3, 64 * 1024 * 1024)));
    }
    offsets[i + 1] = at;
  }
  return { bytes: at < bytes.length ? bytes.slice(0, at) : bytes, offsets };
}

function growTo(bytes: Uint8Array, used: number, size: number): Uint8Array {
  const grown = new Uint8Array(size);
  grown.set(bytes.subarray(0, used));
  return grown;
}

const utf8 = new TextDecoder();

function unpack(p: PackedStrings, i: number, maxBytes = Number.MAX_SAFE_INTEGER): string {
  if (!(i >= 0 && i + 1 < p.offsets.length)) return '';
  const from = p.offsets[i];
  return utf8.decode(p.bytes.subarray(from, Math.min(p.offsets[i + 1], from + maxBytes)));
}

/**
 * Parses a stored map into SourceMapData: the JSON, then each part's mappings indexed
 * (checked again, within `limits`: a file stored before they existed may exceed them).
 * Throws SymbolInputError on a map that is not usable.
 */
export function parseSourceMap(
  bytes: Uint8Array,
  name: string,
  limits: SourceMapLimits = SOURCE_MAP_LIMITS,
): SourceMapData {
  let json: unknown;
  try {
    json = JSON.parse(new TextDecoder().decode(bytes).replace(/^\uFEFF/, ''));
  } catch {
    throw new SymbolInputError(`${name} is not a source map: it is not JSON`);
  }
  if (!isObject(json) || json.version !== 3)
    throw new SymbolInputError(`${name} is not a source map: "version" must be 3`);
  const parts: MapPart[] = [];
  const sources: unknown[] = [];
  const names: unknown[] = [];
  const contents: unknown[] = [];
  const functionMaps: (FunctionMap | null)[] = [];
  let hasFunctionMaps = false;
  const counted = { segments: 0, lines: 0 };
  const encoder = new TextEncoder();
  const addPart = (map: Json, line: number, column: number, sectioned: boolean) => {
    if (map.version !== 3) throw new SymbolInputError(`${name} is not a source map: "version" must be 3`);
    if (typeof map.mappings !== 'string')
      throw new SymbolInputError(`${name} is not a source map: it has no "mappings" string`);
    if (!Array.isArray(map.sources))
      throw new SymbolInputError(`${name} is not a source map: it has no "sources" list`);
    const partNames: unknown[] = Array.isArray(map.names) ? map.names : [];
    const { index, decoder } = indexMappings(encoder.encode(map.mappings), name, limits, counted);
    decoder.checkIndexes(map.sources.length, partNames.length);
    counted.segments += index.segments;
    counted.lines += index.lines;
    // An indexed map's sources are resolved against their sourceRoot (as trace-mapping flattens them).
    const partSources: unknown[] = sectioned
      ? new TraceMap({
          version: 3,
          sources: map.sources,
          sourceRoot: map.sourceRoot,
          names: [],
          mappings: '',
        } as unknown as SourceMapInput).resolvedSources
      : map.sources;
    parts.push({ line, column, index, sourceBase: sources.length, nameBase: names.length });
    const partContents: unknown[] = Array.isArray(map.sourcesContent) ? map.sourcesContent : [];
    const partFunctions = functionMapsOf(map.x_facebook_sources, partSources.length);
    if (partFunctions) hasFunctionMaps = true;
    for (let i = 0; i < partSources.length; i++) {
      sources.push(partSources[i]);
      contents.push(partContents[i] ?? null);
      functionMaps.push(partFunctions?.[i] ?? null);
    }
    for (const n of partNames) names.push(n);
  };
  if (Array.isArray(json.sections)) {
    if (json.sections.length > limits.maxSections)
      throw new SymbolInputError(`${name} has more than ${limits.maxSections} sections (the limit of a source map)`);
    for (const section of json.sections as unknown[]) {
      const offset = isObject(section) && isObject(section.offset) ? section.offset : null;
      if (
        !offset ||
        !isObject((section as Json).map) ||
        !Number.isInteger(offset.line) ||
        !Number.isInteger(offset.column)
      ) {
        throw new SymbolInputError(`${name} is not a source map: a section has no "offset" or "map"`);
      }
      addPart((section as Json).map as Json, offset.line as number, offset.column as number, true);
    }
  } else addPart(json, 0, 0, false);
  json = null;
  const packedContents = packStrings(contents, encoder);
  const hasContent = Uint8Array.from(contents, (c) => (typeof c === 'string' ? 1 : 0));
  contents.length = 0;
  // Lines split at \r\n, \r and \n: bytes that never occur inside a UTF-8 sequence.
  const starts: number[] = [];
  const lineIndex = new Uint32Array(hasContent.length + 1);
  const b = packedContents.bytes;
  for (let i = 0; i < hasContent.length; i++) {
    lineIndex[i] = starts.length;
    if (!hasContent[i]) continue;
    const end = packedContents.offsets[i + 1];
    starts.push(packedContents.offsets[i]);
    for (let k = packedContents.offsets[i]; k < end; k++) {
      const c = b[k];
      if (c === 10) starts.push(k + 1);
      else if (c === 13) {
        if (k + 1 < end && b[k + 1] === 10) k++;
        starts.push(k + 1);
      }
    }
  }
  lineIndex[hasContent.length] = starts.length;
  const data: SourceMapData = {
    parts,
    sources: packStrings(sources, encoder),
    names: packStrings(names, encoder),
    contents: packedContents,
    hasContent,
    lineStarts: Uint32Array.from(starts),
    lineIndex,
    functionMaps: hasFunctionMaps ? functionMaps : null,
    memoryBytes: 0,
  };
  const arrays = [data.sources, data.names, data.contents].reduce(
    (n, p) => n + p.bytes.byteLength + p.offsets.byteLength,
    0,
  );
  data.memoryBytes =
    MAP_OVERHEAD +
    arrays +
    (data.functionMaps ?? []).reduce(
      (n, f) =>
        n + PART_OVERHEAD + (f ? f.starts.byteLength + f.names.reduce((k, name) => k + 32 + name.length * 2, 0) : 0),
      0,
    ) +
    hasContent.byteLength +
    data.lineStarts.byteLength +
    lineIndex.byteLength +
    parts.reduce((n, p) => n + PART_OVERHEAD + indexBytes(p.index), 0);
  return data;
}

/** Enclosing-function names a loaded map keeps (see LoadedSourceMap.enclosingName). */
const MAX_ENCLOSING_NAMES = 4096;

/** Bytes of a context line decoded at most: MAX_CONTEXT_LINE characters of up to 4 bytes. */
const MAX_CONTEXT_BYTES = MAX_CONTEXT_LINE * 4;

export class LoadedSourceMap implements LoadedSymbols {
  readonly memoryBytes: number;
  /**
   * The enclosing function's original name by minified position and name: the frames of
   * one crash come back with every event, and finding the name walks the line. Bounded
   * (cleared when full), so it stays a few hundred KB beside the map's charge.
   */
  private readonly enclosingNames = new Map<string, string | null>();

  constructor(private readonly data: SourceMapData) {
    this.memoryBytes = data.memoryBytes;
  }

  /** Parses on the calling thread (editions without a parse thread, tests). */
  static fromBytes(bytes: Uint8Array, name: string): LoadedSourceMap {
    return new LoadedSourceMap(parseSourceMap(bytes, name));
  }

  /** The part (section) that holds a 0-based generated position: the last that starts at or before it. */
  private partAt(line: number, column: number): number {
    const parts = this.data.parts;
    let lo = 0;
    let hi = parts.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const p = parts[mid];
      if (p.line < line || (p.line === line && p.column <= column)) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found;
  }

  /** The original position of a 1-based line and column of the minified file; null when unmapped. */
  lookup(
    line: number,
    column: number,
  ): { source: number; line: number; column: number; name: string | null; generatedColumn: number } | null {
    if (!(line >= 1) || !(column >= 1) || !Number.isFinite(line) || !Number.isFinite(column)) return null;
    const l = Math.floor(line) - 1;
    let c = Math.floor(column) - 1;
    // A section with nothing at or before the column on its first line leaves it to the section before.
    for (let k = this.partAt(l, c); k >= 0; k--) {
      const part = this.data.parts[k];
      const seg = lookupSegment(part.index, l - part.line, part.line === l ? c - part.column : c);
      if (seg) {
        if (seg.fields === 1) return null;
        const name = seg.fields === 5 ? unpack(this.data.names, part.nameBase + seg.name) || null : null;
        // Where the segment starts in the minified line (1-based), so a walk along the line can skip to the one before.
        const generatedColumn = seg.col + (part.line === l ? part.column : 0) + 1;
        return { source: part.sourceBase + seg.src, line: seg.line + 1, column: seg.column + 1, name, generatedColumn };
      }
      if (part.line !== l || part.column === 0) return null;
      c = part.column - 1;
    }
    return null;
  }

  /** `find()` once per minified position and name; later frames at it read the answer kept. */
  enclosingName(
    line: number,
    column: number,
    minifiedName: string | undefined,
    find: () => string | null,
  ): string | null {
    const key = `${line}:${column}:${minifiedName ?? ''}`;
    const known = this.enclosingNames.get(key);
    if (known !== undefined) return known;
    const found = find();
    if (this.enclosingNames.size >= MAX_ENCLOSING_NAMES) this.enclosingNames.clear();
    this.enclosingNames.set(key, found);
    return found;
  }

  /** The function map names the scope at an original position (1-based line and column); undefined when the source has no function map. */
  functionName(source: number, line: number, column: number): string | null | undefined {
    const map = this.data.functionMaps?.[source];
    return map ? functionNameAt(map, line, column - 1) : undefined;
  }

  /** The original source's text as the map embeds it; null when it does not. */
  sourceContent(source: number): string | null {
    const { hasContent, contents } = this.data;
    return source >= 0 && source < hasContent.length && hasContent[source] ? unpack(contents, source) : null;
  }

  sourcePath(source: number): string {
    return unpack(this.data.sources, source);
  }

  context(source: number, line: number): Pick<NormalizedFrame, 'pre_context' | 'context_line' | 'post_context'> | null {
    const { hasContent, lineIndex, lineStarts, contents } = this.data;
    if (!(source >= 0 && source < hasContent.length) || !hasContent[source]) return null;
    const first = lineIndex[source];
    const count = lineIndex[source + 1] - first;
    if (line < 1 || line > count) return null;
    // Line k without its line break, cut at MAX_CONTEXT_LINE (minified sources would otherwise fill the event).
    const at = (k: number) => {
      const from = lineStarts[first + k];
      let to = contents.offsets[source + 1];
      if (k + 1 < count) {
        to = lineStarts[first + k + 1];
        if (contents.bytes[to - 1] === 10) to--;
        if (to > from && contents.bytes[to - 1] === 13) to--;
      }
      return utf8
        .decode(contents.bytes.subarray(from, Math.min(to, from + MAX_CONTEXT_BYTES)))
        .slice(0, MAX_CONTEXT_LINE);
    };
    const range = (from: number, to: number) => {
      const out: string[] = [];
      for (let k = Math.max(0, from); k < Math.min(to, count); k++) out.push(at(k));
      return out;
    };
    return {
      pre_context: range(line - 1 - CONTEXT_LINES, line - 1),
      context_line: at(line - 1),
      post_context: range(line, line + CONTEXT_LINES),
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
  const line = frame.lineno as number;
  const column = frame.colno as number;
  // A React Native function map names the scope itself, as Sentry's symbolicator does for Hermes.
  const scope = map.functionName(pos.source, pos.line, pos.column);
  const enclosing = scope
    ? scope
    : map.enclosingName(line, column, frame.function, () => {
        // Each source's text is decoded once per frame, however many candidates it is checked for.
        const contents = new Map<number, string | null>();
        const contentOf = (s: number): string | null => {
          if (!contents.has(s)) contents.set(s, map.sourceContent(s));
          return contents.get(s) ?? null;
        };
        return enclosingFunctionName(
          frame.function,
          namedMappingsBefore((l, c) => map.lookup(l, c), line, column),
          contentOf,
        );
      });
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
    return (
      text.startsWith('{') &&
      /"version"\s*:\s*3/.test(text) &&
      /"(mappings|sections)"/.test(new TextDecoder().decode(head))
    );
  },
  inspect: inspectSourceMap,
  load(file: SymbolFileRow, bytes: Uint8Array) {
    return LoadedSourceMap.fromBytes(bytes, file.filename);
  },
  parse(file: SymbolFileRow, bytes: Uint8Array) {
    return parseSourceMap(bytes, file.filename);
  },
  fromParsed(data) {
    return new LoadedSourceMap(data as SourceMapData);
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
        else if (event.release !== '')
          out.push({ kind: 'sourcemap', by: 'release', release: event.release, dist: event.dist, name: file });
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
