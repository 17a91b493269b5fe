// Breakpad symbol files (`.sym`, text; docs/api.md "Native symbolication"), read line by
// line as they stream in: MODULE (debug id, arch), INFO CODE_ID, FILE, FUNC with its line
// records, INLINE_ORIGIN and INLINE (inlined calls, nested by depth), PUBLIC. What they say
// becomes the same tables the DWARF reader fills, so a .sym file gets the same lookup index
// (and lookups) as a dSYM or an ELF file. STACK CFI records are kept for the minidump
// unwinder (src/minidump), keyed by address. Malformed lines are skipped; a file without a
// MODULE line is refused.

import { BadNativeFile } from './bytes.js';
import { emptyTables, type DwarfSections, type DwarfTables } from './dwarf.js';
import { GrowableF64, GrowableI32 } from './growable.js';
import type { IndexSource } from './lookup-index.js';

/** Longer lines are cut off (no real record is; a hostile file cannot make one line cost memory). */
const MAX_LINE_BYTES = 64 * 1024;
const HEX = /^[0-9a-fA-F]{1,16}$/;
const DEC = /^[0-9]{1,10}$/;

export interface BreakpadModule {
  os: string;
  arch: string;
  /** Lowercase dashed debug id from the MODULE line's identifier (its age dropped). */
  debugId: string;
  name: string;
  codeId: string;
}

/** STACK CFI records: INIT ranges with their rules, and the address-keyed rule changes. */
export interface BreakpadCfi {
  /** Per INIT record: where its address-keyed changes start in the delta lists. */
  initFirstDelta: number[];
  initAddr: number[];
  initSize: number[];
  initRules: string[];
  deltaAddr: number[];
  deltaRules: string[];
}

/**
 * STACK WIN records (x86 Windows modules): per record its frame data type (4 FRAME_DATA with
 * a program string, 0 FPO), the function range and the frame sizes the walker's program
 * strings name (`.cbParams`, `.cbSavedRegs`, `.cbLocals`).
 */
export interface BreakpadStackWin {
  type: number[];
  addr: number[];
  size: number[];
  paramSize: number[];
  savedRegSize: number[];
  localSize: number[];
  /** The program string ('' for FPO records). */
  program: string[];
  /** FPO records: whether the function uses %ebp as its frame pointer. */
  allocatesBasePointer: boolean[];
}

function archName(arch: string): string {
  switch (arch) {
    case 'x86_64':
    case 'amd64':
      return 'x86_64';
    case 'x86':
    case 'i386':
      return 'x86';
    case 'arm64':
    case 'aarch64':
      return 'arm64';
    default:
      return arch;
  }
}

/** A MODULE identifier (33+ hex digits: GUID and age) as a debug id, or null. */
export function debugIdOfBreakpadId(id: string): string | null {
  const hex = id.toLowerCase();
  if (!/^[0-9a-f]{32,}$/.test(hex)) return null;
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}

export class BreakpadReader {
  module: BreakpadModule | null = null;
  readonly t: DwarfTables = emptyTables();
  readonly cfi: BreakpadCfi = {
    initFirstDelta: [],
    initAddr: [],
    initSize: [],
    initRules: [],
    deltaAddr: [],
    deltaRules: [],
  };
  readonly win: BreakpadStackWin = {
    type: [],
    addr: [],
    size: [],
    paramSize: [],
    savedRegSize: [],
    localSize: [],
    program: [],
    allocatesBasePointer: [],
  };
  private readonly fileIds = new Map<number, number>();
  private readonly origins = new Map<number, string>();
  /** Per scope: the INLINE_ORIGIN id (-1 for FUNC scopes, named directly). */
  private readonly scopeOrigin = new GrowableI32();
  private readonly names: string[] = [];
  private readonly lineAddr = new GrowableF64();
  private readonly lineSize = new GrowableF64();
  private readonly lineLine = new GrowableI32();
  private readonly lineFile = new GrowableI32();
  readonly publics: { name: string; addr: number }[] = [];
  readonly funcs: { name: string; addr: number; size: number }[] = [];
  /** The FUNC scope the following line and INLINE records belong to, and the inline scope at each depth. */
  private func = -1;
  private inlineAt: number[] = [];
  private carry = '';
  private readonly decoder = new TextDecoder();
  private lines = 0;
  badLines = 0;

  constructor(private readonly keepCfi = false) {}

  push(chunk: Uint8Array): void {
    const text = this.carry + this.decoder.decode(chunk, { stream: true });
    let start = 0;
    for (;;) {
      const nl = text.indexOf('\n', start);
      if (nl < 0) break;
      this.line(text.slice(start, Math.min(nl, start + MAX_LINE_BYTES)));
      start = nl + 1;
    }
    this.carry = text.length - start > MAX_LINE_BYTES ? text.slice(start, start + MAX_LINE_BYTES) : text.slice(start);
  }

  finish(): void {
    const rest = this.carry + this.decoder.decode();
    this.carry = '';
    if (rest.trim() !== '') this.line(rest);
    if (!this.module) throw new BadNativeFile('no MODULE line');
  }

  private line(raw: string): void {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (this.lines++ === 0 || !this.module) {
      this.moduleLine(line);
      return;
    }
    const c = line.charCodeAt(0);
    // Line records start with a hex digit: by far the most lines, checked first.
    if ((c >= 48 && c <= 57) || (c >= 97 && c <= 102)) this.lineRecord(line);
    else if (line.startsWith('FUNC ')) this.funcRecord(line);
    else if (line.startsWith('INLINE ')) this.inlineRecord(line);
    else if (line.startsWith('INLINE_ORIGIN ')) this.originRecord(line);
    else if (line.startsWith('FILE ')) this.fileRecord(line);
    else if (line.startsWith('PUBLIC ')) this.publicRecord(line);
    else if (line.startsWith('STACK CFI ')) this.cfiRecord(line);
    else if (line.startsWith('STACK WIN ')) this.winRecord(line);
    else if (line.startsWith('INFO CODE_ID ')) this.module.codeId = line.slice(13).split(' ')[0].toLowerCase();
  }

  private moduleLine(line: string): void {
    const parts = line.split(' ');
    if (parts[0] !== 'MODULE' || parts.length < 5)
      throw new BadNativeFile('a Breakpad symbol file starts with a MODULE line');
    const debugId = debugIdOfBreakpadId(parts[3]);
    if (!debugId)
      throw new BadNativeFile(`MODULE identifier ${JSON.stringify(parts[3].slice(0, 40))} is not a debug id`);
    this.module = { os: parts[1], arch: archName(parts[2]), debugId, name: parts.slice(4).join(' '), codeId: '' };
  }

  private fileRecord(line: string): void {
    const sp = line.indexOf(' ', 5);
    const n = line.slice(5, sp);
    if (sp < 0 || !DEC.test(n)) {
      this.badLines++;
      return;
    }
    const path = line.slice(sp + 1);
    this.fileIds.set(Number(n), this.t.files.length);
    this.t.files.push(path);
  }

  private originRecord(line: string): void {
    const sp = line.indexOf(' ', 14);
    const id = line.slice(14, sp);
    if (sp < 0 || !DEC.test(id)) {
      this.badLines++;
      return;
    }
    this.origins.set(Number(id), line.slice(sp + 1));
  }

  /** Splits `count` leading fields off a record (after its keyword and an optional `m`); the rest is the name. */
  private fields(line: string, keyword: number, count: number): { fields: string[]; rest: string } | null {
    let pos = keyword;
    const fields: string[] = [];
    if (line.startsWith('m ', pos)) pos += 2;
    for (let i = 0; i < count; i++) {
      const sp = line.indexOf(' ', pos);
      if (sp < 0) {
        if (i === count - 1) {
          fields.push(line.slice(pos));
          return { fields, rest: '' };
        }
        return null;
      }
      fields.push(line.slice(pos, sp));
      pos = sp + 1;
    }
    return { fields, rest: line.slice(pos) };
  }

  private newScope(name: number, origin: number, parent: number, callFile: number, callLine: number): number {
    const t = this.t;
    const scope = t.scopeParent.length;
    t.scopeNamePos.push(name);
    t.scopeLinkPos.push(-1);
    t.scopeRef.push(-1);
    t.scopeParent.push(parent);
    t.scopeDepth.push(parent < 0 ? 0 : t.scopeDepth.get(parent) + 1);
    t.scopeCallFile.push(callFile);
    t.scopeCallLine.push(callLine);
    this.scopeOrigin.push(origin);
    return scope;
  }

  private addRange(lo: number, size: number, scope: number): void {
    if (size <= 0) return;
    this.t.rangeLo.push(lo);
    this.t.rangeHi.push(lo + size);
    this.t.rangeScope.push(scope);
  }

  private funcRecord(line: string): void {
    const f = this.fields(line, 5, 3);
    if (!f || !HEX.test(f.fields[0]) || !HEX.test(f.fields[1])) {
      this.badLines++;
      return;
    }
    const addr = parseInt(f.fields[0], 16);
    const size = parseInt(f.fields[1], 16);
    this.names.push(f.rest);
    this.func = this.newScope(this.names.length - 1, -1, -1, -1, 0);
    this.inlineAt = [];
    this.addRange(addr, size, this.func);
    this.funcs.push({ name: f.rest, addr, size });
  }

  private lineRecord(line: string): void {
    if (this.func < 0) {
      this.badLines++;
      return;
    }
    const parts = line.split(' ');
    if (
      parts.length !== 4 ||
      !HEX.test(parts[0]) ||
      !HEX.test(parts[1]) ||
      !/^-?[0-9]{1,10}$/.test(parts[2]) ||
      !DEC.test(parts[3])
    ) {
      this.badLines++;
      return;
    }
    this.lineAddr.push(parseInt(parts[0], 16));
    this.lineSize.push(parseInt(parts[1], 16));
    this.lineLine.push(Math.max(0, Number(parts[2])));
    this.lineFile.push(this.fileIds.get(Number(parts[3])) ?? -2);
  }

  private inlineRecord(line: string): void {
    if (this.func < 0) {
      this.badLines++;
      return;
    }
    const parts = line.slice(7).split(' ');
    if (parts.length < 6 || parts.length % 2 !== 0 || !parts.every((p) => HEX.test(p))) {
      this.badLines++;
      return;
    }
    const depth = Number(parts[0]);
    const parent = depth === 0 ? this.func : this.inlineAt[depth - 1];
    if (parent === undefined || depth > 1024) {
      this.badLines++;
      return;
    }
    const callFile = this.fileIds.get(Number(parts[2])) ?? -1;
    const scope = this.newScope(-1, Number(parts[3]), parent, callFile, Number(parts[1]));
    this.inlineAt[depth] = scope;
    this.inlineAt.length = depth + 1;
    for (let i = 4; i + 1 < parts.length; i += 2)
      this.addRange(parseInt(parts[i], 16), parseInt(parts[i + 1], 16), scope);
  }

  private publicRecord(line: string): void {
    const f = this.fields(line, 7, 2);
    if (!f || !HEX.test(f.fields[0])) {
      this.badLines++;
      return;
    }
    this.publics.push({ name: f.rest, addr: parseInt(f.fields[0], 16) });
  }

  private cfiRecord(line: string): void {
    if (!this.keepCfi) return;
    const cfi = this.cfi;
    if (line.startsWith('STACK CFI INIT ')) {
      const parts = line.slice(15).split(' ');
      if (parts.length < 3 || !HEX.test(parts[0]) || !HEX.test(parts[1])) {
        this.badLines++;
        return;
      }
      cfi.initFirstDelta.push(cfi.deltaAddr.length);
      cfi.initAddr.push(parseInt(parts[0], 16));
      cfi.initSize.push(parseInt(parts[1], 16));
      cfi.initRules.push(parts.slice(2).join(' '));
    } else {
      if (cfi.initAddr.length === 0) {
        this.badLines++;
        return;
      }
      const sp = line.indexOf(' ', 10);
      const addr = line.slice(10, sp);
      if (sp < 0 || !HEX.test(addr)) {
        this.badLines++;
        return;
      }
      cfi.deltaAddr.push(parseInt(addr, 16));
      cfi.deltaRules.push(line.slice(sp + 1));
    }
  }

  /**
   * `STACK WIN type rva code_size prologue_size epilogue_size parameter_size
   * saved_register_size local_size max_stack_size has_program_string (program_string |
   * allocates_base_pointer)`, numbers in hex. Types other than FPO (0) and FRAME_DATA (4)
   * describe no frame the walker unwinds, so they are skipped.
   */
  private winRecord(line: string): void {
    if (!this.keepCfi) return;
    const parts = line.slice(10).split(' ');
    if (parts.length < 11 || !parts.slice(0, 10).every((p) => HEX.test(p))) {
      this.badLines++;
      return;
    }
    const type = parseInt(parts[0], 16);
    if (type !== 0 && type !== 4) return;
    const hasProgram = parts[9] !== '0';
    const win = this.win;
    win.type.push(type);
    win.addr.push(parseInt(parts[1], 16));
    win.size.push(parseInt(parts[2], 16));
    win.paramSize.push(parseInt(parts[5], 16));
    win.savedRegSize.push(parseInt(parts[6], 16));
    win.localSize.push(parseInt(parts[7], 16));
    win.program.push(hasProgram ? parts.slice(10).join(' ') : '');
    win.allocatesBasePointer.push(!hasProgram && parts[10] !== '0');
  }

  /** Line records read so far. */
  get lineCount(): number {
    return this.lineAddr.length;
  }

  /** What the lookup index is built from: the tables, with scope names in one NUL-separated buffer. */
  indexParts(): { source: IndexSource; tables: DwarfTables } {
    const t = this.t;
    const module = this.module!;
    // Names: FUNC names by their index, inline scopes by their origin's.
    const encoder = new TextEncoder();
    const parts: Uint8Array[] = [];
    let size = 0;
    const posOf = new Map<string, number>();
    const place = (name: string): number => {
      let pos = posOf.get(name);
      if (pos === undefined) {
        pos = size;
        const bytes = encoder.encode(name.replace(/\0/g, ''));
        parts.push(bytes, new Uint8Array(1));
        size += bytes.byteLength + 1;
        posOf.set(name, pos);
      }
      return pos;
    };
    const n = t.scopeParent.length;
    for (let s = 0; s < n; s++) {
      const origin = this.scopeOrigin.get(s);
      const name = origin < 0 ? this.names[t.scopeNamePos.get(s)] : this.origins.get(origin);
      t.scopeNamePos.set(s, name ? place(name) : -1);
    }
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const p of parts) {
      bytes.set(p, at);
      at += p.byteLength;
    }
    // Line records as one sequence, ascending, with a gap row where records leave space.
    const count = this.lineAddr.length;
    const order = new Uint32Array(count);
    for (let i = 0; i < count; i++) order[i] = i;
    const la = this.lineAddr.data;
    order.sort((a, b) => la[a] - la[b]);
    for (let k = 0; k < count; k++) {
      const i = order[k];
      const addr = la[i];
      const end = addr + this.lineSize.data[i];
      t.rowAddr.push(addr);
      t.rowFile.push(this.lineFile.data[i]);
      t.rowLine.push(this.lineLine.data[i]);
      const next = k + 1 < count ? la[order[k + 1]] : Infinity;
      if (next > end) {
        t.rowAddr.push(end);
        t.rowFile.push(-1);
        t.rowLine.push(0);
      }
    }
    if (t.rowAddr.length > 0) {
      t.seqFirstRow.push(0);
      t.seqEndRow.push(t.rowAddr.length);
    }
    const empty = { start: 0, end: 0 };
    const sections: DwarfSections = {
      bytes,
      info: empty,
      abbrev: empty,
      line: empty,
      str: empty,
      lineStr: empty,
      strOffsets: empty,
      addr: empty,
      ranges: empty,
      rngLists: empty,
    };
    // A PUBLIC symbol names addresses up to the next PUBLIC or FUNC record (Breakpad's
    // rule): FUNC records are symbols too, ending where they end.
    const symbols = [
      ...this.publics.map((p) => ({ name: p.name, addr: p.addr, end: Infinity })),
      ...this.funcs.map((f) => ({ name: f.name, addr: f.addr, end: f.addr + Math.max(f.size, 1) })),
    ].sort((a, b) => a.addr - b.addr || (a.end === Infinity ? 1 : 0) - (b.end === Infinity ? 1 : 0));
    return { source: { arch: module.arch, debugId: module.debugId, textVmaddr: 0, sections, symbols }, tables: t };
  }
}
