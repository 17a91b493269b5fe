// Stack walking over a minidump's captured memory (docs/api.md "Minidumps"), as Breakpad's
// stackwalker does it: the first frame from the thread's context, then for each caller
// call frame information (Breakpad STACK WIN records for x86 Windows modules, Breakpad STACK
// CFI records of the module's uploaded .sym file, DWARF CFI of its ELF file),
// else the frame pointer chain, else stack scanning for a word that points into a module.
// Each frame says how it was found (`trust`: context, cfi, fp, scan). The work is bounded
// per thread (frames, scanned words, CFI rules evaluated), so a hostile dump or CFI loop
// ends a walk early, never hangs it.

import { moduleAt, readMemory, type CpuArch, type Minidump, type MinidumpModule } from './reader.js';

/** `cfi_scan`: a STACK WIN frame whose return address was found by scanning above `.raSearchStart` (Breakpad's FRAME_TRUST_CFI_SCAN). */
export type Trust = 'context' | 'cfi' | 'cfi_scan' | 'fp' | 'scan';

export interface WalkedFrame {
  /** The frame's instruction address (a return address for callers). */
  pc: number;
  trust: Trust;
  module: MinidumpModule | null;
  /** Registers of the context frame (name → value), as Sentry shows them. */
  registers?: Record<string, number>;
}

/**
 * A STACK WIN record in force at an address (x86 Windows): the program string that gives the
 * caller's registers (for FPO records, the one Breakpad writes for them) and the frame sizes
 * it may name.
 */
export interface WinFrameInfo {
  program: string;
  paramSize: number;
  savedRegSize: number;
  localSize: number;
  /** An FPO record (no program string of its own: `program` is the one Breakpad writes for it). */
  fpo?: boolean;
  /** False for an FPO record of a function that never touches %ebp: no saved %ebp is looked for. */
  recoverEbp?: boolean;
}

/** CFI rules of a module: the rule text in force at a module-relative address, or null. */
export interface ModuleUnwindInfo {
  cfiAt(relative: number): string | null;
  /** The STACK WIN record at a module-relative address (x86 modules with a Breakpad file). */
  winAt?(relative: number): WinFrameInfo | null;
  /** True when the module's symbols name a function at this address (stack scanning's check). */
  knows?(relative: number): boolean;
}

export const MAX_FRAMES = 256;
/**
 * Frames and scanned words one dump's walks may take together: a hostile dump of
 * thousands of threads, each scanning its whole stack, stops here instead of running on.
 */
export const MAX_DUMP_STEPS = 2_000_000;

/** The work left to a dump's walks (shared by its threads). */
export interface WalkBudget {
  steps: number;
}
/** Words scanned for a return address (as the reference minidump_stackwalk scans: 40, four times as many above the context frame). */
const SCAN_WORDS = 40;
const CONTEXT_SCAN_WORDS = 160;

type Registers = Map<string, number>;

interface ArchSpec {
  word: number;
  pc: string;
  sp: string;
  fp: string;
  /** Where the caller's return address is, when the frame pointer chain is followed. */
  fpLayout: { savedFp: number; returnAddress: number; callerSp: number };
  /** The register names of the context, by offset (absent from short contexts). */
  read(context: Uint8Array): Registers | null;
}

function u64(b: Uint8Array, at: number): number {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  return v.getUint32(at + 4, true) * 0x1_0000_0000 + v.getUint32(at, true);
}

function u32(b: Uint8Array, at: number): number {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(at, true);
}

const AMD64_REGS: [string, number][] = [
  ['rax', 0x78],
  ['rcx', 0x80],
  ['rdx', 0x88],
  ['rbx', 0x90],
  ['rsp', 0x98],
  ['rbp', 0xa0],
  ['rsi', 0xa8],
  ['rdi', 0xb0],
  ['r8', 0xb8],
  ['r9', 0xc0],
  ['r10', 0xc8],
  ['r11', 0xd0],
  ['r12', 0xd8],
  ['r13', 0xe0],
  ['r14', 0xe8],
  ['r15', 0xf0],
  ['rip', 0xf8],
];
const X86_REGS: [string, number][] = [
  ['edi', 0x9c],
  ['esi', 0xa0],
  ['ebx', 0xa4],
  ['edx', 0xa8],
  ['ecx', 0xac],
  ['eax', 0xb0],
  ['ebp', 0xb4],
  ['eip', 0xb8],
  ['esp', 0xc4],
];

const ARCHS: Partial<Record<CpuArch, ArchSpec>> = {
  amd64: {
    word: 8,
    pc: 'rip',
    sp: 'rsp',
    fp: 'rbp',
    fpLayout: { savedFp: 0, returnAddress: 8, callerSp: 16 },
    read(c) {
      if (c.byteLength < 0x100) return null;
      return new Map(AMD64_REGS.map(([name, at]) => [name, u64(c, at)]));
    },
  },
  x86: {
    word: 4,
    pc: 'eip',
    sp: 'esp',
    fp: 'ebp',
    fpLayout: { savedFp: 0, returnAddress: 4, callerSp: 8 },
    read(c) {
      if (c.byteLength < 0xc8) return null;
      return new Map(X86_REGS.map(([name, at]) => [name, u32(c, at)]));
    },
  },
  arm64: {
    word: 8,
    pc: 'pc',
    sp: 'sp',
    fp: 'x29',
    fpLayout: { savedFp: 0, returnAddress: 8, callerSp: 16 },
    read(c) {
      if (c.byteLength < 8 + 33 * 8) return null;
      const regs: Registers = new Map();
      for (let i = 0; i < 31; i++) regs.set(`x${i}`, u64(c, 8 + 8 * i));
      regs.set('sp', u64(c, 8 + 31 * 8));
      regs.set('pc', u64(c, 8 + 32 * 8));
      return regs;
    },
  },
  arm: {
    word: 4,
    pc: 'pc',
    sp: 'sp',
    fp: 'r11',
    fpLayout: { savedFp: 0, returnAddress: 4, callerSp: 8 },
    read(c) {
      if (c.byteLength < 4 + 16 * 4) return null;
      const regs: Registers = new Map();
      for (let i = 0; i < 13; i++) regs.set(`r${i}`, u32(c, 4 + 4 * i));
      regs.set('sp', u32(c, 4 + 13 * 4));
      regs.set('lr', u32(c, 4 + 14 * 4));
      regs.set('pc', u32(c, 4 + 15 * 4));
      return regs;
    },
  },
};

/** The context's registers by name, for the event (or null for an unknown architecture or short context). */
export function contextRegisters(arch: CpuArch, context: Uint8Array): Record<string, number> | null {
  const regs = ARCHS[arch]?.read(context);
  return regs ? Object.fromEntries(regs) : null;
}

function word(dump: Minidump, spec: ArchSpec, addr: number): number | null {
  const b = readMemory(dump, addr, spec.word);
  if (!b) return null;
  return spec.word === 8 ? u64(b, 0) : u32(b, 0);
}

/** Binary operators beyond Breakpad's arithmetic: those DWARF expressions use (src/minidump/eh-frame.ts). */
const BIGINT_OPS: Record<string, (a: bigint, b: bigint) => bigint> = {
  '&': (a, b) => a & b,
  '|': (a, b) => a | b,
  '<<': (a, b) => (b < 64n ? BigInt.asUintN(64, a << b) : 0n),
  '>>': (a, b) => (b < 64n ? a >> b : 0n),
};
const COMPARISONS: Record<string, (a: number, b: number) => boolean> = {
  '==': (a, b) => a === b,
  '!=': (a, b) => a !== b,
  '>=': (a, b) => a >= b,
  '>': (a, b) => a > b,
  '<=': (a, b) => a <= b,
  '<': (a, b) => a < b,
};

/**
 * Evaluates a postfix expression: Breakpad's (registers, numbers, `+ - * / % @ ^`) and the
 * stack and bit operations of translated DWARF expressions. One pass over the tokens, so the
 * work is bounded by the rule's length. Null when it cannot (unknown register, missing
 * memory, bad syntax).
 */
function evaluate(expr: string[], regs: Registers, dump: Minidump, spec: ArchSpec): number | null {
  const stack: number[] = [];
  for (const token of expr) {
    if (token === '^') {
      const a = stack.pop();
      if (a === undefined) return null;
      const v = word(dump, spec, a);
      if (v === null) return null;
      stack.push(v);
    } else if (token.length === 1 && '+-*/%@'.includes(token)) {
      const b = stack.pop();
      const a = stack.pop();
      if (a === undefined || b === undefined) return null;
      switch (token) {
        case '+':
          stack.push(a + b);
          break;
        case '-':
          stack.push(a - b);
          break;
        case '*':
          stack.push(a * b);
          break;
        case '/':
          if (b === 0) return null;
          stack.push(Math.trunc(a / b));
          break;
        case '%':
          if (b === 0) return null;
          stack.push(a % b);
          break;
        case '@':
          if (b <= 0) return null;
          stack.push(a - (a % b));
          break;
      }
    } else if (token in BIGINT_OPS || token in COMPARISONS) {
      const b = stack.pop();
      const a = stack.pop();
      if (a === undefined || b === undefined || !Number.isSafeInteger(a) || !Number.isSafeInteger(b)) return null;
      stack.push(
        token in COMPARISONS
          ? Number(COMPARISONS[token](a, b))
          : Number(BIGINT_OPS[token](BigInt.asUintN(64, BigInt(a)), BigInt.asUintN(64, BigInt(b)))),
      );
    } else if (token === 'dup' || token === 'drop' || token === 'neg') {
      const a = stack.pop();
      if (a === undefined) return null;
      if (token === 'dup') stack.push(a, a);
      else if (token === 'neg') stack.push(-a);
    } else if (token === 'swap' || token === 'over') {
      const b = stack.pop();
      const a = stack.pop();
      if (a === undefined || b === undefined) return null;
      if (token === 'swap') stack.push(b, a);
      else stack.push(a, b, a);
    } else if (/^-?[0-9]+$/.test(token)) {
      stack.push(Number(token));
    } else if (/^-?0x[0-9a-f]+$/i.test(token)) {
      stack.push(token.startsWith('-') ? -parseInt(token.slice(1), 16) : parseInt(token, 16));
    } else {
      const v = regs.get(token.replace(/^\$/, ''));
      if (v === undefined) return null;
      stack.push(v);
    }
  }
  return stack.length === 1 && Number.isFinite(stack[0]) ? stack[0] : null;
}

/** `.cfa: $rsp 8 + .ra: .cfa -8 + ^ $rbp: .cfa -16 + ^` → register → postfix tokens. */
export function parseCfiRules(text: string): Map<string, string[]> {
  const rules = new Map<string, string[]>();
  let current: string | null = null;
  for (const token of text.trim().split(/\s+/)) {
    if (token.endsWith(':') && token.length > 1) {
      current = token.slice(0, -1).replace(/^\$/, '');
      rules.set(current, []);
    } else if (current) rules.get(current)!.push(token);
  }
  return rules;
}

/** The most tokens of one program string evaluated (real ones have a few dozen). */
const MAX_WIN_TOKENS = 512;

/**
 * Runs a STACK WIN program string (`$T0 $ebp = $eip $T0 4 + ^ = $ebp $T0 ^ = $esp $T0 8 + =`):
 * postfix with `=` assigning to `$` and `.` names, over `vars`. The variables it assigned,
 * or null when it does not evaluate.
 */
function runWinProgram(
  dump: Minidump,
  spec: ArchSpec,
  tokens: string[],
  vars: Map<string, number>,
): Set<string> | null {
  const assigned = new Set<string>();
  const stack: Array<number | string> = [];
  const value = (v: number | string | undefined): number | null =>
    v === undefined ? null : typeof v === 'number' ? v : (vars.get(v) ?? null);
  for (const token of tokens) {
    if (token === '=') {
      const rhs = value(stack.pop());
      const lhs = stack.pop();
      if (rhs === null || typeof lhs !== 'string') return null;
      vars.set(lhs, rhs >>> 0);
      assigned.add(lhs);
    } else if (token === '^') {
      const addr = value(stack.pop());
      if (addr === null) return null;
      const v = word(dump, spec, addr >>> 0);
      if (v === null) return null;
      stack.push(v);
    } else if (token.length === 1 && '+-*/%@'.includes(token)) {
      const b = value(stack.pop());
      const a = value(stack.pop());
      if (a === null || b === null) return null;
      switch (token) {
        case '+':
          stack.push((a + b) >>> 0);
          break;
        case '-':
          stack.push((a - b) >>> 0);
          break;
        case '*':
          stack.push(Math.imul(a, b) >>> 0);
          break;
        case '/':
          if (b === 0) return null;
          stack.push(Math.trunc(a / b) >>> 0);
          break;
        case '%':
          if (b === 0) return null;
          stack.push((a % b) >>> 0);
          break;
        case '@':
          if (b <= 0 || (b & (b - 1)) !== 0) return null;
          stack.push((a & ~(b - 1)) >>> 0);
          break;
      }
    } else if (token.startsWith('$') || token.startsWith('.')) {
      stack.push(token);
    } else if (/^-?[0-9]+$/.test(token)) {
      stack.push(Number(token) >>> 0);
    } else return null;
  }
  return assigned;
}

/** Where a scan found a return address: the stack slot and the address. */
interface Found {
  location: number;
  pc: number;
}

/**
 * Breakpad's ScanForReturnAddress: the first of the words at `start` and the `words`
 * above it that looks like a return address (seemsCode), or null.
 */
function scanForReturnAddress(
  dump: Minidump,
  spec: ArchSpec,
  unwind: (m: MinidumpModule) => ModuleUnwindInfo | null,
  start: number,
  words: number,
  budget: WalkBudget,
): Found | null {
  for (let i = 0; i <= words && budget.steps > 0; i++, budget.steps--) {
    const location = start + i * spec.word;
    const v = word(dump, spec, location);
    if (v === null) return null;
    if (seemsCode(dump, v, unwind)) return { location, pc: v };
  }
  return null;
}

/** The frame a STACK WIN walk step is asked about. */
interface WinStep {
  regs: Registers;
  /** The callee's parameter size (from its own record; 0 for the context frame or without one). */
  calleeParamSize: number;
  /** The frame is the context frame (scans look four times as far, as Breakpad's do). */
  contextFrame: boolean;
}

/**
 * The caller of an x86 frame by its STACK WIN record, as Breakpad's x86 walker finds it
 * (GetCallerByWindowsFrameInfo): `.raSearchStart` is above the callee's parameters, the
 * locals and the saved registers, moved up to three words to a plausible return address
 * (an aligned stack), or %ebp + 4 when the program aligns (`@`); the program runs from
 * the callee's registers. When it does not evaluate, the return address is scanned for
 * from %esp (`scan`). When the return address it gives lies in no module, a better one
 * is scanned for from `.raSearchStart` + 4 (`cfi_scan`); and a caller's %ebp that is not
 * a readable address (or lies below the return address after a scan) is looked for in the
 * saved-register area, highest slot first.
 */
function callerByWin(
  dump: Minidump,
  spec: ArchSpec,
  step: WinStep,
  info: WinFrameInfo,
  unwind: (m: MinidumpModule) => ModuleUnwindInfo | null,
  budget: WalkBudget,
): { regs: Registers; trust: Trust } | null {
  const { regs, calleeParamSize, contextFrame } = step;
  const tokens = info.program.trim().split(/\s+/);
  if (tokens.length > MAX_WIN_TOKENS) return null;
  const esp = regs.get('esp');
  const ebp = regs.get('ebp');
  const eip = regs.get('eip');
  if (esp === undefined || ebp === undefined) return null;
  let raSearchStart = (esp + calleeParamSize + info.localSize + info.savedRegSize) >>> 0;
  // Up to three words above, in case the stack was aligned to a quadword.
  const aligned = scanForReturnAddress(dump, spec, unwind, raSearchStart, 3, budget);
  if (aligned) {
    if (contextFrame && info.fpo && aligned.location === raSearchStart && aligned.pc === eip) {
      // An FPO system call: the callee returned, its return address still on the stack top.
      raSearchStart += 4;
      raSearchStart = scanForReturnAddress(dump, spec, unwind, raSearchStart, 3, budget)?.location ?? raSearchStart;
    } else raSearchStart = aligned.location;
  }
  // An aligning program: %esp lost what it was, %ebp is the one reliable point.
  if (info.program.includes('@')) raSearchStart = (ebp + 4) >>> 0;
  const vars = new Map<string, number>([
    ['$esp', esp],
    ['$ebp', ebp],
    ['.cbParams', info.paramSize],
    ['.cbCalleeParams', calleeParamSize],
    ['.cbSavedRegs', info.savedRegSize],
    ['.cbLocals', info.localSize],
    ['.raSearch', raSearchStart],
    ['.raSearchStart', raSearchStart],
  ]);
  for (const r of ['ebx', 'esi', 'edi']) if (regs.has(r)) vars.set(`$${r}`, regs.get(r)!);
  let trust: Trust = 'cfi';
  const assigned = runWinProgram(dump, spec, tokens, vars);
  if (!assigned?.has('$eip') || !assigned.has('$esp')) {
    const found = scanForReturnAddress(dump, spec, unwind, esp, contextFrame ? CONTEXT_SCAN_WORDS : SCAN_WORDS, budget);
    if (!found) return null;
    vars.set('$eip', found.pc);
    vars.set('$esp', (found.location + 4) >>> 0);
    trust = 'scan';
  }
  // Both 0: the end of the stack, as the program says.
  if (vars.get('$eip') !== 0 || vars.get('$ebp') !== 0) {
    let offset = 0;
    if (!moduleAt(dump, vars.get('$eip')!)) {
      const start = (raSearchStart + 4) >>> 0;
      const found = scanForReturnAddress(
        dump,
        spec,
        unwind,
        start,
        contextFrame ? CONTEXT_SCAN_WORDS : SCAN_WORDS,
        budget,
      );
      if (found) {
        vars.set('$eip', found.pc);
        vars.set('$esp', (found.location + 4) >>> 0);
        offset = found.location - start;
        trust = 'cfi_scan';
      }
    }
    if (info.recoverEbp !== false) {
      const callerEbp = vars.get('$ebp')!;
      // A scan may have skipped frames: a caller's %ebp below its return address is not its own.
      const skipped = trust !== 'cfi' && callerEbp <= raSearchStart + offset;
      if (skipped || word(dump, spec, callerEbp) === null) {
        const end = (esp + calleeParamSize) >>> 0;
        for (let at = end + info.savedRegSize + offset; at >= end && budget.steps > 0; at -= 4, budget.steps--) {
          const candidate = word(dump, spec, at);
          if (candidate === null) break;
          if (word(dump, spec, candidate) !== null) {
            vars.set('$ebp', candidate);
            break;
          }
        }
      }
    }
  }
  const caller: Registers = new Map(regs);
  for (const r of ['eip', 'esp', 'ebp']) caller.set(r, vars.get(`$${r}`)!);
  for (const r of ['ebx', 'esi', 'edi']) if (assigned?.has(`$${r}`)) caller.set(r, vars.get(`$${r}`)!);
  return { regs: caller, trust };
}

function callerByCfi(dump: Minidump, spec: ArchSpec, regs: Registers, rules: Map<string, string[]>): Registers | null {
  const cfaRule = rules.get('.cfa');
  const raRule = rules.get('.ra');
  if (!cfaRule || !raRule) return null;
  const cfa = evaluate(cfaRule, regs, dump, spec);
  if (cfa === null) return null;
  const withCfa = new Map(regs);
  withCfa.set('.cfa', cfa);
  const ra = evaluate(raRule, withCfa, dump, spec);
  if (ra === null) return null;
  const caller: Registers = new Map(regs);
  for (const [reg, expr] of rules) {
    if (reg === '.cfa' || reg === '.ra') continue;
    const v = evaluate(expr, withCfa, dump, spec);
    if (v !== null) caller.set(reg, v);
  }
  caller.set(spec.pc, ra);
  caller.set(spec.sp, cfa);
  return caller;
}

/** Whether a return address looks real: its call instruction (one byte back) lies in a module, in a function its symbols name. */
function seemsCode(dump: Minidump, addr: number, unwind: (m: MinidumpModule) => ModuleUnwindInfo | null): boolean {
  const module = moduleAt(dump, addr - 1);
  if (!module) return false;
  const info = unwind(module);
  return info?.knows ? info.knows(addr - 1 - module.base) : true;
}

/**
 * Walks one thread from its context. `unwind` gives a module's CFI (null without an
 * uploaded .sym); `first` is the context (the exception's for the crashed thread).
 */
export function walkThread(
  dump: Minidump,
  arch: CpuArch,
  context: Uint8Array,
  unwind: (m: MinidumpModule) => ModuleUnwindInfo | null,
  budget: WalkBudget = { steps: MAX_DUMP_STEPS },
): WalkedFrame[] {
  const spec = ARCHS[arch];
  const start = spec?.read(context);
  if (!spec || !start) return [];
  let regs = start;
  let calleeParamSize = 0;
  const frames: WalkedFrame[] = [
    {
      pc: regs.get(spec.pc)!,
      trust: 'context',
      module: moduleAt(dump, regs.get(spec.pc)!),
      registers: Object.fromEntries(regs),
    },
  ];
  while (frames.length < MAX_FRAMES && budget.steps > 0) {
    budget.steps--;
    const last = frames[frames.length - 1];
    const sp = regs.get(spec.sp)!;
    let caller: Registers | null = null;
    let trust: Trust = 'cfi';
    // CFI: the rules in force at the instruction (a caller's return address looks one byte back, into its call).
    const module = moduleAt(dump, last.pc);
    const info = module ? unwind(module) : null;
    let win: WinFrameInfo | null = null;
    if (module && info) {
      const rel = last.pc - module.base - (last.trust === 'context' ? 0 : 1);
      // x86 Windows: the STACK WIN record first, as Breakpad's x86 walker does.
      win = arch === 'x86' && info.winAt ? info.winAt(rel) : null;
      if (win) {
        const found = callerByWin(
          dump,
          spec,
          { regs, calleeParamSize, contextFrame: frames.length === 1 },
          win,
          unwind,
          budget,
        );
        if (found) {
          caller = found.regs;
          trust = found.trust;
        }
      }
      if (!caller) {
        const rules = info.cfiAt(rel);
        if (rules) caller = callerByCfi(dump, spec, regs, parseCfiRules(rules));
      }
    }
    // The parameters this frame's function takes lie between its caller's frame and its own.
    calleeParamSize = win?.paramSize ?? 0;
    // Frame pointer: the saved frame pointer and return address just above it.
    if (!caller) {
      trust = 'fp';
      const fp = regs.get(spec.fp);
      if (fp !== undefined) {
        const savedFp = word(dump, spec, fp + spec.fpLayout.savedFp);
        const ra = word(dump, spec, fp + spec.fpLayout.returnAddress);
        const callerSp = fp + spec.fpLayout.callerSp;
        // The stack grows down: a caller's frame lies above its callee's.
        if (savedFp !== null && ra !== null && savedFp >= fp && callerSp >= sp) {
          caller = new Map(regs);
          caller.set(spec.pc, ra);
          caller.set(spec.sp, callerSp);
          caller.set(spec.fp, savedFp);
        }
      }
    }
    // Stack scanning: the first word above the stack pointer that looks like a return address.
    if (!caller) {
      trust = 'scan';
      const words = frames.length === 1 ? CONTEXT_SCAN_WORDS : SCAN_WORDS;
      const found = scanForReturnAddress(dump, spec, unwind, sp, words, budget);
      if (found) {
        const at = found.location;
        caller = new Map(regs);
        caller.set(spec.pc, found.pc);
        caller.set(spec.sp, at + spec.word);
        // A frame pointer pushed right below the return address is the caller's.
        const fp = regs.get(spec.fp);
        if (fp !== undefined && at - spec.word === fp) {
          const saved = word(dump, spec, fp);
          if (saved !== null && saved > at) caller.set(spec.fp, saved);
        }
      }
    }
    if (!caller) break;
    const pc = caller.get(spec.pc)!;
    // The walk ends at a zero return address or a stack that stops growing up; only a
    // leaf on ARM (its return address still in the link register) may leave it where it is.
    const callerSp = caller.get(spec.sp)!;
    const leaf = frames.length === 1 && (arch === 'arm64' || arch === 'arm') && callerSp === sp;
    if (pc === 0 || (callerSp <= sp && !leaf)) break;
    frames.push({ pc, trust, module: moduleAt(dump, pc) });
    regs = caller;
  }
  return frames;
}
