// A minidump → the event Faultline stores for it (docs/api.md "Minidumps"): the exception
// (type: the signal or exception code, `SIGSEGV`, `EXCEPTION_ACCESS_VIOLATION_READ`,
// `EXC_BAD_ACCESS`), the crashed thread's frames in its stacktrace and every thread in
// `threads`, each frame with its instruction address and `trust`; the modules as
// `debug_meta.images` (type `elf`, `pe` or `macho`, with debug and code ids), so ingest
// symbolicates the frames with the uploaded ELF, dSYM and Breakpad files like any native
// event; the OS and CPU as contexts. Pure: the caller hands in the unwind information.

import { BreakpadReader } from '../symbols/native/breakpad.js';
import type { NativeIndex } from '../symbols/native/lookup-index.js';
import {
  contextRegisters,
  MAX_DUMP_STEPS,
  walkThread,
  type ModuleUnwindInfo,
  type WalkedFrame,
  type WinFrameInfo,
} from './unwind.js';
import { readMinidump, type Minidump, type MinidumpException, type MinidumpModule } from './reader.js';

/** The largest minidump accepted (the ingest body limit). */
export const MAX_MINIDUMP_BYTES = 20 * 1024 * 1024;

const SIGNALS: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  4: 'SIGILL',
  5: 'SIGTRAP',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  9: 'SIGKILL',
  10: 'SIGUSR1',
  11: 'SIGSEGV',
  12: 'SIGUSR2',
  13: 'SIGPIPE',
  14: 'SIGALRM',
  15: 'SIGTERM',
  31: 'SIGSYS',
};
const SEGV_CODES: Record<number, string> = { 1: 'SEGV_MAPERR', 2: 'SEGV_ACCERR' };
const BUS_CODES: Record<number, string> = { 1: 'BUS_ADRALN', 2: 'BUS_ADRERR', 3: 'BUS_OBJERR' };
const FPE_CODES: Record<number, string> = {
  1: 'FPE_INTDIV',
  2: 'FPE_INTOVF',
  3: 'FPE_FLTDIV',
  4: 'FPE_FLTOVF',
  5: 'FPE_FLTUND',
  6: 'FPE_FLTRES',
  7: 'FPE_FLTINV',
  8: 'FPE_FLTSUB',
};
const ILL_CODES: Record<number, string> = {
  1: 'ILL_ILLOPC',
  2: 'ILL_ILLOPN',
  3: 'ILL_ILLADR',
  4: 'ILL_ILLTRP',
  5: 'ILL_PRVOPC',
  6: 'ILL_PRVREG',
  7: 'ILL_COPROC',
  8: 'ILL_BADSTK',
};
const WINDOWS_CODES = new Map<number, string>([
  [0xc0000005, 'EXCEPTION_ACCESS_VIOLATION'],
  [0xc0000006, 'EXCEPTION_IN_PAGE_ERROR'],
  [0x80000003, 'EXCEPTION_BREAKPOINT'],
  [0x80000004, 'EXCEPTION_SINGLE_STEP'],
  [0xc000001d, 'EXCEPTION_ILLEGAL_INSTRUCTION'],
  [0xc0000094, 'EXCEPTION_INT_DIVIDE_BY_ZERO'],
  [0xc0000095, 'EXCEPTION_INT_OVERFLOW'],
  [0xc00000fd, 'EXCEPTION_STACK_OVERFLOW'],
  [0xc0000409, 'EXCEPTION_STACK_BUFFER_OVERRUN'],
  [0xc0000374, 'EXCEPTION_HEAP_CORRUPTION'],
  [0xc000008c, 'EXCEPTION_ARRAY_BOUNDS_EXCEEDED'],
  [0xc000008e, 'EXCEPTION_FLT_DIVIDE_BY_ZERO'],
  [0xc0000096, 'EXCEPTION_PRIV_INSTRUCTION'],
  [0xe06d7363, 'Unhandled C++ Exception'],
  [0x40000015, 'STATUS_FATAL_APP_EXIT'],
]);
const MAC_CODES: Record<number, string> = {
  1: 'EXC_BAD_ACCESS',
  2: 'EXC_BAD_INSTRUCTION',
  3: 'EXC_ARITHMETIC',
  4: 'EXC_EMULATION',
  5: 'EXC_SOFTWARE',
  6: 'EXC_BREAKPOINT',
  10: 'EXC_CRASH',
  11: 'EXC_RESOURCE',
  12: 'EXC_GUARD',
};

const hex = (n: number): string => `0x${n.toString(16)}`;

/** The exception's type and its longer reason, as Breakpad names them per OS. */
export function exceptionName(os: string, e: MinidumpException): { type: string; reason: string } {
  if (os === 'Windows NT') {
    let type = WINDOWS_CODES.get(e.code) ?? hex(e.code);
    if (e.code === 0xc0000005 || e.code === 0xc0000006)
      type += ({ 0: '_READ', 1: '_WRITE', 8: '_EXEC' } as Record<number, string>)[e.params[0] ?? -1] ?? '';
    return { type, reason: type };
  }
  if (os === 'Mac OS X' || os === 'iOS') {
    const type = MAC_CODES[e.code] ?? hex(e.code);
    return { type, reason: e.flags ? `${type} / ${hex(e.flags)}` : type };
  }
  if (e.code === 0xffffffff) return { type: 'DUMP_REQUESTED', reason: 'DUMP_REQUESTED' };
  const type = SIGNALS[e.code] ?? `signal ${e.code}`;
  const codes =
    e.code === 11 ? SEGV_CODES : e.code === 7 ? BUS_CODES : e.code === 8 ? FPE_CODES : e.code === 4 ? ILL_CODES : {};
  const sub = codes[e.flags];
  return { type, reason: sub ? `${type} / ${sub}` : type };
}

/** A module's unwind information from its Breakpad .sym file (STACK CFI and STACK WIN records, and its functions for scanning). */
export function breakpadUnwindInfo(reader: BreakpadReader, index: NativeIndex | null): ModuleUnwindInfo {
  const cfi = reader.cfi;
  const order = cfi.initAddr.map((_, i) => i).sort((a, b) => cfi.initAddr[a] - cfi.initAddr[b]);
  const starts = order.map((i) => cfi.initAddr[i]);
  return {
    cfiAt(rel) {
      let lo = 0;
      let hi = starts.length - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        if (starts[mid] <= rel) {
          found = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (found < 0) return null;
      const i = order[found];
      if (rel >= cfi.initAddr[i] + cfi.initSize[i]) return null;
      let rules = cfi.initRules[i];
      const end = i + 1 < cfi.initFirstDelta.length ? cfi.initFirstDelta[i + 1] : cfi.deltaAddr.length;
      for (let d = cfi.initFirstDelta[i]; d < end && cfi.deltaAddr[d] <= rel; d++) rules += ` ${cfi.deltaRules[d]}`;
      return rules;
    },
    winAt: reader.win.type.length > 0 ? stackWinLookup(reader) : undefined,
    knows: index ? (rel) => index.lookup(rel).some((f) => f.function !== '') : undefined,
  };
}

/** What Breakpad's x86 walker runs for an FPO record: the return address above the frame, %ebp saved below it or kept. */
const FPO_PROGRAM = '$eip .raSearchStart ^ = $esp .raSearchStart 4 + =';
const FPO_EBP_PROGRAM =
  '$eip .raSearchStart ^ = $ebp $esp .cbCalleeParams + .cbSavedRegs + 8 - ^ = $esp .raSearchStart 4 + =';

/** The STACK WIN record covering an address: a FRAME_DATA record (program string) before an FPO one. */
function stackWinLookup(reader: BreakpadReader): (rel: number) => WinFrameInfo | null {
  const win = reader.win;
  const byType = [4, 0].map((type) => {
    const order = win.type
      .map((_, i) => i)
      .filter((i) => win.type[i] === type)
      .sort((a, b) => win.addr[a] - win.addr[b]);
    return { order, starts: order.map((i) => win.addr[i]) };
  });
  return (rel) => {
    for (const { order, starts } of byType) {
      let lo = 0;
      let hi = starts.length - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        if (starts[mid] <= rel) {
          found = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      if (found < 0) continue;
      const i = order[found];
      if (rel >= win.addr[i] + win.size[i]) continue;
      const program = win.type[i] === 4 ? win.program[i] : win.allocatesBasePointer[i] ? FPO_EBP_PROGRAM : FPO_PROGRAM;
      const fpo = win.type[i] === 0;
      return {
        program,
        paramSize: win.paramSize[i],
        savedRegSize: win.savedRegSize[i],
        localSize: win.localSize[i],
        fpo,
        recoverEbp: !fpo || win.allocatesBasePointer[i],
      };
    }
    return null;
  };
}

function imageOf(m: MinidumpModule, arch: string): Record<string, unknown> {
  // Sentry's debug id of a PDB: its GUID and, when not zero, its age in hex (`…-1a`).
  const debugId = m.debugId
    ? m.type === 'pe' && m.age > 0
      ? `${m.debugId}-${m.age.toString(16)}`
      : m.debugId
    : undefined;
  return {
    type: m.type,
    code_file: m.name,
    ...(m.codeId ? { code_id: m.codeId } : {}),
    ...(debugId ? { debug_id: debugId } : {}),
    ...(m.debugFile ? { debug_file: m.debugFile } : {}),
    image_addr: hex(m.base),
    image_size: m.size,
    arch,
  };
}

/** Frames oldest call first, as SDKs send them. */
function framesOf(walked: WalkedFrame[]): Record<string, unknown>[] {
  return walked
    .map((f) => ({
      instruction_addr: hex(f.pc),
      trust: f.trust,
      ...(f.module ? { package: f.module.name, image_addr: hex(f.module.base) } : {}),
    }))
    .reverse();
}

const SENTRY_ARCH: Record<string, string> = { amd64: 'x86_64', x86: 'x86', arm64: 'arm64', arm: 'arm' };

export interface ProcessedMinidump {
  /** Event fields to merge under what the SDK sent (its own fields win, except these). */
  event: Record<string, unknown>;
  dump: Minidump;
}

/**
 * Reads and walks a minidump. `unwind` gives the unwind information of a module (from the
 * project's uploaded files), or null. Throws BadMinidump when the file is not a minidump.
 */
export function processMinidump(
  bytes: Uint8Array,
  unwind: (m: MinidumpModule) => ModuleUnwindInfo | null,
): ProcessedMinidump {
  const dump = readMinidump(bytes);
  const arch = dump.system?.arch ?? 'unknown';
  const os = dump.system?.os ?? 'unknown';
  const crashedId = dump.exception?.threadId;
  const budget = { steps: MAX_DUMP_STEPS };
  // The crashed thread first: a dump that runs out of budget still has its crash.
  const order = [...dump.threads].sort((a, b) => Number(b.id === crashedId) - Number(a.id === crashedId));
  const walks = new Map<(typeof order)[number], WalkedFrame[]>();
  for (const t of order) {
    const context = t.id === crashedId && dump.exception?.context ? dump.exception.context : t.context;
    walks.set(t, context ? walkThread(dump, arch, context, unwind, budget) : []);
  }
  const threads = dump.threads.map((t) => {
    const crashed = t.id === crashedId;
    const context = crashed && dump.exception?.context ? dump.exception.context : t.context;
    const walked = walks.get(t)!;
    return { id: t.id, crashed, walked, context };
  });
  const crashed = threads.find((t) => t.crashed);
  const sentryArch = SENTRY_ARCH[arch] ?? arch;
  const event: Record<string, unknown> = {
    platform: 'native',
    level: 'fatal',
    threads: {
      values: threads.map((t) => ({
        id: t.id,
        crashed: t.crashed,
        ...(t.walked.length > 0 ? { stacktrace: { frames: framesOf(t.walked) } } : {}),
      })),
    },
    debug_meta: { images: dump.modules.map((m) => imageOf(m, sentryArch)) },
    contexts: {
      os: {
        type: 'os',
        name: os === 'Mac OS X' ? 'macOS' : os === 'Windows NT' ? 'Windows' : os,
        version: dump.system?.osVersion,
        build: dump.system?.osBuild || undefined,
      },
      device: { type: 'device', arch: sentryArch, processor_count: dump.system?.cpuCount },
    },
  };
  if (dump.exception) {
    const { type, reason } = exceptionName(os, dump.exception);
    const registers = crashed?.context ? contextRegisters(arch, crashed.context) : null;
    event.exception = {
      values: [
        {
          type,
          value: `Fatal Error: ${reason} at ${hex(dump.exception.address)}`,
          thread_id: dump.exception.threadId,
          mechanism: { type: 'minidump', handled: false, synthetic: true },
          ...(crashed && crashed.walked.length > 0
            ? {
                stacktrace: {
                  frames: framesOf(crashed.walked),
                  ...(registers
                    ? { registers: Object.fromEntries(Object.entries(registers).map(([k, v]) => [k, hex(v)])) }
                    : {}),
                },
              }
            : {}),
        },
      ],
    };
  }
  if (dump.timestamp > 0) event.timestamp = dump.timestamp;
  return { event, dump };
}

/** Reads the STACK CFI and STACK WIN records (and functions) of a .sym file for the unwinder. */
export function readBreakpadUnwind(bytes: Uint8Array): BreakpadReader {
  const reader = new BreakpadReader(true);
  reader.push(bytes);
  reader.finish();
  return reader;
}
