// DWARF call frame information of an uploaded ELF file (`.eh_frame`, as every Linux and
// Android toolchain writes it) for the stack walker: the rules in force at an address,
// written as Breakpad STACK CFI rules (`.cfa: $rsp 16 + .ra: .cfa -8 + ^ $rbp: .cfa -16 + ^`)
// so one evaluator serves both sources. CIEs and FDEs are read with every length and
// pointer checked against the section; instructions the walker cannot use (DWARF
// expressions) make the address have no rules, so the walker falls back to frame pointers.

import { BadNativeFile, ByteReader } from '../symbols/native/bytes.js';
import type { ModuleUnwindInfo } from './unwind.js';

/** Entries of one `.eh_frame` read at most (real files have one per function). */
const MAX_ENTRIES = 4_000_000;
/** CFA instructions run for one address at most. */
const MAX_INSTRUCTIONS = 100_000;

interface Cie {
  codeAlign: number;
  dataAlign: number;
  ra: number;
  encoding: number;
  instructions: [number, number];
  hasAugmentationData: boolean;
}

interface Fde {
  start: number;
  end: number;
  cie: Cie;
  instructions: [number, number];
}

/** DWARF register numbers → the walker's register names. */
const REGISTERS: Record<string, string[]> = {
  x86_64: ['rax', 'rdx', 'rcx', 'rbx', 'rsi', 'rdi', 'rbp', 'rsp', 'r8', 'r9', 'r10', 'r11', 'r12', 'r13', 'r14', 'r15', 'rip'],
  arm64: [...Array.from({ length: 31 }, (_, i) => `x${i}`), 'sp'],
  x86: ['eax', 'ecx', 'edx', 'ebx', 'esp', 'ebp', 'esi', 'edi', 'eip'],
  arm: [...Array.from({ length: 13 }, (_, i) => `r${i}`), 'sp', 'lr', 'pc'],
};

function readPointer(r: ByteReader, encoding: number, sectionAddr: number, sectionStart: number, addrSize: number): number {
  if (encoding === 0xff) return 0;
  const fieldAddr = sectionAddr + (r.pos - sectionStart);
  let v: number;
  switch (encoding & 0x0f) {
    case 0x00: v = r.uN(addrSize); break;
    case 0x01: v = r.uleb(); break;
    case 0x02: v = r.u16(); break;
    case 0x03: v = r.u32(); break;
    case 0x04: v = r.u64(); break;
    case 0x09: v = r.sleb(); break;
    case 0x0a: v = (r.u16() << 16) >> 16; break;
    case 0x0b: v = r.u32() | 0; break;
    case 0x0c: v = r.u64(); break;
    default: throw new BadNativeFile(`pointer encoding 0x${encoding.toString(16)}`);
  }
  if ((encoding & 0x70) === 0x10) v += fieldAddr;
  return v;
}

interface RuleSet {
  cfaReg: number;
  cfaOffset: number;
  /** register → offset from the CFA where it is saved (`null`: a rule the walker cannot use; NaN: undefined). */
  saved: Map<number, number | null>;
}

/** The `.eh_frame` of one ELF file: `bytes` the section, `addr` its address, `arch` the walker's. */
export function ehFrameUnwindInfo(bytes: Uint8Array, addr: number, arch: string, is64: boolean, loadAddress: number): ModuleUnwindInfo | null {
  const names = REGISTERS[arch];
  if (!names) return null;
  const addrSize = is64 ? 8 : 4;
  const cies = new Map<number, Cie>();
  const fdes: Fde[] = [];
  let pos = 0;
  for (let n = 0; pos + 4 <= bytes.byteLength && n < MAX_ENTRIES; n++) {
    const r = new ByteReader(bytes, pos, bytes.byteLength);
    let length = r.u32();
    if (length === 0) break;
    if (length === 0xffffffff) length = r.u64();
    const bodyStart = r.pos;
    const end = bodyStart + length;
    if (end > bytes.byteLength) break;
    r.end = end;
    try {
      const id = r.u32();
      if (id === 0) {
        const version = r.u8();
        const augmentation = r.cstring();
        if (augmentation.includes('eh')) r.skip(addrSize);
        const codeAlign = r.uleb();
        const dataAlign = r.sleb();
        const ra = version === 1 ? r.u8() : r.uleb();
        let encoding = 0;
        const hasAugmentationData = augmentation.startsWith('z');
        if (hasAugmentationData) {
          const augLength = r.uleb();
          const augEnd = r.pos + augLength;
          for (const c of augmentation.slice(1)) {
            if (c === 'R') encoding = r.u8();
            else if (c === 'P') readPointer(r, r.u8() & 0x7f, addr, 0, addrSize);
            else if (c === 'L') r.u8();
            else if (c !== 'S' && c !== 'B') break;
          }
          r.seek(augEnd);
        }
        cies.set(pos, { codeAlign, dataAlign, ra, encoding, instructions: [r.pos, end], hasAugmentationData });
      } else {
        const cie = cies.get(bodyStart - id);
        if (cie) {
          const start = readPointer(r, cie.encoding, addr, 0, addrSize);
          const range = readPointer(r, cie.encoding & 0x0f, addr, 0, addrSize);
          if (cie.hasAugmentationData) r.skip(r.uleb());
          if (range > 0) fdes.push({ start, end: start + range, cie, instructions: [r.pos, end] });
        }
      }
    } catch (err) {
      if (!(err instanceof BadNativeFile)) throw err;
    }
    pos = end;
  }
  fdes.sort((a, b) => a.start - b.start);
  const starts = Float64Array.from(fdes, (f) => f.start);

  /** Runs CIE then FDE instructions up to `target`; null when a rule is beyond the walker. */
  const rulesAt = (fde: Fde, target: number): RuleSet | null => {
    const state: RuleSet = { cfaReg: -1, cfaOffset: 0, saved: new Map() };
    let initial: Map<number, number | null> | null = null;
    const stack: RuleSet[] = [];
    let budget = MAX_INSTRUCTIONS;
    let loc = fde.start;
    // DW_CFA_restore: back to what the CIE's instructions said.
    const restore = (reg: number): void => {
      if (initial?.has(reg)) state.saved.set(reg, initial.get(reg)!);
      else state.saved.delete(reg);
    };
    const run = (range: [number, number], isCie: boolean): boolean => {
      const r = new ByteReader(bytes, range[0], range[1]);
      const { codeAlign, dataAlign } = fde.cie;
      while (r.pos < r.end) {
        if (--budget < 0) return false;
        const op = r.u8();
        const high = op & 0xc0;
        const low = op & 0x3f;
        if (high === 0x40) {
          loc += low * codeAlign;
          if (!isCie && loc > target) return true;
          continue;
        }
        if (high === 0x80) { state.saved.set(low, r.uleb() * dataAlign); continue; }
        if (high === 0xc0) {
          restore(low);
          continue;
        }
        switch (op) {
          case 0x00: break;
          case 0x01: loc = readPointer(r, fde.cie.encoding, addr, 0, addrSize); if (!isCie && loc > target) return true; break;
          case 0x02: loc += r.u8() * codeAlign; if (!isCie && loc > target) return true; break;
          case 0x03: loc += r.u16() * codeAlign; if (!isCie && loc > target) return true; break;
          case 0x04: loc += r.u32() * codeAlign; if (!isCie && loc > target) return true; break;
          case 0x05: { const reg = r.uleb(); state.saved.set(reg, r.uleb() * dataAlign); break; }
          case 0x06: restore(r.uleb()); break;
          case 0x07: state.saved.set(r.uleb(), Number.NaN); break; // undefined: for the RA, the end of the stack
          case 0x08: state.saved.delete(r.uleb()); break;
          case 0x09: { const reg = r.uleb(); r.uleb(); state.saved.set(reg, null); break; }
          case 0x0a: stack.push({ cfaReg: state.cfaReg, cfaOffset: state.cfaOffset, saved: new Map(state.saved) }); break;
          case 0x0b: { const top = stack.pop(); if (top) { state.cfaReg = top.cfaReg; state.cfaOffset = top.cfaOffset; state.saved = top.saved; } break; }
          case 0x0c: state.cfaReg = r.uleb(); state.cfaOffset = r.uleb(); break;
          case 0x0d: state.cfaReg = r.uleb(); break;
          case 0x0e: state.cfaOffset = r.uleb(); break;
          case 0x0f: return false; // CFA from a DWARF expression
          case 0x10: { const reg = r.uleb(); r.skip(r.uleb()); state.saved.set(reg, null); break; }
          case 0x11: { const reg = r.uleb(); state.saved.set(reg, r.sleb() * dataAlign); break; }
          case 0x12: state.cfaReg = r.uleb(); state.cfaOffset = r.sleb() * dataAlign; break;
          case 0x13: state.cfaOffset = r.sleb() * dataAlign; break;
          case 0x14: case 0x15: case 0x16: { const reg = r.uleb(); if (op === 0x16) r.skip(r.uleb()); else r.uleb(); state.saved.set(reg, null); break; }
          case 0x2e: r.uleb(); break;
          case 0x2f: { const reg = r.uleb(); state.saved.set(reg, -r.uleb() * dataAlign); break; }
          default: return false;
        }
      }
      return true;
    };
    if (!run(fde.cie.instructions, true)) return null;
    initial = new Map(state.saved);
    loc = fde.start;
    if (!run(fde.instructions, false)) return null;
    return state;
  };

  return {
    cfiAt(rel) {
      const target = rel + loadAddress;
      let lo = 0;
      let hi = starts.length - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        if (starts[mid] <= target) {
          found = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (found < 0 || target >= fdes[found].end) return null;
      const fde = fdes[found];
      let rules: RuleSet | null;
      try {
        rules = rulesAt(fde, target);
      } catch (err) {
        if (err instanceof BadNativeFile) return null;
        throw err;
      }
      if (!rules || rules.cfaReg < 0 || rules.cfaReg >= names.length) return null;
      const name = (reg: number) => `$${names[reg]}`;
      const parts = [`.cfa: ${name(rules.cfaReg)} ${rules.cfaOffset} +`];
      const ra = rules.saved.get(fde.cie.ra);
      if (ra === null) return null;
      // A return address kept in its register (arm64's x30 in a leaf function) stays there;
      // an undefined one (a thread's entry point) ends the walk with a zero return address.
      parts.push(ra === undefined ? `.ra: ${name(fde.cie.ra)}` : Number.isNaN(ra) ? '.ra: 0' : `.ra: .cfa ${ra} + ^`);
      for (const [reg, offset] of rules.saved) {
        if (reg === fde.cie.ra || reg >= names.length || offset === null || Number.isNaN(offset)) continue;
        parts.push(`${name(reg)}: .cfa ${offset} + ^`);
      }
      return parts.join(' ');
    },
  };
}
