// The committed ELF fixtures (test/fixtures/elf-native, rebuilt by `npm run fixtures`):
// native/src built by clang and ld.lld for x86_64, aarch64 and 32-bit ARM (Thumb), and
// what LLVM's tools answer about them: llvm-symbolizer's frames for every .text address,
// readelf's build ids.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import type { Demangler } from '../../../src/symbols/native/demangle.js';
import type { NativeIndex } from '../../../src/symbols/native/lookup-index.js';

export const ELF_FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures/elf-native');

type Run = [first: string, count: number, frames: Array<[fn: string, file: string, line: number]>];

interface ElfAnswers {
  buildIds: Record<string, string | null>;
  texts: Record<string, [addr: string, size: number]>;
  answers: Record<string, Record<'mangled' | 'demangled', Run[]>>;
}

/** The answers of a fixture tree: the committed one, or a fresh build's (`build.mjs --out`). */
const loaded = new Map<string, ElfAnswers>();
export function elfAnswers(root = ELF_FIXTURES): ElfAnswers {
  let answers = loaded.get(root);
  if (!answers) {
    answers = JSON.parse(fs.readFileSync(path.join(root, 'answers.json'), 'utf8')) as ElfAnswers;
    loaded.set(root, answers);
  }
  return answers;
}

export const ELF_NAMES = [
  'x86_64-dwarf4.so',
  'x86_64-dwarf5.so',
  'x86_64-dwarf2.so',
  'aarch64-dwarf4.so',
  'aarch64-dwarf5.so',
  'armv7-thumb.so',
  'x86_64-exe',
  'aarch64-no-build-id.so',
  'aarch64-split.so.debug',
  'aarch64-split.so',
  'x86_64-gz.so',
  'x86_64-zdebug.so',
] as const;
export type ElfName = (typeof ELF_NAMES)[number];

export function elfFile(name: ElfName): string {
  return path.join(ELF_FIXTURES, name);
}

export function elfBytes(name: ElfName): Uint8Array {
  return new Uint8Array(fs.readFileSync(elfFile(name)));
}

export function textAddresses(name: ElfName, root = ELF_FIXTURES): number[] {
  const [addr, size] = elfAnswers(root).texts[name];
  return Array.from({ length: size }, (_, i) => Number(addr) + i);
}

/** llvm-symbolizer's frames (innermost first) at `addr` of `name`, as committed. */
export function llvmFrames(
  name: ElfName,
  addr: number,
  demangled = false,
  root = ELF_FIXTURES,
): Array<[string, string, number]> {
  const runs = elfAnswers(root).answers[name][demangled ? 'demangled' : 'mangled'];
  let lo = 0;
  let hi = runs.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (Number(runs[mid][0]) <= addr) lo = mid;
    else hi = mid - 1;
  }
  const [first, count, frames] = runs[lo];
  if (addr < Number(first) || addr >= Number(first) + count)
    throw new Error(`no committed answer for 0x${addr.toString(16)} in ${name}`);
  return frames;
}

/**
 * Compares `index` with llvm-symbolizer's answers for `answersOf` at `addrs` (every .text
 * address by default); returns the deepest inline chain seen.
 */
export function compareElfWithLlvm(
  index: NativeIndex,
  answersOf: ElfName,
  opts: { demangle?: Demangler; addrs?: number[]; root?: string } = {},
): number {
  const { demangle, root } = opts;
  const addrs = opts.addrs ?? textAddresses(answersOf, root);
  expect(addrs.length).toBeGreaterThan(80);
  const mismatches: string[] = [];
  let deepest = 0;
  for (const addr of addrs) {
    const ours = index.lookup(addr);
    const names = ours.map((f) => (demangle && f.function ? demangle(f.function) : f.function));
    const want = llvmFrames(answersOf, addr, demangle !== undefined, root)
      .map(([fn, file, line]): [string, string, number] => [fn || '??', file, line])
      .filter(([fn, , line]) => fn !== '??' || line)
      // LLVM prints template functions' return types; the demangler, like Sentry's, does not.
      .map(([fn, file, line], i) => `${names[i] && fn.endsWith(` ${names[i]}`) ? names[i] : fn}|${file}|${line}`)
      .join(' <- ');
    const got = ours.map((f, i) => `${names[i] || '??'}|${f.file}|${f.line}`).join(' <- ');
    if (want !== got) mismatches.push(`${answersOf} 0x${addr.toString(16)}\n  llvm: ${want}\n  ours: ${got}`);
    deepest = Math.max(deepest, ours.length);
  }
  expect(mismatches.slice(0, 5)).toEqual([]);
  return deepest;
}
