// Breakpad .sym files (dump_syms -d of the committed ELF builds, test/fixtures/breakpad):
// the index built from FUNC, line, INLINE and PUBLIC records answers as llvm-symbolizer
// on the ELF file itself (demangled: dump_syms demangles) wherever the .sym holds the
// facts: at every .text address with a line record, the function, innermost file and
// line, and the whole inline chain where INLINE records cover it (this dump_syms writes
// none for inlined calls with split ranges). The MODULE line's debug id equals the ELF
// file's; hostile text is refused or skipped line by line, never a crash.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { breakpadHandler, breakpadIndex, readBreakpad } from '../../../src/symbols/breakpad.js';
import { inspectElf } from '../../../src/symbols/elf.js';
import { SymbolInputError } from '../../../src/symbols/kinds.js';
import { NativeIndex } from '../../../src/symbols/native/lookup-index.js';
import { elfBytes, ELF_FIXTURES, llvmFrames, textAddresses, type ElfName } from './elf-fixture.js';

const BREAKPAD = path.resolve(ELF_FIXTURES, '../breakpad');
const sym = (name: string) => new Uint8Array(fs.readFileSync(path.join(BREAKPAD, name)));

/** Address ranges of a .sym's line records and INLINE records. */
function covered(text: string): { lines: [number, number][]; inlines: [number, number][] } {
  const lines: [number, number][] = [];
  const inlines: [number, number][] = [];
  for (const line of text.split('\n')) {
    if (/^[0-9a-f]+ [0-9a-f]+ \d+ \d+$/.test(line)) {
      const [a, n] = line.split(' ').map((x) => parseInt(x, 16));
      lines.push([a, a + n]);
    } else if (line.startsWith('INLINE ')) {
      const p = line.split(' ').slice(5);
      for (let i = 0; i + 1 < p.length; i += 2)
        inlines.push([parseInt(p[i], 16), parseInt(p[i], 16) + parseInt(p[i + 1], 16)]);
    }
  }
  return { lines, inlines };
}

/** Our answers against llvm-symbolizer's where the .sym holds the facts (see the header); the deepest chain checked. */
function compareWithSym(index: NativeIndex, name: ElfName, bytes: Uint8Array): number {
  const { lines, inlines } = covered(new TextDecoder().decode(bytes));
  const inside = (ranges: [number, number][], a: number) => ranges.some(([lo, hi]) => a >= lo && a < hi);
  const mismatches: string[] = [];
  let deepest = 0;
  let checked = 0;
  for (const addr of textAddresses(name)) {
    if (!inside(lines, addr)) continue;
    checked++;
    const llvm = llvmFrames(name, addr, true).map(([fn, file, line]) => `${fn}|${file}|${line}`);
    const ours = index.lookup(addr).map((f) => `${f.function}|${f.file}|${f.line}`);
    const full = inside(inlines, addr);
    const ok = full
      ? ours.join(' <- ') === llvm.join(' <- ')
      : ours.length === 1 &&
        ours[0].split('|')[0] === llvm.at(-1)!.split('|')[0] &&
        ours[0].split('|').slice(1).join('|') === llvm[0].split('|').slice(1).join('|');
    if (!ok) mismatches.push(`0x${addr.toString(16)}\n  llvm: ${llvm.join(' <- ')}\n  ours: ${ours.join(' <- ')}`);
    if (full) deepest = Math.max(deepest, ours.length);
  }
  expect(checked).toBeGreaterThan(200);
  expect(mismatches.slice(0, 5)).toEqual([]);
  return deepest;
}

async function inspect(name: string, bytes: Uint8Array, chunk = 7) {
  const inspector = breakpadHandler.inspect(name);
  for (let at = 0; at < bytes.length; at += chunk) inspector.push(bytes.subarray(at, at + chunk));
  return inspector.finish();
}

describe('Breakpad symbol files', () => {
  for (const name of ['x86_64-dwarf4.so', 'aarch64-dwarf4.so'] as const) {
    it(`${name}.sym answers as llvm-symbolizer on ${name}: functions, files, lines, inline chains`, async () => {
      const bytes = sym(`${name}.sym`);
      expect(new TextDecoder().decode(bytes)).toMatch(/^INLINE /m);
      const reader = readBreakpad(bytes);
      const index = new NativeIndex(breakpadIndex(reader));
      expect(compareWithSym(index, name, bytes)).toBeGreaterThanOrEqual(3);
    });
  }

  it('an upload streamed in small pieces: the ELF file’s debug id and code id, its index', async () => {
    const [file] = await inspect('x86_64-dwarf4.so.sym', sym('x86_64-dwarf4.so.sym'));
    const [elf] = await inspectElf('x86_64-dwarf4.so', elfBytes('x86_64-dwarf4.so'));
    expect(file.debugId).toBe(elf.debugId);
    expect(file.meta).toMatchObject({
      arch: 'x86_64',
      os: 'Linux',
      code_id: elf.meta!.code_id,
      object_name: 'x86_64-dwarf4.so',
      features: ['symtab', 'debug'],
    });
    compareWithSym(new NativeIndex(file.index!), 'x86_64-dwarf4.so', sym('x86_64-dwarf4.so.sym'));
  });

  it('PUBLIC records name what no FUNC covers, up to the next one', () => {
    const text =
      'MODULE Linux x86_64 0123456789ABCDEF0123456789ABCDEF0 libx.so\nPUBLIC 1000 0 first\nPUBLIC m 2000 0 second\nFUNC 1800 10 0 func\n1800 10 7 0\nFILE 0 /src/a.c\n';
    const index = new NativeIndex(breakpadIndex(readBreakpad(new TextEncoder().encode(text))));
    expect(index.lookup(0x1004)).toEqual([{ function: 'first', file: '', line: 0 }]);
    expect(index.lookup(0x1804)[0].function).toBe('func');
    expect(index.lookup(0x2004)).toEqual([{ function: 'second', file: '', line: 0 }]);
    expect(index.debugId).toBe('01234567-89ab-cdef-0123-456789abcdef');
  });

  it('refuses text without a MODULE line (400); skips malformed records', async () => {
    await expect(inspect('x.sym', new TextEncoder().encode('FUNC 1 2 3 x\n'))).rejects.toThrow(SymbolInputError);
    await expect(inspect('x.sym', new TextEncoder().encode('MODULE Linux x86_64 nothex x\n'))).rejects.toThrow(
      SymbolInputError,
    );
    const junk =
      'MODULE Linux x86_64 0123456789ABCDEF0123456789ABCDEF0 x\nFUNC zz\n12 34\nINLINE 9 1 1 1 10 10\nINLINE_ORIGIN x\nFILE\n' +
      'a'.repeat(200_000) +
      '\nFUNC 10 10 0 ok\n10 10 3 0\n';
    const [file] = await inspect('x.sym', new TextEncoder().encode(junk), 4096);
    expect(new NativeIndex(file.index!).lookup(0x12)[0].function).toBe('ok');
  });
});
