// Body reading and Content-Encoding decoding: limits on received and decoded bytes.
import { brotliCompressSync, constants, deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { decodeContent, readBody } from '../../src/ingest/decode.js';
import { MAX_BODY_BYTES } from '../../src/limits.js';
import { BadPayloadError, PayloadTooLargeError } from '../../src/errors.js';
import { nodeIngestRuntime } from '../../src/editions/node/runtime.js';

const { decompress } = nodeIngestRuntime;

const enc = new TextEncoder();
/** Brotli at a middle quality: the default (11) takes seconds on 30 MB. */
const brotli = (b: Uint8Array) => brotliCompressSync(b, { params: { [constants.BROTLI_PARAM_QUALITY]: 5 } });
const JSON_BODY = enc.encode('{"event_id":"53581e2b976e4b7c89e8cf789073fd8e","message":"hello"}');

/** A stream that yields `chunk` `times` times (Infinity = forever), counting pulls and cancels. */
function chunkStream(chunk: Uint8Array, times: number) {
  const stats = { pulls: 0, cancelled: false };
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (stats.pulls >= times) {
        controller.close();
        return;
      }
      stats.pulls++;
      controller.enqueue(chunk);
    },
    cancel() {
      stats.cancelled = true;
    },
  });
  return { stream, stats };
}

describe('MAX_BODY_BYTES', () => {
  it('is 20 MB counted as 20 × 1024 × 1024 bytes', () => {
    expect(MAX_BODY_BYTES).toBe(20_971_520);
  });
});

describe('readBody', () => {
  it('returns an empty body for a missing stream', async () => {
    expect((await readBody(null, 100)).byteLength).toBe(0);
  });

  it('joins chunks in order', async () => {
    const { stream } = chunkStream(enc.encode('abc'), 3);
    expect(new TextDecoder().decode(await readBody(stream, 100))).toBe('abcabcabc');
  });

  it('accepts a body of exactly the limit', async () => {
    const { stream } = chunkStream(new Uint8Array(25), 4);
    expect((await readBody(stream, 100)).byteLength).toBe(100);
  });

  it('refuses one byte over the limit', async () => {
    const { stream } = chunkStream(new Uint8Array(101), 1);
    await expect(readBody(stream, 100)).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('refuses 20 MB + 1 byte with the real limit', async () => {
    const chunk = new Uint8Array(64 * 1024);
    const chunks = MAX_BODY_BYTES / chunk.byteLength; // 320 full chunks = exactly the limit
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < chunks; i++) controller.enqueue(chunk);
        controller.enqueue(new Uint8Array(1));
        controller.close();
      },
    });
    await expect(readBody(stream, MAX_BODY_BYTES)).rejects.toBeInstanceOf(PayloadTooLargeError);
  });

  it('stops reading and cancels the stream as soon as the limit is passed', async () => {
    const { stream, stats } = chunkStream(new Uint8Array(1000), Infinity);
    await expect(readBody(stream, 10_000)).rejects.toBeInstanceOf(PayloadTooLargeError);
    // 11 chunks pass the limit; a stream's queue may pre-pull one more, never the rest.
    expect(stats.pulls).toBeLessThanOrEqual(13);
    expect(stats.cancelled).toBe(true);
  });
});

describe('decodeContent', () => {
  it('passes the bytes through without a Content-Encoding, for identity and unknown codings', () => {
    expect(decodeContent(JSON_BODY, null, 1000, decompress)).toBe(JSON_BODY);
    expect(decodeContent(JSON_BODY, 'identity', 1000, decompress)).toBe(JSON_BODY);
    expect(decodeContent(JSON_BODY, 'compress-me-not', 1000, decompress)).toBe(JSON_BODY);
  });

  it.each([
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['GZIP', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ])('decodes %s', (coding, compress) => {
    const out = decodeContent(compress(JSON_BODY), coding, 1000, decompress);
    expect(Buffer.from(out).equals(Buffer.from(JSON_BODY))).toBe(true);
  });

  it('tolerates raw deflate (no zlib wrapper) for Content-Encoding deflate', () => {
    const out = decodeContent(deflateRawSync(JSON_BODY), 'deflate', 1000, decompress);
    expect(Buffer.from(out).equals(Buffer.from(JSON_BODY))).toBe(true);
  });

  it('undoes a list of codings last-applied first', () => {
    const twice = brotliCompressSync(gzipSync(JSON_BODY));
    const out = decodeContent(twice, 'gzip, br', 1000, decompress);
    expect(Buffer.from(out).equals(Buffer.from(JSON_BODY))).toBe(true);
  });

  it('refuses a truncated gzip body as a bad payload', () => {
    const gz = gzipSync(JSON_BODY);
    expect(() => decodeContent(gz.subarray(0, gz.length - 10), 'gzip', 1000, decompress)).toThrow(BadPayloadError);
  });

  it.each(['gzip', 'deflate', 'br'])('refuses corrupt %s data as a bad payload', (coding) => {
    expect(() => decodeContent(enc.encode('this is not compressed at all'), coding, 1000, decompress)).toThrow(
      BadPayloadError,
    );
  });

  it('accepts a decoded size of exactly the limit and refuses one byte more', () => {
    expect(decodeContent(gzipSync(new Uint8Array(1000)), 'gzip', 1000, decompress).byteLength).toBe(1000);
    expect(() => decodeContent(gzipSync(new Uint8Array(1001)), 'gzip', 1000, decompress)).toThrow(PayloadTooLargeError);
  });

  it('refuses a body that decodes to 20 MB + 1 byte', () => {
    const gz = gzipSync(new Uint8Array(MAX_BODY_BYTES + 1));
    expect(() => decodeContent(gz, 'gzip', MAX_BODY_BYTES, decompress)).toThrow(PayloadTooLargeError);
  });

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotli],
  ])('refuses a ~30 KB %s body that decodes past 20 MB', (coding, compress) => {
    const bomb = compress(new Uint8Array(30 * 1024 * 1024));
    expect(bomb.byteLength).toBeLessThan(40 * 1024);
    expect(() => decodeContent(bomb, coding, MAX_BODY_BYTES, decompress)).toThrow(PayloadTooLargeError);
  });
});
