// Request body reading and Content-Encoding decoding, with a hard size cap on
// both the bytes received and the bytes decoded (a small gzip bomb is a 413,
// never an out-of-memory).
import zlib from 'node:zlib';
import { BadPayloadError, PayloadTooLargeError } from './errors.js';

/** 20 MB, counted as 20 × 1024 × 1024 bytes = 20 971 520 bytes, for received and for decoded bytes. */
export const MAX_BODY_BYTES = 20 * 1024 * 1024;

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
      const { done, value } = await reader.read();
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
  if (chunks.length === 1) return chunks[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/**
 * Decodes a body by its Content-Encoding: gzip / x-gzip, deflate (zlib-wrapped
 * as the HTTP spec says, raw deflate tolerated), br; anything else is identity.
 * A comma-separated list is undone last-applied first. The decoded size is
 * capped by zlib's maxOutputLength, so decoding stops as soon as it passes `limit`.
 */
export function decodeContent(bytes: Uint8Array, contentEncoding: string | null, limit: number): Uint8Array {
  if (!contentEncoding) return bytes;
  const codings = contentEncoding.split(',');
  let out = bytes;
  for (let i = codings.length - 1; i >= 0; i--) {
    const coding = codings[i].trim().toLowerCase();
    if (coding === '' || coding === 'identity' || out.byteLength === 0) continue;
    out = decodeOne(out, coding, limit);
  }
  return out;
}

function decodeOne(bytes: Uint8Array, coding: string, limit: number): Uint8Array {
  const opts = { maxOutputLength: limit };
  try {
    switch (coding) {
      case 'gzip':
      case 'x-gzip':
        return zlib.gunzipSync(bytes, opts);
      case 'deflate':
        return looksZlibWrapped(bytes) ? inflateEitherWay(bytes, opts) : zlib.inflateRawSync(bytes, opts);
      case 'br':
        return zlib.brotliDecompressSync(bytes, opts);
      default:
        // Unknown codings (zstd is not in Node 20) are passed through as identity.
        return bytes;
    }
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
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

function inflateEitherWay(bytes: Uint8Array, opts: zlib.ZlibOptions): Uint8Array {
  try {
    return zlib.inflateSync(bytes, opts);
  } catch (err) {
    // A raw deflate stream can start with bytes that pass the zlib header check.
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw err;
    try {
      return zlib.inflateRawSync(bytes, opts);
    } catch (rawErr) {
      throw (rawErr as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE' ? rawErr : err;
    }
  }
}
