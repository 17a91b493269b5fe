// What a line type is: one descriptor per kind of row in the export file, saying how
// its rows are read from the database in key order, page by page, how a row becomes a
// line, how a line is checked, and how a batch of lines is written (insert the missing,
// keep the existing). The export and import engines (export.ts, import.ts) only walk
// the list of descriptors (line-types.ts), so a new table is one more descriptor.
import { CompiledQuery, type Kysely } from 'kysely';
import type { Dialect } from '../store/database.js';
import type { CompressBlob, PackedPayloads, PayloadToPack } from '../store/payloads.js';
import type { DecompressBlob } from '../store/stored-payload.js';
import type { BlobBucket } from '../store/blobs.js';
import type { Database } from '../store/schema.js';
import type { ColumnName, TableName } from '../store/tables.js';

/** What needs Node (or another edition's own code) beyond Web APIs: the stored blob codec. */
export interface TransferRuntime {
  /** Decompresses a stored blob (payload chunk, old `events.raw` / `events.detail`). */
  decompress: DecompressBlob;
  /** Compresses bytes as the store does. */
  compress: CompressBlob;
  /** Packs payloads into compressed chunks as ingest does (src/store/payloads.ts). */
  packPayloads(items: PayloadToPack[]): PackedPayloads;
  /**
   * The bucket payload chunks are in (src/store/blobs.ts): export reads chunk objects from
   * it and import writes its chunks to it, as ingest does. Absent, the database holds them.
   */
  blobs?: BlobBucket;
}

export interface ExportContext {
  db: Kysely<Database>;
  dialect: Dialect;
  runtime: TransferRuntime;
  /** The one project exported, or undefined for all. */
  projectId?: number;
  /** Slug of every project exported, by id. */
  projectSlugs: Map<number, string>;
  /** Rows per query instead of each type's default (tests use small pages). */
  pageRows?: number;
}

/** Where a line type's reading stands: the key of the last row read (its order columns). */
export type Cursor = (string | number)[];

export interface Page {
  lines: Record<string, unknown>[];
  /** The key of the page's last row. */
  last: Cursor;
}

export interface ImportContext {
  /** The batch's transaction. */
  db: Kysely<Database>;
  dialect: Dialect;
  runtime: TransferRuntime;
  /** Ids of the projects with these slugs; on PostgreSQL also locks their rows as ingest does. */
  projectIds(slugs: Iterable<string>): Promise<Map<string, number>>;
  /** A message for the person running the import (stderr). */
  notice(message: string): void;
  /**
   * Present where a batch's writes are recorded and committed together after `write`
   * returns (D1, d1-write.ts): work that must read the batch's own rows runs through it,
   * after they are committed, with a context of its own.
   */
  afterCommit?(fn: (ctx: ImportContext) => Promise<void>): void;
}

/** A line that failed: its number in the file and why. */
export interface Problem {
  line: number;
  message: string;
}

export interface BatchItem<V> {
  /** Line number in the file (1-based). */
  line: number;
  value: V;
}

export interface BatchOutcome {
  added: number;
  kept: number;
  problems: Problem[];
}

export type Parsed<V> = { ok: true; value: V } | { ok: false; message: string };

export interface LineType<V = any> {
  type: string;
  /**
   * The table whose exported columns (src/store/tables.ts) the line carries; absent for
   * a line of links between rows (alert_rule_channel).
   */
  table?: TableName;
  /** Rows this type will export (for progress totals; a live database may change meanwhile). */
  count(ctx: ExportContext): Promise<number>;
  /**
   * The lines, in key order, a page at a time, starting after the row whose key is
   * `after` (a page's `last`), so an export can stop and go on in another request.
   */
  read(ctx: ExportContext, after?: Cursor | null): AsyncIterable<Page>;
  /** Checks a parsed JSON line of this type. */
  parse(line: Record<string, unknown>): Parsed<V>;
  /** Writes a batch inside one transaction: missing rows added, existing kept. */
  write(ctx: ImportContext, batch: BatchItem<V>[]): Promise<BatchOutcome>;
}

/** A row of `table` to insert: its columns by name (values as the database takes them). */
export type RowOf<T extends TableName> = Partial<Record<ColumnName<T>, unknown>>;

/** SQLite's bound-parameter limit is 32 766; statements stay well below it. */
const MAX_PARAMETERS = 30_000;

/**
 * Inserts rows in statements sized under the parameter limit. With `conflict`, existing
 * rows (by those columns) are left alone; returns how many rows were really inserted.
 * The statement text is built directly (placeholders per dialect): Kysely's builder costs
 * more CPU per row of a 500-row insert than the database's work on it.
 */
export async function insertRows<T extends TableName>(
  db: Kysely<Database>,
  dialect: Dialect,
  table: T,
  rows: RowOf<T>[],
  conflict?: ColumnName<T>[],
): Promise<number> {
  if (rows.length === 0) return 0;
  const columns = Object.keys(rows[0]) as ColumnName<T>[];
  const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / columns.length));
  const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const head = `insert into ${quote(table)} (${columns.map(quote).join(', ')}) values `;
  const tail = conflict ? ` on conflict (${conflict.map(quote).join(', ')}) do nothing returning 1 as one` : '';
  let inserted = 0;
  for (let i = 0; i < rows.length; i += perStatement) {
    const part = rows.slice(i, i + perStatement);
    const params: unknown[] = [];
    const tuples: string[] = [];
    for (const row of part) {
      const marks: string[] = [];
      for (const c of columns) {
        params.push(row[c] === undefined ? null : row[c]);
        marks.push(dialect === 'postgres' ? `$${params.length}` : '?');
      }
      tuples.push(`(${marks.join(', ')})`);
    }
    const result = await db.executeQuery(CompiledQuery.raw(head + tuples.join(', ') + tail, params));
    inserted += conflict ? result.rows.length : part.length;
  }
  return inserted;
}

/**
 * Inserts the rows that no row of the table matches on `key` (null equal to null), for a
 * table without a unique key on it. The caller reads the existing rows first (to count
 * and to drop repeats within the batch); on SQLite, D1 included, the check is repeated in
 * the INSERT itself (`insert … select … where not exists`), so it holds at the moment the
 * row is written: on D1 a batch's reads and its commit are apart, and another import may
 * have added the row in between. On PostgreSQL the batch's transaction holds its
 * projects' rows locked (ImportContext.projectIds), so the read still holds when it writes,
 * and a plain INSERT keeps its parameters typed by the columns. Returns how many rows were
 * really inserted.
 */
export async function insertMissingRows<T extends TableName>(
  db: Kysely<Database>,
  dialect: Dialect,
  table: T,
  rows: RowOf<T>[],
  key: ColumnName<T>[],
): Promise<number> {
  if (dialect === 'postgres' || rows.length === 0) return insertRows(db, dialect, table, rows);
  const columns = Object.keys(rows[0]) as ColumnName<T>[];
  const perStatement = Math.max(1, Math.floor(MAX_PARAMETERS / columns.length));
  const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  const match = key
    .map((k) => {
      if (!columns.includes(k)) throw new Error(`insertMissingRows: key column ${k} is not among the rows' columns`);
      return `e.${quote(k)} is v.column${columns.indexOf(k) + 1}`;
    })
    .join(' and ');
  let inserted = 0;
  for (let i = 0; i < rows.length; i += perStatement) {
    const part = rows.slice(i, i + perStatement);
    const params = part.flatMap((row) => columns.map((c) => (row[c] === undefined ? null : row[c])));
    const text =
      `insert into ${quote(table)} (${columns.map(quote).join(', ')}) select * from (values ${part.map(() => tuple).join(', ')}) as v` +
      ` where not exists (select 1 from ${quote(table)} e where ${match}) returning 1 as one`;
    inserted += (await db.executeQuery(CompiledQuery.raw(text, params))).rows.length;
  }
  return inserted;
}

/** Splits a list into parts of at most `size` (for `in (…)` lists). */
export function partsOf<T>(items: T[], size = 500): T[][] {
  const parts: T[][] = [];
  for (let i = 0; i < items.length; i += size) parts.push(items.slice(i, i + size));
  return parts;
}
