// The serverless edition's blob codec for export and import (src/transfer): payloads
// imported into D1 are packed into chunks as on Node, compressed as zlib streams by
// fflate (Workers have no synchronous Brotli encoder); the store reads zlib blobs beside
// Brotli ones on every edition (src/store/codec.ts), so a file exported from D1 and
// imported on Node, or the other way round, reads back byte for byte.
import { zlibSync } from 'fflate';
import { packPayloadsWith } from '../../store/payload-packing.js';
import type { TransferRuntime } from '../../transfer/line-type.js';
import { decompressBlob } from './runtime.js';

/** zlib level: payload chunks of one application compress well at a fast level. */
const ZLIB_LEVEL = 6;

const compress = (bytes: Uint8Array): Uint8Array => zlibSync(bytes, { level: ZLIB_LEVEL });

export const workersTransferRuntime: TransferRuntime = {
  decompress: decompressBlob,
  compress,
  packPayloads: (items) => packPayloadsWith(items, compress),
};
