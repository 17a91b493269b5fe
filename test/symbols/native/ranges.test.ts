// A dSYM is read by ranges, never whole (#38): inspecting a fat dSYM through a source that
// counts what is read touches its headers, load commands, DWARF sections and symbol
// tables only (8 MB appended after its slices are never read), and yields the very index
// a reading of the whole file in memory builds, so symbolication answers as before
// (dwarf-vs-llvm.test.ts checks those answers against llvm-symbolizer).
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesSource, type ByteRangeSource } from '../../../src/bytes.js';
import { inspectMachO } from '../../../src/symbols/dsym.js';
import { buildNativeIndex, buildNativeIndexFrom } from '../../../src/symbols/native/lookup-index.js';
import { readMachO } from '../../../src/symbols/native/macho.js';
import { buildIosFixture, type IosFixture } from './ios-fixture.js';

let fx: IosFixture;
beforeAll(() => {
  fx = buildIosFixture();
}, 120_000);
afterAll(() => {
  if (fx) fs.rmSync(fx.dir, { recursive: true, force: true });
});

/** A source that counts the bytes it hands out, and remembers the largest single read. */
function counting(bytes: Uint8Array): ByteRangeSource & { read_: number; largest: number } {
  const inner = bytesSource(bytes);
  const source = {
    size: inner.size,
    read_: 0,
    largest: 0,
    async read(offset: number, length: number) {
      const out = await inner.read(offset, length);
      source.read_ += out.byteLength;
      source.largest = Math.max(source.largest, out.byteLength);
      return out;
    },
  };
  return source;
}

describe('Mach-O read by ranges', () => {
  it('reads only headers, load commands, DWARF sections and symbol tables, and builds the same index as from memory', async () => {
    const fat = fx.bundle['App.app.dSYM/Contents/Resources/DWARF/App'];
    // 8 MB after the last slice: part of the file, never part of what an index needs.
    const padded = new Uint8Array(fat.byteLength + 8 * 1024 * 1024);
    padded.set(fat);
    const source = counting(padded);
    const files = await inspectMachO('App', source);

    const slices = readMachO(padded);
    expect(files.map((f) => f.debugId).sort()).toEqual(Object.values(fx.debugIds).sort());
    for (const [i, slice] of slices.entries()) {
      expect(files[i].range).toEqual([slice.start, slice.end]);
      // Byte for byte the index the whole file in memory gives.
      const whole = Buffer.from(buildNativeIndex(padded, slice));
      expect(Buffer.from(files[i].index!).equals(whole), slice.arch).toBe(true);
      // __debug_info read a unit at a time (a window of 1 or 64 bytes grows to each unit).
      for (const window of [1, 64])
        expect(Buffer.from(await buildNativeIndexFrom(counting(padded), slice, window)).equals(whole)).toBe(true);
    }
    expect(source.read_).toBeLessThanOrEqual(fat.byteLength);
    expect(source.largest).toBeLessThan(fat.byteLength);
  });

  it('refuses a slice whose load commands claim more than a real file has, without reading them', async () => {
    const thin = readMachO(fx.bundle['App.app.dSYM/Contents/Resources/DWARF/App'])[0];
    const bytes = fx.bundle['App.app.dSYM/Contents/Resources/DWARF/App'].slice(thin.start, thin.end);
    const big = new Uint8Array(32 * 1024 * 1024);
    big.set(bytes);
    new DataView(big.buffer).setUint32(20, 20 * 1024 * 1024, thin.littleEndian);
    const source = counting(big);
    await expect(inspectMachO('App', source)).rejects.toThrow('load commands of 20971520 bytes');
    expect(source.read_).toBeLessThan(4096);
  });
});
