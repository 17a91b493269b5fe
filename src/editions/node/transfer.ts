// The Node edition's blob codec for export and import (src/transfer): the store's own
// compression and payload packing, which use node:zlib.
import { compress, decompress } from './codec.js';
import { packPayloads } from './payloads.js';
import type { TransferRuntime } from '../../transfer/line-type.js';

export const nodeTransferRuntime: TransferRuntime = { compress, decompress, packPayloads };
