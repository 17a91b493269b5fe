// The committed native fixtures (test/fixtures/native, rebuilt by `npm run fixtures`): Mach-O
// dSYMs, objects and universal files that clang, ld64.lld, dsymutil and llvm-lipo built from
// test/fixtures/native/src (several C and C++ compile units, always_inline functions nested
// two deep, so every inline-chain shape occurs), and what LLVM's tools answer about them:
// llvm-symbolizer's frames for every __text address, llvm-dwarfdump's UUIDs and DWARF
// versions, llvm-nm's text symbols.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Demangler } from '../../../src/symbols/native/demangle.js';
import { buildNativeIndex, NativeIndex } from '../../../src/symbols/native/lookup-index.js';
import { readMachO, type MachSlice } from '../../../src/symbols/native/macho.js';

export const NATIVE_FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/native');

type Run = [first: string, count: number, frames: Array<[fn: string, file: string, line: number]>];

interface NativeAnswers {
  ios: { callerAddrs: string[]; crashAddr: string; cxxCrashAddr: string };
  uuids: Record<string, Record<string, string>>;
  dwarfVersions: Record<string, number>;
  textSymbols: string[];
  /** Per file, per "<arch> mangled|demangled": runs of addresses with the same frames. */
  answers: Record<string, Record<string, Run[]>>;
}

/** The answers of a fixture tree: the committed one, or a fresh build's (`build.mjs --out`). */
const loaded = new Map<string, NativeAnswers>();
export function nativeAnswers(root = NATIVE_FIXTURES): NativeAnswers {
  const known = loaded.get(root);
  if (known) return known;
  const read = JSON.parse(fs.readFileSync(path.join(root, 'answers.json'), 'utf8')) as NativeAnswers;
  loaded.set(root, read);
  return read;
}

export type DsymTag = 'arm64' | 'x86_64' | 'arm64-gdwarf-2' | 'x86_64-gdwarf-2' | 'arm64_32';

export interface NativeDsym {
  arch: string;
  /** The DWARF file of the .dSYM bundle (what llvm-symbolizer reads). */
  dwarfFile: string;
}

export function dsym(tag: DsymTag, root = NATIVE_FIXTURES): NativeDsym {
  return { arch: tag.replace(/-gdwarf-\d$/, ''), dwarfFile: path.join(root, 'dsym', `App-${tag}`) };
}

/** The linked arm64 executable (symbol table, no DWARF) and its dSYM's Info.plist. */
export const ARM64_EXECUTABLE = path.join(NATIVE_FIXTURES, 'exe', 'App-arm64');
export const DSYM_INFO_PLIST = path.join(NATIVE_FIXTURES, 'dsym', 'Info.plist');

/** A Mach-O object compiled from one source, its DWARF read without a link step. */
export function object(target: string, file: string, flags: string[] = []): string {
  return path.join(NATIVE_FIXTURES, 'obj', `${target}${flags.join('')}-${file.replace(/\.\w+$/, '')}.o`);
}

/** Universal files from llvm-lipo: App (arm64 + x86_64), fat3 (+ arm64_32), fat-dwarf2 (arm64 + x86_64 DWARF 2). */
export function universal(name: 'App' | 'fat3' | 'fat-dwarf2'): string {
  return path.join(NATIVE_FIXTURES, 'fat', name);
}

function entry<T>(table: Record<string, T>, file: string, what: string, root: string): T {
  const rel = path.relative(root, file);
  const found = table[rel];
  if (found === undefined) throw new Error(`no committed ${what} for ${rel}: rebuild the fixtures (npm run fixtures)`);
  return found;
}

/** llvm-dwarfdump --uuid: arch → lowercase debug id. */
export function dwarfUuids(file: string): Record<string, string> {
  return entry(nativeAnswers().uuids, file, 'UUIDs', NATIVE_FIXTURES);
}

/** The DWARF version llvm-dwarfdump reports for an object's compile unit. */
export function dwarfVersion(file: string): number {
  return entry(nativeAnswers().dwarfVersions, file, 'DWARF version', NATIVE_FIXTURES);
}

/** llvm-nm --defined-only lines of the arm64 executable's text symbols. */
export function textSymbols(): string[] {
  return nativeAnswers().textSymbols;
}

export interface SymbolizerFrame {
  FunctionName: string;
  FileName: string;
  Line: number;
}

/**
 * llvm-symbolizer's answer for each address (innermost frame first), as committed: `arch`
 * picks a slice of a universal file; names are demangled unless `demangle` is false.
 */
export function symbolize(
  file: string,
  addrs: number[],
  opts: { arch?: string; demangle?: boolean; root?: string } = {},
): SymbolizerFrame[][] {
  const root = opts.root ?? NATIVE_FIXTURES;
  const byKey = entry(nativeAnswers(root).answers, file, 'llvm-symbolizer answers', root);
  const suffix = opts.demangle === false ? 'mangled' : 'demangled';
  const key = opts.arch ? `${opts.arch} ${suffix}` : Object.keys(byKey).find((k) => k.endsWith(` ${suffix}`));
  const runs = key ? byKey[key] : undefined;
  if (!runs)
    throw new Error(
      `no committed ${opts.arch ?? ''} ${suffix} llvm-symbolizer answers for ${file}: rebuild the fixtures (npm run fixtures)`,
    );
  return addrs.map((addr) => {
    let lo = 0;
    let hi = runs.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (Number(runs[mid][0]) <= addr) lo = mid;
      else hi = mid - 1;
    }
    const [first, count, frames] = runs[lo] ?? ['0', 0, []];
    if (addr < Number(first) || addr >= Number(first) + count)
      throw new Error(`no committed llvm-symbolizer answer for 0x${addr.toString(16)} in ${file}`);
    return frames.map(([FunctionName, FileName, Line]) => ({ FunctionName, FileName, Line }));
  });
}

export function textAddresses(slice: MachSlice): number[] {
  const text = slice.sections.find((s) => s.segment === '__TEXT' && s.name === '__text');
  if (!text) throw new Error('no __text');
  return Array.from({ length: text.size }, (_, i) => text.addr + i);
}

function llvmChain(
  frames: Array<{ FunctionName: string; FileName: string; Line: number }>,
  ours: string[] = [],
): string {
  return (
    frames
      .filter((f) => f.FunctionName !== '??' || f.Line)
      // LLVM prints template functions' return types ("int geo::scale<int>(int, int)"); the
      // demangler, like Sentry's, leaves them out: that difference alone is not a mismatch.
      .map((f, i) => (ours[i] && f.FunctionName.endsWith(` ${ours[i]}`) ? { ...f, FunctionName: ours[i] } : f))
      .map((f) => `${f.FunctionName}|${f.FileName}|${f.Line}`)
      .join(' <- ')
  );
}

function ourChain(index: NativeIndex, addr: number, names: (n: string) => string = (n) => n): string {
  return index
    .lookup(addr)
    .map((f) => `${f.function ? names(f.function) : '??'}|${f.file}|${f.line}`)
    .join(' <- ');
}

/**
 * Compares our index with llvm-symbolizer's answers at every __text address of each slice
 * of `file` (names demangled by `demangle` when given); returns the deepest chain seen.
 */
export function compareWithLlvm(file: string, opts: { demangle?: Demangler; root?: string } = {}): number {
  const demangle = opts.demangle;
  const bytes = new Uint8Array(fs.readFileSync(file));
  const slices = readMachO(bytes);
  let deepest = 0;
  for (const slice of slices) {
    const index = new NativeIndex(buildNativeIndex(bytes, slice));
    const addrs = textAddresses(slice);
    expect(addrs.length).toBeGreaterThan(80);
    const expected = symbolize(file, addrs, {
      arch: slices.length > 1 ? slice.arch : undefined,
      demangle: demangle !== undefined,
      root: opts.root,
    });
    const mismatches: string[] = [];
    addrs.forEach((addr, k) => {
      const got = ourChain(index, addr, demangle);
      const want = llvmChain(expected[k], demangle ? index.lookup(addr).map((f) => demangle(f.function)) : []);
      if (want !== got) mismatches.push(`${slice.arch} 0x${addr.toString(16)}\n  llvm: ${want}\n  ours: ${got}`);
      deepest = Math.max(deepest, expected[k].length);
    });
    expect(mismatches.slice(0, 5)).toEqual([]);
  }
  return deepest;
}

/** A fat64 universal file by hand: llvm-lipo 14 cannot write one. */
export function fat64(slices: Array<{ bytes: Uint8Array; cpuType: number; cpuSubtype: number }>): Uint8Array {
  const align = 1 << 14;
  let offset = align;
  const placed = slices.map((s) => {
    const at = offset;
    offset = Math.ceil((at + s.bytes.length) / align) * align;
    return at;
  });
  const out = new Uint8Array(offset);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0xcafebabf);
  view.setUint32(4, slices.length);
  slices.forEach((s, i) => {
    const base = 8 + 32 * i;
    view.setUint32(base, s.cpuType);
    view.setUint32(base + 4, s.cpuSubtype);
    view.setBigUint64(base + 8, BigInt(placed[i]));
    view.setBigUint64(base + 16, BigInt(s.bytes.length));
    view.setUint32(base + 24, 14);
    out.set(s.bytes, placed[i]);
  });
  return out;
}
