// Reading a stored event's raw payload back: from its payload chunk (src/store/payloads.ts
// says how ingest packs them) or from its own blob in `events.raw` (rows written before
// chunks). The shared app reaches this module, so it uses Web APIs only: the blob codec
// is the edition's, passed in (AppDeps.decompressBlob; Node: src/editions/node/codec.ts).
import type { Kysely } from 'kysely';
import type { Database, EventRow } from './schema.js';

/** Gives back the bytes a stored blob was made from. */
export type DecompressBlob = (blob: Uint8Array) => Uint8Array;

/**
 * The raw payload of a stored event as received. Empty when the chunk is gone, which
 * retention never does while one of its events is left.
 */
export async function readStoredPayload(
  db: Kysely<Database>,
  row: Pick<EventRow, 'raw' | 'payload_chunk' | 'payload_start' | 'payload_length'>,
  decompress: DecompressBlob,
): Promise<Uint8Array> {
  if (row.payload_chunk === null || row.payload_chunk === undefined) return decompress(row.raw);
  const chunk = await db.selectFrom('payload_chunks').select('data').where('id', '=', Number(row.payload_chunk)).executeTakeFirst();
  if (!chunk) return new Uint8Array(0);
  const start = Number(row.payload_start ?? 0);
  return decompress(chunk.data).subarray(start, start + Number(row.payload_length ?? 0));
}

/** A compressed JSON document (`events.detail` of rows written before the detail was derived on read). */
export function decodeJsonBlob<T = unknown>(blob: Uint8Array, decompress: DecompressBlob): T {
  return JSON.parse(new TextDecoder().decode(decompress(blob))) as T;
}
