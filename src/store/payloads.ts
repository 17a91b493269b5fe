// Raw event payloads as stored: ingest packs the payloads a batch stores for one
// project into `payload_chunks` rows, each compressed as one codec blob, and every
// event row names its chunk and byte range (migration 008). Compressing event by
// event would pay Brotli's set-up for every event and could not use what events of one
// application share (the same SDK, frames, contexts): measured on the benchmark's
// payloads, one call per chunk takes a tenth of the CPU and writes a twentieth of the
// bytes, and on payloads with every number and id randomised still less than half of
// both. A chunk holds at most PAYLOAD_CHUNK_MAX_BYTES before compression, so showing
// one event decompresses at most that much. Rows stored before migration 008 keep a
// blob of their own in `events.raw`. On the serverless edition with a bucket bound, a
// chunk's blob is an object and its row names it (src/store/blobs.ts).
// The codec is the edition's (Node: src/editions/node/codec.ts), passed in, so this
// module runs on every edition.
import type { Kysely } from 'kysely';
import type { Database, EventRow } from './schema.js';
import type { DecompressBlob } from './stored-payload.js';
import { readPayloadChunks, type BlobBucket } from './blobs.js';
import { concatBytes } from '../bytes.js';

/** Compresses bytes into a stored blob (the inverse of DecompressBlob). */
export type CompressBlob = (bytes: Uint8Array) => Uint8Array;

/** Uncompressed bytes a chunk holds at most; a larger payload gets a chunk of its own. */
export const PAYLOAD_CHUNK_MAX_BYTES = 256 * 1024;

export interface PayloadToPack {
  projectId: number;
  receivedAt: number;
  payload: Uint8Array;
}

export interface PackedChunk {
  projectId: number;
  /** The newest receive time of its events: retention deletes the chunk after them. */
  receivedAt: number;
  /** Codec blob of the payloads one after another. */
  data: Uint8Array;
  /** Indexes (into the packed list) of the payloads it holds, in order. */
  members: number[];
}

export interface PayloadSlot {
  /** Index into the chunk list. */
  chunk: number;
  start: number;
  length: number;
}

/**
 * Packs payloads into compressed chunks, one project per chunk, keeping each project's
 * payloads in the given order. Returns the chunks and, per payload, where it went.
 */
export interface PackedPayloads {
  chunks: PackedChunk[];
  /** Per payload packed, in order: where it went. */
  slots: PayloadSlot[];
}

export function packPayloads(items: PayloadToPack[], compress: CompressBlob): PackedPayloads {
  const byProject = new Map<number, number[]>();
  items.forEach((item, i) => {
    const list = byProject.get(item.projectId);
    if (list) list.push(i);
    else byProject.set(item.projectId, [i]);
  });
  const chunks: PackedChunk[] = [];
  const slots: PayloadSlot[] = new Array(items.length);
  for (const [projectId, indexes] of byProject) {
    let members: number[] = [];
    let bytes = 0;
    const close = () => {
      if (members.length === 0) return;
      const parts = members.map((i) => items[i].payload);
      chunks.push({
        projectId,
        receivedAt: Math.max(...members.map((i) => items[i].receivedAt)),
        data: compress(concatBytes(parts, bytes)),
        members,
      });
      members = [];
      bytes = 0;
    };
    for (const i of indexes) {
      const length = items[i].payload.byteLength;
      if (members.length > 0 && bytes + length > PAYLOAD_CHUNK_MAX_BYTES) close();
      slots[i] = { chunk: chunks.length, start: bytes, length };
      members.push(i);
      bytes += length;
    }
    close();
  }
  return { chunks, slots };
}

/**
 * The raw payloads of several stored events, each chunk read and decompressed once
 * (re-symbolication reads a few hundred events of neighbouring chunks at a time).
 */
export async function readStoredPayloads(
  db: Kysely<Database>,
  rows: Pick<EventRow, 'id' | 'raw' | 'payload_chunk' | 'payload_start' | 'payload_length'>[],
  decompress: DecompressBlob,
  bucket?: BlobBucket,
): Promise<Map<number, Uint8Array>> {
  const out = new Map<number, Uint8Array>();
  const chunkIds = [
    ...new Set(
      rows.filter((r) => r.payload_chunk !== null && r.payload_chunk !== undefined).map((r) => Number(r.payload_chunk)),
    ),
  ];
  const chunks = await readPayloadChunks(db, chunkIds, decompress, bucket);
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
