// Hostile and damaged dSYMs: mutated real files (fixed seed, bounded count) and hand-made
// lies (a fat header naming 10 000 slices, load commands past the end, absurd counts,
// unknown DWARF forms). Every one ends as a clean 400 (SymbolInputError) or as an index
// with fewer answers — never another exception, a hang, or memory out of proportion.
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { inspectMachO } from '../../../src/symbols/dsym.js';
import { buildElfIndex, inspectElf } from '../../../src/symbols/elf.js';
import { readElf } from '../../../src/symbols/native/elf.js';
import { elfBytes } from './elf-fixture.js';
import { SymbolInputError } from '../../../src/symbols/kinds.js';
import { BadNativeFile } from '../../../src/symbols/native/bytes.js';
import { NativeIndex } from '../../../src/symbols/native/lookup-index.js';
import { readMachO, type MachSlice } from '../../../src/symbols/native/macho.js';
import { dsym, object, universal } from './native-fixture.js';

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
  const arm64 = dsym('arm64');
  const fat = universal('fat-dwarf2');
  const v5 = object('arm64-apple-macos11', 'shapes.cpp', ['-gdwarf-5']);
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
async function exercise(bytes: Uint8Array, random: () => number): Promise<Outcome> {
  const started = performance.now();
  let files;
  try {
    files = await inspectMachO('fuzzed', bytes);
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
    return readMachO(bytes).flatMap((s: MachSlice) =>
      s.sections
        .filter((x) => x.segment === '__DWARF' && x.fileOffset >= 0)
        .map((x) => ({ start: x.fileOffset, end: x.fileOffset + x.size })),
    );
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
    if (kind === 1 || sections.length === 0)
      at = Math.floor(random() * Math.min(bytes.length, 4096)); // headers, load commands
    else {
      const s = pick(sections);
      at = s.start + Math.floor(random() * Math.max(1, s.end - s.start));
    }
    at = Math.min(at, bytes.length - 4);
    if (kind === 2 || kind === 1) view.setUint32(at & ~3, pick(ABSURD) >>> 0, random() < 0.5);
    else if (kind === 3) bytes[at] ^= 1 << Math.floor(random() * 8);
    else if (kind === 4)
      bytes.fill(0xff, at, Math.min(bytes.length, at + 1 + Math.floor(random() * 12))); // endless LEB128s
    else view.setUint32(at, Math.floor(random() * 0x1_0000_0000) >>> 0, true);
  }
  return bytes;
}

describe('fuzzed dSYMs', () => {
  it(`${CASES} mutations of real dSYMs (seed ${SEED.toString(16)}): a 400 or an index, nothing else`, async () => {
    const random = rng(SEED);
    const outcomes = { refused: 0, indexed: 0 };
    for (let i = 0; i < CASES; i++) {
      const original = originals[i % originals.length];
      outcomes[await exercise(mutate(original.bytes, random), random)]++;
    }
    // Both outcomes occur, so the mutations reach past the first header check.
    expect(outcomes.refused).toBeGreaterThan(CASES / 10);
    expect(outcomes.indexed).toBeGreaterThan(CASES / 10);
  });

  it(`${CASES} mutations of an ELF file's .debug_info, read 64 bytes or one unit at a time: a 400 or an index`, async () => {
    const random = rng(SEED + 7);
    const original = elfBytes('x86_64-dwarf5.so');
    const elf = await readElf(original);
    const info = elf.sections.find((x) => x.name === '.debug_info')!;
    const outcomes = { refused: 0, indexed: 0 };
    for (let i = 0; i < CASES; i++) {
      const bytes = original.slice();
      // Unit headers (lengths, versions, abbreviation offsets) and DIEs alike.
      for (let k = 0; k < 1 + Math.floor(random() * 8); k++) {
        const at = info.fileOffset + Math.floor(random() * info.size);
        bytes[at] = random() < 0.3 ? 0xff : Math.floor(random() * 256);
      }
      try {
        const [file] = await inspectElf('fuzzed.so', bytes, 64);
        new NativeIndex(file.index!).lookup(0x1000);
        // The same index as from the whole file in memory, however the units lie.
        expect(Buffer.from(file.index!).equals(Buffer.from((await buildElfIndex(bytes)).index)), `case ${i}`).toBe(
          true,
        );
        outcomes.indexed++;
      } catch (err) {
        if (!(err instanceof SymbolInputError)) throw err;
        outcomes.refused++;
      }
    }
    expect(outcomes.indexed).toBeGreaterThan(CASES / 2);
  });

  it('a mutated stored index is refused or answers, never throws anything else', async () => {
    const random = rng(SEED + 1);
    const stored = (await inspectMachO('arm64', originals[0].bytes))[0].index!;
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
  const refused = async (bytes: Uint8Array, message: RegExp): Promise<void> => {
    await expect(inspectMachO('lie', bytes)).rejects.toThrow(SymbolInputError);
    await expect(inspectMachO('lie', bytes)).rejects.toThrow(message);
  };

  it('a fat header naming 10 000 slices, with and without the bytes to back it', async () => {
    for (const size of [64, 8 + 20 * 10_000, 8 + 32 * 10_000]) {
      for (const magic of [0xcafebabe, 0xcafebabf]) {
        const bytes = new Uint8Array(size);
        const v = new DataView(bytes.buffer);
        v.setUint32(0, magic);
        v.setUint32(4, 10_000);
        await refused(bytes, /10000 slices/);
      }
    }
  });

  it('fat slices outside the file or overlapping, empty fat files', async () => {
    const fat = originals[1].bytes.slice();
    new DataView(fat.buffer).setUint32(8 + 8, fat.length - 16); // first slice's offset near the end
    await refused(fat, /outside the file/);
    const overlapping = originals[1].bytes.slice();
    const v = new DataView(overlapping.buffer);
    v.setUint32(8 + 20 + 8, v.getUint32(8 + 8)); // the second slice's offset = the first's
    v.setUint32(8 + 20 + 12, v.getUint32(8 + 12));
    await refused(overlapping, /overlap/);
    const empty = new Uint8Array(8);
    new DataView(empty.buffer).setUint32(0, 0xcafebabe);
    await refused(empty, /no slices/);
  });

  it('load commands past the end, absurd command counts and sizes', async () => {
    const base = originals[0].bytes;
    const set = (offset: number, value: number): Uint8Array => {
      const b = base.slice();
      new DataView(b.buffer).setUint32(offset, value, true);
      return b;
    };
    await refused(set(16, 0xffff_ffff), /load command count/); // ncmds
    await refused(set(20, base.length * 2), /runs past/); // sizeofcmds beyond the file
    await refused(set(32 + 4, 0), /runs past the load commands/); // first cmdsize 0
    await refused(set(32 + 4, 0x7fff_ffff), /runs past the load commands/);
    await refused(base.slice(0, 40), /runs past/);
  });

  it('an unknown DWARF form loses that unit only: the symbol table still answers', async () => {
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
    const [file] = await inspectMachO('odd-forms', bytes);
    const index = new NativeIndex(file.index!);
    const text = slice.sections.find((s) => s.name === '__text')!;
    const frames = index.lookup(text.addr);
    expect(frames).toHaveLength(1);
    expect(frames[0].function).toBe('main');
    expect(frames[0].file).not.toMatch(/\.c$/); // no DWARF file names left: the unit was dropped
  });
});

/** A minimal 64-bit Mach-O dSYM: LC_UUID and one __DWARF segment holding `sections`. */
function syntheticDsym(sections: Record<string, Uint8Array>): Uint8Array {
  const names = Object.keys(sections);
  const segSize = 72 + 80 * names.length;
  const cmdsSize = 24 + segSize;
  let offset = 32 + cmdsSize;
  const total = offset + names.reduce((n, k) => n + sections[k].length, 0);
  const out = new Uint8Array(total);
  const v = new DataView(out.buffer);
  const ascii = (at: number, text: string) => {
    for (let i = 0; i < text.length; i++) out[at + i] = text.charCodeAt(i);
  };
  v.setUint32(0, 0xfeedfacf, true);
  v.setUint32(4, 0x0100000c, true); // arm64
  v.setUint32(12, 0xa, true); // MH_DSYM
  v.setUint32(16, 2, true);
  v.setUint32(20, cmdsSize, true);
  v.setUint32(32, 0x1b, true);
  v.setUint32(36, 24, true);
  out.fill(0xab, 40, 56);
  const seg = 56;
  v.setUint32(seg, 0x19, true);
  v.setUint32(seg + 4, segSize, true);
  ascii(seg + 8, '__DWARF');
  v.setUint32(seg + 64, names.length, true);
  names.forEach((name, i) => {
    const sect = seg + 72 + 80 * i;
    ascii(sect, name.slice(0, 16));
    ascii(sect + 16, '__DWARF');
    v.setBigUint64(sect + 40, BigInt(sections[name].length), true);
    v.setUint32(sect + 48, offset, true);
    out.set(sections[name], offset);
    offset += sections[name].length;
  });
  return out;
}

describe('work stays proportional to the file', () => {
  it('50 000 units each naming a new offset into one long abbreviation table finish quickly', async () => {
    const entries = 50_000;
    const abbrev = new Uint8Array(entries * 7 + 1);
    for (let i = 0; i < entries; i++) abbrev.set([1, 0x11, 0, 0x03, 0x08, 0, 0], i * 7);
    const units = 50_000;
    const info = new Uint8Array(units * 14);
    const v = new DataView(info.buffer);
    for (let u = 0; u < units; u++) {
      const at = u * 14;
      v.setUint32(at, 10, true);
      v.setUint16(at + 4, 4, true);
      v.setUint32(at + 6, (u % entries) * 7, true);
      info[at + 10] = 8;
      info.set([1, 0x61, 0], at + 11); // abbreviation 1, DW_AT_name "a"
    }
    const started = performance.now();
    // Reading DWARF gives the event loop back every few milliseconds: timers keep firing.
    let ticks = 0;
    const timer = setInterval(() => ticks++, 1);
    const [file] = await inspectMachO('long-abbrev', syntheticDsym({ __debug_info: info, __debug_abbrev: abbrev }));
    clearInterval(timer);
    expect(file.debugId).toBe('abababab-abab-abab-abab-abababababab');
    const elapsed = performance.now() - started;
    // A guard against quadratic work (50 000² abbreviation reads take hours), not a speed
    // goal: linear work takes well under a second, and over 10 s on a loaded 2-core machine.
    expect(elapsed).toBeLessThan(25_000);
    if (elapsed > 200) expect(ticks).toBeGreaterThan(2);
  });
});
