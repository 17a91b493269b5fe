// The Node parts of the ingest path (AppDeps.ingestRuntime): zlib for
// Content-Encoding and legacy /store/ bodies, node:crypto for the fingerprint
// MD5, setImmediate to let ready I/O run before a request is parsed. The ingest
// and HTTP modules themselves use Web APIs only; another
// edition supplies its own (for example a pure-JS inflate and MD5).
import * as crypto from 'node:crypto';
import zlib from 'node:zlib';
import type { IngestRuntime } from '../context.js';
import { DecodedTooLargeError, type CompressionFormat } from '../ingest/decode.js';

function decompress(format: CompressionFormat, bytes: Uint8Array, maxOutputLength: number): Uint8Array {
  // maxOutputLength stops zlib as soon as the output passes the limit (a bomb never
  // allocates more), with ERR_BUFFER_TOO_LARGE.
  const opts = { maxOutputLength };
  try {
    switch (format) {
      case 'gzip':
        return zlib.gunzipSync(bytes, opts);
      case 'deflate':
        return zlib.inflateSync(bytes, opts);
      case 'deflate-raw':
        return zlib.inflateRawSync(bytes, opts);
      case 'br':
        return zlib.brotliDecompressSync(bytes, opts);
    }
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new DecodedTooLargeError();
    throw err;
  }
}

// One-shot crypto.hash is faster; it exists from Node 20.12, older 20.x falls back.
const md5Hex: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('md5', text, 'hex')
    : (text) => crypto.createHash('md5').update(text).digest('hex');

const yieldToIo = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

export const nodeIngestRuntime: IngestRuntime = { decompress, md5Hex, yieldToIo };
