// What the serverless edition supplies for the ingest path and the read API without
// Node: Content-Encoding decompression (fflate for gzip and deflate, the `brotli`
// package's decoder for br), the fingerprint MD5 (@noble/hashes, byte for byte the
// digest node:crypto gives), and the store's blob codec for reading payloads back
// (the format src/editions/node/codec.ts writes: a tag byte 0x01 and a Brotli stream, or a
// zlib stream for older rows). All synchronous, as IngestRuntime and DecompressBlob
// ask: Web DecompressionStream is asynchronous.
import {
  Gunzip,
  Inflate,
  Unzlib,
  gunzipSync,
  inflateSync,
  unzlibSync,
  zlibSync,
  type FlateStreamHandler,
} from 'fflate';
import { decompress as brotliDecompress } from 'brotli/decompress';
import { md5 } from '@noble/hashes/legacy.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import type { IngestRuntime } from '../../context.js';
import { DecodedTooLargeError, type CompressionFormat } from '../../ingest/decode.js';
import type { DecompressBlob } from '../../store/stored-payload.js';

/**
 * Input fed to the inflater at a time. Deflate expands at most about 1 032 : 1, so one
 * slice yields at most ~4 MB before the output is counted against the limit.
 */
const INFLATE_SLICE = 4096;

interface FlateStream {
  ondata: FlateStreamHandler;
  push(chunk: Uint8Array, final?: boolean): void;
}

/**
 * Inflates `bytes` within `max` bytes of output. fflate's streaming decoders count the
 * output as it comes, so a bomb stops at the cap, but they accept a truncated stream
 * as complete; the one-shot decoders notice truncation but take no cap. So the stream
 * measures first, and once the output is known to fit, the one-shot decoder makes it
 * (a second pass over the input, which costs less than a millisecond for a typical
 * envelope).
 */
function inflateCapped(
  stream: FlateStream,
  decode: (bytes: Uint8Array) => Uint8Array,
  bytes: Uint8Array,
  max: number,
): Uint8Array {
  let total = 0;
  stream.ondata = (chunk) => {
    total += chunk.byteLength;
    if (total > max) throw new DecodedTooLargeError();
  };
  for (let at = 0; at < bytes.byteLength; at += INFLATE_SLICE) {
    const end = Math.min(bytes.byteLength, at + INFLATE_SLICE);
    stream.push(bytes.subarray(at, end), end === bytes.byteLength);
  }
  if (bytes.byteLength === 0) stream.push(bytes, true);
  return decode(bytes);
}

/**
 * The `brotli` package's decoder grows its output meta-block by meta-block and takes
 * no limit, so the cap is checked on the result: a Brotli bomb costs the isolate the
 * memory of its output before it is refused (Workers give an isolate 128 MB; on the
 * Node edition zlib stops at the cap). It is also lenient: bytes that are not Brotli
 * can decode to nothing instead of failing.
 */
function brotliCapped(bytes: Uint8Array, max: number): Uint8Array {
  const out = brotliDecompress(bytes);
  if (out.byteLength > max) throw new DecodedTooLargeError();
  return out;
}

function decompress(format: CompressionFormat, bytes: Uint8Array, maxOutputLength: number): Uint8Array {
  switch (format) {
    case 'gzip':
      return inflateCapped(new Gunzip(), gunzipSync, bytes, maxOutputLength);
    case 'deflate':
      return inflateCapped(new Unzlib(), unzlibSync, bytes, maxOutputLength);
    case 'deflate-raw':
      return inflateCapped(new Inflate(), inflateSync, bytes, maxOutputLength);
    case 'br':
      return brotliCapped(bytes, maxOutputLength);
  }
}

const encoder = new TextEncoder();

const md5Hex = (text: string): string => bytesToHex(md5(encoder.encode(text)));

export const workersIngestRuntime: IngestRuntime = { decompress, md5Hex };

/** The largest stored blob the read path inflates: a Worker has 128 MB of memory. */
const MAX_BLOB_BYTES = 64 * 1024 * 1024;

/** src/editions/node/codec.ts's formats, decoded without Node. */
export const decompressBlob: DecompressBlob = (blob) => {
  if (blob[0] === 0x01) return brotliCapped(blob.subarray(1), MAX_BLOB_BYTES);
  if (blob[0] === 0x78) return unzlibSync(blob);
  throw new Error(`stored blob has an unknown format (first byte ${blob[0] ?? 'none'})`);
};

/**
 * The blob codec for what the Worker stores (payload chunks): a zlib stream, which
 * decompressBlob here and src/editions/node/codec.ts on the server both read. fflate has no
 * Brotli encoder, and Workers have no synchronous one.
 */
export const compressBlob = (bytes: Uint8Array): Uint8Array => zlibSync(bytes, { level: 6 });
