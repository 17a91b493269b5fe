// The minidump reader and stack walker against Breakpad's minidump_stackwalk on a real
// minidump (test/fixtures/breakpad: a C++ program with Breakpad's client that crashes
// through a null pointer on its main thread while a worker waits; its .sym from dump_syms;
// minidump_stackwalk's answers, with and without the .sym): modules, crash reason, and per
// thread every frame's address and how it was found (context, CFI, frame pointer, scan).
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { breakpadIndex } from '../../src/symbols/breakpad.js';
import { NativeIndex } from '../../src/symbols/native/lookup-index.js';
import { breakpadUnwindInfo, processMinidump, readBreakpadUnwind } from '../../src/minidump/process.js';
import { readMinidump } from '../../src/minidump/reader.js';
import { ehFrameUnwindInfo } from '../../src/minidump/eh-frame.js';
import { buildElfIndex } from '../../src/symbols/elf.js';
import { BREAKPAD_FIXTURES, stackwalkThreads } from './fixture.js';

const read = (name: string) => new Uint8Array(fs.readFileSync(path.join(BREAKPAD_FIXTURES, name)));

function ours(withSymbols: boolean) {
  const sym = readBreakpadUnwind(read('crasher.sym'));
  const info = breakpadUnwindInfo(sym, new NativeIndex(breakpadIndex(sym)));
  return processMinidump(read('crash.dmp'), (m) => (withSymbols && m.debugId === sym.module!.debugId ? info : null));
}

describe('minidump stack walking equals minidump_stackwalk', () => {
  it('reads the modules, system and exception as Breakpad does', () => {
    const dump = readMinidump(read('crash.dmp'));
    const machine = fs.readFileSync(path.join(BREAKPAD_FIXTURES, 'crash.stackwalk.txt'), 'utf8').split('\n');
    const modules = machine.filter((l) => l.startsWith('Module|')).map((l) => l.split('|'));
    expect(
      dump.modules
        .map((m) => [
          path.basename(m.name),
          m.debugId.replace(/-/g, '') + m.age.toString(16),
          `0x${m.base.toString(16)}`,
        ])
        .sort(),
    ).toEqual(modules.map((m) => [m[1], m[4].toLowerCase(), m[5]]).sort());
    expect(dump.system).toMatchObject({ arch: 'amd64', os: 'Linux' });
    const { event } = ours(true);
    const exception = (event.exception as any).values[0];
    expect(exception.type).toBe('SIGSEGV');
    expect(exception.value).toBe('Fatal Error: SIGSEGV / SEGV_MAPERR at 0x0');
    expect(machine.find((l) => l.startsWith('Crash|'))).toBe('Crash|SIGSEGV /SEGV_MAPERR|0x0|0');
  });

  it('with the program’s .sym: every frame of every thread, and how it was found', () => {
    const expected = stackwalkThreads(
      fs.readFileSync(path.join(BREAKPAD_FIXTURES, 'crash.stackwalk-full.txt'), 'utf8'),
    );
    const { event } = ours(true);
    const got = (event.threads as any).values.map((t: any) =>
      [...t.stacktrace.frames].reverse().map((f: any) => [f.instruction_addr, f.trust]),
    );
    expect(got).toEqual(expected);
    expect(expected[0].map(([, trust]) => trust)).toContain('cfi');
    expect(expected.flat().map(([, trust]) => trust)).toContain('scan');
  });

  it('with the program itself (no DWARF, its .eh_frame read): the frames CFI finds are those of its .sym', async () => {
    const expected = stackwalkThreads(
      fs.readFileSync(path.join(BREAKPAD_FIXTURES, 'crash.stackwalk-full.txt'), 'utf8'),
    );
    const bytes = read('crasher');
    const { elf, index } = await buildElfIndex(bytes);
    const section = elf.sections.find((s) => s.name === '.eh_frame')!;
    const info = {
      ...ehFrameUnwindInfo(
        bytes.subarray(section.fileOffset, section.fileOffset + section.size),
        section.addr,
        elf.arch,
        elf.is64,
        elf.loadAddress,
      )!,
      knows: (() => {
        const idx = new NativeIndex(index);
        return (rel: number) => idx.lookup(rel).some((f) => f.function !== '');
      })(),
    };
    const { event } = processMinidump(read('crash.dmp'), (m) => (m.debugId === elf.debugId ? info : null));
    const got = (event.threads as any).values.map((t: any) =>
      [...t.stacktrace.frames].reverse().map((f: any) => [f.instruction_addr, f.trust]),
    );
    // The frames CFI and the context find are Breakpad's; past them the two symbol sources
    // differ (an ELF symbol has a size, a .sym PUBLIC record runs to the next one), so scans
    // may pick other words, and .eh_frame's undefined return address of _start ends the walk.
    const cfiPrefix = (frames: Array<[string, string]>) =>
      frames.slice(
        0,
        frames.findIndex(([, trust]) => trust === 'scan'),
      );
    expect(cfiPrefix(got[0])).toEqual(cfiPrefix(expected[0]));
    expect(cfiPrefix(got[0]).map(([, trust]) => trust)).toEqual(['context', 'cfi', 'cfi', 'cfi']);
    expect(got[1]).toEqual(expected[1]);
    expect(got[0].length).toBeLessThan(12);
  });

  it('without any symbols: the frames minidump_stackwalk finds by frame pointers and scanning', () => {
    const lines = fs
      .readFileSync(path.join(BREAKPAD_FIXTURES, 'crash.stackwalk-nosyms.txt'), 'utf8')
      .split('\n')
      .filter((l) => /^\d+\|\d+\|/.test(l));
    const expected = lines.map((l) => {
      const [thread, , module, , , , offset] = l.split('|');
      return [Number(thread), module, offset];
    });
    const { event } = ours(false);
    const got = (event.threads as any).values.flatMap((t: any, i: number) =>
      [...t.stacktrace.frames].reverse().map((f: any) => {
        const pc = BigInt(f.instruction_addr);
        const base = f.image_addr ? BigInt(f.image_addr) : 0n;
        return [i, f.package ? path.basename(f.package) : '', `0x${(pc - base).toString(16)}`];
      }),
    );
    expect(got).toEqual(expected);
  });
});
