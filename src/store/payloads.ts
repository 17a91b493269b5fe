// Raw event payloads as stored: ingest packs the payloads a batch stores for one
// project into `payload_chunks` rows, each compressed as one codec blob, and every
// event row names its chunk and byte range (migration 008). Compressing event by
// event would pay Brotli's set-up for every event and could not use what events of one
// application share (the same SDK, frames, contexts): measured on the benchmark's
// payloads, one call per chunk takes a tenth of the CPU and writes a twentieth of the
// bytes, and on payloads with every number and id randomised still less than half of
// both. A chunk holds at most PAYLOAD_CHUNK_MAX_BYTES before compression, so showing
// one event decompresses at most that much. Rows stored before migration 008 keep a
// blob of their own in `events.raw`.
import type { Kysely } from 'kysely';
import { compress, decompress } from './codec.js';
import type { Database, EventRow } from './schema.js';
import { readStoredPayload } from './stored-payload.js';
import { packPayloadsWith, type PackedChunk as PackedChunkOf, type PayloadSlot, type PayloadToPack } from './payload-packing.js';

export { PAYLOAD_CHUNK_MAX_BYTES, type PayloadSlot, type PayloadToPack } from './payload-packing.js';

export type PackedChunk = PackedChunkOf<Buffer>;

/**
 * Packs payloads into compressed chunks, one project per chunk, keeping each project's
 * payloads in the given order. Returns the chunks and, per payload, where it went.
 */
export function packPayloads(items: PayloadToPack[]): { chunks: PackedChunk[]; slots: PayloadSlot[] } {
  return packPayloadsWith(items, compress);
}

/** readStoredPayload with this process's codec, as a Buffer, for Node-side callers. */
export async function storedPayload(
  db: Kysely<Database>,
  row: Pick<EventRow, 'raw' | 'payload_chunk' | 'payload_start' | 'payload_length'>,
): Promise<Buffer> {
  const bytes = await readStoredPayload(db, row, decompress);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/**
 * The raw payloads of several stored events, each chunk read and decompressed once
 * (re-symbolication reads a few hundred events of neighbouring chunks at a time).
 */
export async function storedPayloads(
  db: Kysely<Database>,
  rows: Pick<EventRow, 'id' | 'raw' | 'payload_chunk' | 'payload_start' | 'payload_length'>[],
): Promise<Map<number, Uint8Array>> {
  const out = new Map<number, Uint8Array>();
  const chunkIds = [...new Set(rows.filter((r) => r.payload_chunk !== null && r.payload_chunk !== undefined).map((r) => Number(r.payload_chunk)))];
  const chunks = new Map<number, Buffer>();
  for (let i = 0; i < chunkIds.length; i += 200) {
    const found = await db.selectFrom('payload_chunks').select(['id', 'data']).where('id', 'in', chunkIds.slice(i, i + 200)).execute();
    for (const c of found) chunks.set(Number(c.id), decompress(c.data));
  }
  for (const r of rows) {
    if (r.payload_chunk === null || r.payload_chunk === undefined) {
      out.set(Number(r.id), decompress(r.raw));
      continue;
    }
    const data = chunks.get(Number(r.payload_chunk));
    const start = Number(r.payload_start ?? 0);
    out.set(Number(r.id), data ? data.subarray(start, start + Number(r.payload_length ?? 0)) : new Uint8Array(0));
  }
  return out;
}
