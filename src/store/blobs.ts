// Bytes in an object store instead of the database: on the serverless edition with an R2
// bucket bound (`BLOBS`), payload chunks, attachment chunks, symbol file chunks and
// sentry-cli upload chunks keep their row in D1 (with the object's key in `r2_key`) and
// their bytes in the bucket, so D1 holds rows and keys only (docs/architecture.md
// "Workers edition"). The rules:
// - an object is written before the batch whose rows name it; a batch that fails leaves an
//   orphan object, harmless (no row reads it) and swept by retention with the expired ones;
// - whoever deletes rows naming objects learns their keys in the same pass and deletes the
//   objects once the database has committed;
// - keys start with the UTC day the bytes were received (`payloads/2026-11-28/<uuid>`), so
//   retention finds every object past the retention period by listing in key order;
//   symbol objects live as long as their file, so retention's sweep of them asks which
//   keys of days before yesterday no row names (replaced files, dropped imports).
// The store's database handle carries its bucket (`withBucket`, `bucketOf`): the symbol
// and upload chunk functions take only the handle, whichever route or job calls them.
// Without a bucket nothing here runs: the Node editions and an unbound Worker keep bytes in
// the database.
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { DecompressBlob } from './stored-payload.js';

/** What Faultline uses of an R2 bucket binding (R2Bucket has these members). */
export interface BlobBucket {
  put(key: string, value: Uint8Array): Promise<unknown>;
  get(
    key: string,
    options?: { range?: { offset: number; length: number } },
  ): Promise<{ arrayBuffer(): Promise<ArrayBuffer> } | null>;
  delete(keys: string | string[]): Promise<void>;
  list(options?: { prefix?: string; cursor?: string; limit?: number; startAfter?: string }): Promise<{
    objects: { key: string }[];
    truncated: boolean;
    cursor?: string;
  }>;
}

/** The prefix of payload chunk objects. */
export const PAYLOAD_PREFIX = 'payloads/';
/** The prefix of attachment chunk objects (src/attachments/storage.ts). */
export const ATTACHMENT_PREFIX = 'attachments/';

/** The prefix of symbol file chunk objects (src/symbols/storage.ts). */
export const SYMBOL_PREFIX = 'symbols/';
/** The prefix of sentry-cli upload chunk objects (src/uploads/chunks.ts). */
export const UPLOAD_PREFIX = 'uploads/';

/** R2 deletes at most this many keys per call. */
const DELETE_KEYS = 1000;

const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** A fresh key for the payload chunk of bytes received at `receivedAt`. */
export function payloadObjectKey(receivedAt: number): string {
  return `${PAYLOAD_PREFIX}${day(receivedAt)}/${crypto.randomUUID()}`;
}

/** A fresh key for an attachment chunk of an event received at `receivedAt`. */
export function attachmentObjectKey(receivedAt: number): string {
  return `${ATTACHMENT_PREFIX}${day(receivedAt)}/${crypto.randomUUID()}`;
}

/** A fresh key for a symbol file chunk written at `now`. */
export function symbolObjectKey(now: number): string {
  return `${SYMBOL_PREFIX}${day(now)}/${crypto.randomUUID()}`;
}

/** A fresh key for a sentry-cli upload chunk received at `now`. */
export function uploadObjectKey(now: number): string {
  return `${UPLOAD_PREFIX}${day(now)}/${crypto.randomUUID()}`;
}

const BUCKET = Symbol('faultline.blobs');

/** Makes `db` (a store's database handle) carry the bucket its chunk bytes go to; returns it. */
export function withBucket<T extends object>(db: T, bucket: BlobBucket | undefined): T {
  if (bucket) Object.defineProperty(db, BUCKET, { value: bucket, enumerable: false });
  return db;
}

/** The bucket a store's database handle carries, if any (withBucket). */
export function bucketOf(db: object): BlobBucket | undefined {
  return (db as { [BUCKET]?: BlobBucket })[BUCKET];
}

/** The chunk bytes of a row: its `data`, or its object's when `r2_key` names one (empty when that is gone). */
export async function chunkBytes(
  db: object,
  row: { data: Uint8Array | ArrayBuffer; r2_key?: string | null },
  offset = 0,
  length?: number,
): Promise<Uint8Array> {
  if (row.r2_key === null || row.r2_key === undefined) {
    const data = row.data instanceof Uint8Array ? row.data : new Uint8Array(row.data);
    return length === undefined && offset === 0
      ? data
      : data.subarray(offset, length === undefined ? undefined : offset + length);
  }
  const bucket = bucketOf(db);
  return (bucket ? await readObject(bucket, row.r2_key, offset, length) : null) ?? new Uint8Array(0);
}

/** Writes objects (before the batch naming them commits), a few at a time. */
export async function putObjects(bucket: BlobBucket, objects: { key: string; data: Uint8Array }[]): Promise<void> {
  for (let i = 0; i < objects.length; i += 8)
    await Promise.all(objects.slice(i, i + 8).map((o) => bucket.put(o.key, o.data)));
}

/** Deletes objects by key (after the commit that removed their rows); nulls are skipped. */
export async function deleteObjects(
  bucket: BlobBucket | undefined,
  keys: (string | null | undefined)[],
): Promise<number> {
  const present = keys.filter((k): k is string => typeof k === 'string' && k !== '');
  if (!bucket) return 0;
  for (let i = 0; i < present.length; i += DELETE_KEYS) await bucket.delete(present.slice(i, i + DELETE_KEYS));
  return present.length;
}

/** An object's bytes (or `length` of them from `offset`), or null when it is gone. */
export async function readObject(
  bucket: BlobBucket,
  key: string,
  offset = 0,
  length?: number,
): Promise<Uint8Array | null> {
  const object = await bucket.get(key, length === undefined ? undefined : { range: { offset, length } });
  return object ? new Uint8Array(await object.arrayBuffer()) : null;
}

/**
 * Objects under `prefix` (payloads or attachments) received on a UTC day before
 * `cutoff`'s: expired or orphaned (retention has deleted the rows of that age first).
 * Returns how many it deleted.
 */
export async function sweepObjects(
  bucket: BlobBucket,
  prefix: string,
  cutoff: number,
  signal?: { aborted: boolean },
): Promise<number> {
  const limit = `${prefix}${day(cutoff)}/`;
  let deleted = 0;
  for (;;) {
    if (signal?.aborted) return deleted;
    // Always from the start: what the last round found is deleted.
    const page = await bucket.list({ prefix, limit: DELETE_KEYS });
    const old = page.objects.map((o) => o.key).filter((k) => k < limit);
    deleted += await deleteObjects(bucket, old);
    if (old.length < page.objects.length || !page.truncated) return deleted;
  }
}

/**
 * Objects under `prefix` of a UTC day before `cutoff`'s that no row names (`named` answers
 * which of a list of keys rows still name): the objects of symbol files replaced or
 * dropped, whose rows went by foreign key, and orphans of writes that failed. Returns how
 * many it deleted.
 */
export async function sweepUnnamedObjects(
  bucket: BlobBucket,
  prefix: string,
  cutoff: number,
  named: (keys: string[]) => Promise<Set<string>>,
  signal?: { aborted: boolean },
): Promise<number> {
  const limit = `${prefix}${day(cutoff)}/`;
  let deleted = 0;
  let startAfter: string | undefined;
  for (;;) {
    if (signal?.aborted) return deleted;
    const page = await bucket.list({ prefix, limit: DELETE_KEYS, ...(startAfter ? { startAfter } : {}) });
    const old = page.objects.map((o) => o.key).filter((k) => k < limit);
    if (old.length > 0) {
      const kept = await named(old);
      deleted += await deleteObjects(
        bucket,
        old.filter((k) => !kept.has(k)),
      );
      startAfter = old[old.length - 1];
    }
    if (old.length < page.objects.length || !page.truncated) return deleted;
  }
}

/**
 * The decompressed blobs of payload chunks by id, from the row or from its object (a
 * chunk whose object is missing reads as empty, like a chunk whose row is gone).
 */
export async function readPayloadChunks(
  db: Kysely<Database>,
  ids: number[],
  decompress: DecompressBlob,
  bucket?: BlobBucket,
): Promise<Map<number, Uint8Array>> {
  const out = new Map<number, Uint8Array>();
  for (let i = 0; i < ids.length; i += 200) {
    const found = await db
      .selectFrom('payload_chunks')
      .select(['id', 'data', 'r2_key'])
      .where('id', 'in', ids.slice(i, i + 200))
      .execute();
    await Promise.all(
      found.map(async (c) => {
        if (c.r2_key === null || c.r2_key === undefined) {
          out.set(Number(c.id), decompress(c.data));
          return;
        }
        const bytes = bucket ? await readObject(bucket, c.r2_key) : null;
        if (bytes) out.set(Number(c.id), decompress(bytes));
      }),
    );
  }
  return out;
}
