// Blob codec for stored event payloads (payload chunks, `events.raw`, and
// `events.detail` of old rows). New blobs are one tag byte (BROTLI_TAG) and a Brotli
// stream at quality 0 (BROTLI_QUALITY says why not 1). Blobs written before start with
// the same tag (Brotli at quality 1, one decoder reads every quality) or with zlib's
// 0x78, and are still read. The synchronous calls are deliberate: on inputs this small
// the async variants cost more in stream set-up than the compression itself (ingest
// compresses inside the batch: on the batch thread for SQLite, on the main thread for
// PostgreSQL).
import zlib from 'node:zlib';
import { decodeJsonBlob } from '../../store/stored-payload.js';

/** First byte of a Brotli blob. A zlib stream (the older format) always starts with 0x78. */
export const BROTLI_TAG = 0x01;
const ZLIB_FIRST_BYTE = 0x78;
/**
 * Quality 0, not 1. On a payload chunk (20-30 events, 100-256 KB) quality 1 allocates
 * and frees over a megabyte of work buffers per call, and that memory is faulted in
 * anew (glibc hands it back to the kernel after every call). Measured at saturation:
 * 1-4 page faults per request with quality 1, 0.3-0.7 with quality 0; the batch thread
 * spends 177 against 147 µs of CPU per request (requests/s +13 %), and on PostgreSQL,
 * where the main thread compresses, that thread 252 against 188 µs (+23 %). The price
 * is bytes: 250 instead of 223 per event on the benchmark's payloads, 1 446 instead of
 * 1 109 on payloads with every digit randomised.
 */
const BROTLI_QUALITY = 0;
/**
 * Output buffer size for `bytes`: half the input. zlib's default allocates 16 KB per
 * call; the size fits one event compressed alone (its JSON shrinks to about a quarter),
 * so half fits in one buffer (a larger output simply takes a second one), and below
 * 4 KB Node takes it from its shared Buffer pool (measured: 24.1 -> 22.0 µs per call).
 * A payload chunk shrinks to about 3 %, so for chunks this buffer is many times the
 * output; a smaller one for chunks is unmeasured.
 */
export function brotliChunkSize(inputBytes: number): number {
  return Math.max(64, inputBytes >>> 1);
}

/** Compresses bytes for storage. */
export function compress(bytes: Uint8Array): Buffer {
  const packed = zlib.brotliCompressSync(bytes, {
    chunkSize: brotliChunkSize(bytes.byteLength),
    params: {
      [zlib.constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY,
      [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength,
    },
  });
  const blob = Buffer.allocUnsafe(packed.length + 1);
  blob[0] = BROTLI_TAG;
  packed.copy(blob, 1);
  return blob;
}

/** The bytes `compress` was given. Accepts what either database driver returns for a blob column. */
export function decompress(blob: Uint8Array): Buffer {
  if (blob[0] === BROTLI_TAG) return zlib.brotliDecompressSync(blob.subarray(1));
  if (blob[0] === ZLIB_FIRST_BYTE) return zlib.inflateSync(blob);
  throw new Error(`stored blob has an unknown format (first byte ${blob[0] ?? 'none'})`);
}

/** A compressed JSON document (event detail written before it was derived on read). */
export function decodeJson<T = unknown>(blob: Uint8Array): T {
  return decodeJsonBlob<T>(blob, decompress);
}
