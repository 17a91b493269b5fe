// The native reader against LLVM: for every instruction address of real programs (C and
// C++, several compile units, always_inline functions nested two deep), the index answers
// the same function, file, line and inline chain as llvm-symbolizer on the same file (the
// committed builds and answers of test/symbols/native/native-fixture.ts).
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadNodeDemangler } from '../../../src/editions/node/demangle.js';
import { inspectMachO } from '../../../src/symbols/dsym.js';
import { SymbolInputError } from '../../../src/symbols/kinds.js';
import { BadNativeFile } from '../../../src/symbols/native/bytes.js';
import type { Demangler } from '../../../src/symbols/native/demangle.js';
import { buildNativeIndex, NativeIndex } from '../../../src/symbols/native/lookup-index.js';
import { readMachO } from '../../../src/symbols/native/macho.js';
import {
  ARM64_EXECUTABLE,
  compareWithLlvm,
  dsym,
  dwarfUuids,
  dwarfVersion,
  fat64,
  object,
  textAddresses,
  textSymbols,
  universal,
  type NativeDsym,
} from './native-fixture.js';

const arm64: NativeDsym = dsym('arm64');
const x86: NativeDsym = dsym('x86_64');
const arm64Dwarf2: NativeDsym = dsym('arm64-gdwarf-2');
const arm64_32: NativeDsym = dsym('arm64_32');
let demangle: Demangler;

/** What an upload of `bytes` stores: one symbol file per slice, with its index. */
async function uploadSlices(bytes: Uint8Array, name: string) {
  return (await inspectMachO(name, bytes)).map((f) => ({
    debugId: f.debugId!,
    arch: f.meta!.arch as string,
    meta: f.meta,
    filename: f.filename,
    bytes: f.range ? bytes.slice(f.range[0], f.range[1]) : bytes,
    index: new NativeIndex(f.index!),
  }));
}

describe('native symbolication equals llvm-symbolizer', () => {
  it('arm64 dSYM (DWARF 4): function, file, line and inline chain at every address', async () => {
    // Chains three deep (clamp_add inlined into twice_clamped inlined into main) prove the
    // comparison covers inlining, not only plain functions.
    expect(compareWithLlvm(arm64.dwarfFile)).toBeGreaterThanOrEqual(3);
  });

  it('x86_64 dSYM (DWARF 4)', async () => {
    expect(compareWithLlvm(x86.dwarfFile)).toBeGreaterThanOrEqual(3);
  });

  it('arm64 dSYM from DWARF 2 compile units (.debug_ranges, v2 line tables)', async () => {
    expect(compareWithLlvm(arm64Dwarf2.dwarfFile)).toBeGreaterThanOrEqual(3);
  });

  it('an arm64e slice (ld64.lld 14 cannot link one, so the arm64 dSYM with the ARM64E cpusubtype)', async () => {
    const bytes = new Uint8Array(fs.readFileSync(arm64.dwarfFile));
    const arm64e = bytes.slice();
    new DataView(arm64e.buffer).setUint32(8, 0x8000_0002, true); // CPU_SUBTYPE_ARM64E | CPU_SUBTYPE_PTRAUTH_ABI
    const [slice] = readMachO(arm64e);
    expect(slice.arch).toBe('arm64e');
    const a = new NativeIndex(buildNativeIndex(arm64e, slice));
    const b = new NativeIndex(buildNativeIndex(bytes, readMachO(bytes)[0]));
    const addrs = textAddresses(slice);
    expect(addrs.map((x) => JSON.stringify(a.lookup(x)))).toEqual(addrs.map((x) => JSON.stringify(b.lookup(x))));
    expect((await uploadSlices(arm64e, 'App'))[0]).toMatchObject({ arch: 'arm64e', debugId: slice.debugId });
  });

  it('a 32-bit slice: arm64_32 dSYM', async () => {
    const slices = readMachO(new Uint8Array(fs.readFileSync(arm64_32.dwarfFile)));
    expect(slices[0].is64).toBe(false);
    expect(compareWithLlvm(arm64_32.dwarfFile)).toBeGreaterThanOrEqual(3);
  });

  it('DWARF 5 (strx, addrx, rnglistx, .debug_line_str, v5 file tables) read straight from objects', async () => {
    // dsymutil 14 cannot link DWARF 5, so DWARF 5 is checked on the compilers' own objects.
    for (const [target, file] of [
      ['x86_64-apple-macos11', 'main.c'],
      ['arm64-apple-macos11', 'shapes.cpp'],
      ['arm64-apple-macos11', 'compute.c'],
    ]) {
      const obj = object(target, file, ['-gdwarf-5']);
      expect(dwarfVersion(obj)).toBe(5);
      compareWithLlvm(obj);
    }
  });

  it('32-bit objects (armv7, i386)', async () => {
    for (const target of ['armv7-apple-ios9', 'i386-apple-macos10.13']) compareWithLlvm(object(target, 'compute.c'));
  });

  it('universal file from llvm-lipo: each slice answers with its own DWARF', async () => {
    const fat = universal('App');
    expect(
      readMachO(new Uint8Array(fs.readFileSync(fat)))
        .map((s) => s.arch)
        .sort(),
    ).toEqual(['arm64', 'x86_64']);
    compareWithLlvm(fat);
  });

  it('C++ names demangled as llvm-symbolizer demangles them', async () => {
    demangle = await loadNodeDemangler();
    compareWithLlvm(arm64.dwarfFile, { demangle });
    const [{ index }] = await uploadSlices(new Uint8Array(fs.readFileSync(arm64.dwarfFile)), 'App');
    const names = new Set<string>();
    for (const slice of readMachO(new Uint8Array(fs.readFileSync(arm64.dwarfFile)))) {
      for (const a of textAddresses(slice)) for (const f of index.lookup(a)) names.add(demangle(f.function));
    }
    expect(names).toContain('geo::total(geo::Shape const&, int)');
    expect(names).toContain('geo::Rect::area() const');
    expect(demangle('_RNvCs1234_7mycrate3foo')).toBe('mycrate::foo');
    expect(demangle('$s4main3FooV3baryyF')).toBe('$s4main3FooV3baryyF');
  });
});

describe('dSYM uploads', () => {
  it('one symbol file per slice, each named by its LC_UUID as a lowercase dashed debug id', async () => {
    const fat = universal('fat3');
    const slices = await uploadSlices(new Uint8Array(fs.readFileSync(fat)), 'fat3');
    expect(slices.map((s) => [s.arch, s.debugId]).sort()).toEqual(Object.entries(dwarfUuids(fat)).sort());
    for (const s of slices) {
      expect(s.debugId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(s.filename).toBe(`fat3 (${s.arch})`);
      expect(s.meta).toEqual({ arch: s.arch, object_kind: 'dbg', features: ['debug', 'symtab'] });
      // Each slice is stored as a thin Mach-O of its own, and indexes to the same answers.
      expect(s.index.debugId).toBe(s.debugId);
      expect(s.index.arch).toBe(s.arch);
      const [thin] = readMachO(s.bytes);
      expect(thin.debugId).toBe(s.debugId);
      const again = new NativeIndex(buildNativeIndex(s.bytes, thin));
      const addrs = textAddresses(thin);
      expect(addrs.map((x) => JSON.stringify(again.lookup(x)))).toEqual(
        addrs.map((x) => JSON.stringify(s.index.lookup(x))),
      );
    }
  });

  it('fat64 headers are read like fat32 ones', async () => {
    const parts = [arm64.dwarfFile, x86.dwarfFile].map((f) => {
      const bytes = new Uint8Array(fs.readFileSync(f));
      const [s] = readMachO(bytes);
      return { bytes, cpuType: s.cpuType, cpuSubtype: s.cpuSubtype };
    });
    const slices = await uploadSlices(fat64(parts), 'fat64-dsym');
    expect(slices.map((s) => s.arch)).toEqual(['arm64', 'x86_64']);
    const [thin] = await uploadSlices(new Uint8Array(fs.readFileSync(arm64.dwarfFile)), 'x');
    expect(thin.filename).toBeUndefined();
    const a = slices[0].index;
    const b = thin.index;
    const addrs = textAddresses(readMachO(thin.bytes)[0]);
    expect(addrs.map((x) => JSON.stringify(a.lookup(x)))).toEqual(addrs.map((x) => JSON.stringify(b.lookup(x))));
  });

  it('refuses what is not a dSYM (400): text, a Mach-O without LC_UUID', async () => {
    await expect(inspectMachO('x', new TextEncoder().encode('not a dsym'))).rejects.toThrow(SymbolInputError);
    const obj = object('arm64-apple-macos11', 'compute.c');
    await expect(inspectMachO('compute.o', new Uint8Array(fs.readFileSync(obj)))).rejects.toThrow(/LC_UUID/);
  });

  it('falls back to the symbol table where there is no DWARF (the linked executable)', async () => {
    const bytes = new Uint8Array(fs.readFileSync(ARM64_EXECUTABLE));
    const [slice] = readMachO(bytes);
    const index = new NativeIndex(buildNativeIndex(bytes, slice));
    const nm = textSymbols();
    expect(nm.length).toBeGreaterThanOrEqual(4);
    for (const line of nm) {
      const [addr, , name] = line.trim().split(/\s+/);
      const frames = index.lookup(parseInt(addr, 16) + 2);
      expect(frames).toEqual([{ function: name.replace(/^_/, ''), file: '', line: 0 }]);
    }
  });

  it('the stored index reopens from any byte offset (as read back from a database)', async () => {
    const bytes = new Uint8Array(fs.readFileSync(x86.dwarfFile));
    const stored = (await inspectMachO('x', bytes))[0].index!;
    const shifted = new Uint8Array(stored.length + 3);
    shifted.set(stored, 3);
    const a = new NativeIndex(stored);
    const b = new NativeIndex(shifted.subarray(3));
    const addrs = textAddresses(readMachO(bytes)[0]);
    expect(addrs.map((x) => JSON.stringify(b.lookup(x)))).toEqual(addrs.map((x) => JSON.stringify(a.lookup(x))));
    expect(() => new NativeIndex(stored.subarray(0, stored.length - 8))).toThrow(BadNativeFile);
  });
});
