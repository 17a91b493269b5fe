// Reading a stored event's raw payload back: from its payload chunk (src/store/payloads.ts
// says how ingest packs them) or from its own blob in `events.raw` (rows written before
// chunks), the chunk's bytes in its row or in the edition's bucket (src/store/blobs.ts).
// The shared app reaches this module, so it uses Web APIs only: the blob codec and the
// bucket are the edition's, passed in (AppDeps.decompressBlob and AppDeps.blobs; Node:
// src/editions/node/codec.ts and no bucket).
import type { Kysely } from 'kysely';
import { readPayloadChunks, type BlobBucket } from './blobs.js';
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
  bucket?: BlobBucket,
): Promise<Uint8Array> {
  if (row.payload_chunk === null || row.payload_chunk === undefined) return decompress(row.raw);
  const chunk = (await readPayloadChunks(db, [Number(row.payload_chunk)], decompress, bucket)).get(
    Number(row.payload_chunk),
  );
  if (!chunk) return new Uint8Array(0);
  const start = Number(row.payload_start ?? 0);
  return chunk.subarray(start, start + Number(row.payload_length ?? 0));
}

/** A compressed JSON document (`events.detail` of rows written before the detail was derived on read). */
export function decodeJsonBlob<T = unknown>(blob: Uint8Array, decompress: DecompressBlob): T {
  return JSON.parse(new TextDecoder().decode(decompress(blob))) as T;
}
