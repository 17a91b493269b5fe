// The serverless edition's blob codec for export and import (src/transfer): payloads
// imported into D1 are packed into chunks as on Node, with the edition's zlib codec
// (runtime.ts), which every edition reads beside Brotli (src/editions/node/codec.ts), so
// a file exported from D1 and imported on Node, or the other way round, reads back byte
// for byte.
import { packPayloads } from '../../store/payloads.js';
import type { TransferRuntime } from '../../transfer/line-type.js';
import { compressBlob, decompressBlob } from './runtime.js';

export const workersTransferRuntime: TransferRuntime = {
  decompress: decompressBlob,
  compress: compressBlob,
  packPayloads: (items) => packPayloads(items, compressBlob),
};
