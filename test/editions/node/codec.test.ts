// The blob codec: round trips, old zlib blobs, refusal of unknown formats.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { brotliCompressSync, constants, deflateSync } from 'node:zlib';
import { BROTLI_TAG, compress, decodeJson, decompress } from '../../../src/editions/node/codec.js';

describe('codec', () => {
  it('round-trips bytes and JSON', () => {
    const bytes = Buffer.from('{"a":1,"b":"\u00e9\u0000x"}'.repeat(100));
    const packed = compress(bytes);
    expect(packed.length).toBeLessThan(bytes.length / 5);
    expect(packed[0]).toBe(BROTLI_TAG);
    expect(decompress(packed).equals(bytes)).toBe(true);
    const value = { message: 'boom', frames: [{ lineno: 3, in_app: true }], extra: null };
    expect(decodeJson(compress(Buffer.from(JSON.stringify(value))))).toEqual(value);
    expect(decompress(compress(new Uint8Array(0))).length).toBe(0);
  });

  it('round-trips input that does not shrink: the output outgrows its half-size buffer', () => {
    for (const size of [1, 63, 64, 200, 5000, 70_000]) {
      const bytes = randomBytes(size);
      const packed = compress(bytes);
      expect(packed.length).toBeGreaterThan(size / 2);
      expect(decompress(packed).equals(bytes)).toBe(true);
    }
  });

  it('reads blobs written at the earlier Brotli quality (1) and writes quality 0', () => {
    const bytes = Buffer.from('{"exception":{"values":[{"type":"TypeError","value":"x is undefined"}]}}'.repeat(50));
    const quality = (q: number) =>
      Buffer.concat([
        Buffer.from([BROTLI_TAG]),
        brotliCompressSync(bytes, { params: { [constants.BROTLI_PARAM_QUALITY]: q } }),
      ]);
    expect(decompress(quality(1)).equals(bytes)).toBe(true);
    // Byte-for-byte what quality 0 makes: a change of quality shows here, and in BENCHMARKS.md's measurements.
    expect(compress(bytes).equals(quality(0))).toBe(true);
  });

  it('reads the zlib blobs written before Brotli, and refuses a blob of no known format', () => {
    const bytes = Buffer.from('{"message":"stored by an older version"}'.repeat(20));
    expect(decompress(deflateSync(bytes, { level: 1 })).equals(bytes)).toBe(true);
    expect(decodeJson(deflateSync(Buffer.from('{"a":[1,2]}')))).toEqual({ a: [1, 2] });
    expect(() => decompress(Buffer.from('{"not":"compressed"}'))).toThrow(/unknown format/);
    expect(() => decompress(new Uint8Array(0))).toThrow(/unknown format/);
  });
});
