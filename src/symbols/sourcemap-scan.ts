// The upload check of a source map, as its bytes stream in: a JSON scanner that keeps no
// more than the few strings it reports (`file`, `debugId`), counts `sources` and `names`,
// and runs the `mappings` through the VLQ decoder (sourcemap-index.ts) with the per-map
// limits. Each pushed chunk costs time in proportion to its size and nothing of the map
// is built, so a hostile upload can neither fill the heap nor hold the event loop.
//
// What it accepts is what the load (JSON.parse and indexMappings) accepts: JSON in UTF-8,
// version 3, mappings that decode with every source and name index inside the map's
// lists, or `sections` with increasing offsets and maps that are not indexed themselves.
import { SymbolInputError } from './kinds.js';
import { MappingsDecoder, SOURCE_MAP_LIMITS, type SourceMapLimits } from './sourcemap-index.js';

/** What the scan reports about a map. */
export interface ScannedSourceMap {
  file: string | null;
  debugId: string | null;
  segments: number;
  lines: number;
  sections: number;
}

/** Strings the scan keeps (`file`, `debugId`) are refused past this length. */
const MAX_KEPT_STRING = 64 * 1024;
/** JSON nesting deeper than this is refused (no source map nests more than 4 levels). */
const MAX_DEPTH = 64;

/** What a value is to the map (decides what the scan does with it). */
type Role =
  | 'map'
  | 'version'
  | 'mappings'
  | 'sources'
  | 'names'
  | 'sections'
  | 'section'
  | 'offset'
  | 'offset-line'
  | 'offset-column'
  | 'keep'
  | 'count'
  | 'skip';

/** The facts of one map object (the root, or a section's map). */
interface MapFacts {
  root: boolean;
  version: unknown;
  mappings: MappingsDecoder | null;
  sources: number;
  names: number;
  sections: number;
  seen: Set<string>;
}

interface Frame {
  kind: 'object' | 'array';
  role: Role;
  /** Object: the key whose value comes next; '' before it is read. */
  key: string;
  /** Object: a key was read and its ':' is expected; array/object: a value ended and ',' or the close is expected. */
  state: 'start' | 'key' | 'colon' | 'value' | 'after';
  map: MapFacts | null;
  /** 'section': its offset and whether it has a map. */
  offset?: { line: number; column: number };
  hasMap?: boolean;
  /** 'sources' / 'names': the count so far. */
  count?: number;
}

const WS = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;

export class SourceMapScanner {
  private readonly stack: Frame[] = [];
  private readonly utf8 = new TextDecoder('utf-8', { fatal: true });
  private started = false;
  private done = false;
  private bom = 0;
  /** Inside a string: its role, the raw bytes kept (for 'keep' and keys), escape state. */
  private str: { role: Role | 'key'; kept: number[] | null; escape: number; hex: number } | null = null;
  /** Inside a number or literal: its characters. */
  private atom: string | null = null;
  private atomRole: Role = 'skip';
  private result: ScannedSourceMap = { file: null, debugId: null, segments: 0, lines: 0, sections: 0 };
  private counted = { segments: 0, lines: 0 };
  private lastOffset: { line: number; column: number } | null = null;
  /** The role of the next value (set by a key or an array). */
  private pending: Role = 'map';
  /** `debugId` and `debug_id` (the first wins, as on the load). */
  private readonly debugIds: [string | null, string | null] = [null, null];

  constructor(
    private readonly name: string,
    private readonly limits: SourceMapLimits = SOURCE_MAP_LIMITS,
  ) {}

  private fail(why: string): never {
    throw new SymbolInputError(`${this.name} is not a source map: ${why}`);
  }

  push(chunk: Uint8Array): void {
    try {
      this.utf8.decode(chunk, { stream: true });
    } catch {
      this.fail('it is not UTF-8 text');
    }
    let i = 0;
    const n = chunk.length;
    // A byte order mark may open the file.
    while (!this.started && this.bom < 3 && i < n && chunk[i] === [0xef, 0xbb, 0xbf][this.bom]) {
      this.bom++;
      i++;
    }
    while (i < n) {
      if (this.str) {
        i = this.stringBytes(chunk, i);
        continue;
      }
      const b = chunk[i];
      if (this.atom !== null) {
        if (
          (b >= 0x30 && b <= 0x39) ||
          b === 0x2d ||
          b === 0x2b ||
          b === 0x2e ||
          b === 0x45 ||
          b === 0x65 ||
          (b >= 0x61 && b <= 0x7a)
        ) {
          if (this.atom.length > 64) this.fail('a number or literal is too long');
          this.atom += String.fromCharCode(b);
          i++;
          continue;
        }
        this.endAtom();
        continue;
      }
      i++;
      if (WS(b)) continue;
      this.token(b);
    }
  }

  /** The end of the file: the facts, or SymbolInputError. */
  finish(): ScannedSourceMap {
    try {
      this.utf8.decode();
    } catch {
      this.fail('it is not UTF-8 text');
    }
    if (this.str) this.fail('it ends inside a string');
    if (this.atom !== null) this.endAtom();
    if (!this.done) this.fail(this.started ? 'it ends before its JSON object does' : 'it is empty');
    return this.result;
  }

  private top(): Frame | undefined {
    return this.stack[this.stack.length - 1];
  }

  private token(b: number): void {
    if (this.done) this.fail('it has more after its JSON object');
    const f = this.top();
    if (!this.started) {
      if (b !== 0x7b) this.fail('it does not start with a JSON object');
      this.started = true;
    }
    if (f && f.kind === 'object') {
      switch (f.state) {
        case 'start':
        case 'key':
          if (b === 0x7d && f.state === 'start') {
            this.close(f);
            return;
          }
          if (b !== 0x22) this.fail('an object key is not a string');
          this.str = { role: 'key', kept: [], escape: 0, hex: 0 };
          return;
        case 'colon':
          if (b !== 0x3a) this.fail('a ":" is missing');
          f.state = 'value';
          this.pending = this.roleOf(f);
          return;
        case 'after':
          if (b === 0x7d) {
            this.close(f);
            return;
          }
          if (b !== 0x2c) this.fail('a "," or "}" is missing');
          f.state = 'key';
          return;
      }
    }
    if (f && f.kind === 'array') {
      if (f.state === 'after') {
        if (b === 0x5d) {
          this.close(f);
          return;
        }
        if (b !== 0x2c) this.fail('a "," or "]" is missing');
        f.state = 'value';
        return;
      }
      if (b === 0x5d && f.state === 'start') {
        this.close(f);
        return;
      }
      f.state = 'value';
      this.pending = f.role === 'sections' ? 'section' : f.role === 'sources' || f.role === 'names' ? 'count' : 'skip';
    }
    this.value(b);
  }

  /** The role of the value of the current key of object `f`. */
  private roleOf(f: Frame): Role {
    const key = f.key;
    if (f.role === 'map') {
      const map = f.map!;
      if (key === 'version' || key === 'mappings' || key === 'sources' || key === 'names' || key === 'sections') {
        if (map.seen.has(key)) this.fail(`it has "${key}" twice`);
        map.seen.add(key);
        return key;
      }
      if (map.root && (key === 'file' || key === 'debugId' || key === 'debug_id')) return 'keep';
      return 'skip';
    }
    if (f.role === 'section') {
      if (key === 'offset') return 'offset';
      if (key === 'map') {
        if (f.hasMap) this.fail('a section has "map" twice');
        f.hasMap = true;
        return 'map';
      }
      if (key === 'url') this.fail('a section refers to a map by "url" (only maps inside the file are read)');
      return 'skip';
    }
    if (f.role === 'offset') return key === 'line' ? 'offset-line' : key === 'column' ? 'offset-column' : 'skip';
    return 'skip';
  }

  private value(b: number): void {
    const role = this.pending;
    if (this.stack.length >= MAX_DEPTH) this.fail('its JSON nests too deep');
    if (b === 0x7b) {
      let map: MapFacts | null = null;
      if (role === 'map') {
        map = {
          root: this.stack.length === 0,
          version: undefined,
          mappings: null,
          sources: -1,
          names: -1,
          sections: -1,
          seen: new Set(),
        };
      } else if (role !== 'section' && role !== 'offset' && role !== 'skip')
        this.fail(`"${this.top()?.key}" is not what a source map has there`);
      this.stack.push({
        kind: 'object',
        role,
        key: '',
        state: 'start',
        map,
        offset: role === 'section' ? { line: -1, column: -1 } : undefined,
      });
      return;
    }
    if (b === 0x5b) {
      if (role !== 'sources' && role !== 'names' && role !== 'sections' && role !== 'skip')
        this.fail(`"${this.top()?.key}" is not what a source map has there`);
      if (role === 'sections' && !this.top()!.map!.root) this.fail("a section's map has sections of its own");
      this.stack.push({ kind: 'array', role, key: '', state: 'start', map: null, count: 0 });
      return;
    }
    if (b === 0x22) {
      if (role === 'mappings') {
        const map = this.top()!.map!;
        map.mappings = new MappingsDecoder(this.name, this.limits, this.counted);
      } else if (role !== 'keep' && role !== 'skip' && role !== 'count')
        this.fail(`"${this.top()?.key}" is not what a source map has there`);
      this.str = { role, kept: role === 'keep' ? [] : null, escape: 0, hex: 0 };
      return;
    }
    if ((b >= 0x30 && b <= 0x39) || b === 0x2d || b === 0x74 || b === 0x66 || b === 0x6e) {
      this.atom = String.fromCharCode(b);
      this.atomRole = role;
      return;
    }
    this.fail(`it has the character ${JSON.stringify(String.fromCharCode(b))} where a value belongs`);
  }

  /** The end of a value in the current container. */
  private valueEnded(): void {
    const f = this.top();
    if (!f) {
      this.done = true;
      return;
    }
    f.state = 'after';
    if (f.kind === 'array' && f.count !== undefined) f.count++;
  }

  private endAtom(): void {
    const text = this.atom!;
    this.atom = null;
    const role = this.atomRole;
    let v: unknown;
    if (text === 'true' || text === 'false' || text === 'null')
      v = text === 'true' ? true : text === 'false' ? false : null;
    else if (/^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$/.test(text)) v = Number(text);
    else this.fail(`it has ${JSON.stringify(text)} where a value belongs`);
    const f = this.top();
    if (role === 'version') f!.map!.version = v;
    else if (role === 'offset-line' || role === 'offset-column') {
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0x3fffffff)
        this.fail('a section offset is not a line and column');
      const section = this.stack[this.stack.length - 2];
      section.offset![role === 'offset-line' ? 'line' : 'column'] = v;
    } else if (role !== 'skip' && role !== 'count' && role !== 'keep') {
      if (!(v === null && role === 'mappings')) this.fail(`"${f?.key}" is not what a source map has there`);
    }
    this.valueEnded();
  }

  /** Bytes inside a string from `i`; the index after what it consumed. */
  private stringBytes(chunk: Uint8Array, i: number): number {
    const s = this.str!;
    const n = chunk.length;
    if (s.role === 'mappings' && s.escape === 0) {
      // The hot path: mappings go straight to the decoder up to the closing quote.
      let j = i;
      while (j < n && chunk[j] !== 0x22 && chunk[j] !== 0x5c) j++;
      if (j > i) this.top()!.map!.mappings!.push(chunk, i, j);
      if (j === n) return n;
      if (chunk[j] === 0x5c) this.fail('its mappings hold an escape sequence');
      this.str = null;
      this.endString(s);
      return j + 1;
    }
    while (i < n) {
      // Plain bytes of a string nothing keeps (sourcesContent): skipped in a tight loop.
      if (s.escape === 0 && !s.kept) {
        let b = chunk[i];
        while (b !== 0x22 && b !== 0x5c && b >= 0x20 && ++i < n) b = chunk[i];
        if (i === n) break;
      }
      const b = chunk[i++];
      if (s.escape === 1) {
        if (b === 0x75) {
          s.escape = 2;
          s.hex = 0;
        } else if ('"\\/bfnrt'.includes(String.fromCharCode(b))) s.escape = 0;
        else this.fail('a string has an invalid escape');
        s.kept?.push(b);
        continue;
      }
      if (s.escape === 2) {
        if (!/[0-9a-fA-F]/.test(String.fromCharCode(b))) this.fail('a string has an invalid \\u escape');
        if (++s.hex === 4) s.escape = 0;
        s.kept?.push(b);
        continue;
      }
      if (b === 0x22) {
        this.str = null;
        this.endString(s);
        return i;
      }
      if (b < 0x20) this.fail('a string holds a control character');
      if (b === 0x5c) s.escape = 1;
      if (s.kept) {
        if (s.kept.length >= MAX_KEPT_STRING)
          this.fail(s.role === 'key' ? 'a key is too long' : 'its "file" or "debugId" is too long');
        s.kept.push(b);
      }
    }
    return i;
  }

  private endString(s: NonNullable<SourceMapScanner['str']>): void {
    if (s.role === 'key') {
      const f = this.top()!;
      f.key = decodeJsonString(s.kept!);
      f.state = 'colon';
      return;
    }
    if (s.role === 'mappings') {
      const dec = this.top()!.map!.mappings!;
      dec.end();
    } else if (s.role === 'keep') {
      const f = this.top()!;
      const v = decodeJsonString(s.kept!);
      if (f.key === 'file') this.result.file = v;
      else if (f.key === 'debugId') this.debugIds[0] = v;
      else this.debugIds[1] = v;
      this.result.debugId = this.debugIds[0] ?? this.debugIds[1];
    }
    this.valueEnded();
  }

  private close(f: Frame): void {
    this.stack.pop();
    if (f.role === 'map') this.closeMap(f.map!);
    else if (f.role === 'sources') this.top()!.map!.sources = f.count!;
    else if (f.role === 'names') this.top()!.map!.names = f.count!;
    else if (f.role === 'sections') this.top()!.map!.sections = f.count!;
    else if (f.role === 'section') {
      const o = f.offset!;
      if (o.line < 0 || o.column < 0) this.fail('a section has no "offset" with "line" and "column"');
      if (!f.hasMap) this.fail('a section has no "map"');
      const prev = this.lastOffset;
      if (prev && (o.line < prev.line || (o.line === prev.line && o.column <= prev.column)))
        this.fail('its sections are not in increasing offset order');
      this.lastOffset = o;
      this.result.sections++;
      if (this.result.sections > this.limits.maxSections)
        throw new SymbolInputError(
          `${this.name} has more than ${this.limits.maxSections} sections (the limit of a source map)`,
        );
    }
    this.valueEnded();
  }

  private closeMap(map: MapFacts): void {
    if (map.version !== 3) this.fail('"version" must be 3');
    if (map.root && map.sections >= 0) return;
    if (!map.mappings) this.fail('it has no "mappings" string');
    if (map.sources < 0) this.fail('it has no "sources" list');
    map.mappings.checkIndexes(map.sources, Math.max(0, map.names));
    this.counted.segments += map.mappings.segments;
    this.counted.lines += map.mappings.lines;
    this.result.segments = this.counted.segments;
    this.result.lines = this.counted.lines;
  }
}

function decodeJsonString(bytes: number[]): string {
  const text = new TextDecoder().decode(Uint8Array.from(bytes));
  return JSON.parse(`"${text}"`) as string;
}
