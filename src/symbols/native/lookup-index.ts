// The compact lookup index of one native object (a Mach-O slice, an ELF file): built once at upload from DWARF and the
// symbol table, stored as bytes beside the file, and answered by binary search so that a
// frame lookup never re-parses DWARF. Layout (little-endian, sections 8-byte aligned):
//   header: magic "FLDX", version, counts, __TEXT vmaddr, arch and debug id (string ids)
//   strings: offsets + UTF-8 blob          files: string id per file
//   scopes: name, parent, call file, call line (inlined subroutines point at their caller)
//   intervals: start address → innermost scope (-1 = none), non-overlapping, ascending
//   rows: start address → file (-1 = gap), line
//   symbols: start address → entry (-1 = gap), the fallback when DWARF names nothing
//   symbol entries: name, file (ELF's STT_FILE of a local symbol; -1 = none)
// A stored index of another version is not read: the service rebuilds it from the stored
// file (docs/architecture.md "Symbolication").

import type { ByteRangeSource } from '../../bytes.js';
import { BadNativeFile } from './bytes.js';
import { readDwarf, readDwarfAsync, tableName, type DwarfSections, type DwarfTables, type Window } from './dwarf.js';
import { GrowableF64, GrowableI32 } from './growable.js';
import { readSymbols, type MachSlice } from './macho.js';

const MAGIC = 0x58444c46; // "FLDX" little-endian
/** The format's version: a change of layout or of what is indexed bumps it. */
export const NATIVE_INDEX_VERSION = 2;
const HEADER_BYTES = 64;

/** One symbolicated location; lookups return the innermost (inlined) one first. */
export interface NativeFrame {
  /** Linkage name when DWARF has one (mangled), else the plain name, else the symbol's. */
  function: string;
  file: string;
  /** 0 when no line is known. */
  line: number;
}

class StringTable {
  readonly list: string[] = [];
  private ids = new Map<string, number>();
  /** The list, the lookup map released (no more ids are asked for). */
  done(): string[] {
    this.ids = new Map();
    return this.list;
  }
  id(s: string): number {
    let id = this.ids.get(s);
    if (id === undefined) {
      id = this.list.length;
      this.list.push(s);
      this.ids.set(s, id);
    }
    return id;
  }
}

function window(slice: MachSlice, name: string): Window {
  const want = name.slice(0, 16);
  for (const s of slice.sections) {
    if (s.segment === '__DWARF' && s.name === want && s.fileOffset >= 0) {
      return { start: s.fileOffset, end: s.fileOffset + s.size };
    }
  }
  return { start: 0, end: 0 };
}

/** The __DWARF sections the index is built from (Mach-O names are cut at 16 characters). */
const DWARF_SECTION_NAMES = {
  info: '__debug_info',
  abbrev: '__debug_abbrev',
  line: '__debug_line',
  str: '__debug_str',
  lineStr: '__debug_line_str',
  strOffsets: '__debug_str_offs',
  addr: '__debug_addr',
  ranges: '__debug_ranges',
  rngLists: '__debug_rnglists',
} as const;

export function dwarfSections(bytes: Uint8Array, slice: MachSlice): DwarfSections {
  const sections = { bytes } as DwarfSections;
  for (const [key, name] of Object.entries(DWARF_SECTION_NAMES))
    sections[key as keyof typeof DWARF_SECTION_NAMES] = window(slice, name);
  return sections;
}

/** Bytes copied from a stored file per read while its sections are gathered. */
const GATHER_STEP = 4 * 1024 * 1024;

/**
 * Byte ranges of a stored file gathered into one buffer, each read once (overlapping ones
 * merged, so a lying file gets no more than its own size); `moved` maps a file offset in
 * one of them to its place in the buffer (-1 outside them).
 */
export async function gatherRanges(
  source: ByteRangeSource,
  wanted: [number, number][],
): Promise<{ bytes: Uint8Array; moved: (offset: number) => number }> {
  wanted = wanted.filter(([start, end]) => end > start).sort((a, b) => a[0] - b[0]);
  const merged: { start: number; end: number; at: number }[] = [];
  let total = 0;
  for (const [start, end] of wanted) {
    const last = merged[merged.length - 1];
    if (last && start <= last.end) {
      if (end > last.end) {
        total += end - last.end;
        last.end = end;
      }
      continue;
    }
    merged.push({ start, end, at: total });
    total += end - start;
  }
  const bytes = new Uint8Array(total);
  for (const m of merged) {
    for (let at = m.start; at < m.end; at += GATHER_STEP) {
      const piece = await source.read(at, Math.min(GATHER_STEP, m.end - at));
      if (piece.byteLength !== Math.min(GATHER_STEP, m.end - at))
        throw new BadNativeFile('a section runs past the end of the file');
      bytes.set(piece, m.at + (at - m.start));
    }
  }
  const moved = (offset: number): number => {
    const m = merged.find((x) => offset >= x.start && offset < x.end);
    return m ? m.at + (offset - m.start) : -1;
  };
  return { bytes, moved };
}

/**
 * What the index of a slice reads, gathered from `source` into one buffer: the __DWARF
 * sections of DWARF_SECTION_NAMES (but `__debug_info` when `streamInfo`: the DWARF reader
 * reads it a window at a time), the symbol table and its strings. Returns the buffer and
 * the slice with those offsets moved into it (other sections without bytes). The rest of
 * the file (accelerator tables, location lists, __TEXT copies, other slices) is never read.
 */
export async function gatherSlice(
  source: ByteRangeSource,
  slice: MachSlice,
  streamInfo = false,
): Promise<{ bytes: Uint8Array; slice: MachSlice }> {
  const wanted: [number, number][] = [];
  const names = new Set<string>(Object.values(DWARF_SECTION_NAMES));
  if (streamInfo) names.delete(DWARF_SECTION_NAMES.info);
  for (const name of names) {
    const w = window(slice, name);
    if (w.end > w.start) wanted.push([w.start, w.end]);
  }
  const st = slice.symtab;
  if (st) {
    if (st.nsyms > 0) wanted.push([st.symoff, st.symoff + st.nsyms * (slice.is64 ? 16 : 12)]);
    if (st.strsize > 0) wanted.push([st.stroff, st.stroff + st.strsize]);
  }
  const { bytes, moved } = await gatherRanges(source, wanted);
  const sections = slice.sections.map((s) => ({
    ...s,
    fileOffset:
      s.segment === '__DWARF' && names.has(s.name) && s.fileOffset >= 0 && s.size > 0 ? moved(s.fileOffset) : -1,
  }));
  const symtab = st && {
    ...st,
    symoff: st.nsyms > 0 ? moved(st.symoff) : 0,
    stroff: st.strsize > 0 ? moved(st.stroff) : 0,
  };
  return { bytes, slice: { ...slice, sections, symtab, start: 0, end: bytes.byteLength } };
}

/**
 * Builds the index of one slice of a stored file, reading only what the index needs,
 * `__debug_info` a window of `infoWindowBytes` at a time (tests make it tiny).
 */
export async function buildNativeIndexFrom(
  source: ByteRangeSource,
  slice: MachSlice,
  infoWindowBytes?: number,
): Promise<Uint8Array> {
  return buildIndexAsync(await streamedMachoSource(source, slice, infoWindowBytes));
}

/** What buildNativeIndexFrom builds from (only the result holds the gathered bytes: the build releases them). */
async function streamedMachoSource(
  source: ByteRangeSource,
  slice: MachSlice,
  infoWindowBytes: number | undefined,
): Promise<IndexSource> {
  const info = window(slice, DWARF_SECTION_NAMES.info);
  const gathered = await gatherSlice(source, slice, true);
  const parts = machoSource(gathered.bytes, gathered.slice);
  parts.sections.info = info;
  parts.sections.infoSource = source;
  parts.sections.infoWindowBytes = infoWindowBytes;
  return parts;
}

/** A symbol of an object's symbol table, with where it ends (Infinity: at the next one). */
export interface IndexSymbol {
  name: string;
  addr: number;
  end: number;
  /** The source file the symbol table names for it (ELF STT_FILE), if any. */
  file?: string;
}

/**
 * What an index is built from, whatever the container (Mach-O slice, ELF file): DWARF
 * sections as windows of the bytes, the symbol table, and the facts the header keeps.
 */
export interface IndexSource {
  arch: string;
  debugId: string;
  /** The address the object's DWARF and symbols count from (Mach-O __TEXT vmaddr, ELF load address). */
  textVmaddr: number;
  sections: DwarfSections;
  /** Ascending by address. */
  symbols: IndexSymbol[];
}

/** Mach-O's symbols (leading '_' dropped), each ending at the next or at its section's end. */
function machoSymbols(bytes: Uint8Array, slice: MachSlice): IndexSymbol[] {
  const symbols = readSymbols(bytes, slice);
  const sections = slice.sections.filter((s) => s.size > 0).sort((a, b) => a.addr - b.addr);
  const starts = Float64Array.from(sections, (s) => s.addr);
  // By binary search: a hostile file may hold many sections and many symbols at once.
  const sectionEnd = (addr: number): number => {
    const i = floorIndex(starts, addr);
    return i >= 0 && addr < sections[i].addr + sections[i].size ? sections[i].addr + sections[i].size : Infinity;
  };
  return symbols.map((sym) => ({
    name: sym.name.startsWith('_') ? sym.name.slice(1) : sym.name,
    addr: sym.addr,
    end: sectionEnd(sym.addr),
  }));
}

function machoSource(bytes: Uint8Array, slice: MachSlice): IndexSource {
  return {
    arch: slice.arch,
    debugId: slice.debugId,
    textVmaddr: slice.textVmaddr,
    sections: dwarfSections(bytes, slice),
    symbols: machoSymbols(bytes, slice),
  };
}

/** Builds the index of one slice. `bytes` is the whole uploaded file the slice lies in. */
export function buildNativeIndex(bytes: Uint8Array, slice: MachSlice): Uint8Array {
  return buildIndex(machoSource(bytes, slice));
}

/** The same, letting other work run while DWARF is read (the upload path). */
export async function buildNativeIndexAsync(bytes: Uint8Array, slice: MachSlice): Promise<Uint8Array> {
  return buildIndexAsync(machoSource(bytes, slice));
}

/** Builds an index from any container's parts. */
export function buildIndex(source: IndexSource): Uint8Array {
  const start = symbolPart(source);
  return finishIndex(source, readDwarf(source.sections), start);
}

export async function buildIndexAsync(source: IndexSource): Promise<Uint8Array> {
  // The symbols become their compact part before DWARF is read: their objects are not held meanwhile.
  const start = symbolPart(source);
  return finishIndex(source, await readDwarfAsync(source.sections), start);
}

/** The index's first part: the symbol table, its names the first strings. Releases `source.symbols`. */
function symbolPart(source: IndexSource): { strings: StringTable; symbols: Boundaries; entries: Int32Array } {
  const strings = new StringTable();
  const { symbols, entries } = symbolTable(source.symbols, strings);
  source.symbols = [];
  return { strings, symbols, entries };
}

/**
 * Builds an index from tables (DWARF's, or made without DWARF from Breakpad's
 * FUNC/INLINE/line records: scope names are NUL-terminated positions in
 * `source.sections.bytes`). It consumes its inputs: each table, the source's bytes and its
 * symbols are released once turned into their part of the index, so the build's peak
 * holds the index and what is left to make it, not every stage at once.
 */
export function indexFromTables(source: IndexSource, t: DwarfTables): Uint8Array {
  return finishIndex(source, t, symbolPart(source));
}

function finishIndex(
  source: IndexSource,
  t: DwarfTables,
  { strings, symbols, entries }: ReturnType<typeof symbolPart>,
): Uint8Array {
  const files = t.files.map((f) => strings.id(f));
  const scopeNames = resolveScopeNames(source.sections.bytes, t, strings);
  source.sections.bytes = new Uint8Array(0);
  t.inline = [];
  t.subOffset = t.subNamePos = t.subLinkPos = t.subRef = new GrowableF64(0);
  t.scopeNamePos = t.scopeLinkPos = t.scopeRef = new GrowableF64(0);
  const intervals = flattenScopes(t);
  t.rangeLo = t.rangeHi = new GrowableF64(0);
  t.rangeScope = t.scopeDepth = new GrowableI32(0);
  const rows = mergeSequences(t);
  t.rowAddr = new GrowableF64(0);
  t.rowFile = t.rowLine = t.seqFirstRow = t.seqEndRow = new GrowableI32(0);
  return serialise({
    strings: strings.done(),
    files,
    scopeNames,
    t,
    intervals,
    rows,
    symbols,
    entries,
    textVmaddr: source.textVmaddr,
    arch: strings.id(source.arch),
    debugId: strings.id(source.debugId),
  });
}

function resolveScopeNames(bytes: Uint8Array, t: DwarfTables, strings: StringTable): Int32Array {
  const n = t.scopeParent.length;
  const out = new Int32Array(n);
  const byPos = new Map<number, number>();
  const subOffsets = t.subOffset.data;
  const subCount = t.subOffset.length;
  const findSub = (offset: number): number => {
    let lo = 0;
    let hi = subCount - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const v = subOffsets[mid];
      if (v === offset) return mid;
      if (v < offset) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  };
  // LLVM's rule: a linkage name anywhere along abstract_origin/specification wins over a name.
  const follow = (ownPos: number, ref: number, pick: Float64Array): number => {
    let pos = ownPos;
    for (let hops = 0; pos < 0 && ref >= 0 && hops < 16; hops++) {
      const i = findSub(ref);
      if (i < 0) break;
      pos = pick[i];
      ref = t.subRef.data[i];
    }
    return pos;
  };
  for (let s = 0; s < n; s++) {
    const ref = t.scopeRef.data[s];
    let pos = follow(t.scopeLinkPos.data[s], ref, t.subLinkPos.data);
    if (pos < 0) pos = follow(t.scopeNamePos.data[s], ref, t.subNamePos.data);
    if (pos < 0) {
      out[s] = -1;
      continue;
    }
    let id = byPos.get(pos);
    if (id === undefined) {
      id = strings.id(tableName(bytes, t, pos));
      byPos.set(pos, id);
    }
    out[s] = id;
  }
  return out;
}

interface Boundaries {
  addr: Float64Array;
  value: Int32Array;
}

class BoundaryList {
  readonly addr: GrowableF64;
  readonly value: GrowableI32;
  /** `capacity`: about how many boundaries come (a guess too small costs copies left for the GC). */
  constructor(capacity = 1024) {
    this.addr = new GrowableF64(Math.max(1024, capacity));
    this.value = new GrowableI32(Math.max(1024, capacity));
  }
  emit(addr: number, value: number): void {
    const n = this.addr.length;
    if (n > 0 && this.addr.get(n - 1) >= addr) {
      // Same start: the later (inner) entry wins.
      this.value.set(n - 1, value);
      if (n > 1 && this.value.get(n - 2) === value) this.addr.length = this.value.length = n - 1;
      return;
    }
    if (n > 0 && this.value.get(n - 1) === value) return;
    this.addr.push(addr);
    this.value.push(value);
  }
  finish(): Boundaries {
    return { addr: this.addr.view(), value: this.value.view() };
  }
}

/** Turns nested scope ranges into non-overlapping intervals naming the innermost scope. */
function flattenScopes(t: DwarfTables): Boundaries {
  const n = t.rangeLo.length;
  const lo = t.rangeLo.data;
  const hi = t.rangeHi.data;
  const scope = t.rangeScope.data;
  const depth = t.scopeDepth.data;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  order.sort((a, b) => lo[a] - lo[b] || hi[b] - hi[a] || depth[scope[a]] - depth[scope[b]]);
  const out = new BoundaryList(n);
  const stack: number[] = [];
  const stackHi: number[] = [];
  const popUntil = (addr: number): void => {
    while (stack.length > 0 && stackHi[stackHi.length - 1] <= addr) {
      const end = stackHi.pop()!;
      stack.pop();
      out.emit(end, stack.length > 0 ? scope[stack[stack.length - 1]] : -1);
    }
  };
  for (let k = 0; k < n; k++) {
    const i = order[k];
    popUntil(lo[i]);
    // An inner range never outlives the one around it (malformed input is clipped).
    const end = stackHi.length > 0 ? Math.min(hi[i], stackHi[stackHi.length - 1]) : hi[i];
    if (end <= lo[i]) continue;
    stack.push(i);
    stackHi.push(end);
    out.emit(lo[i], scope[i]);
  }
  popUntil(Infinity);
  return out.finish();
}

interface Rows {
  addr: Float64Array;
  file: Int32Array;
  line: Int32Array;
}

/**
 * Orders line sequences by address; a later-starting sequence wins where two overlap. When
 * the sequences already ascend without overlapping (a linker lays units out in order), the
 * rows are the reader's own, not a copy: the build's peak holds them once.
 */
function mergeSequences(t: DwarfTables): Rows {
  const count = t.seqFirstRow.length;
  const first = t.seqFirstRow.data;
  const endRow = t.seqEndRow.data;
  const ra = t.rowAddr.data;
  const order = new Uint32Array(count);
  for (let i = 0; i < count; i++) order[i] = i;
  order.sort((a, b) => ra[first[a]] - ra[first[b]]);
  let inPlace = true;
  let next = 0;
  for (let k = 0; k < count && inPlace; k++) {
    const s = order[k];
    // In place: each sequence follows the last with no rows between, and starts after its last row.
    if (first[s] !== next || (k > 0 && ra[next - 1] >= ra[first[s]])) inPlace = false;
    next = endRow[s];
  }
  if (inPlace && next === t.rowAddr.length)
    return { addr: t.rowAddr.view(), file: t.rowFile.view(), line: t.rowLine.view() };
  const addr = new GrowableF64(Math.max(1024, t.rowAddr.length));
  const file = new GrowableI32(Math.max(1024, t.rowAddr.length));
  const line = new GrowableI32(Math.max(1024, t.rowAddr.length));
  for (let k = 0; k < count; k++) {
    const s = order[k];
    const start = ra[first[s]];
    while (addr.length > 0 && addr.get(addr.length - 1) >= start)
      addr.length = file.length = line.length = addr.length - 1;
    for (let i = first[s]; i < endRow[s]; i++) {
      addr.push(ra[i]);
      file.push(t.rowFile.data[i]);
      line.push(t.rowLine.data[i]);
    }
  }
  return { addr: addr.view(), file: file.view(), line: line.view() };
}

function symbolTable(symbols: IndexSymbol[], strings: StringTable): { symbols: Boundaries; entries: Int32Array } {
  const out = new BoundaryList();
  const entryIds = new Map<string, number>();
  const entries = new GrowableI32();
  for (let i = 0; i < symbols.length; i++) {
    const sym = symbols[i];
    if (i > 0 && symbols[i - 1].addr === sym.addr) continue;
    const key = `${sym.name}\0${sym.file ?? ''}`;
    let entry = entryIds.get(key);
    if (entry === undefined) {
      entry = entries.length / 2;
      entries.push(strings.id(sym.name));
      entries.push(sym.file ? strings.id(sym.file) : -1);
      entryIds.set(key, entry);
    }
    out.emit(sym.addr, entry);
    const next = i + 1 < symbols.length ? symbols[i + 1].addr : Infinity;
    const end = Math.min(next, sym.end);
    if (end < next && end !== Infinity) out.emit(end, -1);
  }
  return { symbols: out.finish(), entries: entries.finish() };
}

interface IndexParts {
  strings: string[];
  files: number[];
  scopeNames: Int32Array;
  t: DwarfTables;
  intervals: Boundaries;
  rows: Rows;
  symbols: Boundaries;
  entries: Int32Array;
  textVmaddr: number;
  arch: number;
  debugId: number;
}

const align8 = (n: number): number => (n + 7) & ~7;

/** Bytes of a string in UTF-8 (an unpaired surrogate counts 3, as TextEncoder writes U+FFFD). */
function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

/** Where each table starts (in the order of the header comment), and the total size. */
function layout(
  nStrings: number,
  blobBytes: number,
  nFiles: number,
  nScopes: number,
  nIntervals: number,
  nRows: number,
  nSymbols: number,
  nEntries: number,
): { offsets: number[]; total: number } {
  const sizes = [
    4 * (nStrings + 1),
    blobBytes,
    4 * nFiles,
    16 * nScopes,
    8 * nIntervals,
    4 * nIntervals,
    8 * nRows,
    4 * nRows,
    4 * nRows,
    8 * nSymbols,
    4 * nSymbols,
    8 * nEntries,
  ];
  const offsets: number[] = [];
  let total = HEADER_BYTES;
  for (const size of sizes) {
    offsets.push(total);
    total = align8(total + size);
  }
  return { offsets, total };
}

function serialise(p: IndexParts): Uint8Array {
  const encoder = new TextEncoder();
  // UTF-8 sizes first, then each string encoded straight into the index: no copy per string.
  const sizes = new Uint32Array(p.strings.length);
  let blobBytes = 0;
  for (let i = 0; i < p.strings.length; i++) blobBytes += sizes[i] = utf8Length(p.strings[i]);
  const nScopes = p.scopeNames.length;
  const nIntervals = p.intervals.addr.length;
  const nRows = p.rows.addr.length;
  const nSymbols = p.symbols.addr.length;
  const nEntries = p.entries.length / 2;
  const { offsets, total } = layout(
    p.strings.length,
    blobBytes,
    p.files.length,
    nScopes,
    nIntervals,
    nRows,
    nSymbols,
    nEntries,
  );
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  const header = [
    MAGIC,
    NATIVE_INDEX_VERSION,
    p.strings.length,
    blobBytes,
    p.files.length,
    nScopes,
    nIntervals,
    nRows,
    nSymbols,
    p.arch,
    p.debugId,
    nEntries,
  ];
  header.forEach((v, i) => view.setUint32(i * 4, v, true));
  view.setFloat64(48, p.textVmaddr, true);
  const u32 = (at: number, values: ArrayLike<number>): void => {
    for (let i = 0; i < values.length; i++) view.setInt32(at + 4 * i, values[i], true);
  };
  const f64 = (at: number, values: Float64Array): void => {
    for (let i = 0; i < values.length; i++) view.setFloat64(at + 8 * i, values[i], true);
  };
  let cursor = 0;
  const stringOffsets = new Uint32Array(p.strings.length + 1);
  for (let i = 0; i < p.strings.length; i++) {
    stringOffsets[i] = cursor;
    const at = offsets[1] + cursor;
    const { written } = encoder.encodeInto(p.strings[i], out.subarray(at, at + sizes[i]));
    if (written !== sizes[i]) throw new Error('a name encoded to another size than counted');
    cursor += sizes[i];
  }
  stringOffsets[p.strings.length] = cursor;
  u32(offsets[0], stringOffsets);
  u32(offsets[2], p.files);
  // Scopes written straight into the index, no interleaved copy first.
  for (let s = 0, at = offsets[3]; s < nScopes; s++, at += 16) {
    view.setInt32(at, p.scopeNames[s], true);
    view.setInt32(at + 4, p.t.scopeParent.data[s], true);
    view.setInt32(at + 8, p.t.scopeCallFile.data[s], true);
    view.setInt32(at + 12, p.t.scopeCallLine.data[s], true);
  }
  f64(offsets[4], p.intervals.addr);
  u32(offsets[5], p.intervals.value);
  f64(offsets[6], p.rows.addr);
  u32(offsets[7], p.rows.file);
  u32(offsets[8], p.rows.line);
  f64(offsets[9], p.symbols.addr);
  u32(offsets[10], p.symbols.value);
  u32(offsets[11], p.entries);
  return out;
}

/** True when `stored` is a native index of the version this build writes. */
export function isCurrentNativeIndex(stored: Uint8Array): boolean {
  if (stored.byteLength < HEADER_BYTES) return false;
  const view = new DataView(stored.buffer, stored.byteOffset, stored.byteLength);
  return view.getUint32(0, true) === MAGIC && view.getUint32(4, true) === NATIVE_INDEX_VERSION;
}

/** Index of the greatest element ≤ x in an ascending array, or -1. */
function floorIndex(a: Float64Array, x: number): number {
  let lo = 0;
  let hi = a.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (a[mid] <= x) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
}

/** A stored index, opened without copying its tables. */
export class NativeIndex {
  readonly textVmaddr: number;
  readonly arch: string;
  readonly debugId: string;
  private readonly stringOffsets: Uint32Array;
  private readonly blob: Uint8Array;
  private readonly files: Int32Array;
  private readonly scopes: Int32Array;
  private readonly intervalAddr: Float64Array;
  private readonly intervalScope: Int32Array;
  private readonly rowAddr: Float64Array;
  private readonly rowFile: Int32Array;
  private readonly rowLine: Int32Array;
  private readonly symbolAddr: Float64Array;
  private readonly symbolEntry: Int32Array;
  private readonly entries: Int32Array;
  private readonly decoded = new Map<number, string>();
  private readonly decoder = new TextDecoder();

  constructor(stored: Uint8Array) {
    if (stored.length < HEADER_BYTES) throw new BadNativeFile('index too short');
    // Typed views need 8-byte alignment; a stored copy from a database may not have it.
    const bytes = stored.byteOffset % 8 === 0 ? stored : stored.slice();
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const h = (i: number): number => view.getUint32(i * 4, true);
    if (h(0) !== MAGIC) throw new BadNativeFile('not a native symbol index');
    if (h(1) !== NATIVE_INDEX_VERSION)
      throw new BadNativeFile(`native symbol index of version ${h(1)}, not ${NATIVE_INDEX_VERSION}`);
    const [nStrings, blobBytes, nFiles, nScopes, nIntervals, nRows, nSymbols, nEntries] = [
      h(2),
      h(3),
      h(4),
      h(5),
      h(6),
      h(7),
      h(8),
      h(11),
    ];
    const { offsets, total } = layout(nStrings, blobBytes, nFiles, nScopes, nIntervals, nRows, nSymbols, nEntries);
    if (total !== bytes.length) throw new BadNativeFile('index size does not match its header');
    const base = bytes.byteOffset;
    const buf = bytes.buffer;
    this.stringOffsets = new Uint32Array(buf, base + offsets[0], nStrings + 1);
    this.blob = new Uint8Array(buf, base + offsets[1], blobBytes);
    this.files = new Int32Array(buf, base + offsets[2], nFiles);
    this.scopes = new Int32Array(buf, base + offsets[3], 4 * nScopes);
    this.intervalAddr = new Float64Array(buf, base + offsets[4], nIntervals);
    this.intervalScope = new Int32Array(buf, base + offsets[5], nIntervals);
    this.rowAddr = new Float64Array(buf, base + offsets[6], nRows);
    this.rowFile = new Int32Array(buf, base + offsets[7], nRows);
    this.rowLine = new Int32Array(buf, base + offsets[8], nRows);
    this.symbolAddr = new Float64Array(buf, base + offsets[9], nSymbols);
    this.symbolEntry = new Int32Array(buf, base + offsets[10], nSymbols);
    this.entries = new Int32Array(buf, base + offsets[11], 2 * nEntries);
    this.textVmaddr = view.getFloat64(48, true);
    this.arch = this.string(h(9));
    this.debugId = this.string(h(10));
  }

  private string(id: number): string {
    if (id < 0 || id + 1 >= this.stringOffsets.length) return '';
    let s = this.decoded.get(id);
    if (s === undefined) {
      const start = this.stringOffsets[id];
      const end = this.stringOffsets[id + 1];
      s = end >= start && end <= this.blob.length ? this.decoder.decode(this.blob.subarray(start, end)) : '';
      this.decoded.set(id, s);
    }
    return s;
  }

  private fileName(id: number): string {
    return id >= 0 && id < this.files.length ? this.string(this.files[id]) : '';
  }

  /** True when DWARF gave it scopes or line rows (a split debug file; not a stripped object). */
  get hasDebugInfo(): boolean {
    return this.rowAddr.length > 0 || this.intervalAddr.length > 0;
  }

  /** The symbol table's name for an address, or ''. */
  symbolAt(addr: number): string {
    const e = this.entryAt(addr);
    return e < 0 ? '' : this.string(this.entries[2 * e]);
  }

  private entryAt(addr: number): number {
    const i = floorIndex(this.symbolAddr, addr);
    const e = i < 0 ? -1 : this.symbolEntry[i];
    return e >= 0 && 2 * e + 1 < this.entries.length ? e : -1;
  }

  /**
   * Locations for an address in the slice's own address space (after the image arithmetic):
   * innermost inlined function first, the out-of-line function last; [] when nothing is known.
   */
  lookup(addr: number): NativeFrame[] {
    const r = floorIndex(this.rowAddr, addr);
    const hasRow = r >= 0 && this.rowFile[r] !== -1;
    const i = floorIndex(this.intervalAddr, addr);
    let scope = i >= 0 ? this.intervalScope[i] : -1;
    const frames: NativeFrame[] = [];
    let file = hasRow ? this.fileName(this.rowFile[r]) : '';
    let line = hasRow ? this.rowLine[r] : 0;
    if (scope < 0) {
      const e = this.entryAt(addr);
      const symbol = e < 0 ? '' : this.string(this.entries[2 * e]);
      if (symbol === '' && !hasRow) return frames;
      // Without a line row, LLVM names the file an ELF symbol table gives a local symbol.
      if (!hasRow && e >= 0 && this.entries[2 * e + 1] >= 0) file = this.string(this.entries[2 * e + 1]);
      frames.push({ function: symbol, file, line });
      return frames;
    }
    const scopes = this.scopes;
    for (let hops = 0; scope >= 0 && scope * 4 < scopes.length && hops < 256; hops++) {
      const name = this.string(scopes[4 * scope]);
      const parent = scopes[4 * scope + 1];
      frames.push({ function: name || (parent < 0 ? this.symbolAt(addr) : ''), file, line });
      file = this.fileName(scopes[4 * scope + 2]);
      line = scopes[4 * scope + 3];
      scope = parent;
    }
    return frames;
  }
}
