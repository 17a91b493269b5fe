// Privacy: erasing one end user's data from a project (docs/privacy.md "End-user
// deletion"): their events with tags and raw payloads, their key in the issues' user
// sets, and the rows of other domains that hang off those events (attachments, user
// feedback) through the builders the caller passes. Counts stay: issues keep `event_count` and `users`;
// `stored_count` goes down as retention lowers it. Works in slices of ERASE_SLICE events,
// each slice one `store.atomic` call, so a user with many events never holds a long
// transaction and D1's limits (100 bound values a statement) hold. Web APIs only; the
// blob codec and the bucket (a chunk held as an object is rewritten as a new one) are the
// edition's.
import { type CompiledQuery, type Kysely, sql } from 'kysely';
import { deleteObjects, payloadObjectKey, putObjects, readObject, type BlobBucket } from '../store/blobs.js';
import type { Store } from '../store/database.js';
import type { CompressBlob } from '../store/payloads.js';
import type { Database } from '../store/schema.js';
import type { DecompressBlob } from '../store/stored-payload.js';

/** Events erased per atomic write (ids are bound values: D1 takes at most 100 a statement). */
export const ERASE_SLICE = 50;

/** The end user an erasure names: `user.id` as the SDK sent it, or `email:…`, `username:…`, `ip:…`. */
export interface EndUser {
  column: 'user_id' | 'user_email' | 'user_username' | 'user_ip';
  value: string;
  /** The key the issues' user sets hold for this user (src/ingest/normalize.ts userKeyOf). */
  userKey: string;
}

/** Reads the path segment `{user}`: a plain value is a user id; a prefix names another identity. */
export function parseEndUser(segment: string): EndUser {
  const m = /^(email|username|ip|id):(.+)$/s.exec(segment);
  if (m) {
    const kind = m[1];
    const column =
      kind === 'email' ? 'user_email' : kind === 'username' ? 'user_username' : kind === 'ip' ? 'user_ip' : 'user_id';
    return { column, value: m[2], userKey: `${kind}:${m[2]}` };
  }
  return { column: 'user_id', value: segment, userKey: `id:${segment}` };
}

/**
 * Statements of another domain that remove what hangs off erased events or belongs to
 * the end user (attachments, user feedback), run in the same atomic write before the
 * events go. The caller passes them (src/http/privacy.ts), so this domain imports none.
 */
export type EndUserRows = (
  db: Kysely<Database>,
  projectId: number,
  eventIds: number[],
  user: EndUser,
) => CompiledQuery[];

export interface EraseDeps {
  store: Store;
  compressBlob: CompressBlob;
  decompressBlob: DecompressBlob;
  /** The bucket payload chunks may be in (src/store/blobs.ts). */
  blobs?: BlobBucket;
}

export interface EraseSummary {
  events: number;
  /** Payload chunks rewritten without the user's payloads. */
  chunks: number;
}

/** The byte a removed payload's range is overwritten with (a space: valid filler, compresses to nothing). */
const BLANK = 0x20;

/**
 * Erases the end user's events in the project, slice by slice; answers what was done. An
 * unknown user erases nothing. Raw payloads share chunks with other events: each chunk
 * holding one of the user's payloads is rewritten with that range blanked, so the other
 * events' offsets stay valid.
 */
export async function eraseEndUser(
  deps: EraseDeps,
  projectId: number,
  user: EndUser,
  extra: EndUserRows[] = [],
): Promise<EraseSummary> {
  const { store } = deps;
  const db = store.db;
  const summary: EraseSummary = { events: 0, chunks: 0 };
  let issueKeysDone = false;
  for (;;) {
    const rows = await db
      .selectFrom('events')
      .select(['id', 'issue_id', 'payload_chunk', 'payload_start', 'payload_length'])
      .where('project_id', '=', projectId)
      .where(user.column, '=', user.value)
      .orderBy('id')
      .limit(ERASE_SLICE)
      .execute();
    const ids = rows.map((r) => Number(r.id));
    const queries: CompiledQuery[] = [];

    // The chunks: read, blank the user's ranges, write back in the same atomic call.
    const byChunk = new Map<number, [number, number][]>();
    for (const r of rows) {
      if (r.payload_chunk === null || r.payload_chunk === undefined) continue;
      const list = byChunk.get(Number(r.payload_chunk)) ?? [];
      list.push([Number(r.payload_start ?? 0), Number(r.payload_length ?? 0)]);
      byChunk.set(Number(r.payload_chunk), list);
    }
    // A chunk in the bucket is rewritten as a new object the row then names; the old one
    // is deleted once that commits (src/store/blobs.ts).
    const replaced: string[] = [];
    const objects: { key: string; data: Uint8Array }[] = [];
    for (const [chunkId, ranges] of byChunk) {
      const chunk = await db
        .selectFrom('payload_chunks')
        .select(['data', 'r2_key', 'received_at'])
        .where('id', '=', chunkId)
        .executeTakeFirst();
      if (!chunk) continue;
      const key = chunk.r2_key ?? null;
      const stored = key === null ? chunk.data : deps.blobs ? await readObject(deps.blobs, key) : null;
      if (stored === null) continue;
      const bytes = new Uint8Array(deps.decompressBlob(stored));
      for (const [start, length] of ranges) bytes.fill(BLANK, start, Math.min(bytes.length, start + length));
      if (key !== null && deps.blobs) {
        const fresh = payloadObjectKey(Number(chunk.received_at));
        const data = deps.compressBlob(bytes);
        objects.push({ key: fresh, data });
        replaced.push(key);
        queries.push(
          db
            .updateTable('payload_chunks')
            .set({ r2_key: fresh, object_bytes: data.byteLength })
            .where('id', '=', chunkId)
            .compile(),
        );
      } else {
        queries.push(
          db
            .updateTable('payload_chunks')
            .set({ data: deps.compressBlob(bytes) })
            .where('id', '=', chunkId)
            .compile(),
        );
      }
      summary.chunks++;
    }
    if (deps.blobs) await putObjects(deps.blobs, objects);

    if (ids.length > 0) {
      const picked = sql.join(ids);
      // stored_count goes down by the rows this write really deletes (a concurrent
      // retention run may have taken some): counted in SQL, in the same atomic call.
      const gone = sql`(select count(*) from events e where e.issue_id = issues.id and e.id in (${picked}))`;
      queries.push(
        sql`update issues set stored_count = case when stored_count > ${gone} then stored_count - ${gone} else 0 end
            where id in (select issue_id from events where id in (${picked}))`.compile(db),
      );
      queries.push(db.deleteFrom('event_tags').where('event_id', 'in', ids).compile());
      // Resends of these event ids stay deduplicated; they just no longer point at a row.
      queries.push(
        db
          .updateTable('seen_events')
          .set({ stored_id: null })
          .where('project_id', '=', projectId)
          .where('stored_id', 'in', ids)
          .compile(),
      );
      for (const build of extra) queries.push(...build(db, projectId, ids, user));
      queries.push(db.deleteFrom('events').where('id', 'in', ids).compile());
    }
    if (rows.length < ERASE_SLICE && !issueKeysDone) {
      // The user's key in the issues' user sets (the `users` counts stay as they are).
      queries.push(
        db
          .deleteFrom('issue_users')
          .where('user_key', '=', user.userKey)
          .where('issue_id', 'in', db.selectFrom('issues').select('id').where('project_id', '=', projectId))
          .compile(),
      );
      // What the other domains keep under the user's identity rather than an event of theirs
      // (feedback sent under their email): their builders, without event ids.
      for (const build of extra) queries.push(...build(db, projectId, [], user));
      issueKeysDone = true;
    }
    if (queries.length > 0) await store.atomic(queries);
    await deleteObjects(deps.blobs, replaced);
    summary.events += ids.length;
    if (rows.length < ERASE_SLICE) return summary;
  }
}
