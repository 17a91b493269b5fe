// CFI rules given as DWARF expressions (DW_CFA_def_cfa_expression, DW_CFA_expression,
// DW_CFA_val_expression): translated into the walker's postfix rules and evaluated by its
// one evaluator over a dump's memory, on crafted bytes.
import { describe, expect, it } from 'vitest';
import { dwarfCfiUnwindInfo, dwarfExpressionToPostfix } from '../../src/minidump/eh-frame.js';
import type { Minidump } from '../../src/minidump/reader.js';
import { walkThread } from '../../src/minidump/unwind.js';
import { record, sleb, u32, u64 } from './cfi-fixture.js';

const X86_64 = [
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
];

/** A .debug_frame with one CIE (rsp+8, rip at cfa-8) and one FDE at 0x1000..0x1100 whose instructions are `ops`. */
function debugFrame(ops: number[]): Uint8Array {
  const cie = record([...u32(0xffffffff), 4, 0, 8, 0, 1, ...sleb(-8), 16, 0x0c, 7, 8, 0x80 | 16, 1]);
  const fde = record([...u32(0), ...u64(0x1000), ...u64(0x100), ...ops]);
  return new Uint8Array([...cie, ...fde]);
}

// The PLT's CFA: rsp + 8, plus 8 more once rip's low four bits reach 11 (after the push).
const PLT_CFA = [0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22];

/** An amd64 context (rsp, rbp, rip) and a dump whose module spans 0x0..0x10000 with memory at 0x7000. */
function dumpWith(memory: Array<[number, number]>): {
  dump: Minidump;
  context: (rsp: number, rbp: number, rip: number) => Uint8Array;
} {
  const mem = new Uint8Array(0x100);
  const view = new DataView(mem.buffer);
  for (const [at, v] of memory) view.setBigUint64(at - 0x7000, BigInt(v), true);
  const dump: Minidump = {
    bytes: mem,
    timestamp: 0,
    system: null,
    threads: [],
    exception: null,
    processId: null,
    modules: [{ base: 0, size: 0x10000, name: 'lib.so', debugId: 'd', age: 0, codeId: '', debugFile: '', type: 'elf' }],
    memory: [{ start: 0x7000, size: 0x100, rva: 0 }],
  };
  const context = (rsp: number, rbp: number, rip: number) => {
    const c = new Uint8Array(0x4d0);
    const v = new DataView(c.buffer);
    v.setBigUint64(0x98, BigInt(rsp), true);
    v.setBigUint64(0xa0, BigInt(rbp), true);
    v.setBigUint64(0xf8, BigInt(rip), true);
    return c;
  };
  return { dump, context };
}

describe('DWARF expressions in CFI', () => {
  it('translates the common operations into postfix and refuses branches and register locations', () => {
    const e = (ops: number[]) => dwarfExpressionToPostfix(new Uint8Array(ops), 0, ops.length, X86_64, 8);
    expect(e(PLT_CFA)).toBe('$rsp 8 + $rip 0 + 15 & 11 >= 3 << +');
    expect(e([0x92, 6, ...sleb(-16), 0x06])).toBe('$rbp -16 + ^');
    expect(e([0x11, ...sleb(-100), 0x23, 4, 0x12, 0x1c])).toBe('-100 4 + dup -');
    expect(e([0x2f, 0, 0])).toBeNull(); // DW_OP_skip
    expect(e([0x56])).toBeNull(); // DW_OP_reg6: a location, not a value
    expect(e([0x70 + 20, 0])).toBeNull(); // a register the walker has no name for
  });

  it('DW_CFA_def_cfa_expression: the PLT rule, before and after its push', () => {
    const info = dwarfCfiUnwindInfo(
      debugFrame([0x0f, PLT_CFA.length, ...PLT_CFA]),
      0,
      'x86_64',
      true,
      0,
      'debug_frame',
    )!;
    expect(info.cfiAt(0x1000)).toBe('.cfa: $rsp 8 + $rip 0 + 15 & 11 >= 3 << + .ra: .cfa -8 + ^');
    const { dump, context } = dumpWith([
      [0x7000, 0x5555],
      [0x7008, 0x2222],
      [0x7010, 0x3333],
    ]);
    // rip & 15 = 6 < 11: cfa = rsp + 8, the return address at rsp.
    const before = walkThread(dump, 'amd64', context(0x7000, 0, 0x1006), () => info);
    expect(before[1]).toMatchObject({ pc: 0x5555, trust: 'cfi' });
    // rip & 15 = 11: one more word was pushed, cfa = rsp + 16.
    const after = walkThread(dump, 'amd64', context(0x7000, 0, 0x100b), () => info);
    expect(after[1]).toMatchObject({ pc: 0x2222, trust: 'cfi' });
  });

  it('DW_CFA_expression and DW_CFA_val_expression: a saved register at a computed address, and a computed value', () => {
    // rbp saved at [cfa - 16] through an expression; rbx's value is cfa + 0x40 (val_expression).
    const ops = [0x10, 6, 3, 0x11, ...sleb(-16), 0x22, 0x16, 3, 3, 0x08, 0x40, 0x22];
    const info = dwarfCfiUnwindInfo(debugFrame(ops), 0, 'x86_64', true, 0, 'debug_frame')!;
    expect(info.cfiAt(0x1000)).toBe('.cfa: $rsp 8 + .ra: .cfa -8 + ^ $rbp: .cfa -16 + ^ $rbx: .cfa 64 +');
    const { dump, context } = dumpWith([
      [0x7000, 0x7070],
      [0x7008, 0x1234],
    ]);
    // cfa = 0x7010 (rsp + 8 from 0x7008): rip at 0x7008, rbp at 0x7000.
    const frames = walkThread(dump, 'amd64', context(0x7008, 0x7040, 0x1000), () => ({
      cfiAt: (rel) => (rel === 0x1000 ? info.cfiAt(rel) : null),
    }));
    expect(frames[1]).toMatchObject({ pc: 0x1234, trust: 'cfi' });
  });

  it('an expression the walker cannot use leaves the address without rules (the walk falls back)', () => {
    const info = dwarfCfiUnwindInfo(debugFrame([0x0f, 3, 0x2f, 0, 0]), 0, 'x86_64', true, 0, 'debug_frame')!;
    expect(info.cfiAt(0x1000)).toBeNull();
    const saved = dwarfCfiUnwindInfo(debugFrame([0x10, 6, 1, 0x56]), 0, 'x86_64', true, 0, 'debug_frame')!;
    expect(saved.cfiAt(0x1000)).toBe('.cfa: $rsp 8 + .ra: .cfa -8 + ^');
  });
});
