// Mach-O reading: thin files (32/64-bit, either byte order), fat/universal files (fat32 and
// fat64), the slice's LC_UUID (its debug id), __TEXT vmaddr, sections (the __DWARF ones feed
// the DWARF reader) and the LC_SYMTAB symbol table. Every count and offset is checked
// against the file before use, so a lying header costs one clean BadNativeFile. A stored
// file is read by ranges (readMachOFrom): headers and load commands only.

import type { ByteRangeSource } from '../../bytes.js';
import { BadNativeFile, ByteReader, cString } from './bytes.js';

const MH_MAGIC = 0xfeedface;
const MH_MAGIC_64 = 0xfeedfacf;
const MH_CIGAM = 0xcefaedfe;
const MH_CIGAM_64 = 0xcffaedfe;
const FAT_MAGIC = 0xcafebabe;
const FAT_MAGIC_64 = 0xcafebabf;

const LC_SEGMENT = 0x1;
const LC_SYMTAB = 0x2;
const LC_SEGMENT_64 = 0x19;
const LC_UUID = 0x1b;

/** Real universal files hold a handful of slices; more is a corrupt or hostile header. */
export const MAX_FAT_SLICES = 32;
const MAX_LOAD_COMMANDS = 65_536;
/** Bytes of one slice's load commands: real files have tens of KB; more is a hostile header. */
const MAX_LOAD_COMMAND_BYTES = 16 * 1024 * 1024;

const CPU_ARCH_ABI64 = 0x0100_0000;
const CPU_ARCH_ABI64_32 = 0x0200_0000;
const CPU_TYPE_X86 = 7;
const CPU_TYPE_ARM = 12;
const CPU_TYPE_POWERPC = 18;

export interface MachSection {
  segment: string;
  name: string;
  addr: number;
  size: number;
  /** Absolute offset of the section's bytes in the whole uploaded file. */
  fileOffset: number;
}

export interface MachSymbol {
  name: string;
  addr: number;
}

export interface MachSlice {
  arch: string;
  cpuType: number;
  cpuSubtype: number;
  is64: boolean;
  /** Lowercase dashed UUID from LC_UUID, or '' when the slice has none (object files). */
  debugId: string;
  fileType: number;
  /** vmaddr of the __TEXT segment (0 when absent, as in object files). */
  textVmaddr: number;
  sections: MachSection[];
  /** Absolute window of this slice in the whole file. */
  start: number;
  end: number;
  symtab: { symoff: number; nsyms: number; stroff: number; strsize: number } | null;
  littleEndian: boolean;
}

export function archName(cpuType: number, cpuSubtype: number): string {
  const sub = cpuSubtype & 0x00ff_ffff;
  switch (cpuType) {
    case CPU_TYPE_X86:
      return 'x86';
    case CPU_TYPE_X86 | CPU_ARCH_ABI64:
      return sub === 8 ? 'x86_64h' : 'x86_64';
    case CPU_TYPE_ARM | CPU_ARCH_ABI64:
      return sub === 2 ? 'arm64e' : 'arm64';
    case CPU_TYPE_ARM | CPU_ARCH_ABI64_32:
      return 'arm64_32';
    case CPU_TYPE_ARM:
      switch (sub) {
        case 9:
          return 'armv7';
        case 11:
          return 'armv7s';
        case 12:
          return 'armv7k';
        case 6:
          return 'armv6';
        default:
          return 'arm';
      }
    case CPU_TYPE_POWERPC:
      return 'ppc';
    case CPU_TYPE_POWERPC | CPU_ARCH_ABI64:
      return 'ppc64';
    default:
      return 'unknown';
  }
}

export function formatUuid(bytes: Uint8Array, pos: number): string {
  let hex = '';
  for (let i = 0; i < 16; i++) hex += bytes[pos + i].toString(16).padStart(2, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function magicAt(bytes: Uint8Array, pos: number): number {
  if (pos + 4 > bytes.length) return 0;
  return ((bytes[pos] << 24) | (bytes[pos + 1] << 16) | (bytes[pos + 2] << 8) | bytes[pos + 3]) >>> 0;
}

/** True when the bytes start like a thin or fat Mach-O file (cheap sniffing, no parsing). */
export function looksLikeMachO(bytes: Uint8Array): boolean {
  const m = magicAt(bytes, 0);
  return (
    m === FAT_MAGIC || m === FAT_MAGIC_64 || m === MH_MAGIC || m === MH_MAGIC_64 || m === MH_CIGAM || m === MH_CIGAM_64
  );
}

/** Every slice of a thin or fat Mach-O file in memory. Throws BadNativeFile when the file is not one. */
export function readMachO(bytes: Uint8Array): MachSlice[] {
  const magic = magicAt(bytes, 0);
  if (magic !== FAT_MAGIC && magic !== FAT_MAGIC_64) return [readThin(bytes, 0, bytes.length)];
  const slices = fatEntries(bytes, bytes.length, magic === FAT_MAGIC_64).map(({ offset, size }) =>
    readThin(bytes.subarray(offset, offset + size), offset, offset + size),
  );
  return checkedSlices(slices);
}

/**
 * The same, reading only the fat header and each slice's header and load commands from
 * `source` (a stored file's chunks): what a large dSYM holds besides is never read here.
 */
export async function readMachOFrom(source: ByteRangeSource): Promise<MachSlice[]> {
  const head = await source.read(0, Math.min(source.size, 8));
  const magic = magicAt(head, 0);
  if (magic !== FAT_MAGIC && magic !== FAT_MAGIC_64) return [await readThinFrom(source, 0, source.size)];
  const is64 = magic === FAT_MAGIC_64;
  const count = head.byteLength >= 8 ? new DataView(head.buffer, head.byteOffset, 8).getUint32(4, false) : 0;
  const header = await source.read(
    0,
    Math.min(source.size, 8 + Math.min(count, MAX_FAT_SLICES + 1) * (is64 ? 32 : 20)),
  );
  const slices: MachSlice[] = [];
  for (const { offset, size } of fatEntries(header, source.size, is64))
    slices.push(await readThinFrom(source, offset, offset + size));
  return checkedSlices(slices);
}

/** A thin slice from its header and load commands, read from `source`. */
async function readThinFrom(source: ByteRangeSource, start: number, end: number): Promise<MachSlice> {
  const header = await source.read(start, Math.min(end - start, 32));
  const magic = magicAt(header, 0);
  const littleEndian = magic === MH_CIGAM || magic === MH_CIGAM_64;
  const is64 = magic === MH_MAGIC_64 || magic === MH_CIGAM_64;
  if (!littleEndian && magic !== MH_MAGIC && magic !== MH_MAGIC_64) throw new BadNativeFile('not a Mach-O file');
  const headerSize = is64 ? 32 : 28;
  if (header.byteLength < headerSize) throw new BadNativeFile('the Mach-O header runs past the file');
  const sizeofcmds = new DataView(header.buffer, header.byteOffset, header.byteLength).getUint32(20, littleEndian);
  if (sizeofcmds > MAX_LOAD_COMMAND_BYTES)
    throw new BadNativeFile(`load commands of ${sizeofcmds} bytes (at most ${MAX_LOAD_COMMAND_BYTES})`);
  return readThin(await source.read(start, Math.min(end - start, headerSize + sizeofcmds)), start, end);
}

/** The slices a fat header names, checked against the file's size; `head` holds the header. */
function fatEntries(head: Uint8Array, fileSize: number, is64: boolean): { offset: number; size: number }[] {
  const r = new ByteReader(head, 0, head.length, false);
  r.skip(4);
  const count = r.u32();
  const entrySize = is64 ? 32 : 20;
  if (count === 0) throw new BadNativeFile('fat file with no slices');
  if (count > MAX_FAT_SLICES) throw new BadNativeFile(`fat header names ${count} slices (at most ${MAX_FAT_SLICES})`);
  r.need(count * entrySize);
  const out: { offset: number; size: number }[] = [];
  for (let i = 0; i < count; i++) {
    r.skip(8); // cputype, cpusubtype: the slice's own header is authoritative
    const offset = is64 ? r.u64() : r.u32();
    const size = is64 ? r.u64() : r.u32();
    r.skip(is64 ? 8 : 4);
    if (offset < 8 + count * entrySize || offset + size > fileSize || size === 0) {
      throw new BadNativeFile(`fat slice ${i} lies outside the file`);
    }
    out.push({ offset, size });
  }
  return out;
}

/** Overlapping slices would make one file's bytes count (and be indexed) several times. */
function checkedSlices(slices: MachSlice[]): MachSlice[] {
  const ordered = [...slices].sort((a, b) => a.start - b.start);
  for (let i = 1; i < ordered.length; i++) {
    if (ordered[i].start < ordered[i - 1].end) throw new BadNativeFile('fat slices overlap');
  }
  return slices;
}

/**
 * One thin slice: `bytes` starts at the slice's start (the slice's bytes, or at least its
 * header and load commands); `start`/`end` are its absolute window in the whole file.
 */
function readThin(bytes: Uint8Array, start: number, end: number): MachSlice {
  const magic = magicAt(bytes, 0);
  let littleEndian: boolean;
  let is64: boolean;
  if (magic === MH_CIGAM) {
    littleEndian = true;
    is64 = false;
  } // 0xfeedface stored little-endian
  else if (magic === MH_CIGAM_64) {
    littleEndian = true;
    is64 = true;
  } else if (magic === MH_MAGIC) {
    littleEndian = false;
    is64 = false;
  } else if (magic === MH_MAGIC_64) {
    littleEndian = false;
    is64 = true;
  } else throw new BadNativeFile('not a Mach-O file');
  const r = new ByteReader(bytes, 0, bytes.length, littleEndian);
  r.skip(4);
  const cpuType = r.u32();
  const cpuSubtype = r.u32();
  const fileType = r.u32();
  const ncmds = r.u32();
  const sizeofcmds = r.u32();
  r.skip(is64 ? 8 : 4); // flags, reserved
  const cmdsStart = r.pos;
  if (ncmds > MAX_LOAD_COMMANDS || ncmds * 8 > sizeofcmds)
    throw new BadNativeFile(`absurd load command count ${ncmds}`);
  r.need(sizeofcmds);
  const cmdsEnd = cmdsStart + sizeofcmds;

  const slice: MachSlice = {
    arch: archName(cpuType, cpuSubtype),
    cpuType,
    cpuSubtype,
    is64,
    debugId: '',
    fileType,
    textVmaddr: 0,
    sections: [],
    start,
    end,
    symtab: null,
    littleEndian,
  };
  let pos = cmdsStart;
  for (let i = 0; i < ncmds; i++) {
    const c = new ByteReader(bytes, pos, cmdsEnd, littleEndian);
    const cmd = c.u32();
    const cmdsize = c.u32();
    if (cmdsize < 8 || pos + cmdsize > cmdsEnd)
      throw new BadNativeFile(`load command ${i} runs past the load commands`);
    c.end = pos + cmdsize;
    if (cmd === LC_SEGMENT || cmd === LC_SEGMENT_64) readSegment(c, cmd === LC_SEGMENT_64, slice);
    else if (cmd === LC_UUID) {
      c.need(16);
      slice.debugId = formatUuid(bytes, c.pos);
    } else if (cmd === LC_SYMTAB) {
      const symoff = c.u32();
      const nsyms = c.u32();
      const stroff = c.u32();
      const strsize = c.u32();
      const nlistSize = is64 ? 16 : 12;
      if (start + symoff + nsyms * nlistSize > end || start + stroff + strsize > end) {
        throw new BadNativeFile('symbol table lies outside the file');
      }
      slice.symtab = { symoff: start + symoff, nsyms, stroff: start + stroff, strsize };
    }
    pos += cmdsize;
  }
  return slice;
}

function fixedName(bytes: Uint8Array, pos: number): string {
  let n = 0;
  while (n < 16 && bytes[pos + n] !== 0) n++;
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(bytes[pos + i]);
  return s;
}

function readSegment(c: ByteReader, is64: boolean, slice: MachSlice): void {
  c.need(16);
  const segname = fixedName(c.bytes, c.pos);
  c.skip(16);
  const vmaddr = is64 ? c.u64() : c.u32();
  c.skip(is64 ? 24 : 12); // vmsize, fileoff, filesize
  c.skip(8); // maxprot, initprot
  const nsects = c.u32();
  c.skip(4);
  const sectSize = is64 ? 80 : 68;
  if (nsects * sectSize > c.remaining())
    throw new BadNativeFile(`segment ${segname} names more sections than it holds`);
  if (segname === '__TEXT') slice.textVmaddr = vmaddr;
  for (let i = 0; i < nsects; i++) {
    const name = fixedName(c.bytes, c.pos);
    const segment = fixedName(c.bytes, c.pos + 16);
    c.skip(32);
    const addr = is64 ? c.u64() : c.u32();
    const size = is64 ? c.u64() : c.u32();
    const offset = c.u32();
    c.skip(is64 ? 28 : 24);
    // Zero-fill sections and the empty __TEXT copies in a dSYM carry no file bytes.
    const fileOffset = offset === 0 ? -1 : slice.start + offset;
    if (fileOffset !== -1 && fileOffset + size > slice.end) {
      if (segment === '__DWARF') throw new BadNativeFile(`section ${name} lies outside the file`);
      slice.sections.push({ segment, name, addr, size, fileOffset: -1 });
      continue;
    }
    slice.sections.push({ segment, name, addr, size, fileOffset });
  }
}

const N_STAB = 0xe0;
const N_TYPE = 0x0e;
const N_SECT = 0x0e;

/** Defined section symbols (no debugger stabs), sorted by address, Mach-O's leading '_' kept. */
export function readSymbols(bytes: Uint8Array, slice: MachSlice): MachSymbol[] {
  const st = slice.symtab;
  if (!st) return [];
  const r = new ByteReader(bytes, st.symoff, slice.end, slice.littleEndian);
  const strEnd = st.stroff + st.strsize;
  const out: MachSymbol[] = [];
  for (let i = 0; i < st.nsyms; i++) {
    const strx = r.u32();
    const type = r.u8();
    r.skip(3);
    const value = slice.is64 ? r.u64() : r.u32();
    if (type & N_STAB || (type & N_TYPE) !== N_SECT || strx === 0 || strx >= st.strsize) continue;
    const name = cString(bytes, st.stroff + strx, strEnd);
    if (name) out.push({ name, addr: value });
  }
  out.sort((a, b) => a.addr - b.addr);
  return out;
}
