// Attachment storage: one `attachments` row per file and its bytes in
// `attachment_chunks` of at most ATTACHMENT_CHUNK_BYTES (the symbol files' chunk size),
// so SQLite, PostgreSQL, a D1 value and an export line all hold them. The bytes sit
// behind `AttachmentBlobs`: with an R2 bucket bound on the Worker (bucketBlobs), each
// chunk row keeps its object's key and the bytes are in the bucket (src/store/blobs.ts).
//
//   storeAttachment(store, projectId, attachments)  the one write path (ingest, minidumps):
//                                                   rows and chunks for events already stored,
//                                                   committed together (Store.atomic)
//   attachmentWrites(db, dialect, projectId, receivedAt, file, digest)
//                                                   the same as statements, for a caller
//                                                   that commits them with its own
//   listAttachments / getAttachment / readAttachment / readAttachmentHead / attachmentUsage
import { sql, type CompiledQuery, type Kysely, type Selectable } from 'kysely';
import { attachmentObjectKey, putObjects, readObject, type BlobBucket } from '../store/blobs.js';
import type { Dialect, Store } from '../store/database.js';
import type { AttachmentTable, Database } from '../store/schema.js';
import { SNIFF_BYTES, sniffImage, type PendingAttachment } from './rules.js';
import { readViewHierarchy, type ViewHierarchy } from './view-hierarchy.js';
import { MAX_VIEW_HIERARCHY_RENDER_BYTES } from '../limits.js';

type Db = Kysely<Database>;
export type AttachmentRow = Selectable<AttachmentTable>;

/**
 * Bytes per stored chunk, as the symbol files' (src/symbols/storage.ts): half a MiB keeps a
 * chunk well under D1's ~2 MB value limit and one NDJSON export line (base64) under 1 MB.
 */
export const ATTACHMENT_CHUNK_BYTES = 512 * 1024;

/** Where attachment bytes live. The chunk table is the one every database has. */
export interface AttachmentBlobs {
  /**
   * Statements that store the bytes of the attachment named by (project, event, digest),
   * run after its row is inserted; objects they name are in `objects`, written first.
   */
  writes(
    db: Db,
    dialect: Dialect,
    key: AttachmentKey,
    bytes: Uint8Array,
    receivedAt: number,
    objects: BlobObject[],
  ): CompiledQuery[];
  /** The bytes, chunk by chunk, from `fromChunk` on. */
  read(db: Db, attachmentId: number, fromChunk?: number): AsyncGenerator<Uint8Array>;
  /** The first bytes of the file (at most `n`), read without loading its first chunk whole. */
  prefix(db: Db, attachmentId: number, n: number): Promise<Uint8Array>;
  /** Writes the objects `writes` named, before its statements commit (an object store's). */
  put?(objects: BlobObject[]): Promise<void>;
}

/** An object to write before the statements naming it commit (src/store/blobs.ts). */
export interface BlobObject {
  key: string;
  data: Uint8Array;
}

export interface AttachmentKey {
  projectId: number;
  eventId: string;
  digest: string;
}

/** Bytes in `attachment_chunks`, each chunk inserted by a statement that finds its attachment's id itself. */
export const chunkBlobs: AttachmentBlobs = {
  writes(db, dialect, key, bytes) {
    const queries: CompiledQuery[] = [];
    const blob = (value: Uint8Array) => (dialect === 'postgres' ? sql`cast(${value} as bytea)` : sql`${value}`);
    for (let seq = 0, at = 0; at < bytes.byteLength || seq === 0; seq++, at += ATTACHMENT_CHUNK_BYTES) {
      const data = bytes.subarray(at, at + ATTACHMENT_CHUNK_BYTES);
      // `where` before `on conflict`: SQLite needs it to parse an INSERT … SELECT with an upsert clause.
      queries.push(
        sql`insert into attachment_chunks (attachment_id, seq, data)
            select id, ${sql.lit(seq)}, ${blob(data)} from attachments
            where project_id = ${key.projectId} and event_id = ${key.eventId} and digest = ${key.digest}
            on conflict (attachment_id, seq) do nothing`.compile(db),
      );
      if (bytes.byteLength === 0) break;
    }
    return queries;
  },
  async *read(db, attachmentId, fromChunk = 0) {
    for (let seq = fromChunk; ; seq++) {
      const row = await db
        .selectFrom('attachment_chunks')
        .select('data')
        .where('attachment_id', '=', attachmentId)
        .where('seq', '=', seq)
        .executeTakeFirst();
      if (!row) return;
      yield row.data instanceof Uint8Array ? row.data : new Uint8Array(row.data as ArrayBuffer);
    }
  },
  async prefix(db, attachmentId, n) {
    const row = await db
      .selectFrom('attachment_chunks')
      .select(sql<Uint8Array>`substr(data, 1, ${sql.lit(n)})`.as('head'))
      .where('attachment_id', '=', attachmentId)
      .where('seq', '=', 0)
      .executeTakeFirst();
    if (!row) return new Uint8Array(0);
    return row.head instanceof Uint8Array ? row.head : new Uint8Array(row.head as ArrayBuffer);
  },
};

/**
 * Bytes in a bucket (the serverless edition with R2 bound, src/store/blobs.ts): each chunk
 * keeps its `attachment_chunks` row with empty data and its object's key, so the export,
 * retention and deletion see the same rows. A chunk stored without a key (before the
 * bucket was bound, or imported) is read from its row.
 */
export function bucketBlobs(bucket: BlobBucket): AttachmentBlobs {
  return {
    writes(db, dialect, key, bytes, receivedAt, objects) {
      const queries: CompiledQuery[] = [];
      const empty = dialect === 'postgres' ? sql`cast(${new Uint8Array(0)} as bytea)` : sql`${new Uint8Array(0)}`;
      for (let seq = 0, at = 0; at < bytes.byteLength || seq === 0; seq++, at += ATTACHMENT_CHUNK_BYTES) {
        const object = { key: attachmentObjectKey(receivedAt), data: bytes.subarray(at, at + ATTACHMENT_CHUNK_BYTES) };
        objects.push(object);
        queries.push(
          sql`insert into attachment_chunks (attachment_id, seq, data, r2_key)
              select id, ${sql.lit(seq)}, ${empty}, ${object.key} from attachments
              where project_id = ${key.projectId} and event_id = ${key.eventId} and digest = ${key.digest}
              on conflict (attachment_id, seq) do nothing`.compile(db),
        );
        if (bytes.byteLength === 0) break;
      }
      return queries;
    },
    async *read(db, attachmentId, fromChunk = 0) {
      for (let seq = fromChunk; ; seq++) {
        const row = await db
          .selectFrom('attachment_chunks')
          .select(['data', 'r2_key'])
          .where('attachment_id', '=', attachmentId)
          .where('seq', '=', seq)
          .executeTakeFirst();
        if (!row) return;
        if (row.r2_key === null || row.r2_key === undefined)
          yield row.data instanceof Uint8Array ? row.data : new Uint8Array(row.data as ArrayBuffer);
        else yield (await readObject(bucket, row.r2_key)) ?? new Uint8Array(0);
      }
    },
    async prefix(db, attachmentId, n) {
      const row = await db
        .selectFrom('attachment_chunks')
        .select('r2_key')
        .where('attachment_id', '=', attachmentId)
        .where('seq', '=', 0)
        .executeTakeFirst();
      if (!row) return new Uint8Array(0);
      if (row.r2_key === null || row.r2_key === undefined) return chunkBlobs.prefix(db, attachmentId, n);
      return (await readObject(bucket, row.r2_key, 0, n)) ?? new Uint8Array(0);
    },
    put: (objects) => putObjects(bucket, objects),
  };
}

/** Where this edition keeps attachment bytes: the bucket when one is bound, else the chunk table. */
export function attachmentBlobsOf(bucket: BlobBucket | undefined): AttachmentBlobs {
  return bucket ? bucketBlobs(bucket) : chunkBlobs;
}

const hex = (buffer: ArrayBuffer) =>
  Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

/** SHA-1 of the name and bytes: the attachment's identity within its event (a resend matches). */
export async function attachmentDigest(name: string, bytes: Uint8Array): Promise<string> {
  const head = new TextEncoder().encode(`${name}\u0000`);
  const all = new Uint8Array(head.byteLength + bytes.byteLength);
  all.set(head);
  all.set(bytes, head.byteLength);
  return hex(await crypto.subtle.digest('SHA-1', all));
}

/** The statements that store one attachment of an event received at `receivedAt` (nothing when it is already there). */
export function attachmentWrites(
  db: Db,
  dialect: Dialect,
  projectId: number,
  receivedAt: number,
  file: PendingAttachment,
  digest: string,
  blobs: AttachmentBlobs = chunkBlobs,
  objects: BlobObject[] = [],
): CompiledQuery[] {
  const row = db
    .insertInto('attachments')
    .values({
      project_id: projectId,
      event_id: file.eventId,
      digest,
      name: file.name,
      content_type: file.contentType,
      attachment_type: file.attachmentType,
      size: file.bytes.byteLength,
      received_at: receivedAt,
    })
    .onConflict((oc) => oc.columns(['project_id', 'event_id', 'digest']).doNothing())
    .compile();
  return [
    row,
    ...blobs.writes(db, dialect, { projectId, eventId: file.eventId, digest }, file.bytes, receivedAt, objects),
  ];
}

/** The receive times of the project's stored events among `eventIds`. */
async function storedEvents(db: Db, projectId: number, eventIds: string[]): Promise<Map<string, number>> {
  if (eventIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('seen_events as s')
    .innerJoin('events as e', 'e.id', 's.stored_id')
    .select(['s.event_id', 'e.received_at'])
    .where('s.project_id', '=', projectId)
    .where('s.event_id', 'in', eventIds)
    .execute();
  return new Map(rows.map((r) => [r.event_id, Number(r.received_at)]));
}

/**
 * Stores attachments with their events, all in one atomic write: files of an event the
 * project has not stored (sampled out, refused, never sent) are dropped, as Sentry drops
 * attachments without an event. Returns how many files were written or already there.
 */
export async function storeAttachment(
  store: Store,
  projectId: number,
  files: PendingAttachment[],
  blobs: AttachmentBlobs = chunkBlobs,
): Promise<number> {
  if (files.length === 0) return 0;
  const events = await storedEvents(store.db, projectId, [...new Set(files.map((f) => f.eventId))]);
  const queries: CompiledQuery[] = [];
  const objects: BlobObject[] = [];
  let kept = 0;
  for (const file of files) {
    const receivedAt = events.get(file.eventId);
    if (receivedAt === undefined) continue;
    kept++;
    queries.push(
      ...attachmentWrites(
        store.db,
        store.dialect,
        projectId,
        receivedAt,
        file,
        await attachmentDigest(file.name, file.bytes),
        blobs,
        objects,
      ),
    );
  }
  // Objects before the rows naming them: a failed commit leaves only orphans (swept by retention).
  if (objects.length > 0) await blobs.put?.(objects);
  await store.atomic(queries);
  return kept;
}

/** The JSON shape of an attachment (docs/api.md "Attachments"). */
export function attachmentJson(row: AttachmentRow) {
  return {
    id: String(row.id),
    event_id: row.event_id,
    name: row.name,
    content_type: row.content_type,
    size: Number(row.size),
    attachment_type: row.attachment_type,
  };
}

export function listAttachments(db: Db, projectId: number, eventId: string): Promise<AttachmentRow[]> {
  return db
    .selectFrom('attachments')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('event_id', '=', eventId)
    .orderBy('id')
    .execute();
}

/** One of the project's attachments by id (digits), or undefined. */
export async function getAttachment(db: Db, projectId: number, id: string): Promise<AttachmentRow | undefined> {
  if (!/^[0-9]{1,15}$/.test(id)) return undefined;
  return db
    .selectFrom('attachments')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', Number(id))
    .executeTakeFirst();
}

/** The attachment's bytes as a stream that holds one chunk at a time. */
export function readAttachment(db: Db, id: number, blobs: AttachmentBlobs = chunkBlobs): ReadableStream<Uint8Array> {
  const chunks = blobs.read(db, id);
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const next = await chunks.next();
      if (next.done) controller.close();
      else controller.enqueue(next.value);
    },
    async cancel() {
      await chunks.return(undefined);
    },
  });
}

/** The first chunk of the bytes (enough to sniff a type, or to render a small file whole). */
export async function readAttachmentHead(db: Db, id: number, blobs: AttachmentBlobs = chunkBlobs): Promise<Uint8Array> {
  const chunks = blobs.read(db, id);
  const first = await chunks.next();
  await chunks.return(undefined);
  return first.done ? new Uint8Array(0) : first.value;
}

/** The first bytes of the file (at most `n`), read without loading its first chunk whole. */
export function attachmentPrefix(
  db: Db,
  id: number,
  n: number,
  blobs: AttachmentBlobs = chunkBlobs,
): Promise<Uint8Array> {
  return blobs.prefix(db, id, n);
}

/** The whole file, for a caller that bounded its size beforehand. */
export async function readAttachmentBytes(
  db: Db,
  row: AttachmentRow,
  blobs: AttachmentBlobs = chunkBlobs,
): Promise<Uint8Array> {
  const out = new Uint8Array(Number(row.size));
  let at = 0;
  const chunks = blobs.read(db, Number(row.id));
  // Stops at the size: the chunk after the last is never asked for.
  while (at < out.byteLength) {
    const next = await chunks.next();
    if (next.done) break;
    out.set(next.value.subarray(0, out.byteLength - at), at);
    at += next.value.byteLength;
  }
  await chunks.return(undefined);
  return out;
}

/** Attachments a project keeps: how many and their bytes (its usage). */
export async function attachmentUsage(db: Db, projectId: number): Promise<{ count: number; bytes: number }> {
  const row = await db
    .selectFrom('attachments')
    .select((eb) => [eb.fn.countAll<number>().as('count'), eb.fn.sum<number>('size').as('bytes')])
    .where('project_id', '=', projectId)
    .executeTakeFirst();
  return { count: Number(row?.count ?? 0), bytes: Number(row?.bytes ?? 0) };
}

/** An event's file as its page shows it: a raster image by its bytes, a view hierarchy read for drawing. */
export interface EventFile {
  row: AttachmentRow;
  image: boolean;
  hierarchy: ViewHierarchy | null;
}

/** The event's files for its page: each sniffed from its first bytes, small view hierarchies read. */
export async function eventFiles(
  db: Db,
  projectId: number,
  eventId: string,
  blobs: AttachmentBlobs = chunkBlobs,
): Promise<EventFile[]> {
  const rows = await listAttachments(db, projectId, eventId);
  return Promise.all(
    rows.map(async (row): Promise<EventFile> => {
      const id = Number(row.id);
      if (row.attachment_type === 'event.view_hierarchy') {
        const small = Number(row.size) <= MAX_VIEW_HIERARCHY_RENDER_BYTES;
        return {
          row,
          image: false,
          hierarchy: small ? readViewHierarchy(await readAttachmentBytes(db, row, blobs)) : null,
        };
      }
      return { row, image: sniffImage(await attachmentPrefix(db, id, SNIFF_BYTES, blobs)) !== null, hierarchy: null };
    }),
  );
}

/**
 * Statements removing the attachments of erased events (docs/privacy.md "End-user
 * deletion"), to run in the erasure's atomic write before the events themselves go:
 * the chunks first, then the rows, found through the events' `event_id`.
 */
export function attachmentsOfEvents(db: Db, projectId: number, eventRowIds: number[]): CompiledQuery[] {
  if (eventRowIds.length === 0) return [];
  const ids = sql.join(eventRowIds);
  const attachmentIds = sql`(select a.id from attachments a where a.project_id = ${projectId} and a.event_id in (select e.event_id from events e where e.id in (${ids})))`;
  return [
    sql`delete from attachment_chunks where attachment_id in ${attachmentIds}`.compile(db),
    sql`delete from attachments where project_id = ${projectId} and event_id in (select e.event_id from events e where e.id in (${ids}))`.compile(
      db,
    ),
  ];
}
