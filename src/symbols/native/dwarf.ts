// DWARF 2-5 reading for symbolication: compile units, subprograms and inlined subroutines
// (pc ranges, call sites, names through abstract_origin/specification, linkage names) and
// line programs (v2-v5 file tables). It collects exactly what the lookup index needs into
// typed arrays and never keeps the DIE tree. A malformed unit is dropped on its own; the
// units around it still count.

import type { ByteRangeSource } from '../../bytes.js';
import { BadNativeFile, ByteReader, cString } from './bytes.js';
import { GrowableF64, GrowableI32 } from './growable.js';

/** A section as an absolute window of the whole file's bytes (empty when absent). */
export interface Window {
  start: number;
  end: number;
}

export interface DwarfSections {
  bytes: Uint8Array;
  /** A window of `infoSource` when that is given, else of `bytes`. */
  info: Window;
  /**
   * Where `.debug_info` is read from by the async reader, a few units at a time (a window
   * of INFO_WINDOW_BYTES, or one unit larger than that), so the largest section of a debug
   * file is never in memory whole. Without it, `info` lies in `bytes`.
   */
  infoSource?: ByteRangeSource;
  /** The window's size (INFO_WINDOW_BYTES unless a test makes it tiny). */
  infoWindowBytes?: number;
  abbrev: Window;
  line: Window;
  str: Window;
  lineStr: Window;
  strOffsets: Window;
  addr: Window;
  ranges: Window;
  rngLists: Window;
}

/**
 * What the reader hands to the index builder. Positions of names are absolute in `bytes`,
 * or INLINE_NAME + i for `inline[i]` (a name held in `.debug_info` itself, read as met).
 */
export interface DwarfTables {
  files: string[];
  /** Names given inline (DW_FORM_string) in `.debug_info`. */
  inline: string[];
  /** Per scope (a subprogram with code, or an inlined subroutine). */
  scopeNamePos: GrowableF64;
  scopeLinkPos: GrowableF64;
  scopeRef: GrowableF64;
  scopeParent: GrowableI32;
  scopeCallFile: GrowableI32;
  scopeCallLine: GrowableI32;
  scopeDepth: GrowableI32;
  /** Address ranges of scopes: [lo, hi) → scope. */
  rangeLo: GrowableF64;
  rangeHi: GrowableF64;
  rangeScope: GrowableI32;
  /** Subprogram DIEs by absolute .debug_info offset (ascending), for name resolution. */
  subOffset: GrowableF64;
  subNamePos: GrowableF64;
  subLinkPos: GrowableF64;
  subRef: GrowableF64;
  /** Line rows per sequence; file -1 ends a sequence. */
  rowAddr: GrowableF64;
  rowFile: GrowableI32;
  rowLine: GrowableI32;
  seqFirstRow: GrowableI32;
  seqEndRow: GrowableI32;
  /** Units skipped because they were malformed. */
  badUnits: number;
}

/** Name positions from here on stand for `DwarfTables.inline` entries (no file is 2^48 bytes long). */
export const INLINE_NAME = 2 ** 48;

/** The name at a position of the tables (see DwarfTables). */
export function tableName(bytes: Uint8Array, t: DwarfTables, pos: number): string {
  return pos >= INLINE_NAME ? (t.inline[pos - INLINE_NAME] ?? '') : cString(bytes, pos);
}

/** `.debug_info` bytes read from a source at once by the async reader (a larger unit is read whole). */
export const INFO_WINDOW_BYTES = 1 << 20;

const TAG_COMPILE_UNIT = 0x11;
const TAG_PARTIAL_UNIT = 0x3c;
const TAG_SKELETON_UNIT = 0x4a;
const TAG_SUBPROGRAM = 0x2e;
const TAG_INLINED_SUBROUTINE = 0x1d;

const AT_NAME = 0x03;
const AT_STMT_LIST = 0x10;
const AT_LOW_PC = 0x11;
const AT_HIGH_PC = 0x12;
const AT_COMP_DIR = 0x1b;
const AT_ABSTRACT_ORIGIN = 0x31;
const AT_SPECIFICATION = 0x47;
const AT_RANGES = 0x55;
const AT_CALL_FILE = 0x58;
const AT_CALL_LINE = 0x59;
const AT_LINKAGE_NAME = 0x6e;
const AT_MIPS_LINKAGE_NAME = 0x2007;
const AT_STR_OFFSETS_BASE = 0x72;
const AT_ADDR_BASE = 0x73;
const AT_RNGLISTS_BASE = 0x74;
const AT_GNU_ADDR_BASE = 0x2133;
const AT_GNU_RANGES_BASE = 0x2132;

const FORM = {
  addr: 0x01,
  block2: 0x03,
  block4: 0x04,
  data2: 0x05,
  data4: 0x06,
  data8: 0x07,
  string: 0x08,
  block: 0x09,
  block1: 0x0a,
  data1: 0x0b,
  flag: 0x0c,
  sdata: 0x0d,
  strp: 0x0e,
  udata: 0x0f,
  refAddr: 0x10,
  ref1: 0x11,
  ref2: 0x12,
  ref4: 0x13,
  ref8: 0x14,
  refUdata: 0x15,
  indirect: 0x16,
  secOffset: 0x17,
  exprloc: 0x18,
  flagPresent: 0x19,
  strx: 0x1a,
  addrx: 0x1b,
  refSup4: 0x1c,
  strpSup: 0x1d,
  data16: 0x1e,
  lineStrp: 0x1f,
  refSig8: 0x20,
  implicitConst: 0x21,
  loclistx: 0x22,
  rnglistx: 0x23,
  refSup8: 0x24,
  strx1: 0x25,
  strx2: 0x26,
  strx3: 0x27,
  strx4: 0x28,
  addrx1: 0x29,
  addrx2: 0x2a,
  addrx3: 0x2b,
  addrx4: 0x2c,
  gnuAddrIndex: 0x1f01,
  gnuStrIndex: 0x1f02,
  gnuRefAlt: 0x1f20,
  gnuStrpAlt: 0x1f21,
} as const;

interface Unit {
  /** Offset of the unit header in the info window's space (what references count from). */
  start: number;
  /** Where the unit ends in the info bytes at hand. */
  end: number;
  version: number;
  addrSize: number;
  offsetSize: number;
  strOffsetsBase: number;
  addrBase: number;
  rnglistsBase: number;
  rangesBase: number;
  baseAddr: number;
  /** DWARF file register → global file id. */
  fileIds: Int32Array;
}

interface Abbrev {
  tag: number;
  hasChildren: boolean;
  attrs: Int32Array;
  forms: Int32Array;
  implicit: Float64Array;
  /** Byte size of all attributes when every form has a fixed size, else -1. */
  fixedSize: number;
}

/** Fixed size of a form's value, -1 when it varies. */
function formSize(form: number, u: { addrSize: number; offsetSize: number; version: number }): number {
  switch (form) {
    case FORM.addr:
      return u.addrSize;
    case FORM.data1:
    case FORM.ref1:
    case FORM.flag:
    case FORM.strx1:
    case FORM.addrx1:
      return 1;
    case FORM.data2:
    case FORM.ref2:
    case FORM.strx2:
    case FORM.addrx2:
      return 2;
    case FORM.strx3:
    case FORM.addrx3:
      return 3;
    case FORM.data4:
    case FORM.ref4:
    case FORM.refSup4:
    case FORM.strx4:
    case FORM.addrx4:
      return 4;
    case FORM.data8:
    case FORM.ref8:
    case FORM.refSig8:
    case FORM.refSup8:
      return 8;
    case FORM.data16:
      return 16;
    case FORM.strp:
    case FORM.secOffset:
    case FORM.lineStrp:
    case FORM.strpSup:
    case FORM.gnuRefAlt:
    case FORM.gnuStrpAlt:
      return u.offsetSize;
    case FORM.refAddr:
      return u.version <= 2 ? u.addrSize : u.offsetSize;
    case FORM.flagPresent:
    case FORM.implicitConst:
      return 0;
    default:
      return -1;
  }
}

const KNOWN_VARIABLE_FORMS = new Set<number>([
  FORM.block2,
  FORM.block4,
  FORM.string,
  FORM.block,
  FORM.block1,
  FORM.sdata,
  FORM.udata,
  FORM.refUdata,
  FORM.indirect,
  FORM.exprloc,
  FORM.strx,
  FORM.addrx,
  FORM.loclistx,
  FORM.rnglistx,
  FORM.gnuAddrIndex,
  FORM.gnuStrIndex,
]);

function parseAbbrevs(
  s: DwarfSections,
  offset: number,
  u: { addrSize: number; offsetSize: number; version: number },
): { table: Map<number, Abbrev>; bytes: number } {
  const r = new ByteReader(s.bytes, s.abbrev.start, s.abbrev.end);
  r.seek(s.abbrev.start + offset);
  const start = r.pos;
  const table = new Map<number, Abbrev>();
  for (;;) {
    const code = r.uleb();
    if (code === 0) break;
    const tag = r.uleb();
    const hasChildren = r.u8() !== 0;
    const attrs: number[] = [];
    const forms: number[] = [];
    const implicit: number[] = [];
    let fixedSize = 0;
    for (;;) {
      const attr = r.uleb();
      const form = r.uleb();
      if (attr === 0 && form === 0) break;
      const size = formSize(form, u);
      if (size < 0 && !KNOWN_VARIABLE_FORMS.has(form))
        throw new BadNativeFile(`unknown DWARF form 0x${form.toString(16)}`);
      implicit.push(form === FORM.implicitConst ? r.sleb() : 0);
      attrs.push(attr);
      forms.push(form);
      fixedSize = size < 0 || fixedSize < 0 ? -1 : fixedSize + size;
    }
    table.set(code, {
      tag,
      hasChildren,
      attrs: Int32Array.from(attrs),
      forms: Int32Array.from(forms),
      implicit: Float64Array.from(implicit),
      fixedSize,
    });
  }
  return { table, bytes: r.pos - start };
}

/** Values of the attributes the index cares about, from one DIE. */
interface DieValues {
  namePos: number;
  linkPos: number;
  ref: number;
  lowPc: number;
  highPc: number;
  highPcIsOffset: boolean;
  rangesOffset: number;
  rangesIsIndex: boolean;
  callFile: number;
  callLine: number;
  stmtList: number;
  compDirPos: number;
}

function emptyDie(): DieValues {
  return {
    namePos: -1,
    linkPos: -1,
    ref: -1,
    lowPc: -1,
    highPc: -1,
    highPcIsOffset: false,
    rangesOffset: -1,
    rangesIsIndex: false,
    callFile: -1,
    callLine: 0,
    stmtList: -1,
    compDirPos: -1,
  };
}

export function emptyTables(): DwarfTables {
  return {
    files: [],
    inline: [],
    scopeNamePos: new GrowableF64(),
    scopeLinkPos: new GrowableF64(),
    scopeRef: new GrowableF64(),
    scopeParent: new GrowableI32(),
    scopeCallFile: new GrowableI32(),
    scopeCallLine: new GrowableI32(),
    scopeDepth: new GrowableI32(),
    rangeLo: new GrowableF64(),
    rangeHi: new GrowableF64(),
    rangeScope: new GrowableI32(),
    subOffset: new GrowableF64(),
    subNamePos: new GrowableF64(),
    subLinkPos: new GrowableF64(),
    subRef: new GrowableF64(),
    rowAddr: new GrowableF64(),
    rowFile: new GrowableI32(),
    rowLine: new GrowableI32(),
    seqFirstRow: new GrowableI32(),
    seqEndRow: new GrowableI32(),
    badUnits: 0,
  };
}

/** The sections read by lookups from DIEs. */
type LookedUp = 'addr' | 'strOffsets' | 'ranges' | 'rngLists';

class DwarfReader {
  private readonly abbrevCache = new Map<string, Map<number, Abbrev>>();
  /** The `.debug_info` bytes at hand: `ib[i]` is the byte at offset `ibStart + i` of the info window's space. */
  private ib: Uint8Array;
  private ibStart = 0;
  /** When readUnits stopped for bytes the window lacks: how many the unit at that position needs. */
  needBytes = 0;
  private readonly inlineIds = new Map<string, number>();
  /**
   * One reader per section looked up by index or offset (an address, a string offset, a
   * range list per DIE): moved, never made anew, as a file has millions of such lookups.
   */
  private readonly readers = new Map<LookedUp, ByteReader>();
  private readonly fileIndex = new Map<string, number>();
  private readonly lineTableCache = new Map<number, Int32Array>();
  /**
   * Range list entries left to read. Sane files read each list about once; a hostile one
   * pointing a million DIEs at one long list would otherwise cost time and memory squared.
   */
  private rangeBudget: number;
  /**
   * Bytes of abbreviation tables and line programs left to parse. Each table is parsed once
   * per offset; units naming a new offset each (into one long table) would otherwise make
   * the work grow with units × table size.
   */
  private abbrevBudget: number;
  private lineBudget: number;

  constructor(
    private readonly s: DwarfSections,
    readonly t: DwarfTables,
  ) {
    this.rangeBudget = 2 * (s.ranges.end - s.ranges.start + s.rngLists.end - s.rngLists.start) + 65_536;
    this.abbrevBudget = 4 * (s.abbrev.end - s.abbrev.start) + (1 << 20);
    this.lineBudget = 4 * (s.line.end - s.line.start) + (1 << 20);
    this.ib = s.bytes;
  }

  /** The section's reader at `pos` (an absolute position in `bytes`, checked against the section). */
  private readerAt(section: LookedUp, pos: number): ByteReader {
    const w = this.s[section];
    let r = this.readers.get(section);
    if (!r) {
      r = new ByteReader(this.s.bytes, w.start, w.end);
      this.readers.set(section, r);
    }
    if (pos < w.start || pos > w.end) throw new BadNativeFile(`offset ${pos} out of its section`);
    r.pos = pos;
    return r;
  }

  /** Reads the following units from `bytes`, the info section's bytes from offset `start`. */
  useInfoWindow(bytes: Uint8Array, start: number): void {
    this.ib = bytes;
    this.ibStart = start;
  }

  /** Bytes of `.debug_info` at hand after `pos`. */
  windowHas(pos: number): number {
    return this.ibStart + this.ib.byteLength - pos;
  }

  private spendRangeEntry(): void {
    if (--this.rangeBudget < 0) throw new BadNativeFile('range lists are read far more often than they are long');
  }

  /**
   * Reads units from `pos` until the end or until `stop()` says to pause (checked between
   * units); returns where to continue, or -1 when every unit is read.
   */
  readUnits(pos: number, stop: () => boolean = () => false): number {
    const s = this.s;
    this.needBytes = 0;
    const windowEnd = Math.min(s.info.end, this.ibStart + this.ib.byteLength);
    while (pos + 11 <= s.info.end) {
      if (stop()) return pos;
      const header = Math.min(12, s.info.end - pos);
      if (pos + header > windowEnd) {
        this.needBytes = header;
        return pos;
      }
      const base = this.ibStart;
      const r = new ByteReader(this.ib, pos - base, windowEnd - base);
      let length = r.u32();
      let offsetSize = 4;
      if (length === 0xffff_ffff) {
        length = r.u64();
        offsetSize = 8;
      } else if (length >= 0xffff_fff0) break;
      const end = base + r.pos + length;
      if (end > s.info.end || length < 7) break;
      if (end > windowEnd) {
        this.needBytes = end - pos;
        return pos;
      }
      try {
        this.readUnit(r, pos, end - base, offsetSize);
      } catch (error) {
        if (!(error instanceof BadNativeFile)) throw error;
        this.t.badUnits++;
      }
      pos = end;
    }
    return -1;
  }

  /** A name given inline in the info bytes at hand (`pos` in them), as an INLINE_NAME position. */
  private inlineName(pos: number): number {
    const name = cString(this.ib, pos);
    let id = this.inlineIds.get(name);
    if (id === undefined) {
      id = this.t.inline.length;
      this.t.inline.push(name);
      this.inlineIds.set(name, id);
    }
    return INLINE_NAME + id;
  }

  private fileId(path: string): number {
    let id = this.fileIndex.get(path);
    if (id === undefined) {
      id = this.t.files.length;
      this.t.files.push(path);
      this.fileIndex.set(path, id);
    }
    return id;
  }

  /** `start`: the unit's offset in the info window's space; `end`: where it ends in the bytes at hand. */
  private readUnit(r: ByteReader, start: number, end: number, offsetSize: number): void {
    r.end = end;
    const version = r.u16();
    if (version < 2 || version > 5) throw new BadNativeFile(`DWARF version ${version}`);
    let addrSize: number;
    let abbrevOffset: number;
    if (version >= 5) {
      const unitType = r.u8();
      addrSize = r.u8();
      abbrevOffset = r.uN(offsetSize);
      if (unitType === 2 || unitType === 6) return; // type units hold no code
      if (unitType === 4 || unitType === 5) r.skip(8); // skeleton/split compile: dwo id
    } else {
      abbrevOffset = r.uN(offsetSize);
      addrSize = r.u8();
    }
    if (addrSize !== 4 && addrSize !== 8) throw new BadNativeFile(`address size ${addrSize}`);
    const shape = { addrSize, offsetSize, version };
    const key = `${abbrevOffset}:${addrSize}:${offsetSize}:${version}`;
    let abbrevs = this.abbrevCache.get(key);
    if (!abbrevs) {
      if (abbrevOffset >= this.s.abbrev.end - this.s.abbrev.start)
        throw new BadNativeFile('abbrev offset out of bounds');
      if (this.abbrevBudget <= 0)
        throw new BadNativeFile('abbreviation tables are parsed far more often than they are long');
      const parsed = parseAbbrevs(this.s, abbrevOffset, shape);
      this.abbrevBudget -= parsed.bytes;
      abbrevs = parsed.table;
      this.abbrevCache.set(key, abbrevs);
    }
    const unit: Unit = {
      start,
      end,
      version,
      addrSize,
      offsetSize,
      strOffsetsBase: -1,
      addrBase: -1,
      rnglistsBase: -1,
      rangesBase: 0,
      baseAddr: 0,
      fileIds: new Int32Array(0),
    };
    this.readDies(r, unit, abbrevs);
  }

  private readDies(r: ByteReader, u: Unit, abbrevs: Map<number, Abbrev>): void {
    const t = this.t;
    // scopeAt[d]: the innermost scope enclosing DIEs at tree depth d (-1 = none).
    const scopeAt: number[] = [-1];
    let depth = 0;
    let first = true;
    const die = emptyDie();
    while (r.pos < u.end) {
      const dieOffset = this.ibStart + r.pos;
      const code = r.uleb();
      if (code === 0) {
        if (depth > 0) {
          depth--;
          scopeAt.length = depth + 1;
        }
        if (depth === 0 && !first) return;
        continue;
      }
      const abbrev = abbrevs.get(code);
      if (!abbrev) throw new BadNativeFile(`unknown abbreviation code ${code}`);
      const tag = abbrev.tag;
      const parentScope = scopeAt[depth];
      let ownScope = parentScope;
      if (first) {
        first = false;
        if (tag !== TAG_COMPILE_UNIT && tag !== TAG_PARTIAL_UNIT && tag !== TAG_SKELETON_UNIT) return;
        this.readUnitDie(r, u, abbrev);
      } else if (tag === TAG_SUBPROGRAM || tag === TAG_INLINED_SUBROUTINE) {
        resetDie(die);
        this.readValues(r, u, abbrev, die);
        if (tag === TAG_SUBPROGRAM) {
          t.subOffset.push(dieOffset);
          t.subNamePos.push(die.namePos);
          t.subLinkPos.push(die.linkPos);
          t.subRef.push(die.ref);
        }
        const scope = t.scopeParent.length;
        const inlined = tag === TAG_INLINED_SUBROUTINE;
        if (this.addRanges(u, die, scope)) {
          t.scopeNamePos.push(die.namePos);
          t.scopeLinkPos.push(die.linkPos);
          t.scopeRef.push(die.ref);
          const parent = inlined ? parentScope : -1;
          t.scopeParent.push(parent);
          t.scopeDepth.push(parent === -1 ? 0 : t.scopeDepth.get(parent) + 1);
          t.scopeCallFile.push(
            inlined && die.callFile >= 0 && die.callFile < u.fileIds.length ? u.fileIds[die.callFile] : -1,
          );
          t.scopeCallLine.push(inlined ? die.callLine : 0);
          ownScope = scope;
        }
      } else if (abbrev.fixedSize >= 0) {
        r.skip(abbrev.fixedSize);
      } else {
        const forms = abbrev.forms;
        for (let i = 0; i < forms.length; i++) this.skipForm(r, u, forms[i]);
      }
      if (abbrev.hasChildren) {
        depth++;
        scopeAt[depth] = ownScope;
      } else if (depth === 0) {
        return;
      }
    }
  }

  private readUnitDie(r: ByteReader, u: Unit, abbrev: Abbrev): void {
    // Bases may follow the attributes that need them, so raw values are resolved afterwards.
    const raw: Array<[number, number, number]> = [];
    for (let i = 0; i < abbrev.attrs.length; i++) {
      const attr = abbrev.attrs[i];
      let form = abbrev.forms[i];
      if (form === FORM.indirect) form = r.uleb();
      const value = form === FORM.implicitConst ? abbrev.implicit[i] : this.readRaw(r, u, form);
      switch (attr) {
        case AT_STR_OFFSETS_BASE:
          u.strOffsetsBase = value;
          break;
        case AT_ADDR_BASE:
        case AT_GNU_ADDR_BASE:
          u.addrBase = value;
          break;
        case AT_RNGLISTS_BASE:
          u.rnglistsBase = value;
          break;
        case AT_GNU_RANGES_BASE:
          u.rangesBase = value;
          break;
        default:
          raw.push([attr, form, value]);
      }
    }
    if (u.version >= 5) {
      if (u.strOffsetsBase < 0) u.strOffsetsBase = 8;
      if (u.addrBase < 0) u.addrBase = 8;
    }
    const die = emptyDie();
    for (const [attr, form, value] of raw) this.assign(u, die, attr, form, value);
    if (die.lowPc >= 0) u.baseAddr = die.lowPc;
    if (die.stmtList >= 0) {
      const compDir = die.compDirPos >= 0 ? this.str(die.compDirPos) : '';
      u.fileIds = this.readLineProgram(die.stmtList, compDir, u);
    }
    // A unit DIE's own ranges are a summary of its functions: not a scope.
  }

  private str(pos: number): string {
    return tableName(this.s.bytes, this.t, pos);
  }

  private readValues(r: ByteReader, u: Unit, abbrev: Abbrev, die: DieValues): void {
    const attrs = abbrev.attrs;
    const forms = abbrev.forms;
    for (let i = 0; i < attrs.length; i++) {
      const attr = attrs[i];
      let form = forms[i];
      if (form === FORM.indirect) form = r.uleb();
      switch (attr) {
        case AT_NAME:
        case AT_LINKAGE_NAME:
        case AT_MIPS_LINKAGE_NAME:
        case AT_LOW_PC:
        case AT_HIGH_PC:
        case AT_RANGES:
        case AT_ABSTRACT_ORIGIN:
        case AT_SPECIFICATION:
        case AT_CALL_FILE:
        case AT_CALL_LINE: {
          const value = form === FORM.implicitConst ? abbrev.implicit[i] : this.readRaw(r, u, form);
          this.assign(u, die, attr, form, value);
          break;
        }
        default:
          if (form !== FORM.implicitConst) this.skipForm(r, u, form);
      }
    }
  }

  private assign(u: Unit, die: DieValues, attr: number, form: number, value: number): void {
    switch (attr) {
      case AT_NAME:
        die.namePos = form === FORM.string ? this.inlineName(value) : this.strPos(u, form, value);
        break;
      case AT_LINKAGE_NAME:
      case AT_MIPS_LINKAGE_NAME:
        die.linkPos = form === FORM.string ? this.inlineName(value) : this.strPos(u, form, value);
        break;
      case AT_COMP_DIR:
        die.compDirPos = form === FORM.string ? this.inlineName(value) : this.strPos(u, form, value);
        break;
      case AT_LOW_PC:
        die.lowPc = this.addrValue(u, form, value);
        break;
      case AT_HIGH_PC:
        if (isAddrForm(form)) {
          die.highPc = this.addrValue(u, form, value);
          die.highPcIsOffset = false;
        } else {
          die.highPc = value;
          die.highPcIsOffset = true;
        }
        break;
      case AT_RANGES:
        die.rangesOffset = value;
        die.rangesIsIndex = form === FORM.rnglistx;
        break;
      case AT_ABSTRACT_ORIGIN:
      case AT_SPECIFICATION:
        die.ref = this.refValue(u, form, value);
        break;
      case AT_CALL_FILE:
        die.callFile = value;
        break;
      case AT_CALL_LINE:
        die.callLine = value;
        break;
      case AT_STMT_LIST:
        die.stmtList = value;
        break;
    }
  }

  /** The raw value of a form: a number, an index (strx/addrx) or a position (inline string). */
  private readRaw(r: ByteReader, u: Unit, form: number): number {
    switch (form) {
      case FORM.addr:
        return r.uN(u.addrSize);
      case FORM.data1:
      case FORM.ref1:
      case FORM.flag:
      case FORM.strx1:
      case FORM.addrx1:
        return r.u8();
      case FORM.data2:
      case FORM.ref2:
      case FORM.strx2:
      case FORM.addrx2:
        return r.u16();
      case FORM.strx3:
      case FORM.addrx3:
        return r.u24();
      case FORM.data4:
      case FORM.ref4:
      case FORM.refSup4:
      case FORM.strx4:
      case FORM.addrx4:
        return r.u32();
      case FORM.data8:
      case FORM.ref8:
      case FORM.refSig8:
      case FORM.refSup8:
        return r.u64();
      case FORM.strp:
      case FORM.secOffset:
      case FORM.lineStrp:
      case FORM.strpSup:
      case FORM.gnuRefAlt:
      case FORM.gnuStrpAlt:
        return r.uN(u.offsetSize);
      case FORM.refAddr:
        return r.uN(u.version <= 2 ? u.addrSize : u.offsetSize);
      case FORM.sdata:
        return r.sleb();
      case FORM.udata:
      case FORM.refUdata:
      case FORM.strx:
      case FORM.addrx:
      case FORM.loclistx:
      case FORM.rnglistx:
      case FORM.gnuAddrIndex:
      case FORM.gnuStrIndex:
        return r.uleb();
      case FORM.string:
        return r.skipCString();
      case FORM.flagPresent:
        return 1;
      default:
        this.skipForm(r, u, form);
        return -1;
    }
  }

  private skipForm(r: ByteReader, u: Unit, form: number): void {
    const size = formSize(form, u);
    if (size >= 0) {
      r.skip(size);
      return;
    }
    switch (form) {
      case FORM.block1:
        r.skip(r.u8());
        return;
      case FORM.block2:
        r.skip(r.u16());
        return;
      case FORM.block4:
        r.skip(r.u32());
        return;
      case FORM.block:
      case FORM.exprloc:
        r.skip(r.uleb());
        return;
      case FORM.string:
        r.skipCString();
        return;
      case FORM.sdata:
        r.sleb();
        return;
      case FORM.udata:
      case FORM.refUdata:
      case FORM.strx:
      case FORM.addrx:
      case FORM.loclistx:
      case FORM.rnglistx:
      case FORM.gnuAddrIndex:
      case FORM.gnuStrIndex:
        r.uleb();
        return;
      case FORM.indirect: {
        const actual = r.uleb();
        if (actual === FORM.indirect) throw new BadNativeFile('indirect form names itself');
        this.skipForm(r, u, actual);
        return;
      }
      default:
        throw new BadNativeFile(`unknown DWARF form 0x${form.toString(16)}`);
    }
  }

  private strPos(u: Unit, form: number, value: number): number {
    const s = this.s;
    switch (form) {
      case FORM.string:
        return value;
      case FORM.strp:
        return within(s.str, value);
      case FORM.lineStrp:
        return within(s.lineStr, value);
      case FORM.strx:
      case FORM.strx1:
      case FORM.strx2:
      case FORM.strx3:
      case FORM.strx4:
      case FORM.gnuStrIndex: {
        if (u.strOffsetsBase < 0) return -1;
        const at = s.strOffsets.start + u.strOffsetsBase + value * u.offsetSize;
        if (value < 0 || at + u.offsetSize > s.strOffsets.end) throw new BadNativeFile('string index out of bounds');
        return within(s.str, this.readerAt('strOffsets', at).uN(u.offsetSize));
      }
      default:
        return -1;
    }
  }

  private addrValue(u: Unit, form: number, value: number): number {
    if (form === FORM.addr) return value;
    if (!isAddrForm(form)) return value;
    return this.addrAt(u, value);
  }

  private addrAt(u: Unit, index: number): number {
    const s = this.s;
    if (u.addrBase < 0) throw new BadNativeFile('address index without an address base');
    const at = s.addr.start + u.addrBase + index * u.addrSize;
    if (at + u.addrSize > s.addr.end) throw new BadNativeFile('address index out of bounds');
    return this.readerAt('addr', at).uN(u.addrSize);
  }

  private refValue(u: Unit, form: number, value: number): number {
    switch (form) {
      case FORM.ref1:
      case FORM.ref2:
      case FORM.ref4:
      case FORM.ref8:
      case FORM.refUdata:
        return u.start + value;
      case FORM.refAddr:
        return this.s.info.start + value;
      default:
        return -1;
    }
  }

  /** Adds the DIE's pc ranges for `scope`; false when it has none (a declaration or abstract instance). */
  private addRanges(u: Unit, die: DieValues, scope: number): boolean {
    const t = this.t;
    if (die.lowPc >= 0 && die.highPc >= 0) {
      const hi = die.highPcIsOffset ? die.lowPc + die.highPc : die.highPc;
      if (hi <= die.lowPc) return false;
      t.rangeLo.push(die.lowPc);
      t.rangeHi.push(hi);
      t.rangeScope.push(scope);
      return true;
    }
    if (die.rangesOffset < 0) return false;
    const before = t.rangeLo.length;
    if (u.version >= 5) this.readRngList(u, die.rangesOffset, die.rangesIsIndex, scope);
    else this.readRanges(u, die.rangesOffset, scope);
    return t.rangeLo.length > before;
  }

  private pushRange(lo: number, hi: number, scope: number): void {
    if (hi <= lo) return;
    this.t.rangeLo.push(lo);
    this.t.rangeHi.push(hi);
    this.t.rangeScope.push(scope);
  }

  private readRanges(u: Unit, offset: number, scope: number): void {
    const s = this.s;
    const r = this.readerAt('ranges', s.ranges.start + u.rangesBase + offset);
    // The all-ones address: 2 ** 64 is what a double makes of 0xffff_ffff_ffff_ffff.
    const max = u.addrSize === 8 ? 2 ** 64 : 0xffff_ffff;
    let base = u.baseAddr;
    for (;;) {
      this.spendRangeEntry();
      const a = r.uN(u.addrSize);
      const b = r.uN(u.addrSize);
      if (a === 0 && b === 0) return;
      if (a === max) base = b;
      else this.pushRange(base + a, base + b, scope);
    }
  }

  private readRngList(u: Unit, value: number, isIndex: boolean, scope: number): void {
    const s = this.s;
    let offset = value;
    if (isIndex) {
      if (u.rnglistsBase < 0) throw new BadNativeFile('range list index without a base');
      const at = s.rngLists.start + u.rnglistsBase + value * u.offsetSize;
      if (at + u.offsetSize > s.rngLists.end) throw new BadNativeFile('range list index out of bounds');
      offset = u.rnglistsBase + this.readerAt('rngLists', at).uN(u.offsetSize);
    }
    const r = this.readerAt('rngLists', s.rngLists.start + offset);
    let base = u.baseAddr;
    for (;;) {
      this.spendRangeEntry();
      const kind = r.u8();
      switch (kind) {
        case 0:
          return;
        case 1:
          base = this.addrAt(u, r.uleb());
          break;
        case 2: {
          const a = this.addrAt(u, r.uleb());
          const b = this.addrAt(u, r.uleb());
          this.pushRange(a, b, scope);
          break;
        }
        case 3: {
          const a = this.addrAt(u, r.uleb());
          this.pushRange(a, a + r.uleb(), scope);
          break;
        }
        case 4: {
          const a = r.uleb();
          const b = r.uleb();
          this.pushRange(base + a, base + b, scope);
          break;
        }
        case 5:
          base = r.uN(u.addrSize);
          break;
        case 6: {
          const a = r.uN(u.addrSize);
          const b = r.uN(u.addrSize);
          this.pushRange(a, b, scope);
          break;
        }
        case 7: {
          const a = r.uN(u.addrSize);
          this.pushRange(a, a + r.uleb(), scope);
          break;
        }
        default:
          throw new BadNativeFile(`unknown range list entry ${kind}`);
      }
    }
  }

  /** Reads the line program at `offset`, appends its rows, returns file register → file id. */
  private readLineProgram(offset: number, compDir: string, u: Unit): Int32Array {
    const cached = this.lineTableCache.get(offset);
    if (cached) return cached;
    if (this.lineBudget <= 0) throw new BadNativeFile('line programs are parsed far more often than they are long');
    const s = this.s;
    const r = new ByteReader(s.bytes, s.line.start, s.line.end);
    r.seek(s.line.start + offset);
    let length = r.u32();
    let offsetSize = 4;
    if (length === 0xffff_ffff) {
      length = r.u64();
      offsetSize = 8;
    }
    r.need(length);
    const end = r.pos + length;
    r.end = end;
    this.lineBudget -= length;
    const version = r.u16();
    if (version < 2 || version > 5) throw new BadNativeFile(`line table version ${version}`);
    let addrSize = u.addrSize;
    if (version >= 5) {
      addrSize = r.u8();
      r.u8(); // segment selector size
    }
    const headerLength = r.uN(offsetSize);
    const programStart = r.pos + headerLength;
    if (programStart > end) throw new BadNativeFile('line table header runs past the table');
    const minInst = r.u8();
    if (version >= 4) r.u8(); // max ops per instruction (VLIW only)
    r.u8(); // default_is_stmt: LLVM's lookup uses every row, statement or not
    const lineBase = r.i8();
    const lineRange = r.u8();
    const opcodeBase = r.u8();
    if (lineRange === 0) throw new BadNativeFile('line range 0');
    const stdLengths = new Uint8Array(Math.max(opcodeBase, 1));
    for (let i = 1; i < opcodeBase; i++) stdLengths[i] = r.u8();

    const files: number[] = [];
    const join = (dir: string, name: string): string => {
      if (name.startsWith('/')) return name;
      const d = dir === '' ? compDir : dir.startsWith('/') || compDir === '' ? dir : `${compDir}/${dir}`;
      return d === '' ? name : `${d}/${name}`;
    };
    if (version >= 5) {
      const dirs = this.readEntryList(r, u, offsetSize).map((e) => e.path);
      const entries = this.readEntryList(r, u, offsetSize);
      for (const e of entries) {
        const dir = e.dir < dirs.length ? dirs[e.dir] : '';
        files.push(this.fileId(join(dir, e.path)));
      }
    } else {
      const dirs: string[] = [];
      for (;;) {
        const d = r.cstring();
        if (d === '') break;
        dirs.push(d);
      }
      files.push(-1); // file register 0 means "none" before DWARF 5
      for (;;) {
        const name = r.cstring();
        if (name === '') break;
        const dirIndex = r.uleb();
        r.uleb();
        r.uleb();
        const dir = dirIndex === 0 ? '' : dirIndex <= dirs.length ? dirs[dirIndex - 1] : '';
        files.push(this.fileId(join(dir, name)));
      }
    }
    const fileIds = Int32Array.from(files);
    this.lineTableCache.set(offset, fileIds);
    r.seek(programStart);
    this.runLineProgram(r, addrSize, minInst, lineBase, lineRange, opcodeBase, stdLengths, fileIds);
    return fileIds;
  }

  private readEntryList(r: ByteReader, u: Unit, offsetSize: number): Array<{ path: string; dir: number }> {
    const formatCount = r.u8();
    const kinds: number[] = [];
    const forms: number[] = [];
    for (let i = 0; i < formatCount; i++) {
      kinds.push(r.uleb());
      forms.push(r.uleb());
    }
    const count = r.uleb();
    if (formatCount === 0 && count > 0) throw new BadNativeFile('file entries without a format');
    if (count > r.remaining()) throw new BadNativeFile(`absurd file entry count ${count}`);
    const shape = { ...u, offsetSize };
    const out: Array<{ path: string; dir: number }> = [];
    for (let i = 0; i < count; i++) {
      let path = '';
      let dir = 0;
      for (let k = 0; k < kinds.length; k++) {
        const form = forms[k];
        if (kinds[k] === 1) {
          const value = this.readRaw(r, shape, form);
          const pos = this.strPos(u, form, value);
          path = pos >= 0 ? this.str(pos) : '';
        } else if (kinds[k] === 2) {
          dir = this.readRaw(r, shape, form);
        } else {
          this.skipForm(r, shape, form);
        }
      }
      out.push({ path, dir });
    }
    return out;
  }

  private runLineProgram(
    r: ByteReader,
    addrSize: number,
    minInst: number,
    lineBase: number,
    lineRange: number,
    opcodeBase: number,
    stdLengths: Uint8Array,
    fileIds: Int32Array,
  ): void {
    const t = this.t;
    let seqStart = t.rowAddr.length;
    let address = 0;
    let file = 1;
    let line = 1;
    const fileOf = (reg: number): number => (reg >= 0 && reg < fileIds.length ? fileIds[reg] : -2);
    const emit = (): void => {
      let n = t.rowAddr.length;
      // Rows at one address: the last one wins, as in LLVM's lookup.
      if (n > seqStart && t.rowAddr.get(n - 1) === address) {
        t.rowAddr.length = t.rowFile.length = t.rowLine.length = --n;
      }
      const f = fileOf(file);
      if (n > seqStart && t.rowFile.get(n - 1) === f && t.rowLine.get(n - 1) === line) return;
      t.rowAddr.push(address);
      t.rowFile.push(f);
      t.rowLine.push(line);
    };
    const endSequence = (): void => {
      let n = t.rowAddr.length;
      if (n > seqStart && t.rowAddr.get(n - 1) === address)
        t.rowAddr.length = t.rowFile.length = t.rowLine.length = --n;
      if (n > seqStart && address > t.rowAddr.get(seqStart)) {
        t.rowAddr.push(address);
        t.rowFile.push(-1);
        t.rowLine.push(0);
        t.seqFirstRow.push(seqStart);
        t.seqEndRow.push(t.rowAddr.length);
      } else {
        // An empty or backwards sequence covers nothing.
        t.rowAddr.length = t.rowFile.length = t.rowLine.length = seqStart;
      }
      seqStart = t.rowAddr.length;
      address = 0;
      file = 1;
      line = 1;
    };
    while (r.pos < r.end) {
      const op = r.u8();
      if (op >= opcodeBase) {
        const adj = op - opcodeBase;
        address += Math.floor(adj / lineRange) * minInst;
        line += lineBase + (adj % lineRange);
        emit();
        continue;
      }
      switch (op) {
        case 0: {
          const len = r.uleb();
          r.need(len);
          const next = r.pos + len;
          if (len === 0) break;
          const sub = r.u8();
          if (sub === 1) endSequence();
          else if (sub === 2) address = r.uN(len - 1 === 4 || len - 1 === 8 ? len - 1 : addrSize);
          r.seek(next);
          break;
        }
        case 1:
          emit();
          break;
        case 2:
          address += r.uleb() * minInst;
          break;
        case 3:
          line += r.sleb();
          break;
        case 4:
          file = r.uleb();
          break;
        case 5:
          r.uleb();
          break;
        case 8:
          address += Math.floor((255 - opcodeBase) / lineRange) * minInst;
          break;
        case 9:
          address += r.u16();
          break;
        case 6:
        case 7:
        case 10:
        case 11:
          break;
        case 12:
          r.uleb();
          break;
        default:
          for (let i = 0; i < stdLengths[op]; i++) r.uleb();
      }
    }
    // A program that stops mid-sequence: its rows never had an end, so they do not count.
    t.rowAddr.length = t.rowFile.length = t.rowLine.length = seqStart;
  }
}

function resetDie(d: DieValues): void {
  d.namePos = -1;
  d.linkPos = -1;
  d.ref = -1;
  d.lowPc = -1;
  d.highPc = -1;
  d.highPcIsOffset = false;
  d.rangesOffset = -1;
  d.rangesIsIndex = false;
  d.callFile = -1;
  d.callLine = 0;
  d.stmtList = -1;
  d.compDirPos = -1;
}

function isAddrForm(form: number): boolean {
  return (
    form === FORM.addr ||
    form === FORM.addrx ||
    form === FORM.addrx1 ||
    form === FORM.addrx2 ||
    form === FORM.addrx3 ||
    form === FORM.addrx4 ||
    form === FORM.gnuAddrIndex
  );
}

function within(w: Window, offset: number): number {
  const pos = w.start + offset;
  if (offset < 0 || pos >= w.end) throw new BadNativeFile('string offset out of bounds');
  return pos;
}

/** Reads every compile unit of the sections into fresh tables (`.debug_info` in `bytes`). */
export function readDwarf(sections: DwarfSections): DwarfTables {
  if (sections.infoSource) throw new Error('.debug_info read from a source needs readDwarfAsync');
  const tables = emptyTables();
  new DwarfReader(sections, tables).readUnits(sections.info.start);
  return tables;
}

/** How long the async reader works before it lets other requests run. */
const SLICE_MS = 20;

/**
 * The same, giving the event loop back every SLICE_MS: a 50 MB dSYM takes seconds to read,
 * and the server keeps answering ingest meanwhile (setTimeout exists in both editions).
 */
export async function readDwarfAsync(sections: DwarfSections): Promise<DwarfTables> {
  const tables = emptyTables();
  const reader = new DwarfReader(sections, tables);
  const source = sections.infoSource;
  if (source) reader.useInfoWindow(new Uint8Array(0), sections.info.start);
  let pos = sections.info.start;
  for (;;) {
    const until = Date.now() + SLICE_MS;
    const next = reader.readUnits(pos, () => Date.now() > until);
    if (next < 0) return tables;
    if (reader.needBytes > 0) {
      // The window ends inside the next unit: the next window starts at it and holds it whole.
      if (!source || reader.windowHas(next) >= reader.needBytes) throw new Error('DWARF reader stalled');
      const length = Math.min(
        Math.max(sections.infoWindowBytes ?? INFO_WINDOW_BYTES, reader.needBytes),
        sections.info.end - next,
      );
      const window = await source.read(next, length);
      if (window.byteLength < Math.min(reader.needBytes, length))
        throw new BadNativeFile('.debug_info runs past the end of the file');
      reader.useInfoWindow(window, next);
    } else await new Promise((resolve) => setTimeout(resolve, 0));
    pos = next;
  }
}
