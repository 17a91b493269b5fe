// Hostile and damaged dSYMs: mutated real files (fixed seed, bounded count) and hand-made
// lies (a fat header naming 10 000 slices, load commands past the end, absurd counts,
// unknown DWARF forms). Every one ends as a clean 400 (SymbolInputError) or as an index
// with fewer answers — never another exception, a hang, or memory out of proportion.
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { inspectMachO } from '../../src/symbols/dsym.js';
import { SymbolInputError } from '../../src/symbols/kinds.js';
import { BadNativeFile } from '../../src/symbols/native/bytes.js';
import { NativeIndex } from '../../src/symbols/native/lookup-index.js';
import { readMachO, type MachSlice } from '../../src/symbols/native/macho.js';
import { buildDsym, buildObject, lipo, sourceDir } from './build-dsym.js';

const SEED = 0x5eed_2029;
const CASES = 400;

/** mulberry32: a small deterministic generator, so a failure replays exactly. */
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

let originals: Array<{ name: string; bytes: Uint8Array }>;

beforeAll(() => {
  const dir = sourceDir();
  const arm64 = buildDsym(dir, 'arm64-apple-macos11', 'arm64', ['macos', '11.0', '11.0']);
  const x86 = buildDsym(dir, 'x86_64-apple-macos11', 'x86_64', ['macos', '11.0', '11.0'], ['-gdwarf-2']);
  const fat = lipo(dir, [arm64.dwarfFile, x86.dwarfFile], 'fat');
  const v5 = buildObject(dir, 'arm64-apple-macos11', 'shapes.cpp', ['-gdwarf-5']);
  // The DWARF 5 object has no LC_UUID; one is spliced in below so it passes as a dSYM.
  originals = [
    { name: 'arm64', bytes: new Uint8Array(fs.readFileSync(arm64.dwarfFile)) },
    { name: 'fat', bytes: new Uint8Array(fs.readFileSync(fat)) },
    { name: 'v5', bytes: withUuid(new Uint8Array(fs.readFileSync(v5))) },
  ];
});

/** Appends an LC_UUID load command when the header has room (objects leave padding). */
function withUuid(bytes: Uint8Array): Uint8Array {
  const out = bytes.slice();
  const v = new DataView(out.buffer);
  const ncmds = v.getUint32(16, true);
  const size = v.getUint32(20, true);
  const at = 32 + size;
  v.setUint32(at, 0x1b, true);
  v.setUint32(at + 4, 24, true);
  for (let i = 0; i < 16; i++) out[at + 8 + i] = 0x10 + i;
  v.setUint32(16, ncmds + 1, true);
  v.setUint32(20, size + 24, true);
  expect(readMachO(out)[0].debugId).toBe('10111213-1415-1617-1819-1a1b1c1d1e1f');
  return out;
}

type Outcome = 'refused' | 'indexed';

/** Uploads the bytes as a dSYM and looks up addresses in every index it yields. */
function exercise(bytes: Uint8Array, random: () => number): Outcome {
  const started = performance.now();
  let files;
  try {
    files = inspectMachO('fuzzed', bytes);
  } catch (err) {
    if (!(err instanceof SymbolInputError)) throw err;
    return 'refused';
  }
  for (const f of files) {
    // Bounded memory: the index never grows out of proportion to the file.
    expect(f.index!.byteLength).toBeLessThan(64 * bytes.length + 65_536);
    const index = new NativeIndex(f.index!);
    for (let k = 0; k < 64; k++) index.lookup(index.textVmaddr + Math.floor(random() * 4096));
  }
  expect(performance.now() - started).toBeLessThan(3_000);
  return 'indexed';
}

function dwarfSections(bytes: Uint8Array): Array<{ start: number; end: number }> {
  try {
    return readMachO(bytes).flatMap((s: MachSlice) => s.sections.filter((x) => x.segment === '__DWARF' && x.fileOffset >= 0).map((x) => ({ start: x.fileOffset, end: x.fileOffset + x.size })));
  } catch {
    return [];
  }
}

const ABSURD = [0, 1, 7, 0xff, 0xffff, 0x7fff_ffff, 0x8000_0000, 0xffff_fff0, 0xffff_ffff, 10_000];

function mutate(original: Uint8Array, random: () => number): Uint8Array {
  const pick = <T>(xs: T[]): T => xs[Math.floor(random() * xs.length)];
  const kind = Math.floor(random() * 6);
  if (kind === 0) return original.slice(0, Math.floor(random() * original.length));
  const bytes = original.slice();
  const view = new DataView(bytes.buffer);
  const sections = dwarfSections(original);
  const times = 1 + Math.floor(random() * 6);
  for (let n = 0; n < times; n++) {
    let at: number;
    if (kind === 1 || sections.length === 0) at = Math.floor(random() * Math.min(bytes.length, 4096)); // headers, load commands
    else {
      const s = pick(sections);
      at = s.start + Math.floor(random() * Math.max(1, s.end - s.start));
    }
    at = Math.min(at, bytes.length - 4);
    if (kind === 2 || kind === 1) view.setUint32(at & ~3, pick(ABSURD) >>> 0, random() < 0.5);
    else if (kind === 3) bytes[at] ^= 1 << Math.floor(random() * 8);
    else if (kind === 4) bytes.fill(0xff, at, Math.min(bytes.length, at + 1 + Math.floor(random() * 12))); // endless LEB128s
    else view.setUint32(at, Math.floor(random() * 0x1_0000_0000) >>> 0, true);
  }
  return bytes;
}

describe('fuzzed dSYMs', () => {
  it(`${CASES} mutations of real dSYMs (seed ${SEED.toString(16)}): a 400 or an index, nothing else`, () => {
    const random = rng(SEED);
    const outcomes = { refused: 0, indexed: 0 };
    for (let i = 0; i < CASES; i++) {
      const original = originals[i % originals.length];
      outcomes[exercise(mutate(original.bytes, random), random)]++;
    }
    // Both outcomes occur, so the mutations reach past the first header check.
    expect(outcomes.refused).toBeGreaterThan(CASES / 10);
    expect(outcomes.indexed).toBeGreaterThan(CASES / 10);
  });

  it('a mutated stored index is refused or answers, never throws anything else', () => {
    const random = rng(SEED + 1);
    const stored = inspectMachO('arm64', originals[0].bytes)[0].index!;
    for (let i = 0; i < 200; i++) {
      const bytes = stored.slice(0, random() < 0.2 ? Math.floor(random() * stored.length) : stored.length);
      const view = new DataView(bytes.buffer);
      for (let n = 0; n < 4; n++) {
        const at = Math.floor(random() * (bytes.length - 4)) & ~3;
        if (at >= 0) view.setUint32(at, ABSURD[Math.floor(random() * ABSURD.length)], true);
      }
      try {
        const index = new NativeIndex(bytes);
        for (let k = 0; k < 32; k++) index.lookup(index.textVmaddr + Math.floor(random() * 4096));
      } catch (err) {
        expect(err).toBeInstanceOf(BadNativeFile);
      }
    }
  });
});

describe('hand-made lies', () => {
  const refused = (bytes: Uint8Array, message: RegExp): void => {
    expect(() => inspectMachO('lie', bytes)).toThrow(SymbolInputError);
    expect(() => inspectMachO('lie', bytes)).toThrow(message);
  };

  it('a fat header naming 10 000 slices, with and without the bytes to back it', () => {
    for (const size of [64, 8 + 20 * 10_000, 8 + 32 * 10_000]) {
      for (const magic of [0xcafebabe, 0xcafebabf]) {
        const bytes = new Uint8Array(size);
        const v = new DataView(bytes.buffer);
        v.setUint32(0, magic);
        v.setUint32(4, 10_000);
        refused(bytes, /10000 slices/);
      }
    }
  });

  it('fat slices outside the file, empty fat files', () => {
    const fat = originals[1].bytes.slice();
    new DataView(fat.buffer).setUint32(8 + 8, fat.length - 16); // first slice's offset near the end
    refused(fat, /outside the file/);
    const empty = new Uint8Array(8);
    new DataView(empty.buffer).setUint32(0, 0xcafebabe);
    refused(empty, /no slices/);
  });

  it('load commands past the end, absurd command counts and sizes', () => {
    const base = originals[0].bytes;
    const set = (offset: number, value: number): Uint8Array => {
      const b = base.slice();
      new DataView(b.buffer).setUint32(offset, value, true);
      return b;
    };
    refused(set(16, 0xffff_ffff), /load command count/); // ncmds
    refused(set(20, base.length * 2), /runs past/); // sizeofcmds beyond the file
    refused(set(32 + 4, 0), /runs past the load commands/); // first cmdsize 0
    refused(set(32 + 4, 0x7fff_ffff), /runs past the load commands/);
    refused(base.slice(0, 40), /runs past/);
  });

  it('an unknown DWARF form loses that unit only: the symbol table still answers', () => {
    const bytes = originals[0].bytes.slice();
    const [slice] = readMachO(bytes);
    const abbrev = slice.sections.find((s) => s.name === '__debug_abbrev')!;
    // Every form byte of the abbreviation table set to an unassigned form (0x7f).
    let p = abbrev.fileOffset;
    const end = p + abbrev.size;
    const uleb = (): number => {
      let v = 0;
      let shift = 0;
      for (;;) {
        const b = bytes[p++];
        v += (b & 0x7f) * 2 ** shift;
        shift += 7;
        if (!(b & 0x80)) return v;
      }
    };
    while (p < end) {
      if (uleb() === 0) break;
      uleb();
      p++;
      for (;;) {
        const attr = uleb();
        const formAt = p;
        const form = uleb();
        if (attr === 0 && form === 0) break;
        if (form === 0x21) uleb();
        if (formAt === p - 1) bytes[formAt] = 0x7f;
      }
    }
    const [file] = inspectMachO('odd-forms', bytes);
    const index = new NativeIndex(file.index!);
    const text = slice.sections.find((s) => s.name === '__text')!;
    const frames = index.lookup(text.addr);
    expect(frames).toHaveLength(1);
    expect(frames[0].function).toBe('main');
    expect(frames[0].file).not.toMatch(/\.c$/); // no DWARF file names left: the unit was dropped
  });
});
