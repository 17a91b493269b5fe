// DWARF call frame information of an uploaded ELF file for the stack walker: `.eh_frame`
// (as every Linux and Android toolchain writes it) and `.debug_frame` (the same CIE/FDE
// records in the debug sections: a CIE id of all ones, FDEs pointing at their CIE by
// section offset, addresses of the CIE's address size). The rules in force at an address
// are written as Breakpad STACK CFI rules (`.cfa: $rsp 16 + .ra: .cfa -8 + ^ $rbp: .cfa -16 + ^`)
// so one evaluator serves both sources; rules given as DWARF expressions
// (DW_CFA_def_cfa_expression, DW_CFA_expression, DW_CFA_val_expression) are translated
// into the same postfix form (docs/api.md "Minidumps"), the common operations only, and an
// address whose rules use others has none, so the walker falls back to frame pointers.
// CIEs and FDEs are read with every length and pointer checked against the section.
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
  addrSize: number;
  instructions: [number, number];
  hasAugmentationData: boolean;
}

interface Fde {
  start: number;
  end: number;
  cie: Cie;
  instructions: [number, number];
}

/** The two sections' differences: how a CIE is told from an FDE and how an FDE names its CIE. */
export type CfiSection = 'eh_frame' | 'debug_frame';

/** DWARF register numbers → the walker's register names. */
const REGISTERS: Record<string, string[]> = {
  x86_64: [
    'rax',
    'rdx',
    'rcx',
    'rbx',
    'rsi',
    'rdi',
    'rbp',
    'rsp',
    'r8',
    'r9',
    'r10',
    'r11',
    'r12',
    'r13',
    'r14',
    'r15',
    'rip',
  ],
  arm64: [...Array.from({ length: 31 }, (_, i) => `x${i}`), 'sp'],
  x86: ['eax', 'ecx', 'edx', 'ebx', 'esp', 'ebp', 'esi', 'edi', 'eip'],
  arm: [...Array.from({ length: 13 }, (_, i) => `r${i}`), 'sp', 'lr', 'pc'],
};

function readPointer(
  r: ByteReader,
  encoding: number,
  sectionAddr: number,
  sectionStart: number,
  addrSize: number,
): number {
  if (encoding === 0xff) return 0;
  const fieldAddr = sectionAddr + (r.pos - sectionStart);
  let v: number;
  switch (encoding & 0x0f) {
    case 0x00:
      v = r.uN(addrSize);
      break;
    case 0x01:
      v = r.uleb();
      break;
    case 0x02:
      v = r.u16();
      break;
    case 0x03:
      v = r.u32();
      break;
    case 0x04:
      v = r.u64();
      break;
    case 0x09:
      v = r.sleb();
      break;
    case 0x0a:
      v = (r.u16() << 16) >> 16;
      break;
    case 0x0b:
      v = r.u32() | 0;
      break;
    case 0x0c:
      v = r.u64();
      break;
    default:
      throw new BadNativeFile(`pointer encoding 0x${encoding.toString(16)}`);
  }
  if ((encoding & 0x70) === 0x10) v += fieldAddr;
  return v;
}

/** The longest DWARF expression translated (real CFI expressions are a few operations). */
const MAX_EXPRESSION_BYTES = 256;

/** Operations that map onto one postfix token of the walker's evaluator (src/minidump/unwind.ts). */
const EXPRESSION_TOKENS = new Map<number, string>([
  [0x06, '^'],
  [0x12, 'dup'],
  [0x13, 'drop'],
  [0x14, 'over'],
  [0x16, 'swap'],
  [0x1a, '&'],
  [0x1b, '/'],
  [0x1c, '-'],
  [0x1d, '%'],
  [0x1e, '*'],
  [0x1f, 'neg'],
  [0x21, '|'],
  [0x22, '+'],
  [0x24, '<<'],
  [0x25, '>>'],
  [0x29, '=='],
  [0x2a, '>='],
  [0x2b, '>'],
  [0x2c, '<='],
  [0x2d, '<'],
  [0x2e, '!='],
]);

/**
 * A DWARF expression (`bytes[start, end)`) as postfix tokens, or null when it uses an
 * operation beyond the common subset (branches, register locations, TLS, typed stack):
 * the walk then does not use the rule. No branches means the evaluation is one pass.
 */
export function dwarfExpressionToPostfix(
  bytes: Uint8Array,
  start: number,
  end: number,
  names: string[],
  addrSize: number,
): string | null {
  if (end - start > MAX_EXPRESSION_BYTES) return null;
  const r = new ByteReader(bytes, start, end);
  const out: string[] = [];
  const reg = (n: number): string | null => (n < names.length ? `$${names[n]}` : null);
  while (r.pos < r.end) {
    const op = r.u8();
    const token = EXPRESSION_TOKENS.get(op);
    if (token !== undefined) {
      out.push(token);
      continue;
    }
    if (op >= 0x30 && op <= 0x4f) {
      out.push(String(op - 0x30));
      continue;
    }
    if ((op >= 0x70 && op <= 0x8f) || op === 0x92) {
      const name = reg(op === 0x92 ? r.uleb() : op - 0x70);
      const offset = r.sleb();
      if (!name) return null;
      out.push(name, String(offset), '+');
      continue;
    }
    switch (op) {
      case 0x03:
        out.push(String(r.uN(addrSize)));
        break;
      case 0x08:
        out.push(String(r.u8()));
        break;
      case 0x09:
        out.push(String(r.i8()));
        break;
      case 0x0a:
        out.push(String(r.u16()));
        break;
      case 0x0b:
        out.push(String((r.u16() << 16) >> 16));
        break;
      case 0x0c:
        out.push(String(r.u32()));
        break;
      case 0x0d:
        out.push(String(r.u32() | 0));
        break;
      case 0x0e:
      case 0x0f:
        out.push(String(r.u64()));
        break;
      case 0x10:
        out.push(String(r.uleb()));
        break;
      case 0x11:
        out.push(String(r.sleb()));
        break;
      case 0x23:
        out.push(String(r.uleb()), '+');
        break;
      case 0x94:
        if (r.u8() !== addrSize) return null;
        out.push('^');
        break;
      case 0x96:
        break; // DW_OP_nop
      default:
        return null;
    }
  }
  return out.length > 0 ? out.join(' ') : null;
}

/** How a register is recovered: postfix rule text, UNDEFINED (no value: the end of the stack), or null (a rule the walker cannot use). */
type Rule = string | null;
const UNDEFINED = '';

interface RuleSet {
  cfaReg: number;
  cfaOffset: number;
  /** The CFA as postfix text when a DWARF expression gives it (null: one the walker cannot use). */
  cfaExpr: string | null | undefined;
  saved: Map<number, Rule>;
}

/** The `.eh_frame` of one ELF file: `bytes` the section, `addr` its address, `arch` the walker's. */
export function ehFrameUnwindInfo(
  bytes: Uint8Array,
  addr: number,
  arch: string,
  is64: boolean,
  loadAddress: number,
): ModuleUnwindInfo | null {
  return dwarfCfiUnwindInfo(bytes, addr, arch, is64, loadAddress, 'eh_frame');
}

/** The `.eh_frame` or `.debug_frame` of one ELF file: `bytes` the section, `addr` its address, `arch` the walker's. */
export function dwarfCfiUnwindInfo(
  bytes: Uint8Array,
  addr: number,
  arch: string,
  is64: boolean,
  loadAddress: number,
  section: CfiSection,
): ModuleUnwindInfo | null {
  const names = REGISTERS[arch];
  if (!names) return null;
  const defaultAddrSize = is64 ? 8 : 4;
  const eh = section === 'eh_frame';
  const cies = new Map<number, Cie>();
  const fdes: Fde[] = [];
  let pos = 0;
  for (let n = 0; pos + 4 <= bytes.byteLength && n < MAX_ENTRIES; n++) {
    const r = new ByteReader(bytes, pos, bytes.byteLength);
    let length = r.u32();
    let dwarf64 = false;
    if (length === 0) {
      // .eh_frame's terminator; in .debug_frame, padding between records.
      if (eh) break;
      pos += 4;
      continue;
    }
    if (length === 0xffffffff) {
      if (r.remaining() < 8) break;
      length = r.u64();
      dwarf64 = true;
    }
    const bodyStart = r.pos;
    const end = bodyStart + length;
    if (end > bytes.byteLength) break;
    r.end = end;
    try {
      const id = dwarf64 ? r.u64() : r.u32();
      const isCie = eh ? id === 0 : id === (dwarf64 ? 2 ** 64 : 0xffffffff);
      if (isCie) {
        const version = r.u8();
        const augmentation = r.cstring();
        let addrSize = defaultAddrSize;
        if (augmentation.includes('eh')) r.skip(addrSize);
        if (!eh && version >= 4) {
          addrSize = r.u8();
          r.u8(); // segment selector size: 0 on every flat-memory target
          if (addrSize !== 4 && addrSize !== 8) addrSize = defaultAddrSize;
        }
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
        cies.set(pos, {
          codeAlign,
          dataAlign,
          ra,
          encoding,
          addrSize,
          instructions: [r.pos, end],
          hasAugmentationData,
        });
      } else {
        // .eh_frame: the distance back from this field to the CIE; .debug_frame: the CIE's section offset.
        const cie = cies.get(eh ? bodyStart - id : id);
        if (cie) {
          const start = readPointer(r, cie.encoding, addr, 0, cie.addrSize);
          const range = readPointer(r, cie.encoding & 0x0f, addr, 0, cie.addrSize);
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
  const name = (reg: number): string | null => (reg < names.length ? `$${names[reg]}` : null);

  /** Runs CIE then FDE instructions up to `target`; null when the instructions are beyond the walker. */
  const rulesAt = (fde: Fde, target: number): RuleSet | null => {
    const state: RuleSet = { cfaReg: -1, cfaOffset: 0, cfaExpr: undefined, saved: new Map() };
    let initial: Map<number, Rule> | null = null;
    const stack: RuleSet[] = [];
    let budget = MAX_INSTRUCTIONS;
    let loc = fde.start;
    const { addrSize } = fde.cie;
    // DW_CFA_restore: back to what the CIE's instructions said.
    const restore = (reg: number): void => {
      if (initial?.has(reg)) state.saved.set(reg, initial.get(reg)!);
      else state.saved.delete(reg);
    };
    const offsetRule = (offset: number): string => `.cfa ${offset} + ^`;
    const expression = (r: ByteReader): string | null => {
      const length = r.uleb();
      r.need(length);
      const at = r.pos;
      r.skip(length);
      return dwarfExpressionToPostfix(bytes, at, at + length, names, addrSize);
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
        if (high === 0x80) {
          state.saved.set(low, offsetRule(r.uleb() * dataAlign));
          continue;
        }
        if (high === 0xc0) {
          restore(low);
          continue;
        }
        switch (op) {
          case 0x00:
            break;
          case 0x01:
            loc = readPointer(r, fde.cie.encoding, addr, 0, addrSize);
            if (!isCie && loc > target) return true;
            break;
          case 0x02:
            loc += r.u8() * codeAlign;
            if (!isCie && loc > target) return true;
            break;
          case 0x03:
            loc += r.u16() * codeAlign;
            if (!isCie && loc > target) return true;
            break;
          case 0x04:
            loc += r.u32() * codeAlign;
            if (!isCie && loc > target) return true;
            break;
          case 0x05: {
            const reg = r.uleb();
            state.saved.set(reg, offsetRule(r.uleb() * dataAlign));
            break;
          }
          case 0x06:
            restore(r.uleb());
            break;
          case 0x07:
            state.saved.set(r.uleb(), UNDEFINED);
            break; // for the RA, the end of the stack
          case 0x08:
            state.saved.delete(r.uleb());
            break;
          case 0x09: {
            const reg = r.uleb();
            state.saved.set(reg, name(r.uleb()));
            break;
          }
          case 0x0a:
            stack.push({
              cfaReg: state.cfaReg,
              cfaOffset: state.cfaOffset,
              cfaExpr: state.cfaExpr,
              saved: new Map(state.saved),
            });
            break;
          case 0x0b: {
            const top = stack.pop();
            if (top) Object.assign(state, top);
            break;
          }
          case 0x0c:
            state.cfaReg = r.uleb();
            state.cfaOffset = r.uleb();
            state.cfaExpr = undefined;
            break;
          case 0x0d:
            state.cfaReg = r.uleb();
            state.cfaExpr = undefined;
            break;
          case 0x0e:
            state.cfaOffset = r.uleb();
            break;
          case 0x0f:
            state.cfaExpr = expression(r);
            break;
          case 0x10: {
            const reg = r.uleb();
            const e = expression(r);
            state.saved.set(reg, e === null ? null : `.cfa ${e} ^`);
            break;
          }
          case 0x11: {
            const reg = r.uleb();
            state.saved.set(reg, offsetRule(r.sleb() * dataAlign));
            break;
          }
          case 0x12:
            state.cfaReg = r.uleb();
            state.cfaOffset = r.sleb() * dataAlign;
            state.cfaExpr = undefined;
            break;
          case 0x13:
            state.cfaOffset = r.sleb() * dataAlign;
            break;
          case 0x14: {
            const reg = r.uleb();
            state.saved.set(reg, `.cfa ${r.uleb() * dataAlign} +`);
            break;
          }
          case 0x15: {
            const reg = r.uleb();
            state.saved.set(reg, `.cfa ${r.sleb() * dataAlign} +`);
            break;
          }
          case 0x16: {
            const reg = r.uleb();
            const e = expression(r);
            state.saved.set(reg, e === null ? null : `.cfa ${e}`);
            break;
          }
          case 0x2e:
            r.uleb();
            break;
          case 0x2f: {
            const reg = r.uleb();
            state.saved.set(reg, offsetRule(-r.uleb() * dataAlign));
            break;
          }
          default:
            return false;
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
      if (!rules) return null;
      let cfa: string;
      if (rules.cfaExpr !== undefined) {
        if (rules.cfaExpr === null) return null;
        cfa = rules.cfaExpr;
      } else {
        const reg = rules.cfaReg >= 0 ? name(rules.cfaReg) : null;
        if (!reg) return null;
        cfa = `${reg} ${rules.cfaOffset} +`;
      }
      const parts = [`.cfa: ${cfa}`];
      const ra = rules.saved.get(fde.cie.ra);
      if (ra === null) return null;
      // A return address kept in its register (arm64's x30 in a leaf function) stays there;
      // an undefined one (a thread's entry point) ends the walk with a zero return address.
      const raReg = name(fde.cie.ra);
      if (ra === undefined && !raReg) return null;
      parts.push(ra === undefined ? `.ra: ${raReg}` : ra === UNDEFINED ? '.ra: 0' : `.ra: ${ra}`);
      for (const [reg, rule] of rules.saved) {
        const regName = name(reg);
        if (reg === fde.cie.ra || !regName || rule === null || rule === UNDEFINED) continue;
        parts.push(`${regName}: ${rule}`);
      }
      return parts.join(' ');
    },
  };
}
