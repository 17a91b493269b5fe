// Request body reading and Content-Encoding decoding, with a hard size cap on
// both the bytes received and the bytes decoded (a small gzip bomb is a 413,
// never an out-of-memory). Web APIs only: the decompressor itself is injected by
// the edition (Node: zlib, src/editions/node/runtime.ts).
import { BadPayloadError, ClientAbortedError, PayloadTooLargeError } from '../errors.js';
import { concatBytes } from '../bytes.js';

/** Compression formats, named as the Web's DecompressionStream names them (plus brotli). */
export type CompressionFormat = 'gzip' | 'deflate' | 'deflate-raw' | 'br';

/**
 * Undoes one compression synchronously. Must throw DecodedTooLargeError as soon as the
 * output would pass `maxOutputLength` (so a bomb never allocates more than that); any
 * other error means the bytes are not valid data of that format. `deflate` is the
 * zlib-wrapped format (RFC 1950), `deflate-raw` the bare stream (RFC 1951).
 */
export type Decompress = (format: CompressionFormat, bytes: Uint8Array, maxOutputLength: number) => Uint8Array;

/** Thrown by a Decompress when the output passes its maxOutputLength. */
export class DecodedTooLargeError extends Error {
  constructor() {
    super('decoded output exceeds the limit');
    this.name = 'DecodedTooLargeError';
  }
}

const EMPTY = new Uint8Array(0);

/**
 * Reads a request body stream into one buffer. Throws PayloadTooLargeError as
 * soon as more than `limit` bytes arrived, cancelling the stream so the rest is
 * never buffered.
 */
export async function readBody(body: ReadableStream<Uint8Array> | null, limit: number): Promise<Uint8Array> {
  if (!body) return EMPTY;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (err) {
        // The request's body stream fails only when the client went away mid-body.
        throw new ClientAbortedError({ cause: err });
      }
      const { done, value } = chunk;
      if (done) break;
      if (!value || value.byteLength === 0) continue;
      total += value.byteLength;
      if (total > limit) {
        // Do not wait for the client to finish sending: stop reading here.
        reader.cancel().catch(() => {});
        throw new PayloadTooLargeError(`request body exceeds the limit of ${limit} bytes`);
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  if (chunks.length === 0) return EMPTY;
  return concatBytes(chunks, total);
}

/**
 * Decodes a body by its Content-Encoding: gzip / x-gzip, deflate (zlib-wrapped
 * as the HTTP spec says, raw deflate tolerated), br; anything else is identity.
 * A comma-separated list is undone last-applied first. The decoded size is
 * capped by the decompressor, so decoding stops as soon as it passes `limit`.
 */
export function decodeContent(
  bytes: Uint8Array,
  contentEncoding: string | null,
  limit: number,
  decompress: Decompress,
): Uint8Array {
  if (!contentEncoding) return bytes;
  const codings = contentEncoding.split(',');
  let out = bytes;
  for (let i = codings.length - 1; i >= 0; i--) {
    const coding = codings[i].trim().toLowerCase();
    if (coding === '' || coding === 'identity' || out.byteLength === 0) continue;
    out = decodeOne(out, coding, limit, decompress);
  }
  return out;
}

function decodeOne(bytes: Uint8Array, coding: string, limit: number, decompress: Decompress): Uint8Array {
  try {
    switch (coding) {
      case 'gzip':
      case 'x-gzip':
        return decompress('gzip', bytes, limit);
      case 'deflate':
        return looksZlibWrapped(bytes)
          ? inflateEitherWay(bytes, limit, decompress)
          : decompress('deflate-raw', bytes, limit);
      case 'br':
        return decompress('br', bytes, limit);
      default:
        // Unknown codings (zstd is not in Node 20) are passed through as identity.
        return bytes;
    }
  } catch (err) {
    if (err instanceof DecodedTooLargeError) {
      throw new PayloadTooLargeError(`decoded request body exceeds the limit of ${limit} bytes`);
    }
    const reason = err instanceof Error ? err.message : String(err);
    throw new BadPayloadError(`request body is not valid ${coding} data (${reason})`);
  }
}

/** RFC 1950 header: compression method 8, window ≤ 32K, header checksum divisible by 31. */
function looksZlibWrapped(b: Uint8Array): boolean {
  if (b.byteLength < 2) return false;
  const cmf = b[0];
  return (cmf & 0x0f) === 8 && cmf >> 4 <= 7 && ((cmf << 8) | b[1]) % 31 === 0;
}

function inflateEitherWay(bytes: Uint8Array, limit: number, decompress: Decompress): Uint8Array {
  try {
    return decompress('deflate', bytes, limit);
  } catch (err) {
    // A raw deflate stream can start with bytes that pass the zlib header check.
    if (err instanceof DecodedTooLargeError) throw err;
    try {
      return decompress('deflate-raw', bytes, limit);
    } catch (rawErr) {
      throw rawErr instanceof DecodedTooLargeError ? rawErr : err;
    }
  }
}
