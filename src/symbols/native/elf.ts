// ELF reading for symbolication (docs/api.md "Native symbolication"): the header (32/64-bit,
// either byte order), program headers (the load address, PT_NOTE build ids), section
// headers (the .debug_* sections feed the DWARF reader, .text feeds the id of a file
// without a build id), the symbol tables (.symtab, .dynsym) and `.gnu_debuglink`. Ids are
// computed as Sentry does: the debug id is the GNU build id's first 16 bytes read as a
// GUID (the first three fields byte-swapped on little-endian targets), else the first page
// of .text folded into 16 bytes by XOR; the code id is the whole build id in hex. Every
// count and offset is checked against the file, so a lying header is one BadNativeFile.
// A stored file is read by ranges (readElfFrom): headers, notes and section names only.

import type { ByteRangeSource } from '../../bytes.js';
import { BadNativeFile, ByteReader, cString } from './bytes.js';
import type { DwarfSections } from './dwarf.js';
import { formatUuid } from './macho.js';
import { Unzlib } from 'fflate';

const PT_LOAD = 1;
const PT_NOTE = 4;
const SHT_PROGBITS = 1;
const SHT_SYMTAB = 2;
const SHT_NOTE = 7;
const SHT_NOBITS = 8;
const SHT_DYNSYM = 11;
const SHF_COMPRESSED = 0x800;
const NT_GNU_BUILD_ID = 3;
const STT_FUNC = 2;
const STT_NOTYPE = 0;
const STT_FILE = 4;
const STB_LOCAL = 0;
const SHN_UNDEF = 0;
const SHN_LORESERVE = 0xff00;
const EM_ARM = 40;

/** Real files have tens of sections and a dozen program headers; more is a hostile header. */
const MAX_SECTIONS = 65_280;
const MAX_PROGRAM_HEADERS = 4_096;
/** Notes are small: a build id is 20 bytes. */
const MAX_NOTE_BYTES = 64 * 1024;
const PAGE_SIZE = 4096;

export interface ElfSection {
  name: string;
  type: number;
  flags: number;
  addr: number;
  size: number;
  /** Offset of the section's bytes in the file; -1 when it has none (NOBITS, or outside the file). */
  fileOffset: number;
  link: number;
  entsize: number;
}

export interface ElfFile {
  is64: boolean;
  littleEndian: boolean;
  /** ET_* of the header. */
  type: number;
  machine: number;
  arch: string;
  /** Lowercase dashed debug id ('' when the file has neither build id nor .text bytes). */
  debugId: string;
  /** The GNU build id in hex, or '' without one. */
  codeId: string;
  /** vaddr of the first PT_LOAD segment: what DWARF and symbol addresses count from. */
  loadAddress: number;
  hasInterpreter: boolean;
  sections: ElfSection[];
  /** The file `.gnu_debuglink` names (the split debug file), with its CRC-32. */
  debugLink: { name: string; crc: number } | null;
  size: number;
}

export const ELF_MAGIC = [0x7f, 0x45, 0x4c, 0x46];

export function looksLikeElf(head: Uint8Array): boolean {
  return head.byteLength >= 4 && ELF_MAGIC.every((b, i) => head[i] === b);
}

function archOf(machine: number, flags: number): string {
  switch (machine) {
    case 3:
      return 'x86';
    case 62:
      return 'x86_64';
    case 183:
      return 'arm64';
    case EM_ARM:
      return 'arm';
    case 20:
      return 'ppc';
    case 21:
      return 'ppc64';
    case 8:
    case 10:
      return flags & 0x6000 ? 'mips64' : 'mips';
    default:
      return 'unknown';
  }
}

/** Sentry's debug id of an identifier (a build id, or the folded .text page). */
export function debugIdOfIdentifier(id: Uint8Array, littleEndian: boolean): string {
  const data = new Uint8Array(16);
  data.set(id.subarray(0, 16));
  if (littleEndian) {
    data.subarray(0, 4).reverse();
    data.subarray(4, 6).reverse();
    data.subarray(6, 8).reverse();
  }
  return formatUuid(data, 0);
}

/** The debug id a code id (a hex build id, as SDKs send it in `code_id`) stands for. */
export function debugIdOfCodeId(codeId: string): string | null {
  const hex = codeId.trim().toLowerCase();
  if (!/^[0-9a-f]{2,}$/.test(hex) || hex.length % 2 !== 0) return null;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return debugIdOfIdentifier(bytes, true);
}

function hexOf(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/** Reads up to `length` bytes at `offset` of the file (whole, or by ranges). */
type Read = (offset: number, length: number) => Promise<Uint8Array> | Uint8Array;

interface Header {
  is64: boolean;
  littleEndian: boolean;
  type: number;
  machine: number;
  flags: number;
  phoff: number;
  phentsize: number;
  phnum: number;
  shoff: number;
  shentsize: number;
  shnum: number;
  shstrndx: number;
}

function readHeader(head: Uint8Array, size: number): Header {
  if (!looksLikeElf(head)) throw new BadNativeFile('not an ELF file');
  if (head.byteLength < 52) throw new BadNativeFile('the ELF header runs past the file');
  const cls = head[4];
  const data = head[5];
  if (cls !== 1 && cls !== 2) throw new BadNativeFile(`ELF class ${cls}`);
  if (data !== 1 && data !== 2) throw new BadNativeFile(`ELF data encoding ${data}`);
  const is64 = cls === 2;
  const littleEndian = data === 1;
  const r = new ByteReader(head, 16, head.byteLength, littleEndian);
  const type = r.u16();
  const machine = r.u16();
  r.skip(4); // version
  r.skip(is64 ? 8 : 4); // entry
  const phoff = is64 ? r.u64() : r.u32();
  const shoff = is64 ? r.u64() : r.u32();
  const flags = r.u32();
  r.skip(2); // ehsize
  const phentsize = r.u16();
  let phnum = r.u16();
  const shentsize = r.u16();
  const shnum = r.u16();
  const shstrndx = r.u16();
  if (phnum === 0xffff) phnum = 0; // PN_XNUM: real files never have that many
  const h: Header = {
    is64,
    littleEndian,
    type,
    machine,
    flags,
    phoff,
    phentsize,
    phnum,
    shoff,
    shentsize,
    shnum,
    shstrndx,
  };
  if (phnum > MAX_PROGRAM_HEADERS) throw new BadNativeFile(`${phnum} program headers`);
  if (phnum > 0 && (phentsize < (is64 ? 56 : 32) || phoff + phnum * phentsize > size))
    throw new BadNativeFile('program headers lie outside the file');
  if (shnum > MAX_SECTIONS) throw new BadNativeFile(`${shnum} sections`);
  if (shnum > 0 && (shentsize < (is64 ? 64 : 40) || shoff + shnum * shentsize > size))
    throw new BadNativeFile('section headers lie outside the file');
  return h;
}

/** The build id among the notes of `bytes`, or null. */
function buildIdInNotes(bytes: Uint8Array, littleEndian: boolean): Uint8Array | null {
  const r = new ByteReader(bytes, 0, bytes.byteLength, littleEndian);
  while (r.remaining() >= 12) {
    const namesz = r.u32();
    const descsz = r.u32();
    const type = r.u32();
    const nameLen = (namesz + 3) & ~3;
    const descLen = (descsz + 3) & ~3;
    if (nameLen > r.remaining()) return null;
    const name = cString(bytes, r.pos, r.pos + Math.max(namesz, 1));
    r.skip(nameLen);
    if (descsz > r.remaining()) return null;
    if (type === NT_GNU_BUILD_ID && name === 'GNU') return bytes.slice(r.pos, r.pos + descsz);
    r.skip(Math.min(descLen, r.remaining()));
  }
  return null;
}

async function readElfWith(read: Read, size: number): Promise<ElfFile> {
  const h = readHeader(await read(0, Math.min(size, 64)), size);
  const { is64, littleEndian } = h;

  let loadAddress = -1;
  let hasInterpreter = false;
  const noteSegments: [number, number][] = [];
  if (h.phnum > 0) {
    const table = await read(h.phoff, h.phnum * h.phentsize);
    for (let i = 0; i < h.phnum; i++) {
      const r = new ByteReader(table, i * h.phentsize, (i + 1) * h.phentsize, littleEndian);
      const type = r.u32();
      if (is64) r.skip(4); // flags
      const offset = is64 ? r.u64() : r.u32();
      const vaddr = is64 ? r.u64() : r.u32();
      r.skip(is64 ? 8 : 4); // paddr
      const filesz = is64 ? r.u64() : r.u32();
      if (type === PT_LOAD && loadAddress < 0) loadAddress = vaddr;
      if (type === 3) hasInterpreter = true; // PT_INTERP
      if (type === PT_NOTE && filesz > 0 && filesz <= MAX_NOTE_BYTES && offset + filesz <= size)
        noteSegments.push([offset, filesz]);
    }
  }

  const sections: ElfSection[] = [];
  if (h.shnum > 0) {
    const table = await read(h.shoff, h.shnum * h.shentsize);
    const raw: (ElfSection & { nameOffset: number })[] = [];
    for (let i = 0; i < h.shnum; i++) {
      const r = new ByteReader(table, i * h.shentsize, (i + 1) * h.shentsize, littleEndian);
      const nameOffset = r.u32();
      const type = r.u32();
      const flags = is64 ? r.u64() : r.u32();
      const addr = is64 ? r.u64() : r.u32();
      const offset = is64 ? r.u64() : r.u32();
      const sz = is64 ? r.u64() : r.u32();
      const link = r.u32();
      r.skip(4); // info
      r.skip(is64 ? 8 : 4); // addralign
      const entsize = is64 ? r.u64() : r.u32();
      const hasBytes = type !== SHT_NOBITS && offset !== 0 && sz > 0 && offset + sz <= size;
      raw.push({
        name: '',
        nameOffset,
        type,
        flags,
        addr,
        size: sz,
        fileOffset: hasBytes ? offset : -1,
        link,
        entsize,
      });
    }
    const names = h.shstrndx < raw.length ? raw[h.shstrndx] : undefined;
    const nameBytes =
      names && names.fileOffset >= 0 ? await read(names.fileOffset, Math.min(names.size, 1 << 20)) : new Uint8Array(0);
    for (const s of raw) {
      const { nameOffset, ...section } = s;
      section.name = nameOffset < nameBytes.byteLength ? cString(nameBytes, nameOffset) : '';
      sections.push(section);
    }
  }

  // The build id: PT_NOTE segments first, then the note section, as Sentry looks for it.
  let buildId: Uint8Array | null = null;
  for (const [offset, length] of noteSegments) {
    buildId = buildIdInNotes(await read(offset, length), littleEndian);
    if (buildId) break;
  }
  if (!buildId) {
    const note = sections.find(
      (s) => s.type === SHT_NOTE && s.name === '.note.gnu.build-id' && s.fileOffset >= 0 && s.size <= MAX_NOTE_BYTES,
    );
    if (note) buildId = buildIdInNotes(await read(note.fileOffset, note.size), littleEndian);
  }

  let debugId = '';
  if (buildId && buildId.byteLength > 0) debugId = debugIdOfIdentifier(buildId, littleEndian);
  else {
    const text = sections.find((s) => s.name === '.text' && s.type === SHT_PROGBITS && s.fileOffset >= 0);
    if (text) {
      const page = await read(text.fileOffset, Math.min(text.size, PAGE_SIZE));
      const hash = new Uint8Array(16);
      for (let i = 0; i < page.byteLength; i++) hash[i % 16] ^= page[i];
      debugId = debugIdOfIdentifier(hash, littleEndian);
    }
  }

  let debugLink: ElfFile['debugLink'] = null;
  const link = sections.find((s) => s.name === '.gnu_debuglink' && s.fileOffset >= 0 && s.size >= 8 && s.size <= 4096);
  if (link) {
    const bytes = await read(link.fileOffset, link.size);
    const name = cString(bytes, 0);
    const crcAt = (name.length + 1 + 3) & ~3;
    if (name && crcAt + 4 <= bytes.byteLength)
      debugLink = { name, crc: new ByteReader(bytes, crcAt, crcAt + 4, littleEndian).u32() };
  }

  return {
    is64,
    littleEndian,
    type: h.type,
    machine: h.machine,
    arch: archOf(h.machine, h.flags),
    debugId,
    codeId: buildId ? hexOf(buildId) : '',
    loadAddress: Math.max(loadAddress, 0),
    hasInterpreter,
    sections,
    debugLink,
    size,
  };
}

/** An ELF file in memory. Throws BadNativeFile when it is not one. */
export function readElf(bytes: Uint8Array): Promise<ElfFile> {
  return readElfWith((offset, length) => {
    if (offset < 0 || offset + length > bytes.byteLength)
      throw new BadNativeFile('a read runs past the end of the file');
    return bytes.subarray(offset, offset + length);
  }, bytes.byteLength);
}

/** The same, reading only headers, notes and section names from a stored file. */
export function readElfFrom(source: ByteRangeSource): Promise<ElfFile> {
  return readElfWith(async (offset, length) => {
    const piece = await source.read(offset, length);
    if (piece.byteLength !== length) throw new BadNativeFile('a read runs past the end of the file');
    return piece;
  }, source.size);
}

/** Sentry's object kind of an ELF file (a stripped-off debug file keeps ET_EXEC but loses its interpreter). */
export function elfObjectKind(elf: ElfFile): string {
  switch (elf.type) {
    case 1:
      return 'rel';
    case 2:
      return elf.hasInterpreter ? 'exe' : 'dbg';
    case 3:
      return elf.sections.some((s) => s.name === '.text' && s.type !== SHT_NOBITS) ? 'lib' : 'dbg';
    case 4:
      return 'dump';
    default:
      return 'other';
  }
}

export function elfSection(elf: ElfFile, name: string): ElfSection | undefined {
  return elf.sections.find((s) => s.name === name && s.fileOffset >= 0 && s.size > 0);
}

/** True when the file has DWARF (plain, or compressed with zlib as `SHF_COMPRESSED` or `.zdebug_*`). */
export function elfHasDwarf(elf: ElfFile): boolean {
  return elfSection(elf, '.debug_info') !== undefined || elfSection(elf, '.zdebug_info') !== undefined;
}

/** The symbol tables whose entries the index reads (full table first, dynamic one second). */
export function elfSymbolTables(elf: ElfFile): { table: ElfSection; strings: ElfSection }[] {
  const out: { table: ElfSection; strings: ElfSection }[] = [];
  for (const type of [SHT_SYMTAB, SHT_DYNSYM]) {
    const table = elf.sections.find((s) => s.type === type && s.fileOffset >= 0);
    const strings = table && table.link < elf.sections.length ? elf.sections[table.link] : undefined;
    if (table && strings && strings.fileOffset >= 0) out.push({ table, strings });
  }
  return out;
}

export interface ElfSymbol {
  name: string;
  addr: number;
  size: number;
  /** The STT_FILE entry before a local symbol of the full table (its source file). */
  file?: string;
}

/**
 * Defined function symbols of both tables (`bytes` holds each table and its strings at
 * the sections' fileOffset), by address; on 32-bit ARM the Thumb bit is cleared.
 */
export function readElfSymbols(bytes: Uint8Array, elf: ElfFile, tables = elfSymbolTables(elf)): ElfSymbol[] {
  const out: ElfSymbol[] = [];
  const seen = new Set<number>();
  const entry = elf.is64 ? 24 : 16;
  for (const { table, strings } of tables) {
    const count = Math.floor(table.size / entry);
    const r = new ByteReader(bytes, table.fileOffset, table.fileOffset + count * entry, elf.littleEndian);
    const strEnd = strings.fileOffset + strings.size;
    let file = '';
    for (let i = 0; i < count; i++) {
      let nameOffset: number;
      let value: number;
      let size: number;
      let info: number;
      let shndx: number;
      if (elf.is64) {
        nameOffset = r.u32();
        info = r.u8();
        r.u8();
        shndx = r.u16();
        value = r.u64();
        size = r.u64();
      } else {
        nameOffset = r.u32();
        value = r.u32();
        size = r.u32();
        info = r.u8();
        r.u8();
        shndx = r.u16();
      }
      const type = info & 0xf;
      if (type === STT_FILE) {
        file =
          nameOffset > 0 && nameOffset < strings.size ? cString(bytes, strings.fileOffset + nameOffset, strEnd) : '';
        continue;
      }
      if ((type !== STT_FUNC && type !== STT_NOTYPE) || shndx === SHN_UNDEF || shndx >= SHN_LORESERVE || value === 0)
        continue;
      if (type === STT_NOTYPE && size === 0) continue; // labels and mapping symbols ($x, $d, $t)
      if (nameOffset === 0 || nameOffset >= strings.size) continue;
      const addr = elf.machine === EM_ARM ? value - (value % 2) : value;
      if (seen.has(addr)) continue;
      const name = cString(bytes, strings.fileOffset + nameOffset, strEnd);
      if (!name) continue;
      seen.add(addr);
      out.push(file && info >> 4 === STB_LOCAL ? { name, addr, size, file } : { name, addr, size });
    }
  }
  out.sort((a, b) => a.addr - b.addr);
  return out;
}

/** The sections a DWARF reader is built from, by their ELF names. */
export const ELF_DWARF_SECTION_NAMES = {
  info: '.debug_info',
  abbrev: '.debug_abbrev',
  line: '.debug_line',
  str: '.debug_str',
  lineStr: '.debug_line_str',
  strOffsets: '.debug_str_offsets',
  addr: '.debug_addr',
  ranges: '.debug_ranges',
  rngLists: '.debug_rnglists',
} as const;

/** The section holding a DWARF section's bytes: `.debug_x` (maybe SHF_COMPRESSED), else GNU's `.zdebug_x`. */
function dwarfSection(elf: ElfFile, name: string): ElfSection | undefined {
  return elfSection(elf, name) ?? elfSection(elf, `.z${name.slice(1)}`);
}

/**
 * Sections of an ELF file that `elfIndexSource` reads: DWARF (compressed or not) and symbol
 * tables; without `streamed` (elfStreamedInfo: read by the DWARF reader on its own).
 */
export function elfIndexRanges(elf: ElfFile, streamed?: ElfSection | null): [number, number][] {
  return [...elfDwarfRanges(elf, streamed), ...elfSymbolRanges(elf)];
}

/** The file ranges of the DWARF sections the index reads (but `streamed`, read by windows). */
export function elfDwarfRanges(elf: ElfFile, streamed?: ElfSection | null): [number, number][] {
  const out: [number, number][] = [];
  for (const name of Object.values(ELF_DWARF_SECTION_NAMES)) {
    const s = dwarfSection(elf, name);
    if (s && s !== streamed) out.push([s.fileOffset, s.fileOffset + s.size]);
  }
  return out;
}

/** The file ranges of the symbol tables and their strings. */
export function elfSymbolRanges(elf: ElfFile): [number, number][] {
  const out: [number, number][] = [];
  for (const { table, strings } of elfSymbolTables(elf)) {
    out.push(
      [table.fileOffset, table.fileOffset + table.size],
      [strings.fileOffset, strings.fileOffset + strings.size],
    );
  }
  return out;
}

/**
 * The `.debug_info` section the DWARF reader reads from the stored file a few units at a
 * time (plain, not compressed: a compressed one is inflated whole with the others), or null.
 */
export function elfStreamedInfo(elf: ElfFile): ElfSection | null {
  const s = elfSection(elf, '.debug_info');
  return s && (s.flags & SHF_COMPRESSED) === 0 && s.fileOffset + s.size <= elf.size ? s : null;
}

/** `elf` with its sections' offsets moved (by `moved`) into a buffer of `size` bytes holding elfIndexRanges. */
export function movedElf(elf: ElfFile, moved: (offset: number) => number, size: number): ElfFile {
  const sections = elf.sections
    .map((s) => ({ ...s, fileOffset: s.fileOffset >= 0 ? moved(s.fileOffset) : -1 }))
    .map((s) => (s.fileOffset >= 0 && s.fileOffset + s.size <= size ? s : { ...s, fileOffset: -1 }));
  return { ...elf, sections, size };
}

/** The largest section decompressed (a debug section of a 1 GB debug file is smaller). */
const MAX_INFLATED_SECTION_BYTES = 1 << 30;
const ELFCOMPRESS_ZLIB = 1;

/** A zlib stream inflated into exactly `size` bytes; BadNativeFile when it holds more or fewer, or is not zlib. */
function inflateExactly(data: Uint8Array, size: number, what: string): Uint8Array {
  if (size > MAX_INFLATED_SECTION_BYTES) throw new BadNativeFile(`${what} inflates to ${size} bytes`);
  const out = new Uint8Array(size);
  let at = 0;
  const inflater = new Unzlib((chunk) => {
    if (at + chunk.byteLength > size)
      throw new BadNativeFile(`${what} inflates to more than the ${size} bytes its header says`);
    out.set(chunk, at);
    at += chunk.byteLength;
  });
  try {
    // In steps, so a bomb stops at the size its header gives rather than after inflating whole.
    const STEP = 64 * 1024;
    for (let i = 0; i < data.byteLength || i === 0; i += STEP)
      inflater.push(data.subarray(i, i + STEP), i + STEP >= data.byteLength);
  } catch (err) {
    if (err instanceof BadNativeFile) throw err;
    throw new BadNativeFile(`${what} is not valid zlib data`);
  }
  if (at !== size) throw new BadNativeFile(`${what} inflates to ${at} bytes, not the ${size} its header says`);
  return out;
}

/**
 * The DWARF sections of `elf` compressed with zlib (`SHF_COMPRESSED` with an
 * ELFCOMPRESS_ZLIB header, as `-gz` writes them, or GNU's `.zdebug_*` with a "ZLIB" header)
 * inflated: `bytes` (holding the sections at their fileOffset, as elfIndexParts reads them)
 * with the inflated sections appended, and `elf` naming them there as plain `.debug_*`
 * sections. Other compression types (zstd) leave the section out: the index is built
 * without it. Files without compressed sections come back as they are.
 */
export function inflateElfDebugSections(bytes: Uint8Array, elf: ElfFile): { bytes: Uint8Array; elf: ElfFile } {
  const inflated: { section: ElfSection; name: string; data: Uint8Array | null }[] = [];
  for (const name of Object.values(ELF_DWARF_SECTION_NAMES)) {
    const s = dwarfSection(elf, name);
    if (!s || s.fileOffset < 0 || s.fileOffset + s.size > bytes.byteLength) continue;
    const raw = bytes.subarray(s.fileOffset, s.fileOffset + s.size);
    const r = new ByteReader(raw, 0, raw.byteLength, elf.littleEndian);
    if (s.name.startsWith('.zdebug')) {
      // "ZLIB", then the inflated size as a big-endian 64-bit number.
      if (raw.byteLength < 12 || cString(raw, 0, 4) !== 'ZLIB') {
        inflated.push({ section: s, name, data: null });
        continue;
      }
      r.littleEndian = false;
      r.skip(4);
      inflated.push({ section: s, name, data: inflateExactly(raw.subarray(12), r.u64(), s.name) });
    } else if ((s.flags & SHF_COMPRESSED) !== 0) {
      const type = r.u32();
      if (elf.is64) r.skip(4);
      const size = elf.is64 ? r.u64() : r.u32();
      r.skip(elf.is64 ? 8 : 4); // ch_addralign
      inflated.push({
        section: s,
        name,
        data: type === ELFCOMPRESS_ZLIB ? inflateExactly(raw.subarray(r.pos), size, s.name) : null,
      });
    }
  }
  if (inflated.length === 0) return { bytes, elf };
  let total = bytes.byteLength;
  for (const { data } of inflated) total += data?.byteLength ?? 0;
  const out = new Uint8Array(total);
  out.set(bytes);
  let at = bytes.byteLength;
  const replaced = new Map<ElfSection, ElfSection>();
  for (const { section, name, data } of inflated) {
    if (!data) {
      replaced.set(section, { ...section, fileOffset: -1 });
      continue;
    }
    out.set(data, at);
    replaced.set(section, {
      ...section,
      name,
      flags: section.flags & ~SHF_COMPRESSED,
      fileOffset: at,
      size: data.byteLength,
    });
    at += data.byteLength;
  }
  return { bytes: out, elf: { ...elf, sections: elf.sections.map((s) => replaced.get(s) ?? s) } };
}

/** What the lookup index of an ELF file is built from (`bytes` holds the sections at their fileOffset). */
export function elfIndexParts(
  bytes: Uint8Array,
  elf: ElfFile,
): { sections: DwarfSections; symbols: { name: string; addr: number; end: number }[] } {
  const sections = { bytes } as DwarfSections;
  for (const [key, name] of Object.entries(ELF_DWARF_SECTION_NAMES)) {
    const s = elfSection(elf, name);
    sections[key as keyof typeof ELF_DWARF_SECTION_NAMES] =
      s && (s.flags & SHF_COMPRESSED) === 0 && s.fileOffset >= 0 && s.fileOffset + s.size <= bytes.byteLength
        ? { start: s.fileOffset, end: s.fileOffset + s.size }
        : { start: 0, end: 0 };
  }
  const code = elf.sections
    .filter((s) => s.size > 0 && s.addr > 0 && (s.flags & 0x4) !== 0)
    .sort((a, b) => a.addr - b.addr); // SHF_EXECINSTR
  // By binary search: a hostile file may hold many sections and many symbols at once.
  const sectionEnd = (addr: number): number => {
    let lo = 0;
    let hi = code.length - 1;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (code[mid].addr <= addr) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return found >= 0 && addr < code[found].addr + code[found].size ? code[found].addr + code[found].size : Infinity;
  };
  const symbols = readElfSymbols(bytes, elf).map((s) => ({
    name: s.name,
    addr: s.addr,
    end: s.size > 0 ? s.addr + s.size : sectionEnd(s.addr),
    file: s.file,
  }));
  return { sections, symbols };
}
