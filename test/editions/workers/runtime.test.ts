// The serverless edition's pure-JS codecs and MD5 against Node's zlib and crypto: the
// same bytes out, the same fingerprints, the same caps on decompression bombs.
import crypto from 'node:crypto';
import zlib from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decompressBlob, workersIngestRuntime } from '../../../src/editions/workers/runtime.js';
import { nodeIngestRuntime } from '../../../src/editions/node/runtime.js';
import { DecodedTooLargeError, type CompressionFormat } from '../../../src/ingest/decode.js';
import { compress } from '../../../src/editions/node/codec.js';

const { decompress, md5Hex } = workersIngestRuntime;

function sample(size: number): Buffer {
  // Compressible but not trivial: JSON-ish lines with random digits.
  const lines: string[] = [];
  let n = 0;
  while (n < size) {
    const line = `{"event_id":"${crypto.randomBytes(16).toString('hex')}","n":${n},"msg":"héllo wörld ✓"}\n`;
    lines.push(line);
    n += line.length;
  }
  return Buffer.from(lines.join('')).subarray(0, size);
}

const encoders: Record<CompressionFormat, (b: Buffer) => Buffer> = {
  gzip: (b) => zlib.gzipSync(b),
  deflate: (b) => zlib.deflateSync(b),
  'deflate-raw': (b) => zlib.deflateRawSync(b),
  br: (b) => zlib.brotliCompressSync(b),
};

describe('workers ingest runtime', () => {
  for (const format of Object.keys(encoders) as CompressionFormat[]) {
    it(`${format}: decodes what Node encodes, at several sizes`, () => {
      for (const size of [0, 1, 5_000, 300_000, 600_000]) {
        const plain = sample(size);
        const packed = encoders[format](plain);
        const out = decompress(format, packed, 20 * 1024 * 1024);
        expect(Buffer.from(out).equals(plain)).toBe(true);
        expect(Buffer.from(out).equals(nodeIngestRuntime.decompress(format, packed, 20 * 1024 * 1024))).toBe(true);
      }
    });

    it(`${format}: stops a bomb at the limit, as Node's does`, () => {
      const bomb = encoders[format](Buffer.alloc(4 * 1024 * 1024));
      expect(() => nodeIngestRuntime.decompress(format, bomb, 1024 * 1024)).toThrow(DecodedTooLargeError);
      expect(() => decompress(format, bomb, 1024 * 1024)).toThrow(DecodedTooLargeError);
      // Exactly at the limit still decodes.
      const exact = encoders[format](Buffer.alloc(1024 * 1024, 7));
      expect(decompress(format, exact, 1024 * 1024).byteLength).toBe(1024 * 1024);
    });

    it(`${format}: refuses bytes that are not ${format} data, and truncated streams`, () => {
      const packed = encoders[format](sample(50_000));
      // Cut in the middle, in the trailer, one byte short (Brotli: in the middle).
      const cuts =
        format === 'br'
          ? [packed.length >> 1]
          : [packed.length >> 1, packed.length - 9, packed.length - 4, packed.length - 1];
      for (const cut of cuts) {
        expect(
          () => nodeIngestRuntime.decompress(format, packed.subarray(0, cut), 1 << 24),
          `node, cut at ${cut}`,
        ).toThrow();
        expect(() => decompress(format, packed.subarray(0, cut), 1 << 24), `cut at ${cut}`).toThrow();
      }
      // The Brotli decoder is lenient (runtime.ts): bytes that are not Brotli need not fail.
      if (format !== 'deflate-raw' && format !== 'br')
        expect(() => decompress(format, Buffer.from('not compressed at all, no'), 1 << 24)).toThrow();
    });
  }

  it('MD5 gives the digest node:crypto gives, for any text', () => {
    const texts = [
      '',
      'a',
      'héllo',
      '✓'.repeat(1000),
      '\ud800 lone surrogate \udfff',
      crypto.randomBytes(5000).toString('latin1'),
    ];
    for (let i = 0; i < 100; i++)
      texts.push(String.fromCharCode(...Array.from({ length: i * 7 }, () => Math.floor(Math.random() * 0xffff))));
    for (const t of texts) expect(md5Hex(t)).toBe(nodeIngestRuntime.md5Hex(t));
  });
});

describe('workers blob codec', () => {
  it('reads what the Node codec writes (Brotli at quality 0, and old zlib rows)', () => {
    for (const size of [0, 10, 100_000, 1_000_000]) {
      const plain = sample(size);
      expect(Buffer.from(decompressBlob(compress(plain))).equals(plain)).toBe(true);
      expect(Buffer.from(decompressBlob(zlib.deflateSync(plain))).equals(plain)).toBe(true);
    }
    expect(() => decompressBlob(new Uint8Array([0x42, 1, 2]))).toThrow(/unknown format/);
  });
});
