// Symbol file storage: files live in the database, in chunks of at most
// SYMBOL_CHUNK_BYTES (`symbol_chunks`), so SQLite, PostgreSQL, an export line and a
// serverless D1 value can all hold them. Bytes stream in and out: a save holds one
// chunk at a time, a read yields one chunk at a time. Where the store's handle carries an
// object bucket (the serverless edition with R2, src/store/blobs.ts), a chunk's bytes are
// an object written before its row, which keeps the key in `r2_key` and empty `data`;
// deleting chunks here deletes their objects after the rows (files replaced at commit
// lose theirs to retention's sweep).
//
// The API, for the Symbols routes, the sentry-cli assemble route and the kinds:
//
//   saveSymbolFile(db, meta, bytes, now)        stream → stored, ready file (replacement rule applied)
//   writePendingFile(db, meta, bytes, now)      stream → invisible `writing` row (several files of one upload)
//   openPendingFile(db, meta, now)              the same, filled by pushes (write/close)
//   copyPendingRange(db, from, meta, start, end, now)  a byte range of a pending file as a new pending file
//   commitSymbolFiles(db|store, [{id, final}])  atomically (transaction; D1: one batch): replacement rule, rows become `ready`
//   discardSymbolFiles(db, ids)                 drops pending rows (an upload that failed)
//   listSymbolFiles / getSymbolFile / deleteSymbolFile
//   readSymbolFile(db, id, part?)               ReadableStream of the bytes, chunk by chunk
//   readSymbolBytes(db, id, part?)              the whole part as one Uint8Array (parsing into the cache)
//   saveDerivedIndex(db, id, bytes)             part 1, built once at upload by a kind
//   findByDebugId / findByRelease               matching (docs/api.md "What matching looks for")
//
// Replacement rule (docs/api.md "Symbol routes"): a file with the same kind and debug id, or,
// without a debug id, the same kind, release and filename, replaces the existing one. ELF
// files also need the same role (`serves`: `debug` or `symtab`), so a split debug file and
// its stripped object, which share a build id, are both kept.
import { Kysely, type CompiledQuery, type Selectable } from 'kysely';
import { transactionalAtomic, type Store } from '../store/database.js';
import { bucketOf, chunkBytes, deleteObjects, symbolObjectKey } from '../store/blobs.js';
import type { Database, SymbolFileTable } from '../store/schema.js';
import { piecesSource, type ByteRangeSource } from '../bytes.js';
import { MAX_INDEXED_BASENAME } from '../limits.js';

type Db = Kysely<Database>;

/**
 * Bytes per stored chunk. Half a MiB keeps a chunk well under D1's ~2 MB value limit and
 * one NDJSON export line (base64) under 1 MB, while a 256 MB file is 512 rows.
 */
export const SYMBOL_CHUNK_BYTES = 512 * 1024;

/**
 * The kinds the management API uploads (the spec's kinds), each symbolicating its platform.
 * These lists are the stored vocabulary (the `kind` column, the API's and the export's
 * checks, the SymbolKind type), so they stay beside the handler list an edition passes
 * (default-kinds.ts): a row of a kind the edition has no handler for is still listed,
 * exported and deleted, only not symbolicated.
 */
export const SYMBOL_KINDS = [
  'proguard',
  'sourcemap',
  'dsym',
  'elf',
  'breakpad',
  'dartsymbolmap',
  'sourcebundle',
] as const;
/**
 * Debug files sentry-cli uploads that Faultline keeps but does not symbolicate with (a
 * CI step uploading a whole build folder succeeds): one kind per format, so an
 * executable and its separate debug file with the same debug id (a PE and its PDB, an
 * ELF and its source bundle) are all kept. Stored, listed, found by debug id, deleted
 * and exported like the others.
 */
export const KEPT_SYMBOL_KINDS = ['pe', 'pdb', 'wasm'] as const;
export type KeptSymbolKind = (typeof KEPT_SYMBOL_KINDS)[number];
export type SymbolKind = (typeof SYMBOL_KINDS)[number] | KeptSymbolKind;

/** True for every kind this build stores (symbolicating or kept-only). */
export function isSymbolKind(kind: string): kind is SymbolKind {
  return (SYMBOL_KINDS as readonly string[]).includes(kind) || isKeptKind(kind);
}

export function isKeptKind(kind: string): kind is KeptSymbolKind {
  return (KEPT_SYMBOL_KINDS as readonly string[]).includes(kind);
}

/** Part 0 is the uploaded file, part 1 a derived lookup index. */
export const FILE_PART = 0;
export const INDEX_PART = 1;

export type SymbolFileRow = Selectable<SymbolFileTable>;

/** Bytes from a Web stream or any (async) iterable (a Node stream, a zip entry, a generator, a list). */
export type ByteSource = ReadableStream<Uint8Array> | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

export interface SymbolFileMeta {
  projectId: number;
  kind: SymbolKind;
  release: string;
  dist?: string;
  filename: string;
  /** Lowercase dashed UUID; '' or absent when the file has none. */
  debugId?: string;
  /** Source maps: the minified file the map serves (`~/app.min.js`, a URL or a basename). */
  serves?: string;
  /** Kind-specific facts, stored as JSON. */
  meta?: Record<string, unknown>;
}

/** Thrown when a file is larger than allowed; the partial file is already removed. */
export class SymbolTooLargeError extends Error {
  readonly status = 400;
}

/** The JSON shape of a symbol file (docs/api.md "The symbol file"). */
export function symbolFileJson(row: SymbolFileRow) {
  return {
    id: Number(row.id),
    project_id: Number(row.project_id),
    kind: row.kind,
    release: row.release,
    dist: row.dist === '' ? null : row.dist,
    debug_id: row.debug_id,
    filename: row.filename,
    size: Number(row.size),
    uploaded_at: new Date(Number(row.uploaded_at)).toISOString(),
  };
}

export async function* iterateBytes(source: ByteSource): AsyncGenerator<Uint8Array> {
  if (typeof (source as ReadableStream<Uint8Array>).getReader === 'function') {
    const reader = (source as ReadableStream<Uint8Array>).getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        if (value && value.byteLength > 0) yield value;
      }
    } finally {
      reader.releaseLock();
    }
  } else {
    for await (const chunk of source as AsyncIterable<Uint8Array> | Iterable<Uint8Array>)
      if (chunk.byteLength > 0) yield chunk;
  }
}

export function basenameOf(name: string): string {
  const clean = name.replace(/[?#].*$/, '');
  const i = Math.max(clean.lastIndexOf('/'), clean.lastIndexOf('\\'));
  return i >= 0 ? clean.slice(i + 1) : clean;
}

/**
 * What `serves_basename` holds for a served name: its basename, cut to its first
 * MAX_INDEXED_BASENAME characters (code points, as the databases count them), so the
 * index entry stays under PostgreSQL's btree row limit whatever the map's `file` says. A
 * lookup cuts its name the same way and then compares the full served name
 * (servesRank), so a longer basename still finds its map.
 */
export function indexedBasename(name: string): string {
  const base = basenameOf(name);
  if (base.length <= MAX_INDEXED_BASENAME) return base;
  const points = Array.from(base);
  return points.length <= MAX_INDEXED_BASENAME ? base : points.slice(0, MAX_INDEXED_BASENAME).join('');
}

/** Appends bytes to a part of a file in chunks of SYMBOL_CHUNK_BYTES; holds at most one chunk. */
export class ChunkWriter {
  private buffer = new Uint8Array(SYMBOL_CHUNK_BYTES);
  private filled = 0;
  private seq = 0;
  /** Bytes written so far. */
  total = 0;

  constructor(
    private readonly db: Db,
    readonly fileId: number,
    private readonly part: number,
    private readonly maxBytes: number,
  ) {}

  async write(chunk: Uint8Array): Promise<void> {
    this.total += chunk.byteLength;
    if (this.total > this.maxBytes) throw new SymbolTooLargeError(`the file is larger than ${this.maxBytes} bytes`);
    while (chunk.byteLength > 0) {
      const n = Math.min(chunk.byteLength, SYMBOL_CHUNK_BYTES - this.filled);
      this.buffer.set(chunk.subarray(0, n), this.filled);
      this.filled += n;
      chunk = chunk.subarray(n);
      if (this.filled === SYMBOL_CHUNK_BYTES) await this.flush();
    }
  }

  private async flush(): Promise<void> {
    if (this.filled === 0) return;
    const data = this.buffer.subarray(0, this.filled);
    const bucket = bucketOf(this.db);
    const key = bucket ? symbolObjectKey(Date.now()) : null;
    if (bucket && key) await bucket.put(key, data);
    await this.db
      .insertInto('symbol_chunks')
      .values({
        file_id: this.fileId,
        part: this.part,
        seq: this.seq++,
        data: key ? new Uint8Array(0) : data,
        r2_key: key,
        object_bytes: key ? data.byteLength : null,
      })
      .execute();
    // A fresh buffer: the driver may still hold the last one.
    this.buffer = new Uint8Array(SYMBOL_CHUNK_BYTES);
    this.filled = 0;
  }

  /** Writes what is buffered; the total size. */
  async close(): Promise<number> {
    await this.flush();
    return this.total;
  }
}

/** Writes `source` into chunks of `part` of file `fileId`; returns the byte count. Stops past `maxBytes`. */
async function writeChunks(
  db: Db,
  fileId: number,
  part: number,
  source: ByteSource,
  maxBytes: number,
): Promise<number> {
  const writer = new ChunkWriter(db, fileId, part, maxBytes);
  for await (const chunk of iterateBytes(source)) await writer.write(chunk);
  return writer.close();
}

function rowValues(meta: SymbolFileMeta, now: number) {
  const serves = meta.serves ?? '';
  return {
    project_id: meta.projectId,
    kind: meta.kind,
    release: meta.release,
    dist: meta.dist ?? '',
    debug_id: (meta.debugId ?? '').toLowerCase(),
    filename: meta.filename,
    serves,
    serves_basename: indexedBasename(serves),
    meta: JSON.stringify(meta.meta ?? {}),
    uploaded_at: now,
  };
}

export interface PendingFile {
  id: number;
  size: number;
}

/** No limit unless the caller gives one (the Symbols route: 256 MB). */
const UNLIMITED = Number.MAX_SAFE_INTEGER;

/** A `writing` row being filled by pushes (zip entries arrive that way); see writePendingFile. */
export interface PendingWriter {
  id: number;
  write(chunk: Uint8Array): Promise<void>;
  /** Finishes the bytes; the file stays pending until commitSymbolFiles. */
  close(): Promise<PendingFile>;
}

export async function openPendingFile(
  db: Db,
  meta: SymbolFileMeta,
  now: number,
  maxBytes = UNLIMITED,
): Promise<PendingWriter> {
  const row = await db
    .insertInto('symbol_files')
    .values({ ...rowValues(meta, now), state: 'writing', size: 0, index_size: 0 })
    .returning('id')
    .executeTakeFirstOrThrow();
  const id = Number(row.id);
  const writer = new ChunkWriter(db, id, FILE_PART, maxBytes);
  return {
    id,
    write: (chunk) => writer.write(chunk),
    async close() {
      const size = await writer.close();
      await db.updateTable('symbol_files').set({ size }).where('id', '=', id).execute();
      return { id, size };
    },
  };
}

/**
 * Streams `source` into a new `writing` row (never listed, never matched) and returns its
 * id and size. On failure the partial row is removed and the error rethrown.
 */
export async function writePendingFile(
  db: Db,
  meta: SymbolFileMeta,
  source: ByteSource,
  now: number,
  maxBytes = UNLIMITED,
): Promise<PendingFile> {
  const writer = await openPendingFile(db, meta, now, maxBytes);
  try {
    for await (const chunk of iterateBytes(source)) await writer.write(chunk);
    return await writer.close();
  } catch (err) {
    await discardSymbolFiles(db, [writer.id]).catch(() => undefined);
    throw err;
  }
}

/** Bytes [start, end) of a file's part as a stream (reads only the chunks it needs). */
export function readSymbolRange(
  db: Db,
  fileId: number,
  start: number,
  end: number,
  part = FILE_PART,
): ReadableStream<Uint8Array> {
  let seq = Math.floor(start / SYMBOL_CHUNK_BYTES);
  let offset = seq * SYMBOL_CHUNK_BYTES;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      if (offset >= end) return controller.close();
      const row = await db
        .selectFrom('symbol_chunks')
        .select(['data', 'r2_key'])
        .where('file_id', '=', fileId)
        .where('part', '=', part)
        .where('seq', '=', seq)
        .executeTakeFirst();
      if (!row) return controller.close();
      const data = await chunkBytes(db, row);
      const from = Math.max(0, start - offset);
      const to = Math.min(data.byteLength, end - offset);
      seq++;
      offset += data.byteLength;
      if (to > from) controller.enqueue(data.subarray(from, to));
      if (data.byteLength === 0) controller.close();
    },
  });
}

/** Random access to a file's part of `size` bytes (pending or committed), read chunk by chunk. */
export function storedFileSource(db: Db, fileId: number, size: number, part = FILE_PART): ByteRangeSource {
  const starts = Array.from({ length: Math.ceil(size / SYMBOL_CHUNK_BYTES) }, (_, seq) => seq * SYMBOL_CHUNK_BYTES);
  return piecesSource(starts, size, async (seq) => {
    const row = await db
      .selectFrom('symbol_chunks')
      .select(['data', 'r2_key'])
      .where('file_id', '=', fileId)
      .where('part', '=', part)
      .where('seq', '=', seq)
      .executeTakeFirst();
    return row ? chunkBytes(db, row) : new Uint8Array(0);
  });
}

/** The whole part as a stream, chunk by chunk. */
export function readSymbolFile(db: Db, fileId: number, part = FILE_PART): ReadableStream<Uint8Array> {
  return readSymbolRange(db, fileId, 0, Number.MAX_SAFE_INTEGER, part);
}

/** The whole part in one buffer (what a parser needs); null when the file has no such part. */
export async function readSymbolBytes(db: Db, fileId: number, part = FILE_PART): Promise<Uint8Array | null> {
  const file = await db
    .selectFrom('symbol_files')
    .select(['size', 'index_size'])
    .where('id', '=', fileId)
    .executeTakeFirst();
  if (!file) return null;
  const size = Number(part === FILE_PART ? file.size : file.index_size);
  if (part === INDEX_PART && size === 0) return null;
  const out = new Uint8Array(size);
  let at = 0;
  for await (const chunk of iterateBytes(readSymbolFile(db, fileId, part))) {
    if (at + chunk.byteLength > size) break;
    out.set(chunk, at);
    at += chunk.byteLength;
    // SQLite answers without ever leaving the microtask queue: a 50 MB file read in one go
    // would hold every other request for most of a second (BENCHMARKS.md "Source maps").
    await yieldToEventLoop();
  }
  return at === size ? out : out.subarray(0, at);
}

/** Lets timers and I/O callbacks run (a macrotask turn), in every edition. */
function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** A byte range of one pending file as a new pending file (a fat Mach-O's slice). */
export async function copyPendingRange(
  db: Db,
  fromId: number,
  meta: SymbolFileMeta,
  start: number,
  end: number,
  now: number,
): Promise<PendingFile> {
  return writePendingFile(db, meta, readSymbolRange(db, fromId, start, end), now);
}

/** Stores a derived lookup index (part 1) for a file, replacing any earlier one. */
export async function saveDerivedIndex(db: Db, fileId: number, source: ByteSource): Promise<number> {
  await deleteChunkRows(db, [fileId], INDEX_PART);
  const size = await writeChunks(db, fileId, INDEX_PART, source, UNLIMITED);
  await db.updateTable('symbol_files').set({ index_size: size }).where('id', '=', fileId).execute();
  return size;
}

/** What a pending file becomes when committed (facts learnt while reading it). */
export interface FinalFacts {
  debugId?: string;
  serves?: string;
  filename?: string;
  meta?: Record<string, unknown>;
}

/**
 * Where a commit runs: the store (its one atomic write path, so D1 commits in one
 * `db.batch()` too), or a bare database with interactive transactions (SQLite, PostgreSQL).
 */
export type CommitTarget = Db | Pick<Store, 'db' | 'atomic'>;

/** The columns a pending file's final facts set, with `ready`. */
function finalSet(final: FinalFacts | undefined): Partial<Record<keyof SymbolFileTable, unknown>> {
  const set: Partial<Record<keyof SymbolFileTable, unknown>> = { state: 'ready' };
  if (final?.debugId !== undefined) set.debug_id = final.debugId.toLowerCase();
  if (final?.serves !== undefined) {
    set.serves = final.serves;
    set.serves_basename = indexedBasename(final.serves);
  }
  if (final?.filename !== undefined) set.filename = final.filename;
  if (final?.meta !== undefined) set.meta = JSON.stringify(final.meta);
  return set;
}

/** The delete of the ready files `row` (now ready as `id`) replaces (docs/api.md "Symbol routes"). */
function replacedBy(
  db: Db,
  row: Pick<SymbolFileRow, 'project_id' | 'kind' | 'debug_id' | 'release' | 'filename' | 'serves'>,
  id: number,
) {
  let q = db
    .deleteFrom('symbol_files')
    .where('project_id', '=', row.project_id)
    .where('kind', '=', row.kind)
    .where('state', '=', 'ready')
    .where('id', '!=', id);
  if (row.kind === 'elf') q = q.where('serves', '=', row.serves);
  return row.debug_id !== ''
    ? q.where('debug_id', '=', row.debug_id)
    : q.where('debug_id', '=', '').where('release', '=', row.release).where('filename', '=', row.filename);
}

/**
 * Makes pending files visible atomically, applying the replacement rule: an existing
 * ready file with the same kind and debug id (or, without one, the same kind, release
 * and filename) is deleted (`onReplaced` hears their ids). Returns the committed rows in
 * the given order. The statements are built from the pending rows read first (nothing
 * but their commit changes them) and commit together through `Store.atomic`.
 */
export async function commitSymbolFiles(
  target: CommitTarget,
  files: { id: number; final?: FinalFacts }[],
  onReplaced?: (ids: number[]) => void,
): Promise<SymbolFileRow[]> {
  if (files.length === 0) return [];
  const db = target instanceof Kysely ? target : target.db;
  const atomic = target instanceof Kysely ? transactionalAtomic(target) : target.atomic;
  const pending = new Map<number, SymbolFileRow>();
  const ids = [...new Set(files.map((f) => f.id))];
  for (let i = 0; i < ids.length; i += 500) {
    const rows = await db
      .selectFrom('symbol_files')
      .selectAll()
      .where('id', 'in', ids.slice(i, i + 500))
      .execute();
    for (const row of rows) pending.set(Number(row.id), row);
  }
  const queries: CompiledQuery[] = [];
  for (const { id, final } of files) {
    const row = pending.get(id);
    if (!row) throw new Error(`symbol file ${id} to commit is gone`);
    const set = finalSet(final);
    const after = { ...row, ...(set as Partial<SymbolFileRow>) };
    queries.push(
      db
        .updateTable('symbol_files')
        .set(set as any)
        .where('id', '=', id)
        .returningAll()
        .compile(),
    );
    // Only once the file is ready: a file gone since it was read replaces nothing.
    const replaced = replacedBy(db, after, id).where((eb) =>
      eb.exists(
        eb.selectFrom('symbol_files as f').select('f.id').where('f.id', '=', id).where('f.state', '=', 'ready'),
      ),
    );
    queries.push(replaced.returning('id').compile());
  }
  const results = await atomic(queries);
  const out: SymbolFileRow[] = [];
  for (let i = 0; i < files.length; i++) {
    const row = results[2 * i].rows[0] as SymbolFileRow | undefined;
    if (!row) throw new Error(`symbol file ${files[i].id} to commit is gone`);
    out.push(row);
    const gone = results[2 * i + 1].rows as { id: number }[];
    if (gone.length > 0) onReplaced?.(gone.map((g) => Number(g.id)));
  }
  return out;
}

/** Deletes the chunks of files (of one part, or all), then the objects they named. */
async function deleteChunkRows(db: Db, fileIds: number[], part?: number): Promise<void> {
  const bucket = bucketOf(db);
  let q = db.deleteFrom('symbol_chunks').where('file_id', 'in', fileIds);
  if (part !== undefined) q = q.where('part', '=', part);
  if (!bucket) {
    await q.execute();
    return;
  }
  const rows = await q.returning('r2_key').execute();
  await deleteObjects(
    bucket,
    rows.map((r) => r.r2_key),
  );
}

/** Drops files (pending or not) and their chunks. */
export async function discardSymbolFiles(db: Db, ids: number[]): Promise<void> {
  if (ids.length === 0) return;
  // Chunks first: SQLite deletes them through the foreign key too, but one statement each
  // keeps it bounded, and their objects' keys come back from it.
  await deleteChunkRows(db, ids);
  await db.deleteFrom('symbol_files').where('id', 'in', ids).execute();
}

/** Streams and stores one file, applying the replacement rule; the stored row. */
export async function saveSymbolFile(
  db: Db,
  meta: SymbolFileMeta,
  source: ByteSource,
  now: number,
  maxBytes = UNLIMITED,
): Promise<SymbolFileRow> {
  const pending = await writePendingFile(db, meta, source, now, maxBytes);
  try {
    const [row] = await commitSymbolFiles(db, [{ id: pending.id }]);
    return row;
  } catch (err) {
    await discardSymbolFiles(db, [pending.id]).catch(() => undefined);
    throw err;
  }
}

/** The project's ready files, newest first. */
export async function listSymbolFiles(db: Db, projectId: number): Promise<SymbolFileRow[]> {
  return db
    .selectFrom('symbol_files')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('state', '=', 'ready')
    .orderBy('id', 'desc')
    .execute();
}

export async function getSymbolFile(db: Db, projectId: number, id: number): Promise<SymbolFileRow | undefined> {
  return db
    .selectFrom('symbol_files')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('id', '=', id)
    .where('state', '=', 'ready')
    .executeTakeFirst();
}

/** Deletes a ready file of the project; false when there is none with that id. */
export async function deleteSymbolFile(db: Db, projectId: number, id: number): Promise<boolean> {
  const row = await getSymbolFile(db, projectId, id);
  if (!row) return false;
  await discardSymbolFiles(db, [id]);
  return true;
}

/** The ready files of a kind with this debug id, newest first (a few: ELF keeps a debug file and its stripped object). */
export async function findAllByDebugId(
  db: Db,
  projectId: number,
  kind: SymbolKind,
  debugId: string,
): Promise<SymbolFileRow[]> {
  return db
    .selectFrom('symbol_files')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('kind', '=', kind)
    .where('debug_id', '=', debugId.toLowerCase())
    .where('state', '=', 'ready')
    .orderBy('id', 'desc')
    .limit(4)
    .execute();
}

/** The newest ready file of a kind with this debug id. */
export async function findByDebugId(
  db: Db,
  projectId: number,
  kind: SymbolKind,
  debugId: string,
): Promise<SymbolFileRow | undefined> {
  return db
    .selectFrom('symbol_files')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('kind', '=', kind)
    .where('debug_id', '=', debugId.toLowerCase())
    .where('state', '=', 'ready')
    .orderBy('id', 'desc')
    .executeTakeFirst();
}

/**
 * Ready files of a kind and release, newest first; with `servesBasename` only those serving
 * a minified file of that basename (source maps), with `dist` only that dist.
 */
export async function findByRelease(
  db: Db,
  projectId: number,
  kind: SymbolKind,
  release: string,
  options: { dist?: string; servesBasename?: string } = {},
): Promise<SymbolFileRow[]> {
  let q = db
    .selectFrom('symbol_files')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('kind', '=', kind)
    .where('release', '=', release)
    .where('state', '=', 'ready');
  if (options.servesBasename !== undefined)
    q = q.where('serves_basename', '=', indexedBasename(options.servesBasename));
  if (options.dist !== undefined) q = q.where('dist', '=', options.dist);
  return q.orderBy('id', 'desc').limit(50).execute();
}

/**
 * Which symbolicating kinds the project has ready files of (the ingest path's cheap
 * "anything to do?" check): kept-only files alone leave nothing to do.
 */
export async function symbolKindsOf(db: Db, projectId: number): Promise<Set<SymbolKind>> {
  const rows = await db
    .selectFrom('symbol_files')
    .select('kind')
    .distinct()
    .where('project_id', '=', projectId)
    .where('state', '=', 'ready')
    .where('kind', 'not in', [...KEPT_SYMBOL_KINDS])
    .execute();
  return new Set(rows.map((r) => r.kind as SymbolKind));
}

/** Rows one sweepAbandonedWrites removes at most. */
export const SWEEP_BATCH = 1000;

/** Removes up to SWEEP_BATCH `writing` rows begun before `olderThan` (an upload whose process died mid-way). */
export async function sweepAbandonedWrites(db: Db, olderThan: number): Promise<number> {
  const rows = await db
    .selectFrom('symbol_files')
    .select('id')
    .where('state', '=', 'writing')
    .where('uploaded_at', '<', olderThan)
    .limit(SWEEP_BATCH)
    .execute();
  await discardSymbolFiles(
    db,
    rows.map((r) => Number(r.id)),
  );
  return rows.length;
}
