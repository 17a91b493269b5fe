// The `mappings` of a source map without decoding them into objects: a VLQ decoder that
// checks and counts segments as bytes stream by (the upload check and the load share it),
// and a lookup index that keeps the mappings as their bytes plus a checkpoint of the
// decoder's state every CHECKPOINT_BYTES, so a lookup decodes at most a few hundred bytes.
// Memory is the mappings' length plus about 1/8 of it, whatever the segment count
// (docs/architecture.md "Symbolication").
//
// Lookups answer as @jridgewell/trace-mapping's `traceSegment` does (the fuzz suite
// compares them): on the generated line, the first segment at exactly the column, else
// the last of the segments at the greatest column before it; lines whose segments are not
// in column order are searched as if stably sorted.
import { SymbolInputError } from './kinds.js';

/** Limits of one source map: far above what bundlers emit (docs/api.md "Symbol files"). */
export interface SourceMapLimits {
  /** Segments over all sections. */
  maxSegments: number;
  /** Generated lines over all sections. */
  maxLines: number;
  /** Sections of an indexed map. */
  maxSections: number;
}

export const SOURCE_MAP_LIMITS: SourceMapLimits = {
  maxSegments: 10_000_000,
  maxLines: 2_000_000,
  maxSections: 10_000,
};

/** Absolute values above this are refused (no real file has 2^30 lines, columns, sources or names). */
const MAX_VALUE = 0x3fffffff;
/** Bytes of mappings between checkpoints: what one lookup decodes at most (bar degenerate lines). */
export const CHECKPOINT_BYTES = 256;
/** Int32 fields of a checkpoint: byte offset, line, previous column, source, original line, original column, name, segment column (-1 at a line start). */
const CP = 8;

const SEMI = 0x3b;
const COMMA = 0x2c;
/** Base64 digit values by byte, -1 for any other byte. */
const DIGIT = new Int8Array(256).fill(-1);
for (let i = 0; i < 64; i++)
  DIGIT['ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'.charCodeAt(i)] = i;

/**
 * Decodes `mappings` bytes pushed in any pieces; throws SymbolInputError on anything a
 * bundler would not write (a bad character, a segment of 2, 3 or more than 5 fields, an
 * empty segment, a value out of range, a negative column, source, line or name).
 */
export class MappingsDecoder {
  /** Absolute state after the last segment (the column resets on each line). */
  line = 0;
  col = 0;
  src = 0;
  oLine = 0;
  oCol = 0;
  name = 0;
  segments = 0;
  maxSrc = -1;
  maxName = -1;
  /** Bytes consumed. */
  offset = 0;
  /** Whether the current line's columns are in order so far. */
  lineSorted = true;
  private readonly deltas = [0, 0, 0, 0, 0];
  private fields = 0;
  private value = 0;
  private mult = 1;
  private inValue = false;
  private segStart = 0;
  private segmentsInLine = 0;
  /** Called before a segment is applied (the state is the previous one; `nextCol` is its column). */
  beforeSegment: ((start: number, nextCol: number) => void) | null = null;
  /** Called at the start of every line but the first, with the state reset and the line's first byte. */
  atLineStart: ((start: number) => void) | null = null;
  /** Called when a line ends. */
  atLineEnd: ((line: number, sorted: boolean) => void) | null = null;

  constructor(
    private readonly fileName: string,
    private readonly limits: SourceMapLimits = SOURCE_MAP_LIMITS,
    /** Segments and lines other parts of the map (earlier sections) already counted. */
    private readonly counted: { segments: number; lines: number } = { segments: 0, lines: 0 },
  ) {}

  private fail(why: string): never {
    throw new SymbolInputError(`${this.fileName} is not a usable source map: ${why} (generated line ${this.line + 1})`);
  }

  push(bytes: Uint8Array, start = 0, end = bytes.length): void {
    // The state in locals while bytes run (fields of `this` holding a double cost a box each).
    let value = this.value;
    let mult = this.mult;
    let inValue = this.inValue;
    let fields = this.fields;
    const deltas = this.deltas;
    for (let i = start; i < end; i++) {
      const b = bytes[i];
      const d = DIGIT[b];
      if (d >= 0) {
        if (!inValue) {
          if (fields === 0) this.segStart = this.offset + i - start;
          if (fields === 5) this.fail('a mapping has more than 5 fields');
          inValue = true;
          value = 0;
          mult = 1;
        }
        // Six digits hold 30 bits: a seventh is a value no map needs.
        if (mult > 0x2000000) this.fail('a mapping value is too large');
        value += (d & 31) * mult;
        mult *= 32;
        if ((d & 32) === 0) {
          inValue = false;
          // Bit 0 is the sign; "-0" (1) is what no encoder writes.
          if (value === 1) this.fail('a mapping value is "-0"');
          deltas[fields++] = value & 1 ? -(value - 1) / 2 : value / 2;
        }
        continue;
      }
      if (b !== COMMA && b !== SEMI)
        this.fail(`the mappings hold the character ${JSON.stringify(String.fromCharCode(b))}`);
      if (inValue) this.fail('a mapping value is cut short');
      this.fields = fields;
      this.inValue = false;
      this.endSegment(b === COMMA);
      fields = 0;
      if (b === SEMI) this.endLine(this.offset + i - start + 1);
    }
    this.value = value;
    this.mult = mult;
    this.inValue = inValue;
    this.fields = fields;
    this.offset += end - start;
  }

  /** The end of the mappings. */
  end(): void {
    this.endSegment(false);
    if (this.atLineEnd) this.atLineEnd(this.line, this.lineSorted);
  }

  /** Lines of these mappings (the last one too, even when empty). */
  get lines(): number {
    return this.line + 1;
  }

  private endLine(next: number): void {
    if (this.atLineEnd) this.atLineEnd(this.line, this.lineSorted);
    this.line++;
    if (this.counted.lines + this.line + 1 > this.limits.maxLines) {
      throw new SymbolInputError(
        `${this.fileName} has more than ${this.limits.maxLines} generated lines (the limit of a source map)`,
      );
    }
    this.col = 0;
    this.lineSorted = true;
    this.segmentsInLine = 0;
    if (this.atLineStart) this.atLineStart(next);
  }

  private endSegment(comma: boolean): void {
    if (this.inValue) this.fail('a mapping value is cut short');
    const n = this.fields;
    if (n === 0) {
      if (comma) this.fail('the mappings have an empty segment');
      return;
    }
    if (n !== 1 && n !== 4 && n !== 5) this.fail(`a mapping has ${n} fields`);
    const d = this.deltas;
    const col = this.col + d[0];
    if (col < 0 || col > MAX_VALUE) this.fail('a mapping has a negative or huge column');
    if (this.beforeSegment) this.beforeSegment(this.segStart, col);
    if (col < this.col && this.segmentsInLine > 0) this.lineSorted = false;
    this.col = col;
    if (n >= 4) {
      const src = this.src + d[1];
      const oLine = this.oLine + d[2];
      const oCol = this.oCol + d[3];
      if (src < 0 || oLine < 0 || oCol < 0 || src > MAX_VALUE || oLine > MAX_VALUE || oCol > MAX_VALUE) {
        this.fail('a mapping points to a negative or huge source, line or column');
      }
      this.src = src;
      this.oLine = oLine;
      this.oCol = oCol;
      if (src > this.maxSrc) this.maxSrc = src;
      if (n === 5) {
        const name = this.name + d[4];
        if (name < 0 || name > MAX_VALUE) this.fail('a mapping names a negative or huge name index');
        this.name = name;
        if (name > this.maxName) this.maxName = name;
      }
    }
    this.fields = 0;
    this.segments++;
    this.segmentsInLine++;
    if (this.counted.segments + this.segments > this.limits.maxSegments) {
      throw new SymbolInputError(
        `${this.fileName} has more than ${this.limits.maxSegments} mappings (the limit of a source map)`,
      );
    }
  }

  /** Checks the largest source and name index against the map's lists. */
  checkIndexes(sources: number, names: number): void {
    if (this.maxSrc >= sources)
      throw new SymbolInputError(
        `${this.fileName}: a mapping points to source ${this.maxSrc}, but the map has ${sources} sources`,
      );
    if (this.maxName >= names)
      throw new SymbolInputError(
        `${this.fileName}: a mapping names name ${this.maxName}, but the map has ${names} names`,
      );
  }
}

// ---------------------------------------------------------------- the lookup index

/** One map's (or one section's) mappings, ready for lookups: plain data a thread can transfer. */
export interface MappingsIndex {
  /** The mappings as they were uploaded (ASCII). */
  bytes: Uint8Array;
  /** CP Int32 fields per checkpoint, in (line, segment column) order. */
  checkpoints: Int32Array;
  /** Lines whose segments are out of column order, ascending. */
  unsorted: Int32Array;
  lines: number;
  segments: number;
}

/** Bytes an index holds (its typed arrays). */
export function indexBytes(index: MappingsIndex): number {
  return index.bytes.byteLength + index.checkpoints.byteLength + index.unsorted.byteLength;
}

/**
 * Decodes and checks the mappings, recording a checkpoint every CHECKPOINT_BYTES (at a
 * line start, or at the first segment of a column on a line in order so far); the
 * decoder, for its counts. SymbolInputError when they are not valid mappings.
 */
export function indexMappings(
  bytes: Uint8Array,
  name: string,
  limits: SourceMapLimits = SOURCE_MAP_LIMITS,
  counted?: { segments: number; lines: number },
): { index: MappingsIndex; decoder: MappingsDecoder } {
  const dec = new MappingsDecoder(name, limits, counted);
  const cps: number[] = [];
  const unsorted: number[] = [];
  let last = 0;
  let lineFirstCp = 0;
  let prevSegCol = -1;
  const add = (offset: number, segCol: number) => {
    cps.push(offset, dec.line, dec.col, dec.src, dec.oLine, dec.oCol, dec.name, segCol);
    last = offset;
  };
  dec.atLineStart = (start) => {
    lineFirstCp = cps.length;
    prevSegCol = -1;
    if (start - last >= CHECKPOINT_BYTES) add(start, -1);
  };
  dec.beforeSegment = (start, nextCol) => {
    // Only at the first segment of a column (a lookup of that column starts there), and
    // only while the line is in order.
    if (start - last >= CHECKPOINT_BYTES && nextCol > prevSegCol && dec.lineSorted && nextCol >= dec.col)
      add(start, nextCol);
    prevSegCol = nextCol;
  };
  dec.atLineEnd = (line, sorted) => {
    if (sorted) return;
    unsorted.push(line);
    // A line out of order is searched whole: the checkpoints inside it go.
    let keep = lineFirstCp;
    if (keep < cps.length && cps[keep + 7] === -1) keep += CP;
    cps.length = keep;
    last = keep > 0 ? cps[keep - CP] : 0;
  };
  dec.push(bytes);
  dec.end();
  return {
    index: {
      bytes,
      checkpoints: Int32Array.from(cps),
      unsorted: Int32Array.from(unsorted),
      lines: dec.lines,
      segments: dec.segments,
    },
    decoder: dec,
  };
}

/** A segment found by `lookupSegment`: 1, 4 or 5 fields as in the mappings. */
export interface FoundSegment {
  fields: number;
  col: number;
  src: number;
  line: number;
  column: number;
  name: number;
}

function hasLine(sortedLines: Int32Array, line: number): boolean {
  let lo = 0;
  let hi = sortedLines.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = sortedLines[mid];
    if (v === line) return true;
    if (v < line) lo = mid + 1;
    else hi = mid - 1;
  }
  return false;
}

/** The last checkpoint at or before (line, col); -1 for the start of the mappings. */
function checkpointBefore(cps: Int32Array, line: number, col: number): number {
  let lo = 0;
  let hi = cps.length / CP - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const l = cps[mid * CP + 1];
    const c = cps[mid * CP + 7];
    if (l < line || (l === line && c <= col)) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * The segment of 0-based generated `line` and `col` as trace-mapping's traceSegment finds
 * it (see the header); null when the line has none at or before the column. `maxCol`
 * ignores segments past it (an indexed map's section ends there on its last line).
 */
export function lookupSegment(index: MappingsIndex, line: number, col: number): FoundSegment | null {
  if (line < 0 || col < 0 || line >= index.lines) return null;
  const { bytes, checkpoints: cps } = index;
  const sorted = !hasLine(index.unsorted, line);
  const k = sorted ? checkpointBefore(cps, line, col) : checkpointBefore(cps, line, -1);
  let i = 0;
  let l = 0;
  let c = 0;
  let src = 0;
  let oLine = 0;
  let oCol = 0;
  let name = 0;
  if (k >= 0) {
    const at = k * CP;
    i = cps[at];
    l = cps[at + 1];
    c = cps[at + 2];
    src = cps[at + 3];
    oLine = cps[at + 4];
    oCol = cps[at + 5];
    name = cps[at + 6];
  }
  let exact: FoundSegment | null = null;
  let below: FoundSegment | null = null;
  const n = bytes.length;
  const vals = [0, 0, 0, 0, 0];
  while (i < n) {
    const b = bytes[i];
    if (b === SEMI) {
      if (l === line) break;
      l++;
      c = 0;
      i++;
      continue;
    }
    if (b === COMMA) {
      i++;
      continue;
    }
    // One segment: the upload check guarantees it is well formed.
    let fields = 0;
    while (i < n && bytes[i] !== COMMA && bytes[i] !== SEMI) {
      let value = 0;
      let mult = 1;
      let d: number;
      do {
        d = DIGIT[bytes[i++]];
        value += (d & 31) * mult;
        mult *= 32;
      } while (d & 32);
      vals[fields++] = value & 1 ? -(value - 1) / 2 : value / 2;
    }
    c += vals[0];
    if (fields >= 4) {
      src += vals[1];
      oLine += vals[2];
      oCol += vals[3];
      if (fields === 5) name += vals[4];
    }
    if (l !== line) continue;
    if (c === col) {
      if (!exact) exact = { fields, col: c, src, line: oLine, column: oCol, name };
      if (sorted) break;
    } else if (c < col) {
      if (!below || c >= below.col) below = { fields, col: c, src, line: oLine, column: oCol, name };
    } else if (sorted) break;
  }
  return exact ?? below;
}
