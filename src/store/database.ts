// The Store contract every edition builds (Node: src/editions/node/open-store.ts opens
// better-sqlite3 or pg; Workers: src/store/d1.ts) and DATABASE_URL's meaning. Query
// code only sees `Kysely<Database>` and `store.dialect`. Web APIs only: the shared app
// imports this module.
import { sql, type CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { DialectCapabilities } from './dialect.js';
import type { Database } from './schema.js';

export type Dialect = 'sqlite' | 'postgres';

export interface Store {
  db: Kysely<Database>;
  /** The SQL the queries speak (D1 speaks SQLite's); the one name of the dialect. */
  dialect: Dialect;
  /** What the database can do and its limits per statement (src/store/dialect.ts). */
  capabilities: DialectCapabilities;
  /** Human-readable target for logs, without credentials. */
  description: string;
  /**
   * The one write path every domain uses for statements that commit together: in
   * order, in one transaction (SQLite, PostgreSQL) or one atomic batch (D1), giving
   * each statement's result. Statements are built beforehand (D1's batch is the lowest
   * common denominator: no statement can depend on an earlier one's answer in code).
   */
  atomic(queries: CompiledQuery[]): Promise<QueryResult<unknown>[]>;
  /**
   * The database's bytes, where its platform caps them (D1: src/store/capacity.ts); absent
   * elsewhere (the server's disk guard watches the file system instead).
   */
  sizeBytes?(): Promise<number | null>;
  /** True when the database answers a trivial query within `timeoutMs`. */
  ping(timeoutMs?: number): Promise<boolean>;
  close(): Promise<void>;
}

export class DatabaseConfigError extends Error {}

export const DEFAULT_SQLITE_PATH = './data/faultline.db';

export type DatabaseTarget = { dialect: 'sqlite'; path: string } | { dialect: 'postgres'; url: string };

export function parseDatabaseUrl(url: string | undefined): DatabaseTarget {
  const value = (url ?? '').trim();
  if (value === '') return { dialect: 'sqlite', path: DEFAULT_SQLITE_PATH };
  if (/^postgres(ql)?:\/\//i.test(value)) return { dialect: 'postgres', url: value };
  const m = /^(sqlite|file):(.*)$/i.exec(value);
  if (m) {
    let p = m[2];
    if (p.startsWith('//')) p = p.slice(2);
    if (p === '')
      throw new DatabaseConfigError('DATABASE_URL: sqlite: needs a file path, e.g. sqlite:./data/faultline.db');
    return { dialect: 'sqlite', path: p };
  }
  throw new DatabaseConfigError(
    `DATABASE_URL: unsupported value ${JSON.stringify(redact(value))}; use sqlite:<path>, file:<path> or postgres://user@host:port/db`,
  );
}

export function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):([^@/]*)@/, '//$1:***@');
}

// Migrating lives in ./migrate.ts, which every edition can import (D1 too).
export { migrate, SchemaTooNewError } from './migrate.js';

/**
 * Runs the statements in order so that they commit together: one transaction, or on a
 * database without interactive transactions (D1) one batch.
 */
export async function executeAtomically(store: Store, queries: CompiledQuery[]): Promise<void> {
  await store.atomic(queries);
}

/** `Store.atomic` for a database with interactive transactions. */
export function transactionalAtomic(db: Kysely<Database>): Store['atomic'] {
  return async (queries) => {
    if (queries.length === 0) return [];
    return db.transaction().execute(async (trx) => {
      const results: QueryResult<unknown>[] = [];
      for (const q of queries) results.push(await trx.executeQuery(q));
      return results;
    });
  };
}

/**
 * One transaction on a database with interactive transactions, for work that reads as it
 * writes and so cannot be built beforehand for `Store.atomic` (import's line types on
 * SQLite and PostgreSQL: src/transfer/import.ts). BEGIN IMMEDIATE on SQLite: the write
 * lock first, as ingest takes it.
 */
export async function writeTransaction<T>(store: Store, fn: (db: Kysely<Database>) => Promise<T>): Promise<T> {
  const db = store.db;
  if (store.dialect === 'postgres') return db.transaction().execute(fn);
  return db.connection().execute(async (conn) => {
    await sql`begin immediate`.execute(conn);
    try {
      const result = await fn(conn);
      await sql`commit`.execute(conn);
      return result;
    } catch (err) {
      try {
        await sql`rollback`.execute(conn);
      } catch {
        // SQLite already rolled back
      }
      throw err;
    }
  });
}
