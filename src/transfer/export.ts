// Export and import of a whole instance or one project as newline-delimited JSON
// (docs/api.md "Export file format"). This domain owns the file
// format (format.ts), one descriptor per line type (line-types.ts: how its rows are read
// in key order, written as lines, checked and inserted if missing), the export reader
// (this file) and the importer (import.ts). It uses Web APIs only and takes plain
// streams and an injected blob codec (TransferRuntime), so the CLI (src/cli/transfer.ts)
// and a serverless edition's GET /api/export and POST /api/import share it.
//
// Export reads each line type's rows page by page in key order (ids, or the primary
// key), never holding more than a page: memory stays flat whatever the size.
import { type Kysely, sql } from 'kysely';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { FORMAT_VERSION, type MetaLine } from './format.js';
import type { Cursor, ExportContext, TransferRuntime } from './line-type.js';
import { LINE_TYPES } from './line-types.js';

/** A request the export cannot serve (an unknown project). */
export class ExportInputError extends Error {}

export interface ExportOptions {
  /** Export only this project (slug). */
  project?: string;
  /** faultline's version, written into the meta line. */
  version: string;
  now?: () => number;
  /** Rows per query instead of each line type's default. */
  pageRows?: number;
  /** Count the lines first (for progress and the meta line's expected_lines); default true. */
  count?: boolean;
  /**
   * Read in one read transaction (default true). A database without transactions across
   * statements (D1) passes false; its lines are then only as consistent as the reads.
   */
  snapshot?: boolean;
}

export interface ExportProgress {
  /** Lines written so far, meta included. */
  lines: number;
  /** Lines expected (counted when the export started; 0 when not counted). */
  expected: number;
  /** Lines written per type so far. */
  counts: Record<string, number>;
}

/** Where an export split over several requests goes on: after this row of this line type. */
export interface ExportPosition {
  type: string;
  after: Cursor | null;
}

export interface ExportPartOptions {
  onProgress?: (progress: ExportProgress) => void;
  /** Start here instead of at the beginning (then no meta line is written). */
  start?: ExportPosition;
  /** Stop after the page that reaches this many lines; `next()` then says where to go on. */
  maxLines?: number;
}

export interface PreparedExport {
  meta: MetaLine;
  /** Lines the export expects to write, meta included (the database may change meanwhile). */
  expected: number;
  /** The file as UTF-8 bytes, a page of lines per chunk. */
  chunks(options?: ExportPartOptions): AsyncGenerator<Uint8Array>;
  /** After `chunks` ended: where a further part would start, or null when everything was written. */
  next(): ExportPosition | null;
}

/** Opens an export: finds the projects, counts the lines, builds the meta line. */
export async function prepareExport(
  store: Store,
  runtime: TransferRuntime,
  options: ExportOptions,
): Promise<PreparedExport> {
  const db = store.db;
  let query = db.selectFrom('projects').select(['id', 'slug']).orderBy('id');
  if (options.project !== undefined) query = query.where('slug', '=', options.project);
  const projects = await query.execute();
  if (options.project !== undefined && projects.length === 0)
    throw new ExportInputError(`no project with slug "${options.project}"`);
  const ctx: ExportContext = {
    db,
    dialect: store.dialect,
    runtime,
    projectId: options.project === undefined ? undefined : Number(projects[0].id),
    projectSlugs: new Map(projects.map((p) => [Number(p.id), p.slug as string])),
    pageRows: options.pageRows,
  };
  let expected = 0;
  if (options.count !== false) {
    expected = 1;
    for (const type of LINE_TYPES) expected += await type.count(ctx);
  }
  const meta: MetaLine = {
    type: 'meta',
    format: FORMAT_VERSION,
    exported_at: new Date((options.now ?? Date.now)()).toISOString(),
    source: { faultline: options.version, database: store.dialect, project: options.project ?? null },
    expected_lines: expected,
  };
  let next: ExportPosition | null = null;

  async function* chunks(part: ExportPartOptions = {}): AsyncGenerator<Uint8Array> {
    const counts: Record<string, number> = {};
    let lines = 0;
    let first = 0;
    let after: Cursor | null = null;
    if (part.start) {
      first = LINE_TYPES.findIndex((t) => t.type === part.start!.type);
      if (first < 0) throw new ExportInputError(`the cursor names an unknown line type "${part.start.type}"`);
      after = part.start.after;
    } else {
      lines = 1;
      yield encodeLines([meta]);
    }
    next = null;
    const snapshot = options.snapshot === false ? { db: ctx.db, end: async () => {} } : await openSnapshot(store);
    const reading: ExportContext = { ...ctx, db: snapshot.db };
    try {
      for (let t = first; t < LINE_TYPES.length; t++) {
        const type = LINE_TYPES[t];
        counts[type.type] = 0;
        for await (const page of type.read(reading, t === first ? after : null)) {
          counts[type.type] += page.lines.length;
          lines += page.lines.length;
          yield encodeLines(page.lines);
          part.onProgress?.({ lines, expected, counts });
          if (part.maxLines !== undefined && lines >= part.maxLines) {
            next = { type: type.type, after: page.last };
            return;
          }
        }
      }
    } finally {
      await snapshot.end();
    }
    part.onProgress?.({ lines, expected, counts });
  }

  return {
    meta,
    expected,
    chunks,
    next: () => next,
  };
}

const encoder = new TextEncoder();

/**
 * Lines as UTF-8 bytes, each followed by a newline, in one buffer. Each line's JSON is
 * encoded straight into the buffer: joining a page's lines into one string first and
 * encoding that made the export spend more time flattening and encoding the joined
 * string (about 11 µs of 28 per 8 KB event) than building the lines.
 */
export function encodeLines(lines: readonly unknown[]): Uint8Array {
  const texts = lines.map((line) => JSON.stringify(line));
  let size = texts.length;
  for (const text of texts) size += text.length;
  // Mostly ASCII, where one character is one byte; the buffer grows for the rest.
  let buffer = new Uint8Array(size + (size >> 4) + 64);
  let at = 0;
  for (let text of texts) {
    for (;;) {
      const { read, written } = encoder.encodeInto(text, buffer.subarray(at));
      at += written;
      if (read === text.length) break;
      // encodeInto stops at a whole character, so the rest of the line starts at `read`.
      text = text.slice(read);
      const grown = new Uint8Array(Math.max(buffer.length * 2, at + text.length * 3 + 1));
      grown.set(buffer.subarray(0, at));
      buffer = grown;
    }
    if (at === buffer.length) {
      const grown = new Uint8Array(buffer.length * 2);
      grown.set(buffer);
      buffer = grown;
    }
    buffer[at++] = 10;
  }
  return buffer.subarray(0, at);
}

/**
 * One read transaction for the whole export (or part), so its lines are one consistent
 * state of a live database: an event is never written without its issue, nor an issue's
 * rows without the issue. PostgreSQL: REPEATABLE READ, read only. SQLite (WAL): a read
 * transaction sees the database as of its first read; the WAL cannot be reset past it
 * meanwhile, so it grows while ingest goes on and shrinks back afterwards.
 */
async function openSnapshot(store: Store): Promise<{ db: Kysely<Database>; end(): Promise<void> }> {
  const db = store.db;
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let opened!: (conn: Kysely<Database>) => void;
  let failed!: (err: unknown) => void;
  const ready = new Promise<Kysely<Database>>((resolve, reject) => {
    opened = resolve;
    failed = reject;
  });
  const finished = db.connection().execute(async (conn) => {
    await sql
      .raw(store.dialect === 'postgres' ? 'begin isolation level repeatable read read only' : 'begin')
      .execute(conn);
    try {
      // SQLite starts the snapshot at the first read.
      await sql`select 1 from projects limit 1`.execute(conn);
      opened(conn);
      await held;
    } finally {
      await sql.raw(store.dialect === 'postgres' ? 'commit' : 'rollback').execute(conn);
    }
  });
  finished.catch(failed);
  const connection = await ready;
  return {
    db: connection,
    async end() {
      release();
      await finished;
    },
  };
}

/** A position as the `cursor` parameter of a further export request. */
export function encodePosition(position: ExportPosition): string {
  return JSON.stringify([position.type, position.after]);
}

/** Reads a `cursor` parameter; a malformed one is an ExportInputError. */
export function decodePosition(text: string): ExportPosition {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ExportInputError('cursor: not a cursor from a previous export answer');
  }
  const ok =
    Array.isArray(value) &&
    value.length === 2 &&
    typeof value[0] === 'string' &&
    LINE_TYPES.some((t) => t.type === value[0]) &&
    (value[1] === null ||
      (Array.isArray(value[1]) && value[1].every((v: unknown) => typeof v === 'string' || typeof v === 'number')));
  if (!ok) throw new ExportInputError('cursor: not a cursor from a previous export answer');
  return { type: (value as [string, Cursor | null])[0], after: (value as [string, Cursor | null])[1] };
}
