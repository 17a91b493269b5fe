// The native reader against LLVM: for every instruction address of real programs (C and
// C++, several compile units, always_inline functions nested two deep), the index answers
// the same function, file, line and inline chain as llvm-symbolizer on the same file.
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadNodeDemangler } from '../../src/editions/node/demangle.js';
import { inspectMachO } from '../../src/symbols/dsym.js';
import { SymbolInputError } from '../../src/symbols/kinds.js';
import { BadNativeFile } from '../../src/symbols/native/bytes.js';
import type { Demangler } from '../../src/symbols/native/demangle.js';
import { buildNativeIndex, NativeIndex } from '../../src/symbols/native/lookup-index.js';
import { readMachO, type MachSlice } from '../../src/symbols/native/macho.js';
import { buildDsym, buildObject, fat64, lipo, run, sourceDir, symbolize, type BuiltDsym } from './build-dsym.js';

let dir: string;
let arm64: BuiltDsym;
let x86: BuiltDsym;
let arm64Dwarf2: BuiltDsym;
let arm64_32: BuiltDsym;
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

beforeAll(() => {
  dir = sourceDir();
  arm64 = buildDsym(dir, 'arm64-apple-macos11', 'arm64', ['macos', '11.0', '11.0']);
  x86 = buildDsym(dir, 'x86_64-apple-macos11', 'x86_64', ['macos', '11.0', '11.0']);
  arm64Dwarf2 = buildDsym(dir, 'arm64-apple-macos11', 'arm64', ['macos', '11.0', '11.0'], ['-gdwarf-2']);
  // arm64_32 (watchOS) is a 32-bit Mach-O that ld64.lld and dsymutil both handle.
  arm64_32 = buildDsym(dir, 'arm64_32-apple-watchos5', 'arm64_32', ['watchos', '5.0', '5.0']);
});

function textAddresses(slice: MachSlice): number[] {
  const text = slice.sections.find((s) => s.segment === '__TEXT' && s.name === '__text');
  if (!text) throw new Error('no __text');
  return Array.from({ length: text.size }, (_, i) => text.addr + i);
}

function llvmChain(frames: Array<{ FunctionName: string; FileName: string; Line: number }>, ours: string[] = []): string {
  return frames
    .filter((f) => f.FunctionName !== '??' || f.Line)
    // LLVM prints template functions' return types ("int geo::scale<int>(int, int)"); the
    // demangler, like Sentry's, leaves them out: that difference alone is not a mismatch.
    .map((f, i) => (ours[i] && f.FunctionName.endsWith(` ${ours[i]}`) ? { ...f, FunctionName: ours[i] } : f))
    .map((f) => `${f.FunctionName}|${f.FileName}|${f.Line}`)
    .join(' <- ');
}

function ourChain(index: NativeIndex, addr: number, names: (n: string) => string = (n) => n): string {
  return index.lookup(addr).map((f) => `${f.function ? names(f.function) : '??'}|${f.file}|${f.line}`).join(' <- ');
}

/** Compares every __text address of each slice of `file`; returns the deepest chain seen. */
function compareWithLlvm(file: string, opts: { demangled?: boolean } = {}): number {
  const bytes = new Uint8Array(fs.readFileSync(file));
  const slices = readMachO(bytes);
  let deepest = 0;
  for (const slice of slices) {
    const index = new NativeIndex(buildNativeIndex(bytes, slice));
    const addrs = textAddresses(slice);
    expect(addrs.length).toBeGreaterThan(80);
    const expected = symbolize(file, addrs, { arch: slices.length > 1 ? slice.arch : undefined, demangle: opts.demangled === true });
    const mismatches: string[] = [];
    addrs.forEach((addr, k) => {
      const got = ourChain(index, addr, opts.demangled ? demangle : undefined);
      const want = llvmChain(expected[k], opts.demangled ? index.lookup(addr).map((f) => demangle(f.function)) : []);
      if (want !== got) mismatches.push(`${slice.arch} 0x${addr.toString(16)}\n  llvm: ${want}\n  ours: ${got}`);
      deepest = Math.max(deepest, expected[k].length);
    });
    expect(mismatches.slice(0, 5)).toEqual([]);
  }
  return deepest;
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
    for (const [target, file] of [['x86_64-apple-macos11', 'main.c'], ['arm64-apple-macos11', 'shapes.cpp'], ['arm64-apple-macos11', 'compute.c']]) {
      const obj = buildObject(dir, target, file, ['-gdwarf-5']);
      const dump = run('llvm-dwarfdump', ['--debug-info', obj], dir);
      expect(dump).toContain('version = 0x0005');
      compareWithLlvm(obj);
    }
  });

  it('32-bit objects (armv7, i386)', async () => {
    for (const target of ['armv7-apple-ios9', 'i386-apple-macos10.13']) compareWithLlvm(buildObject(dir, target, 'compute.c', []));
  });

  it('universal file from llvm-lipo: each slice answers with its own DWARF', async () => {
    const fat = lipo(dir, [arm64.dwarfFile, x86.dwarfFile], 'fat-dsym');
    expect(readMachO(new Uint8Array(fs.readFileSync(fat))).map((s) => s.arch).sort()).toEqual(['arm64', 'x86_64']);
    compareWithLlvm(fat);
  });

  it('C++ names demangled as llvm-symbolizer demangles them', async () => {
    demangle = await loadNodeDemangler();
    compareWithLlvm(arm64.dwarfFile, { demangled: true });
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
  const uuids = (file: string): Map<string, string> => {
    const out = new Map<string, string>();
    for (const line of run('llvm-dwarfdump', ['--uuid', file], dir).split('\n')) {
      const m = /^UUID: ([0-9A-F-]+) \(([\w]+)\)/.exec(line);
      if (m) out.set(m[2], m[1].toLowerCase());
    }
    return out;
  };

  it('one symbol file per slice, each named by its LC_UUID as a lowercase dashed debug id', async () => {
    const fat = lipo(dir, [arm64.dwarfFile, x86.dwarfFile, arm64_32.dwarfFile], 'fat3');
    const slices = await uploadSlices(new Uint8Array(fs.readFileSync(fat)), 'fat3');
    const expected = uuids(fat);
    expect(slices.map((s) => [s.arch, s.debugId]).sort()).toEqual([...expected.entries()].sort());
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
      expect(addrs.map((x) => JSON.stringify(again.lookup(x)))).toEqual(addrs.map((x) => JSON.stringify(s.index.lookup(x))));
    }
  });

  it('fat64 headers are read like fat32 ones', async () => {
    const parts = [arm64.dwarfFile, x86.dwarfFile].map((f) => {
      const bytes = new Uint8Array(fs.readFileSync(f));
      const [s] = readMachO(bytes);
      return { bytes, cpuType: s.cpuType, cpuSubtype: s.cpuSubtype };
    });
    const file = path.join(dir, 'fat64-dsym');
    fs.writeFileSync(file, fat64(parts));
    const slices = await uploadSlices(new Uint8Array(fs.readFileSync(file)), 'fat64-dsym');
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
    const obj = buildObject(dir, 'arm64-apple-macos11', 'compute.c', []);
    await expect(inspectMachO('compute.o', new Uint8Array(fs.readFileSync(obj)))).rejects.toThrow(/LC_UUID/);
  });

  it('falls back to the symbol table where there is no DWARF (the linked executable)', async () => {
    const exe = arm64.dwarfFile.replace(/\.dSYM\/.*$/, '');
    const bytes = new Uint8Array(fs.readFileSync(exe));
    const [slice] = readMachO(bytes);
    const index = new NativeIndex(buildNativeIndex(bytes, slice));
    const nm = run('llvm-nm', ['--defined-only', exe], dir).split('\n').filter((l) => / [Tt] /.test(l));
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
