// Minidump reading (docs/api.md "Minidumps"): the header and stream directory, and the
// streams that matter for a crash report: system info, exception, thread list, module list
// (with CodeView records: RSDS for Windows/macOS, BpEL for Linux build ids), memory list
// and memory64 list, misc info, and the thread contexts of x86, amd64, arm and arm64, as
// Breakpad, Crashpad and Windows write them. Every count, offset and size is checked
// against the file before use, so a hostile directory is one BadMinidump, never a crash or
// a read outside the buffer; counts are bounded so a lying header costs no memory.

import { debugIdOfIdentifier } from '../symbols/native/elf.js';
import { formatUuid } from '../symbols/native/macho.js';

export class BadMinidump extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BadMinidump';
  }
}

const MAGIC = 0x504d444d; // "MDMP"
const STREAM = {
  threadList: 3,
  moduleList: 4,
  memoryList: 5,
  exception: 6,
  systemInfo: 7,
  memory64List: 9,
  miscInfo: 15,
  linuxCpuInfo: 0x47670003,
} as const;
/** Real dumps have tens of streams, hundreds of threads and modules; more is a hostile file. */
const MAX_STREAMS = 4096;
const MAX_THREADS = 8192;
const MAX_MODULES = 16384;
const MAX_MEMORY_RANGES = 65536;

export type CpuArch = 'x86' | 'amd64' | 'arm' | 'arm64' | 'unknown';

export interface MinidumpSystemInfo {
  arch: CpuArch;
  /** `Windows NT`, `Linux`, `Mac OS X`, `iOS`, `Android`, … (Breakpad's names). */
  os: string;
  osVersion: string;
  osBuild: string;
  cpuCount: number;
}

export interface MinidumpThread {
  id: number;
  stack: { start: number; size: number; rva: number } | null;
  /** The thread's raw context (its size and layout follow the architecture). */
  context: Uint8Array | null;
}

export interface MinidumpModule {
  base: number;
  size: number;
  name: string;
  /** Lowercase dashed debug id ('' when the module has no CodeView record). */
  debugId: string;
  /** The age appended to the debug id (PDB ages), 0 otherwise. */
  age: number;
  codeId: string;
  debugFile: string;
  /** `pe`, `elf` or `macho`: the image type of `debug_meta.images`. */
  type: 'pe' | 'elf' | 'macho';
}

export interface MinidumpException {
  threadId: number;
  code: number;
  flags: number;
  address: number;
  /** ExceptionInformation (Windows access violations: 0 read, 1 write, 8 execute). */
  params: number[];
  context: Uint8Array | null;
}

export interface MemoryRange {
  start: number;
  size: number;
  /** Offset of the bytes in the file. */
  rva: number;
}

export interface Minidump {
  bytes: Uint8Array;
  timestamp: number;
  system: MinidumpSystemInfo | null;
  threads: MinidumpThread[];
  modules: MinidumpModule[];
  exception: MinidumpException | null;
  /** Captured memory, ascending by address. */
  memory: MemoryRange[];
  processId: number | null;
}

class Reader {
  readonly view: DataView;
  constructor(readonly bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  check(offset: number, size: number, what: string): void {
    if (offset < 0 || size < 0 || offset + size > this.bytes.byteLength)
      throw new BadMinidump(`${what} lies outside the file (offset ${offset}, ${size} bytes)`);
  }
  u16(at: number): number {
    this.check(at, 2, 'a field');
    return this.view.getUint16(at, true);
  }
  u32(at: number): number {
    this.check(at, 4, 'a field');
    return this.view.getUint32(at, true);
  }
  u64(at: number): number {
    this.check(at, 8, 'a field');
    return this.view.getUint32(at + 4, true) * 0x1_0000_0000 + this.view.getUint32(at, true);
  }
  slice(at: number, size: number, what: string): Uint8Array {
    this.check(at, size, what);
    return this.bytes.subarray(at, at + size);
  }
  /** A MINIDUMP_STRING (u32 byte length, UTF-16LE) at `rva`. */
  string(rva: number): string {
    const length = this.u32(rva);
    if (length > 64 * 1024 || length % 2 !== 0) throw new BadMinidump(`a string of ${length} bytes`);
    const data = this.slice(rva + 4, length, 'a string');
    let s = '';
    for (let i = 0; i + 1 < data.byteLength; i += 2) s += String.fromCharCode(data[i] | (data[i + 1] << 8));
    return s;
  }
}

function archOf(processor: number): CpuArch {
  switch (processor) {
    case 0:
      return 'x86';
    case 5:
    case 0x8003:
      return 'arm';
    case 9:
      return 'amd64';
    case 12:
    case 0x8005:
      return 'arm64';
    default:
      return 'unknown';
  }
}

function osOf(platform: number): string {
  switch (platform) {
    case 2:
      return 'Windows NT';
    case 0x8101:
      return 'Mac OS X';
    case 0x8102:
      return 'iOS';
    case 0x8201:
      return 'Linux';
    case 0x8203:
      return 'Android';
    case 0x8204:
      return 'PS3';
    case 0x8205:
      return 'NaCl';
    case 0x8206:
      return 'Fuchsia';
    default:
      return 'unknown';
  }
}

function hex(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += b.toString(16).padStart(2, '0');
  return s;
}

/** The ids a module's CodeView record gives it, by the record's signature. */
function codeView(
  r: Reader,
  rva: number,
  size: number,
  os: string,
  name: string,
): Pick<MinidumpModule, 'debugId' | 'age' | 'codeId' | 'debugFile' | 'type'> {
  const type = os === 'Windows NT' ? 'pe' : os === 'Mac OS X' || os === 'iOS' ? 'macho' : 'elf';
  const none = { debugId: '', age: 0, codeId: '', debugFile: '', type } as const;
  if (size < 4 || size > 64 * 1024) return none;
  const record = r.slice(rva, size, 'a CodeView record');
  const signature = r.u32(rva);
  if (signature === 0x53445352 && size >= 24) {
    // RSDS: a GUID (first three fields little-endian) and an age, then the PDB's name.
    const guid = record.slice(4, 20);
    guid.subarray(0, 4).reverse();
    guid.subarray(4, 6).reverse();
    guid.subarray(6, 8).reverse();
    const age = r.u32(rva + 20);
    let end = 24;
    while (end < size && record[end] !== 0) end++;
    const debugFile = new TextDecoder().decode(record.subarray(24, end));
    return {
      debugId: formatUuid(guid, 0),
      age,
      codeId: type === 'macho' ? formatUuid(guid, 0).replace(/-/g, '') : '',
      debugFile,
      type,
    };
  }
  if (signature === 0x4270454c) {
    // BpEL: Breakpad's ELF build id record.
    const buildId = record.subarray(4);
    if (buildId.byteLength === 0) return none;
    return { debugId: debugIdOfIdentifier(buildId, true), age: 0, codeId: hex(buildId), debugFile: name, type: 'elf' };
  }
  return none;
}

/** Reads a minidump's streams. Throws BadMinidump when it is not one or lies about its layout. */
export function readMinidump(bytes: Uint8Array): Minidump {
  const r = new Reader(bytes);
  if (bytes.byteLength < 32 || r.u32(0) !== MAGIC) throw new BadMinidump('not a minidump (no MDMP header)');
  const streamCount = r.u32(8);
  const directory = r.u32(12);
  const timestamp = r.u32(20);
  if (streamCount > MAX_STREAMS) throw new BadMinidump(`${streamCount} streams`);
  r.check(directory, streamCount * 12, 'the stream directory');
  const streams = new Map<number, { rva: number; size: number }>();
  for (let i = 0; i < streamCount; i++) {
    const at = directory + 12 * i;
    const type = r.u32(at);
    const size = r.u32(at + 4);
    const rva = r.u32(at + 8);
    if (type === 0 || streams.has(type)) continue; // unused entries; the first of a type wins
    r.check(rva, size, `stream ${type}`);
    streams.set(type, { rva, size });
  }
  const dump: Minidump = {
    bytes,
    timestamp,
    system: null,
    threads: [],
    modules: [],
    exception: null,
    memory: [],
    processId: null,
  };

  const system = streams.get(STREAM.systemInfo);
  if (system && system.size >= 32) {
    const at = system.rva;
    const os = osOf(r.u32(at + 20));
    const csd = r.u32(at + 24);
    let build = '';
    try {
      build = csd > 0 ? r.string(csd) : '';
    } catch {
      build = '';
    }
    dump.system = {
      arch: archOf(r.u16(at)),
      os,
      osVersion: `${r.u32(at + 8)}.${r.u32(at + 12)}.${r.u32(at + 16)}`,
      osBuild: build,
      cpuCount: bytes[at + 6],
    };
  }
  const os = dump.system?.os ?? 'unknown';

  const threads = streams.get(STREAM.threadList);
  if (threads && threads.size >= 4) {
    const count = r.u32(threads.rva);
    if (count > MAX_THREADS || 4 + count * 48 > threads.size)
      throw new BadMinidump(`a thread list of ${count} threads in ${threads.size} bytes`);
    for (let i = 0; i < count; i++) {
      const at = threads.rva + 4 + 48 * i;
      const stackStart = r.u64(at + 24);
      const stackSize = r.u32(at + 32);
      const stackRva = r.u32(at + 36);
      const contextSize = r.u32(at + 40);
      const contextRva = r.u32(at + 44);
      const stackOk = stackSize > 0 && stackRva + stackSize <= bytes.byteLength;
      const contextOk = contextSize > 0 && contextSize <= 64 * 1024 && contextRva + contextSize <= bytes.byteLength;
      dump.threads.push({
        id: r.u32(at),
        stack: stackOk ? { start: stackStart, size: stackSize, rva: stackRva } : null,
        context: contextOk ? bytes.subarray(contextRva, contextRva + contextSize) : null,
      });
    }
  }

  const modules = streams.get(STREAM.moduleList);
  if (modules && modules.size >= 4) {
    const count = r.u32(modules.rva);
    if (count > MAX_MODULES || 4 + count * 108 > modules.size)
      throw new BadMinidump(`a module list of ${count} modules in ${modules.size} bytes`);
    for (let i = 0; i < count; i++) {
      const at = modules.rva + 4 + 108 * i;
      const base = r.u64(at);
      const size = r.u32(at + 8);
      let name = '';
      try {
        name = r.string(r.u32(at + 20));
      } catch {
        name = '';
      }
      let ids: ReturnType<typeof codeView>;
      try {
        ids = codeView(r, r.u32(at + 80), r.u32(at + 76), os, name);
      } catch {
        ids = codeView(r, 0, 0, os, name);
      }
      // A PE image's code id, as Sentry writes it: its link timestamp (8 hex digits) and image size.
      if (ids.type === 'pe' && !ids.codeId) {
        const stamp = r.u32(at + 16);
        if (stamp > 0) ids = { ...ids, codeId: `${stamp.toString(16).padStart(8, '0')}${size.toString(16)}` };
      }
      dump.modules.push({ base, size, name, ...ids });
    }
    dump.modules.sort((a, b) => a.base - b.base);
  }

  const memory = streams.get(STREAM.memoryList);
  if (memory && memory.size >= 4) {
    const count = r.u32(memory.rva);
    if (count > MAX_MEMORY_RANGES || 4 + count * 16 > memory.size)
      throw new BadMinidump(`a memory list of ${count} ranges in ${memory.size} bytes`);
    for (let i = 0; i < count; i++) {
      const at = memory.rva + 4 + 16 * i;
      const start = r.u64(at);
      const size = r.u32(at + 8);
      const rva = r.u32(at + 12);
      if (size > 0 && rva + size <= bytes.byteLength) dump.memory.push({ start, size, rva });
    }
  }
  const memory64 = streams.get(STREAM.memory64List);
  if (memory64 && memory64.size >= 16) {
    const count = r.u64(memory64.rva);
    let rva = r.u64(memory64.rva + 8);
    if (count > MAX_MEMORY_RANGES || 16 + count * 16 > memory64.size)
      throw new BadMinidump(`a memory64 list of ${count} ranges in ${memory64.size} bytes`);
    for (let i = 0; i < count; i++) {
      const at = memory64.rva + 16 + 16 * i;
      const start = r.u64(at);
      const size = r.u64(at + 8);
      if (size > 0 && rva + size <= bytes.byteLength) dump.memory.push({ start, size, rva });
      rva += size;
    }
  }
  // Thread stacks are memory too (Breakpad lists them in both places; Crashpad only here).
  for (const t of dump.threads)
    if (t.stack) dump.memory.push({ start: t.stack.start, size: t.stack.size, rva: t.stack.rva });
  dump.memory.sort((a, b) => a.start - b.start);

  const exception = streams.get(STREAM.exception);
  if (exception && exception.size >= 168) {
    const at = exception.rva;
    const contextSize = r.u32(at + 160);
    const contextRva = r.u32(at + 164);
    const paramCount = Math.min(r.u32(at + 32), 15);
    dump.exception = {
      threadId: r.u32(at),
      code: r.u32(at + 8),
      flags: r.u32(at + 12),
      address: r.u64(at + 24),
      params: Array.from({ length: paramCount }, (_, i) => r.u64(at + 40 + 8 * i)),
      context:
        contextSize > 0 && contextSize <= 64 * 1024 && contextRva + contextSize <= bytes.byteLength
          ? bytes.subarray(contextRva, contextRva + contextSize)
          : null,
    };
  }

  const misc = streams.get(STREAM.miscInfo);
  if (misc && misc.size >= 24 && (r.u32(misc.rva + 4) & 1) !== 0) dump.processId = r.u32(misc.rva + 8);
  return dump;
}

/** Reads `size` bytes of captured memory at `addr`, or null when they were not captured. */
export function readMemory(dump: Minidump, addr: number, size: number): Uint8Array | null {
  const ranges = dump.memory;
  let lo = 0;
  let hi = ranges.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (ranges[mid].start <= addr) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  // Ranges may overlap (a stack listed twice): the one found, else its predecessor.
  for (let i = found; i >= 0 && i >= found - 1; i--) {
    const m = ranges[i];
    if (addr >= m.start && addr + size <= m.start + m.size) {
      const at = m.rva + (addr - m.start);
      return dump.bytes.subarray(at, at + size);
    }
  }
  return null;
}

/** The module an address lies in, or null. */
export function moduleAt(dump: Minidump, addr: number): MinidumpModule | null {
  const mods = dump.modules;
  let lo = 0;
  let hi = mods.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (mods[mid].base <= addr) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found >= 0 && addr < mods[found].base + mods[found].size ? mods[found] : null;
}
