// Mach-O compact unwind (`__TEXT,__unwind_info`, as ld64 writes it into every macOS and iOS
// executable and library) for the stack walker (docs/api.md "Minidumps"): the first-level
// index of function ranges, regular and compressed second-level pages, and the 32-bit
// encoding of each function turned into Breakpad STACK CFI rule text, so the walker's one
// evaluator runs it. x86_64 and i386: frame-pointer frames (saved registers at fixed
// offsets below it) and frameless functions whose stack size is in the encoding or, too
// large for it, in the immediate of the function's `sub` (read from the executable's code
// by the caller); arm64: frames (x29/x30 pairs, x19–x28 saved below) and frameless leaves
// (return address still in x30). An encoding that says "see DWARF" is answered by the
// image's `__eh_frame` FDE; others (no unwind info, an immediate not read) leave the
// address without rules, so the walker falls back.
// Every offset and count is checked against the section.

import type { ByteRangeSource } from '../bytes.js';
import { BadNativeFile, ByteReader } from '../symbols/native/bytes.js';
import type { MachSlice } from '../symbols/native/macho.js';
import type { ModuleUnwindInfo } from './unwind.js';

/** Second-level pages and entries read at most (real sections have a few thousand). */
const MAX_PAGES = 1 << 16;
const MAX_PAGE_ENTRIES = 1 << 16;

const REGULAR_PAGE = 2;
const COMPRESSED_PAGE = 3;

/** x86_64 compact-unwind register numbers (1–6) → the walker's names. */
const X86_64_SAVED = ['', 'rbx', 'r12', 'r13', 'r14', 'r15', 'rbp'];
/** How a frameless function's permutation of n saved registers is decoded (Lehmer code divisors). */
const PERMUTATION_DIVISORS: number[][] = [
  [],
  [1],
  [5, 1],
  [20, 4, 1],
  [60, 12, 3, 1],
  [120, 24, 6, 2, 1],
  [120, 24, 6, 2, 1],
];

/** The registers a frameless x86_64 function saved, in push order, from the encoding's permutation. */
export function decodePermutation(count: number, permutation: number): number[] | null {
  if (count < 1 || count > 6) return null;
  const digits: number[] = [];
  let rest = permutation;
  for (const d of PERMUTATION_DIVISORS[count]) {
    digits.push(Math.floor(rest / d));
    rest -= digits[digits.length - 1] * d;
  }
  if (count === 6) digits.push(0);
  const used = new Set<number>();
  const regs: number[] = [];
  for (const digit of digits) {
    let seen = 0;
    let reg = 0;
    for (let u = 1; u <= 6; u++) {
      if (used.has(u)) continue;
      if (seen === digit) {
        reg = u;
        break;
      }
      seen++;
    }
    if (reg === 0) return null;
    used.add(reg);
    regs.push(reg);
  }
  return regs;
}

/** x86 (i386) compact-unwind register numbers (1–6) → the walker's names. */
const X86_SAVED = ['', 'ebx', 'ecx', 'edx', 'edi', 'esi', 'ebp'];

/** The x86 family's encodings (x86_64 and i386 share them, with their word size and registers). */
const X86_FAMILY: Record<string, { word: number; sp: string; fp: string; saved: string[] }> = {
  x86_64: { word: 8, sp: 'rsp', fp: 'rbp', saved: X86_64_SAVED },
  x86_64h: { word: 8, sp: 'rsp', fp: 'rbp', saved: X86_64_SAVED },
  x86: { word: 4, sp: 'esp', fp: 'ebp', saved: X86_SAVED },
};

const MODE_MASK = 0x0f000000;
/** x86 and x86_64: frameless, its stack size the immediate of the `sub` in the function's code. */
const X86_STACK_IND = 0x03000000;

/** Where, from the function's start, the `sub` immediate of a STACK_IND encoding lies; -1 for other encodings. */
export function stackSizeImmediateOffset(encoding: number, arch: string): number {
  return X86_FAMILY[arch] && (encoding & MODE_MASK) === X86_STACK_IND ? (encoding >>> 16) & 0xff : -1;
}

/**
 * The rule text of one encoding, 'dwarf' when the image's DWARF CFI has it, or null.
 * `subImmediate` is the 32-bit immediate of the function's `sub $n, %rsp` that a
 * STACK_IND encoding points at (read from the executable's code; null when unknown).
 */
export function compactEncodingRules(
  encoding: number,
  arch: string,
  subImmediate: number | null = null,
): string | 'dwarf' | null {
  const mode = encoding & MODE_MASK;
  const x86 = X86_FAMILY[arch];
  if (x86) {
    const { word, sp, fp, saved } = x86;
    if (mode === 0x01000000) {
      // Frame: push %rbp; mov %rsp, %rbp; the saved registers `offset` words below %rbp.
      const offset = (encoding >>> 16) & 0xff;
      const parts = [`.cfa: $${fp} ${2 * word} +`, `.ra: .cfa ${-word} + ^`, `$${fp}: .cfa ${-2 * word} + ^`];
      for (let i = 0; i < 5; i++) {
        const reg = (encoding >>> (3 * i)) & 7;
        if (reg === 0) continue;
        if (reg > 6) return null;
        parts.push(`$${saved[reg]}: .cfa ${-2 * word - offset * word + i * word} + ^`);
      }
      return parts.join(' ');
    }
    if (mode === 0x02000000 || mode === X86_STACK_IND) {
      // Frameless: the stack size in the encoding (in words, the return address included),
      // or, too large for it, the `sub` immediate in the code plus the encoding's adjustment
      // in words (the pushes and the return address), as libunwind computes it.
      let size: number;
      if (mode === 0x02000000) size = ((encoding >>> 16) & 0xff) * word;
      else {
        if (subImmediate === null) return null;
        size = subImmediate + ((encoding >>> 13) & 7) * word;
      }
      const count = (encoding >>> 10) & 7;
      if (size < word * (count + 1)) return null;
      const parts = [`.cfa: $${sp} ${size} +`, `.ra: .cfa ${-word} + ^`];
      if (count > 0) {
        const regs = decodePermutation(count, encoding & 0x3ff);
        if (!regs) return null;
        regs.forEach((reg, i) => parts.push(`$${saved[reg]}: .cfa ${-word - word * count + word * i} + ^`));
      }
      return parts.join(' ');
    }
    return mode === 0x04000000 ? 'dwarf' : null;
  }
  if (arch === 'arm64') {
    const pairs = (start: number): string[] => {
      const parts: string[] = [];
      let at = start;
      for (let bit = 0; bit < 5; bit++) {
        if (!(encoding & (1 << bit))) continue;
        parts.push(`$x${19 + 2 * bit}: .cfa ${at} + ^`, `$x${20 + 2 * bit}: .cfa ${at - 8} + ^`);
        at -= 16;
      }
      return parts;
    };
    if (mode === 0x04000000)
      return ['.cfa: $x29 16 +', '.ra: .cfa -8 + ^', '$x29: .cfa -16 + ^', ...pairs(-24)].join(' ');
    if (mode === 0x02000000) {
      // Frameless leaf: the stack size in 16-byte units, the return address still in x30.
      const size = ((encoding >>> 12) & 0xfff) * 16;
      return [`.cfa: $sp ${size} +`, '.ra: $x30', ...pairs(-8)].join(' ');
    }
    return mode === 0x03000000 ? 'dwarf' : null;
  }
  return null;
}

interface FirstLevel {
  functionOffset: number;
  pageOffset: number;
}

/** One function's entry: where it starts (module-relative) and its encoding. */
interface Entry {
  start: number;
  encoding: number;
}

/** A second-level page: its entry count, entry k's function start, and its encoding (null when the page lies). */
interface Page {
  count: number;
  startAt(k: number): number;
  encodingAt(k: number): number | null;
}

/** Functions whose stack size is read from their code, at most (real images have a few hundred). */
const MAX_STACK_IND_SITES = 1 << 16;
/** Entries looked through for them, at most (the largest images have about a million functions; a lying section repeating one page stops here). */
const MAX_ENUMERATED_ENTRIES = 1 << 20;

/** An `__unwind_info` read: its first-level index and, per page, its entries. */
class UnwindSection {
  private constructor(
    private readonly bytes: Uint8Array,
    private readonly common: number[],
    readonly index: FirstLevel[],
  ) {}

  static read(bytes: Uint8Array): UnwindSection | null {
    try {
      const r = new ByteReader(bytes);
      if (r.u32() !== 1) return null;
      const commonOffset = r.u32();
      const commonCount = r.u32();
      r.skip(8); // personalities
      const indexOffset = r.u32();
      const indexCount = r.u32();
      if (commonCount > MAX_PAGE_ENTRIES || indexCount > MAX_PAGES) return null;
      const c = new ByteReader(bytes, commonOffset, Math.min(bytes.byteLength, commonOffset + commonCount * 4));
      const common = Array.from({ length: commonCount }, () => c.u32());
      const x = new ByteReader(bytes, indexOffset, Math.min(bytes.byteLength, indexOffset + indexCount * 12));
      const index = Array.from({ length: indexCount }, () => {
        const functionOffset = x.u32();
        const pageOffset = x.u32();
        x.u32(); // LSDA index
        return { functionOffset, pageOffset };
      });
      return new UnwindSection(bytes, common, index);
    } catch (err) {
      if (err instanceof BadNativeFile) return null;
      throw err;
    }
  }

  /** The second-level page a first-level entry points at (null: neither kind). */
  private page(entry: FirstLevel): Page | null {
    const bytes = this.bytes;
    const r = new ByteReader(bytes, entry.pageOffset);
    const kind = r.u32();
    const entriesOffset = r.u16();
    const count = r.u16();
    if (count > MAX_PAGE_ENTRIES) return null;
    if (kind === REGULAR_PAGE) {
      const base = entry.pageOffset + entriesOffset;
      const e = new ByteReader(bytes, base, base + count * 8);
      return {
        count,
        startAt: (k) => {
          e.seek(base + k * 8);
          return e.u32();
        },
        encodingAt: (k) => {
          e.seek(base + k * 8 + 4);
          return e.u32();
        },
      };
    }
    if (kind === COMPRESSED_PAGE) {
      const encodingsOffset = r.u16();
      const encodingsCount = r.u16();
      const base = entry.pageOffset + entriesOffset;
      const e = new ByteReader(bytes, base, base + count * 4);
      const common = this.common;
      return {
        count,
        startAt: (k) => {
          e.seek(base + k * 4);
          return entry.functionOffset + (e.u32() & 0xffffff);
        },
        encodingAt: (k) => {
          e.seek(base + k * 4);
          const i = e.u32() >>> 24;
          if (i < common.length) return common[i];
          if (i - common.length >= encodingsCount) return null;
          return new ByteReader(bytes, entry.pageOffset + encodingsOffset + (i - common.length) * 4).u32();
        },
      };
    }
    return null;
  }

  /** The entry of the function covering `rel` (null outside the covered range, or when the section lies). */
  entryAt(rel: number): Entry | null {
    const index = this.index;
    // The last first-level entry is a sentinel: the end of the covered range.
    let lo = 0;
    let hi = index.length - 2;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (index[mid].functionOffset <= rel) {
        found = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    if (found < 0 || rel >= index[found + 1].functionOffset) return null;
    try {
      const page = this.page(index[found]);
      if (!page) return null;
      lo = 0;
      hi = page.count - 1;
      let k = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        if (page.startAt(mid) <= rel) {
          k = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (k < 0) return null;
      const encoding = page.encodingAt(k);
      return encoding === null ? null : { start: page.startAt(k), encoding };
    } catch (err) {
      if (err instanceof BadNativeFile) return null;
      throw err;
    }
  }

  /** Every entry in order, at most `limit` of them (a lying section stops early). */
  *entries(limit: number): Generator<Entry> {
    let n = 0;
    for (let i = 0; i + 1 < this.index.length; i++) {
      let page: ReturnType<UnwindSection['page']>;
      try {
        page = this.page(this.index[i]);
      } catch (err) {
        if (err instanceof BadNativeFile) continue;
        throw err;
      }
      if (!page) continue;
      for (let k = 0; k < page.count; k++) {
        if (n++ >= limit) return;
        let e: Entry | null;
        try {
          const encoding = page.encodingAt(k);
          e = encoding === null ? null : { start: page.startAt(k), encoding };
        } catch (err) {
          if (err instanceof BadNativeFile) break;
          throw err;
        }
        if (e) yield e;
      }
    }
  }
}

/**
 * Module-relative addresses of the `sub` immediates the image's STACK_IND functions take
 * their stack size from (what the caller reads from the executable's code for
 * compactUnwindInfo), at most MAX_STACK_IND_SITES.
 */
export function stackSizeSites(bytes: Uint8Array, arch: string): number[] {
  const section = X86_FAMILY[arch] ? UnwindSection.read(bytes) : null;
  if (!section) return [];
  const sites = new Set<number>();
  for (const e of section.entries(MAX_ENUMERATED_ENTRIES)) {
    const offset = stackSizeImmediateOffset(e.encoding, arch);
    if (offset >= 0) sites.add(e.start + offset);
    if (sites.size >= MAX_STACK_IND_SITES) break;
  }
  return [...sites];
}

/**
 * The unwind information of an image's `__unwind_info` (`bytes`), with its DWARF CFI
 * (`dwarf`, the image's `__eh_frame`) for the functions whose encoding points there, and
 * the 32-bit words of its code at stackSizeSites (`immediates`, module-relative address →
 * value) for the functions whose stack size lies there.
 * Addresses are relative to the image's load address (its Mach header), as the walker asks.
 */
export function compactUnwindInfo(
  bytes: Uint8Array,
  arch: string,
  dwarf: ModuleUnwindInfo | null,
  immediates: ReadonlyMap<number, number> = new Map(),
): ModuleUnwindInfo | null {
  if (!X86_FAMILY[arch] && arch !== 'arm64') return null;
  const section = UnwindSection.read(bytes);
  if (!section) return null;
  return {
    cfiAt(rel) {
      const entry = section.entryAt(rel);
      if (!entry) return null;
      const offset = stackSizeImmediateOffset(entry.encoding, arch);
      const rules = compactEncodingRules(
        entry.encoding,
        arch,
        offset >= 0 ? (immediates.get(entry.start + offset) ?? null) : null,
      );
      return rules === 'dwarf' ? (dwarf?.cfiAt(rel) ?? null) : rules;
    },
  };
}

/** Index of the last of the ascending `sections` starting at or below `addr`, or -1. */
function lastAtOrBelow(sections: readonly { addr: number }[], addr: number): number {
  let lo = 0;
  let hi = sections.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (sections[mid].addr <= addr) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found;
}

/**
 * The 32-bit words of an image's code at its stackSizeSites (module-relative address →
 * value), read from the uploaded executable by ranges in ascending order: a few hundred
 * 4-byte reads in a large image, never its whole __TEXT. Sites outside a __TEXT section
 * with bytes are left out (their functions get no rules).
 */
export async function readStackSizeImmediates(
  source: ByteRangeSource,
  slice: MachSlice,
  unwindBytes: Uint8Array,
): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  const text = slice.sections
    .filter((x) => x.segment === '__TEXT' && x.fileOffset >= 0 && x.size > 0)
    .sort((a, b) => a.addr - b.addr);
  for (const rel of stackSizeSites(unwindBytes, slice.arch).sort((a, b) => a - b)) {
    const addr = slice.textVmaddr + rel;
    const s = text[lastAtOrBelow(text, addr)];
    if (!s || addr + 4 > s.addr + s.size) continue;
    const word = await source.read(s.fileOffset + (addr - s.addr), 4);
    if (word.byteLength === 4) out.set(rel, new DataView(word.buffer, word.byteOffset, 4).getUint32(0, true));
  }
  return out;
}
