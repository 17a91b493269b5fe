// The ELF reader against LLVM and sentry-cli: for every .text address of real shared
// objects and executables (x86_64, aarch64, 32-bit ARM Thumb; DWARF 2, 4 and 5; a split
// debug file), the index answers the same function, file, line and inline chain as
// llvm-symbolizer; debug and code ids equal what `sentry-cli debug-files check` computes.
// The index is built as an upload builds it (`.debug_info` read from the file a window at a
// time; here a 64-byte window, so every unit is read on its own) and equals, byte for byte,
// the one built from the whole file in memory.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { loadNodeDemangler } from '../../../src/editions/node/demangle.js';
import { buildElfIndex, inspectElf } from '../../../src/symbols/elf.js';
import { SymbolInputError } from '../../../src/symbols/kinds.js';
import { debugIdOfCodeId } from '../../../src/symbols/native/elf.js';
import { NativeIndex } from '../../../src/symbols/native/lookup-index.js';
import { CLIS } from '../../uploads/cli.js';
import { readElf } from '../../../src/symbols/native/elf.js';
import {
  compareElfWithLlvm,
  ELF_NAMES,
  elfAnswers,
  elfBytes,
  elfFile,
  textAddresses,
  type ElfName,
} from './elf-fixture.js';

/** The index as an upload builds it, `.debug_info` read 64 bytes (one unit) at a time. */
async function indexOf(name: ElfName): Promise<NativeIndex> {
  const [inspected] = await inspectElf(name, elfBytes(name), 64);
  return new NativeIndex(inspected.index!);
}

/** Random addresses in .text (a fixed seed: the same addresses every run). */
function randomAddresses(name: ElfName, n: number): number[] {
  const all = textAddresses(name);
  let seed = 0x9e3779b9;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    out.push(all[seed % all.length]);
  }
  return out;
}

describe('ELF symbolication equals llvm-symbolizer', () => {
  for (const name of [
    'x86_64-dwarf4.so',
    'x86_64-dwarf5.so',
    'x86_64-dwarf2.so',
    'aarch64-dwarf4.so',
    'aarch64-dwarf5.so',
    'armv7-thumb.so',
    'x86_64-exe',
    'aarch64-no-build-id.so',
    'x86_64-gz.so',
    'x86_64-zdebug.so',
  ] as const) {
    it(`${name}: every .text address and 2000 random ones, inline chains included`, async () => {
      const index = await indexOf(name);
      expect(compareElfWithLlvm(index, name)).toBeGreaterThanOrEqual(3);
      compareElfWithLlvm(index, name, { addrs: randomAddresses(name, 2000) });
    });
  }

  it('an upload never holds .debug_info whole: each read of it is one window or one unit, in order', async () => {
    for (const name of ['x86_64-dwarf4.so', 'x86_64-dwarf5.so', 'aarch64-dwarf5.so'] as const) {
      const bytes = elfBytes(name);
      const elf = await readElf(bytes);
      const info = elf.sections.find((s) => s.name === '.debug_info')!;
      const [start, end] = [info.fileOffset, info.fileOffset + info.size];
      // The units' sizes, from their headers (32-bit DWARF).
      const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      let largestUnit = 0;
      let units = 0;
      for (let at = start; at < end; units++) {
        const size = 4 + view.getUint32(at, true);
        largestUnit = Math.max(largestUnit, size);
        at += size;
      }
      expect(units, name).toBeGreaterThan(1);
      const reads: Array<[number, number]> = [];
      const source = {
        size: bytes.byteLength,
        read: async (offset: number, length: number) => {
          const out = bytes.subarray(offset, Math.min(bytes.byteLength, offset + length));
          if (offset < end && offset + out.byteLength > start) reads.push([offset, offset + out.byteLength]);
          return out;
        },
      };
      await inspectElf(name, source, 64);
      expect(reads.length, name).toBeGreaterThanOrEqual(units);
      for (const [a, b] of reads) expect(b - a, name).toBeLessThanOrEqual(Math.max(64, largestUnit));
      expect(largestUnit, name).toBeLessThan(info.size);
      // Each window starts at the first unit the last one did not hold whole: the section is read in order.
      const covered = reads.filter(([a]) => a >= start).sort((x, y) => x[0] - y[0]);
      for (let i = 1; i < covered.length; i++) expect(covered[i][0]).toBeGreaterThanOrEqual(covered[i - 1][0]);
    }
  });

  it('the index read a window of .debug_info at a time equals the one read from the whole file, for every window size', async () => {
    for (const name of ELF_NAMES) {
      const whole = (await buildElfIndex(elfBytes(name))).index;
      for (const window of [1, 64, 4096, undefined]) {
        const [streamed] = await inspectElf(name, elfBytes(name), window);
        expect(Buffer.from(streamed.index!).equals(Buffer.from(whole)), `${name}, window ${window}`).toBe(true);
      }
    }
  });

  it('a split debug file answers for its stripped object (llvm-symbolizer follows .gnu_debuglink)', async () => {
    const debug = await indexOf('aarch64-split.so.debug');
    expect(debug.hasDebugInfo).toBe(true);
    compareElfWithLlvm(debug, 'aarch64-split.so');
    const stripped = await indexOf('aarch64-split.so');
    expect(stripped.hasDebugInfo).toBe(false);
    // The stripped object alone still names functions from its symbol table.
    const names = new Set(textAddresses('aarch64-split.so').map((a) => stripped.lookup(a)[0]?.function));
    expect(names).toContain('main');
    expect(names).toContain('compute');
  });

  it('compressed debug sections are inflated for the index: the same answers as the plain build, a lying size refused', async () => {
    for (const name of ['x86_64-gz.so', 'x86_64-zdebug.so'] as const) {
      const elf = await readElf(elfBytes(name));
      const info = elf.sections.find((s) => s.name === (name === 'x86_64-gz.so' ? '.debug_info' : '.zdebug_info'))!;
      expect(name === 'x86_64-zdebug.so' || (info.flags & 0x800) !== 0).toBe(true);
      expect((await indexOf(name)).hasDebugInfo).toBe(true);
    }
    // The zdebug form is the dwarf4 build with its sections compressed: the same frames.
    compareElfWithLlvm(await indexOf('x86_64-zdebug.so'), 'x86_64-dwarf4.so');
    // A header claiming fewer bytes than the stream holds: the file is refused, not over-read.
    const bytes = elfBytes('x86_64-gz.so').slice();
    const elf = await readElf(bytes);
    const info = elf.sections.find((s) => s.name === '.debug_info')!;
    new DataView(bytes.buffer).setUint32(info.fileOffset + 8, 16, true);
    await expect(inspectElf('x86_64-gz.so', bytes)).rejects.toThrow(/inflates to more than the 16 bytes/);
  });

  it('C++ names demangled as llvm-symbolizer demangles them', async () => {
    const demangle = await loadNodeDemangler();
    compareElfWithLlvm(await indexOf('x86_64-dwarf4.so'), 'x86_64-dwarf4.so', { demangle });
  });
});

describe('ELF ids', () => {
  it.each(ELF_NAMES)('%s: debug id, code id and arch as sentry-cli debug-files check computes them', async (name) => {
    const checked = JSON.parse(
      execFileSync(CLIS['3'], ['debug-files', 'check', '--json', elfFile(name)], {
        env: { ...process.env, SENTRY_DISABLE_UPDATE_CHECK: '1' },
      }).toString(),
    );
    const [variant] = checked.variants;
    const [file] = await inspectElf(name, elfBytes(name));
    expect(file.debugId).toBe(variant.debug_id);
    expect(file.meta!.code_id).toBe(variant.code_id ?? null);
    expect(file.meta!.arch).toBe(variant.arch === 'armv7' ? 'arm' : variant.arch);
    expect(String(checked.features).split(', ').sort()).toEqual([...(file.meta!.features as string[])].sort());
    const buildId = elfAnswers().buildIds[name];
    expect(file.meta!.code_id).toBe(buildId);
    if (buildId) expect(debugIdOfCodeId(buildId)).toBe(file.debugId);
  });

  it('a split debug file and its stripped object share the debug id; their roles differ', async () => {
    const [debug] = await inspectElf('x.debug', elfBytes('aarch64-split.so.debug'));
    const [stripped] = await inspectElf('x.so', elfBytes('aarch64-split.so'));
    expect(debug.debugId).toBe(stripped.debugId);
    expect([debug.serves, stripped.serves]).toEqual(['debug', 'symtab']);
    expect(stripped.meta!.debug_link).toBe('aarch64-split.so.debug');
  });

  it('refuses what is not a readable ELF file (400)', async () => {
    await expect(inspectElf('x', new TextEncoder().encode('not an elf file at all'))).rejects.toThrow(SymbolInputError);
    const truncated = elfBytes('x86_64-dwarf4.so').slice(0, 40);
    await expect(inspectElf('x', truncated)).rejects.toThrow(SymbolInputError);
  });
});
