// Blob codec for stored event payloads (`events.detail`, `events.raw`): zlib
// deflate at level 1. On event-sized JSON level 1 costs a third to a half of the
// default level's CPU and its output is only 5-8 % larger, and ingest runs it for
// every stored event. The synchronous zlib calls are deliberate: on ~3-20 KB
// inputs the async variants cost several times more main-thread time in stream
// set-up than the compression itself (compression-worker.ts moves the same work to
// another thread instead). A zlib stream always starts with 0x78, so another format
// can be added later and told apart by its first byte.
import zlib from 'node:zlib';

/** Shared with the compression worker, so both produce the same bytes. */
export const DEFLATE_LEVEL = 1;
const DEFLATE_OPTIONS: zlib.ZlibOptions = { level: DEFLATE_LEVEL };

/** Compresses bytes for storage. */
export function compress(bytes: Uint8Array): Buffer {
  return zlib.deflateSync(bytes, DEFLATE_OPTIONS);
}

/** The bytes `compress` was given. Accepts what either database driver returns for a blob column. */
export function decompress(blob: Uint8Array): Buffer {
  return zlib.inflateSync(blob);
}

/** A compressed JSON document (event detail written before it was derived on read). */
export function decodeJson<T = unknown>(blob: Uint8Array): T {
  return JSON.parse(decompress(blob).toString('utf8')) as T;
}
