// Chunked uploads of sentry-cli (`chunk-upload/`): the options the CLI reads, receiving
// gzip chunks from a multipart body one part at a time, verifying each chunk's SHA-1 and
// storing it in the database by that SHA-1 so every instance on the database can
// assemble it. A request's chunks become visible together when all of its parts passed;
// a failed request leaves none. Chunks are kept at most CHUNK_TTL_MS until assembled.
// Where the store's handle carries an object bucket (the serverless edition with R2,
// src/store/blobs.ts), a chunk's bytes are an object written before its row, which keeps
// the key in `r2_key`; every delete here returns the keys and deletes the objects after.
import type { DeleteQueryBuilder, DeleteResult, Kysely } from 'kysely';
import { MultipartError, MultipartLimitError, parseMultipart } from '../symbols/multipart.js';
import { HOUR_MS } from '../clock.js';
import { DecodedTooLargeError, type Decompress } from '../ingest/decode.js';
import type { Database } from '../store/schema.js';
import { bucketOf, chunkBytes, deleteObjects, uploadObjectKey } from '../store/blobs.js';
import { UploadError } from './errors.js';
import { CHUNKS_PER_REQUEST, CHUNK_SIZE, MAX_REQUEST_SIZE, MAX_WAIT_SECONDS } from '../limits.js';

type Db = Kysely<Database>;

/**
 * Parallel chunk requests the CLI makes. Each request holds one chunk (compressed and
 * plain) at a time, so this bounds the memory uploads take.
 */
export const UPLOAD_CONCURRENCY = 2;
/** Chunks not assembled within this time are gone. */
export const CHUNK_TTL_MS = HOUR_MS;

/** What the uploader may send, advertised to sentry-cli 2.x (3.x sends everything). */
export const ACCEPTED_CAPABILITIES = [
  'debug_files',
  'release_files',
  'artifact_bundles',
  'artifact_bundles_v2',
  'proguard',
  'sources',
  'dartsymbolmap',
] as const;

export const SHA1_PATTERN = /^[0-9a-f]{40}$/;

/** The body of `GET chunk-upload/` (docs/api.md "Chunk upload"); `maxFileSize` is the edition's per-file limit. */
export function chunkUploadOptions(uploadUrl: string, maxFileSize: number) {
  return {
    url: uploadUrl,
    chunkSize: CHUNK_SIZE,
    chunksPerRequest: CHUNKS_PER_REQUEST,
    maxFileSize,
    maxRequestSize: MAX_REQUEST_SIZE,
    concurrency: UPLOAD_CONCURRENCY,
    maxWait: MAX_WAIT_SECONDS,
    hashAlgorithm: 'sha1',
    compression: ['gzip'],
    accept: [...ACCEPTED_CAPABILITIES],
  };
}

export type Sha1Hex = (bytes: Uint8Array) => Promise<string>;

/** One-shot SHA-1 through Web Crypto (every edition has it). */
export const webSha1Hex: Sha1Hex = async (bytes) => {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-1', bytes as Uint8Array<ArrayBuffer>));
  let out = '';
  for (const b of digest) out += b.toString(16).padStart(2, '0');
  return out;
};

/** Decompresses a gzip chunk within `limit` bytes; UploadError past it or on bad data. */
export function gunzipChunk(decompress: Decompress, compressed: Uint8Array, limit: number): Uint8Array {
  try {
    return decompress('gzip', compressed, limit);
  } catch (err) {
    if (err instanceof DecodedTooLargeError)
      throw new UploadError(400, `chunk is larger than the chunk size of ${limit} bytes`);
    throw new UploadError(400, 'chunk is not valid gzip data');
  }
}

export interface ReceiveChunksOptions {
  boundary: string;
  now: number;
  /** The edition's capped decompression (AppDeps.ingestRuntime.decompress). */
  decompress: Decompress;
  sha1Hex?: Sha1Hex;
}

/**
 * Reads a chunk-upload multipart body part by part: each part (field `file` or
 * `file_gzip`, filename = SHA-1 of the plain chunk) is decompressed within CHUNK_SIZE,
 * verified and written as pending; when every part passed, the request's chunks become
 * visible in one statement, else its pending rows are deleted. Returns the chunk count.
 */
export async function receiveChunks(
  db: Db,
  body: ReadableStream<Uint8Array>,
  options: ReceiveChunksOptions,
): Promise<number> {
  const sha1Hex = options.sha1Hex ?? webSha1Hex;
  const batch = `${options.now}-${Math.random().toString(36).slice(2)}`;
  const bucket = bucketOf(db);
  let written = 0;
  let count = 0;
  try {
    const parts = parseMultipart(body, options.boundary, {
      maxParts: CHUNKS_PER_REQUEST,
      // Part contents plus room for each part's gzip overhead, boundary and headers.
      maxBytes: MAX_REQUEST_SIZE + CHUNKS_PER_REQUEST * 64 * 1024,
    });
    for await (const part of parts) {
      const field = part.name ?? '';
      if (field !== 'file' && field !== 'file_gzip') {
        if (field === 'file_brotli')
          throw new UploadError(400, 'brotli chunks are not supported; the server offers gzip');
        continue;
      }
      const claimed = (part.filename ?? '').toLowerCase();
      if (!SHA1_PATTERN.test(claimed))
        throw new UploadError(
          400,
          `chunk part filename must be the chunk's SHA-1 (40 hex digits), got ${JSON.stringify(part.filename ?? '')}`,
        );
      // gzip of incompressible data is slightly larger than the data.
      const sent = await part.bytes(CHUNK_SIZE + 64 * 1024);
      const data = field === 'file_gzip' ? gunzipChunk(options.decompress, sent, CHUNK_SIZE) : sent;
      if (data.byteLength > CHUNK_SIZE)
        throw new UploadError(400, `chunk ${claimed} is larger than the chunk size of ${CHUNK_SIZE} bytes`);
      const actual = await sha1Hex(data);
      if (actual !== claimed)
        throw new UploadError(400, `checksum mismatch: chunk named ${claimed} has SHA-1 ${actual}`);
      count++;
      const key = bucket ? uploadObjectKey(options.now) : null;
      if (bucket && key) await bucket.put(key, data);
      const insert = db
        .insertInto('upload_chunks')
        .values({
          sha1: claimed,
          size: data.byteLength,
          data: key ? new Uint8Array(0) : data,
          r2_key: key,
          created_at: options.now,
          batch,
        })
        .onConflict((oc) =>
          oc.column('sha1').doUpdateSet({ created_at: options.now }).where('upload_chunks.batch', 'is', null),
        );
      if (bucket) {
        // A chunk stored before keeps its object: the one just written is named by no row.
        const row = await insert.returning('r2_key').executeTakeFirst();
        if (row) written++;
        if (row?.r2_key !== key) await deleteObjects(bucket, [key]);
      } else {
        const inserted = await insert.executeTakeFirst();
        written += Number(inserted.numInsertedOrUpdatedRows ?? 0);
      }
    }
    if (written > 0) await db.updateTable('upload_chunks').set({ batch: null }).where('batch', '=', batch).execute();
    return count;
  } catch (err) {
    await deleteChunkRows(db, db.deleteFrom('upload_chunks').where('batch', '=', batch)).catch(() => undefined);
    if (err instanceof MultipartLimitError) {
      if (err.limit === 'parts')
        throw new UploadError(400, `too many chunks in one request; at most ${CHUNKS_PER_REQUEST}`);
      if (err.limit === 'part')
        throw new UploadError(400, `chunk is larger than the chunk size of ${CHUNK_SIZE} bytes`);
      throw new UploadError(400, `request is larger than ${MAX_REQUEST_SIZE} bytes`);
    }
    if (err instanceof MultipartError) throw new UploadError(400, `malformed multipart body: ${err.message}`);
    throw err;
  }
}

/** Oldest upload time of a chunk that still counts. */
export function chunkCutoff(now: number): number {
  return now - CHUNK_TTL_MS;
}

/** Sizes of the listed chunks that are stored, complete and fresh. */
export async function presentChunks(db: Db, sha1s: readonly string[], now: number): Promise<Map<string, number>> {
  const found = new Map<string, number>();
  const unique = [...new Set(sha1s)];
  for (let i = 0; i < unique.length; i += 500) {
    const rows = await db
      .selectFrom('upload_chunks')
      .select(['sha1', 'size'])
      .where('sha1', 'in', unique.slice(i, i + 500))
      .where('batch', 'is', null)
      .where('created_at', '>=', chunkCutoff(now))
      .execute();
    for (const r of rows) found.set(r.sha1, Number(r.size));
  }
  return found;
}

/** One stored chunk's bytes, or undefined when it is gone. */
export async function readChunk(db: Db, sha1: string): Promise<Uint8Array | undefined> {
  const row = await db
    .selectFrom('upload_chunks')
    .select(['data', 'r2_key'])
    .where('sha1', '=', sha1)
    .where('batch', 'is', null)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.r2_key === null || row.r2_key === undefined) return row.data;
  const bytes = await chunkBytes(db, row);
  // An object gone (or no bucket to read it from) is a chunk gone.
  return bytes.byteLength === 0 && row.r2_key ? undefined : bytes;
}

type ChunkDelete = DeleteQueryBuilder<Database, 'upload_chunks', DeleteResult>;

/** Runs a delete of chunk rows, then deletes the objects they named; the rows deleted. */
async function deleteChunkRows(db: Db, query: ChunkDelete): Promise<number> {
  const bucket = bucketOf(db);
  if (!bucket) return Number((await query.executeTakeFirst()).numDeletedRows ?? 0);
  const rows = await query.returning('r2_key').execute();
  await deleteObjects(
    bucket,
    rows.map((r) => r.r2_key),
  );
  return rows.length;
}

/** Removes chunks once the files made of them are assembled. */
export async function deleteChunks(db: Db, sha1s: readonly string[]): Promise<void> {
  const unique = [...new Set(sha1s)];
  for (let i = 0; i < unique.length; i += 500) {
    await deleteChunkRows(db, db.deleteFrom('upload_chunks').where('sha1', 'in', unique.slice(i, i + 500)));
  }
}

/** Housekeeping: deletes chunks older than the TTL (pending ones of a dead request too); a sweeper of retention (src/editions/retention.ts). */
export async function deleteExpiredChunks(db: Db, now: number): Promise<number> {
  return deleteChunkRows(db, db.deleteFrom('upload_chunks').where('created_at', '<', chunkCutoff(now)));
}
