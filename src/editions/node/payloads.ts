// Stored payloads with the Node edition's codec (codec.ts): packing as ingest and import
// do, and reading back as Buffers for Node-side callers (re-symbolication, tests).
import type { Kysely } from 'kysely';
import {
  packPayloads as packWith,
  readStoredPayloads,
  type PackedPayloads,
  type PayloadToPack,
} from '../../store/payloads.js';
import type { Database, EventRow } from '../../store/schema.js';
import { readStoredPayload } from '../../store/stored-payload.js';
import { compress, decompress } from './codec.js';

export function packPayloads(items: PayloadToPack[]): PackedPayloads {
  return packWith(items, compress);
}

/** readStoredPayload with this process's codec, as a Buffer. */
export async function storedPayload(
  db: Kysely<Database>,
  row: Pick<EventRow, 'raw' | 'payload_chunk' | 'payload_start' | 'payload_length'>,
): Promise<Buffer> {
  const bytes = await readStoredPayload(db, row, decompress);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** readStoredPayloads with this process's codec (SymbolService's readPayloads). */
export function storedPayloads(
  db: Kysely<Database>,
  rows: Pick<EventRow, 'id' | 'raw' | 'payload_chunk' | 'payload_start' | 'payload_length'>[],
): Promise<Map<number, Uint8Array>> {
  return readStoredPayloads(db, rows, decompress);
}
