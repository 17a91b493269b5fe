// Hostile and damaged native inputs beside the dSYM fuzz suite: mutated real ELF files,
// Breakpad .sym files (STACK WIN program strings among them), minidumps, .eh_frame,
// .debug_frame and __unwind_info sections (fixed seed, bounded count), and hand-made lies (a
// stream directory pointing outside the file, huge thread/module/memory counts, CFI rules
// that loop through memory, stack pointers in unmapped memory). Every one ends as a clean
// refusal (SymbolInputError, BadMinidump) or as fewer answers — never another exception
// or a hang.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { breakpadHandler } from '../../src/symbols/breakpad.js';
import { inspectElf } from '../../src/symbols/elf.js';
import { SymbolInputError } from '../../src/symbols/kinds.js';
import { NativeIndex } from '../../src/symbols/native/lookup-index.js';
import { breakpadUnwindInfo, processMinidump, readBreakpadUnwind } from '../../src/minidump/process.js';
import { BadMinidump } from '../../src/minidump/reader.js';
import { MAX_FRAMES } from '../../src/minidump/unwind.js';
import { dwarfCfiUnwindInfo, ehFrameUnwindInfo } from '../../src/minidump/eh-frame.js';
import { DEBUG_FRAME_FIXTURES } from './cfi-fixture.js';
import { readElf } from '../../src/symbols/native/elf.js';
import { readMachO } from '../../src/symbols/native/macho.js';
import { compactUnwindInfo } from '../../src/minidump/compact-unwind.js';
import { writeMinidump } from '../fixtures/minidump/synth.mjs';
import { buildElfIndex } from '../../src/symbols/elf.js';
import { breakpadIndex } from '../../src/symbols/breakpad.js';
import { ELF_FIXTURES } from '../symbols/native/elf-fixture.js';
import { BREAKPAD_FIXTURES } from './fixture.js';

const SEED = 0x5eed_2044;
/** Mutations per input family: 300 in the suite; FAULTLINE_FUZZ_CASES=10000 for the long run. */
const CASES = Number(process.env.FAULTLINE_FUZZ_CASES ?? 300);

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A copy with a few bytes, runs or 32-bit fields changed, or cut short. */
function mutate(bytes: Uint8Array, random: () => number): Uint8Array {
  let out = bytes.slice();
  const edits = 1 + Math.floor(random() * 8);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(random() * out.length);
    const kind = random();
    if (kind < 0.4) out[at] = Math.floor(random() * 256);
    else if (kind < 0.7 && at + 4 <= out.length)
      new DataView(out.buffer).setUint32(
        at,
        [0, 0xffffffff, 0x7fffffff, 0x10000, Math.floor(random() * 2 ** 32)][Math.floor(random() * 5)],
        true,
      );
    else if (kind < 0.85)
      out.fill(Math.floor(random() * 256), at, Math.min(out.length, at + Math.floor(random() * 64)));
    else out = out.slice(0, Math.max(1, at));
  }
  return out;
}

const elf = (name: string) => new Uint8Array(fs.readFileSync(path.join(ELF_FIXTURES, name)));
const bp = (name: string) => new Uint8Array(fs.readFileSync(path.join(BREAKPAD_FIXTURES, name)));

describe('native fuzzing', () => {
  it(`ELF: ${CASES} mutations of real files end as 400 or an index, each within a bounded time`, async () => {
    const random = rng(SEED);
    const originals = [
      'x86_64-dwarf5.so',
      'aarch64-dwarf4.so',
      'armv7-thumb.so',
      'aarch64-split.so.debug',
      'x86_64-gz.so',
      'x86_64-zdebug.so',
    ].map(elf);
    const outcomes = { refused: 0, indexed: 0 };
    for (let i = 0; i < CASES; i++) {
      const bytes = mutate(originals[i % originals.length], random);
      const started = performance.now();
      try {
        const [file] = await inspectElf('fuzzed.so', bytes);
        const index = new NativeIndex(file.index!);
        expect(file.index!.byteLength).toBeLessThan(64 * bytes.length + 65_536);
        for (let k = 0; k < 32; k++) index.lookup(Math.floor(random() * 0x20000));
        outcomes.indexed++;
      } catch (err) {
        if (!(err instanceof SymbolInputError)) throw new Error(`case ${i}: ${String(err)}`);
        outcomes.refused++;
      }
      expect(performance.now() - started).toBeLessThan(3_000);
    }
    expect(outcomes.refused).toBeGreaterThan(0);
    expect(outcomes.indexed).toBeGreaterThan(0);
  });

  it(`Breakpad .sym: ${CASES} mutations end as 400 or an index`, async () => {
    const random = rng(SEED + 1);
    const original = bp('x86_64-dwarf4.so.sym');
    for (let i = 0; i < CASES; i++) {
      const bytes = mutate(original, random);
      const inspector = breakpadHandler.inspect('fuzzed.sym');
      inspector.push(bytes);
      try {
        const [file] = await inspector.finish();
        const index = new NativeIndex(file.index!);
        for (let k = 0; k < 32; k++) index.lookup(Math.floor(random() * 0x2000));
      } catch (err) {
        if (!(err instanceof SymbolInputError)) throw new Error(`case ${i}: ${String(err)}`);
      }
    }
  });

  it(`minidumps: ${CASES} mutations of a real crash end as BadMinidump or a bounded walk`, () => {
    const random = rng(SEED + 2);
    const original = bp('crash.dmp');
    const sym = readBreakpadUnwind(bp('crasher.sym'));
    const info = breakpadUnwindInfo(sym, new NativeIndex(breakpadIndex(sym)));
    const outcomes = { refused: 0, walked: 0 };
    for (let i = 0; i < CASES; i++) {
      const bytes = mutate(original, random);
      const started = performance.now();
      try {
        const { event } = processMinidump(bytes, () => info);
        for (const t of (event.threads as any).values)
          expect((t.stacktrace?.frames ?? []).length).toBeLessThanOrEqual(MAX_FRAMES);
        outcomes.walked++;
      } catch (err) {
        if (!(err instanceof BadMinidump)) throw new Error(`case ${i}: ${String(err)}`);
        outcomes.refused++;
      }
      expect(performance.now() - started).toBeLessThan(2_000);
    }
    expect(outcomes.walked).toBeGreaterThan(0);
  });

  it(`.eh_frame: ${CASES} mutations of a real one answer rules or nothing for any address, never throw`, async () => {
    const random = rng(SEED + 3);
    const bytes = bp('crasher');
    const { elf } = await buildElfIndex(bytes);
    const section = elf.sections.find((s) => s.name === '.eh_frame')!;
    const original = bytes.slice(section.fileOffset, section.fileOffset + section.size);
    let answered = 0;
    for (let i = 0; i < CASES; i++) {
      const info = ehFrameUnwindInfo(mutate(original, random), section.addr, 'x86_64', true, 0);
      for (let k = 0; k < 64; k++) if (info?.cfiAt(Math.floor(random() * 0x20000))) answered++;
    }
    expect(answered).toBeGreaterThan(0);
  });

  it(`.debug_frame: ${CASES} mutations of a real one answer rules or nothing, never throw`, async () => {
    const random = rng(SEED + 4);
    const bytes = new Uint8Array(fs.readFileSync(path.join(DEBUG_FRAME_FIXTURES, 'x86_64.so')));
    const elf = await readElf(bytes);
    const section = elf.sections.find((s) => s.name === '.debug_frame')!;
    const original = bytes.slice(section.fileOffset, section.fileOffset + section.size);
    let answered = 0;
    for (let i = 0; i < CASES; i++) {
      const info = dwarfCfiUnwindInfo(mutate(original, random), section.addr, 'x86_64', true, 0, 'debug_frame');
      for (let k = 0; k < 64; k++) if (info?.cfiAt(0x1500 + Math.floor(random() * 0x400))) answered++;
    }
    expect(answered).toBeGreaterThan(0);
  });

  it(`compact unwind: ${CASES} mutations of a real __unwind_info answer rules or nothing, never throw`, () => {
    const random = rng(SEED + 5);
    const exe = new Uint8Array(fs.readFileSync(path.resolve('test/fixtures/native/exe/App-arm64')));
    const [slice] = readMachO(exe);
    const section = slice.sections.find((s) => s.name === '__unwind_info')!;
    const original = exe.slice(section.fileOffset, section.fileOffset + section.size);
    let answered = 0;
    for (let i = 0; i < CASES; i++) {
      const info = compactUnwindInfo(mutate(original, random), 'arm64', null);
      for (let k = 0; k < 64; k++) if (info?.cfiAt(0x500 + Math.floor(random() * 0x300))) answered++;
    }
    expect(answered).toBeGreaterThan(0);
  });

  it(`STACK WIN: ${CASES} mutated program strings walk an x86 Windows dump within bounds, never throw`, () => {
    const random = rng(SEED + 6);
    const tokens = [
      '$T0',
      '$ebp',
      '$esp',
      '$eip',
      '$ebx',
      '.raSearch',
      '.cbSavedRegs',
      '=',
      '^',
      '+',
      '-',
      '*',
      '/',
      '%',
      '@',
      '4',
      '8',
      '-4',
      '0',
      'x',
    ];
    const stack = new Uint8Array(0x100);
    new DataView(stack.buffer).setUint32(0x14, 0x401020, true);
    const dump = writeMinidump({
      arch: 'x86',
      os: 'windows',
      threads: [{ id: 1, regs: { eip: 0x401010, esp: 0x8000, ebp: 0x8010 }, stack: { start: 0x8000, bytes: stack } }],
      modules: [
        {
          base: 0x400000,
          size: 0x10000,
          name: 'app.exe',
          pdb: { guid: '3249d99d-0c40-4931-8610-f4e4fb0b6936', age: 1, file: 'app.pdb' },
        },
      ],
    });
    for (let i = 0; i < CASES; i++) {
      const program = Array.from(
        { length: 1 + Math.floor(random() * 30) },
        () => tokens[Math.floor(random() * tokens.length)],
      ).join(' ');
      const sizes = Array.from({ length: 3 }, () => Math.floor(random() * 0x10000).toString(16));
      const reader = readBreakpadUnwind(
        new TextEncoder().encode(
          `MODULE windows x86 3249D99D0C4049318610F4E4FB0B69361 app.pdb\nSTACK WIN 4 0 10000 0 0 ${sizes.join(' ')} 0 1 ${program}\n`,
        ),
      );
      const info = breakpadUnwindInfo(reader, null);
      const { event } = processMinidump(dump, () => info);
      for (const t of (event.threads as any).values) expect(t.stacktrace.frames.length).toBeLessThanOrEqual(MAX_FRAMES);
    }
  });

  it('hand-made lies: a directory outside the file, huge counts, CFI that loops, a stack pointer in unmapped memory', () => {
    const header = (streams: number, dirRva: number) => {
      const b = new Uint8Array(64);
      const v = new DataView(b.buffer);
      v.setUint32(0, 0x504d444d, true);
      v.setUint32(4, 0xa793, true);
      v.setUint32(8, streams, true);
      v.setUint32(12, dirRva, true);
      return b;
    };
    expect(() => processMinidump(header(5, 0xfffffff0), () => null)).toThrow(BadMinidump);
    expect(() => processMinidump(header(0xffffffff, 32), () => null)).toThrow(BadMinidump);
    // A thread list claiming 4 billion threads.
    const lying = new Uint8Array(128);
    lying.set(header(1, 32));
    const v = new DataView(lying.buffer);
    v.setUint32(32, 3, true); // thread list
    v.setUint32(36, 16, true);
    v.setUint32(40, 64, true);
    v.setUint32(64, 0xffffffff, true);
    expect(() => processMinidump(lying, () => null)).toThrow(BadMinidump);
    // The real crash with CFI that sends every frame back to itself, and one whose rules read unmapped memory.
    const dump = bp('crash.dmp');
    const loop = { cfiAt: () => '.cfa: $rsp 8 + .ra: $rip' };
    const unmapped = { cfiAt: () => '.cfa: 4096 .ra: .cfa ^' };
    for (const info of [loop, unmapped]) {
      const started = performance.now();
      const { event } = processMinidump(dump, () => info);
      for (const t of (event.threads as any).values) expect(t.stacktrace.frames.length).toBeLessThanOrEqual(MAX_FRAMES);
      expect(performance.now() - started).toBeLessThan(2_000);
    }
  });
});
