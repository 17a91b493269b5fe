// The blob codec: round trips, and the compression worker producing exactly what
// the main-thread codec produces (and failing over cleanly once closed).
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { deflateSync } from 'node:zlib';
import { BROTLI_TAG, compress, decodeJson, decompress } from '../../src/store/codec.js';
import { CompressionWorker } from '../../src/store/compression-worker.js';

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

  it('runs the compression worker with a small heap', async () => {
    const worker = new CompressionWorker();
    try {
      await worker.compress(Buffer.from('{"a":1}'));
      const limits = (worker as unknown as { worker: { resourceLimits: { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb: number } } }).worker.resourceLimits;
      // At most 256 MB: V8 then collects at 1.3x the live heap instead of up to 4x.
      expect(limits.maxOldGenerationSizeMb).toBeGreaterThan(0);
      expect(limits.maxOldGenerationSizeMb).toBeLessThanOrEqual(256);
      expect(limits.maxYoungGenerationSizeMb).toBeLessThanOrEqual(4);
    } finally {
      await worker.close();
    }
  });

  it('round-trips input that does not shrink: the output outgrows its half-size buffer', async () => {
    const worker = new CompressionWorker();
    try {
      for (const size of [1, 63, 64, 200, 5000, 70_000]) {
        const bytes = randomBytes(size);
        const packed = compress(bytes);
        expect(packed.length).toBeGreaterThan(size / 2);
        expect(decompress(packed).equals(bytes)).toBe(true);
        expect((await worker.compress(bytes)).equals(packed)).toBe(true);
      }
    } finally {
      await worker.close();
    }
  });

  it('reads the zlib blobs written before Brotli, and refuses a blob of no known format', () => {
    const bytes = Buffer.from('{"message":"stored by an older version"}'.repeat(20));
    expect(decompress(deflateSync(bytes, { level: 1 })).equals(bytes)).toBe(true);
    expect(decodeJson(deflateSync(Buffer.from('{"a":[1,2]}')))).toEqual({ a: [1, 2] });
    expect(() => decompress(Buffer.from('{"not":"compressed"}'))).toThrow(/unknown format/);
    expect(() => decompress(new Uint8Array(0))).toThrow(/unknown format/);
  });

  it('compresses on a worker thread to the same bytes, then refuses work once closed', async () => {
    const worker = new CompressionWorker();
    const inputs = Array.from({ length: 150 }, (_, i) => Buffer.from(JSON.stringify({ i, text: 'x'.repeat(i * 10) })));
    const out = await Promise.all(inputs.map((b) => worker.compress(b)));
    out.forEach((o, i) => {
      expect(o.equals(compress(inputs[i]))).toBe(true);
      expect(decompress(o).equals(inputs[i])).toBe(true);
    });
    await worker.close();
    await expect(worker.compress(inputs[0])).rejects.toThrow(/unavailable|closed/);
  });
});
