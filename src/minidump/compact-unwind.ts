// Mach-O compact unwind (`__TEXT,__unwind_info`, as ld64 writes it into every macOS and iOS
// executable and library) for the stack walker (docs/api.md "Minidumps"): the first-level
// index of function ranges, regular and compressed second-level pages, and the 32-bit
// encoding of each function turned into Breakpad STACK CFI rule text, so the walker's one
// evaluator runs it. x86_64: RBP frames (saved registers at fixed offsets below %rbp) and
// frameless functions with an immediate stack size; arm64: frames (x29/x30 pairs, x19–x28
// saved below) and frameless leaves (return address still in x30). An encoding that says
// "see DWARF" is answered by the image's `__eh_frame` FDE; others (a stack size read from
// the code, no unwind info) leave the address without rules, so the walker falls back.
// Every offset and count is checked against the section.

import { BadNativeFile, ByteReader } from '../symbols/native/bytes.js';
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

/** The rule text of one encoding, 'dwarf' when the image's DWARF CFI has it, or null. */
export function compactEncodingRules(encoding: number, arch: string): string | 'dwarf' | null {
  const mode = encoding & 0x0f000000;
  if (arch === 'x86_64') {
    if (mode === 0x01000000) {
      // RBP frame: push %rbp; mov %rsp, %rbp; the saved registers `offset` words below %rbp.
      const offset = (encoding >>> 16) & 0xff;
      const parts = ['.cfa: $rbp 16 +', '.ra: .cfa -8 + ^', '$rbp: .cfa -16 + ^'];
      for (let i = 0; i < 5; i++) {
        const reg = (encoding >>> (3 * i)) & 7;
        if (reg === 0) continue;
        if (reg > 6) return null;
        parts.push(`$${X86_64_SAVED[reg]}: .cfa ${-16 - offset * 8 + i * 8} + ^`);
      }
      return parts.join(' ');
    }
    if (mode === 0x02000000) {
      // Frameless with the stack size in the encoding (in words, the return address included).
      const size = ((encoding >>> 16) & 0xff) * 8;
      const count = (encoding >>> 10) & 7;
      const parts = [`.cfa: $rsp ${size} +`, '.ra: .cfa -8 + ^'];
      if (count > 0) {
        const regs = decodePermutation(count, encoding & 0x3ff);
        if (!regs) return null;
        regs.forEach((reg, i) => parts.push(`$${X86_64_SAVED[reg]}: .cfa ${-8 - 8 * count + 8 * i} + ^`));
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

/**
 * The unwind information of an image's `__unwind_info` (`bytes`), with its DWARF CFI
 * (`dwarf`, the image's `__eh_frame`) for the functions whose encoding points there.
 * Addresses are relative to the image's load address (its Mach header), as the walker asks.
 */
export function compactUnwindInfo(
  bytes: Uint8Array,
  arch: string,
  dwarf: ModuleUnwindInfo | null,
): ModuleUnwindInfo | null {
  if (arch !== 'x86_64' && arch !== 'arm64') return null;
  let common: number[];
  let index: FirstLevel[];
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
    common = Array.from({ length: commonCount }, () => c.u32());
    const x = new ByteReader(bytes, indexOffset, Math.min(bytes.byteLength, indexOffset + indexCount * 12));
    index = Array.from({ length: indexCount }, () => {
      const functionOffset = x.u32();
      const pageOffset = x.u32();
      x.u32(); // LSDA index
      return { functionOffset, pageOffset };
    });
  } catch (err) {
    if (err instanceof BadNativeFile) return null;
    throw err;
  }

  /** The encoding of the function covering `rel` inside the second-level page of `entry`, or null. */
  const encodingIn = (entry: FirstLevel, rel: number): number | null => {
    const r = new ByteReader(bytes, entry.pageOffset);
    const kind = r.u32();
    const entriesOffset = r.u16();
    const count = r.u16();
    if (count > MAX_PAGE_ENTRIES) return null;
    if (kind === REGULAR_PAGE) {
      const e = new ByteReader(bytes, entry.pageOffset + entriesOffset, entry.pageOffset + entriesOffset + count * 8);
      let lo = 0;
      let hi = count - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        e.seek(entry.pageOffset + entriesOffset + mid * 8);
        if (e.u32() <= rel) {
          found = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (found < 0) return null;
      e.seek(entry.pageOffset + entriesOffset + found * 8 + 4);
      return e.u32();
    }
    if (kind === COMPRESSED_PAGE) {
      const encodingsOffset = r.u16();
      const encodingsCount = r.u16();
      const e = new ByteReader(bytes, entry.pageOffset + entriesOffset, entry.pageOffset + entriesOffset + count * 4);
      const target = rel - entry.functionOffset;
      let lo = 0;
      let hi = count - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        e.seek(entry.pageOffset + entriesOffset + mid * 4);
        if ((e.u32() & 0xffffff) <= target) {
          found = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (found < 0) return null;
      e.seek(entry.pageOffset + entriesOffset + found * 4);
      const i = e.u32() >>> 24;
      if (i < common.length) return common[i];
      if (i - common.length >= encodingsCount) return null;
      const p = new ByteReader(bytes, entry.pageOffset + encodingsOffset + (i - common.length) * 4);
      return p.u32();
    }
    return null;
  };

  return {
    cfiAt(rel) {
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
      let encoding: number | null;
      try {
        encoding = encodingIn(index[found], rel);
      } catch (err) {
        if (err instanceof BadNativeFile) return null;
        throw err;
      }
      if (encoding === null) return null;
      const rules = compactEncodingRules(encoding, arch);
      return rules === 'dwarf' ? (dwarf?.cfiAt(rel) ?? null) : rules;
    },
  };
}
