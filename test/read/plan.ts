// Measuring the work of the read queries on the real database: a second Kysely
// on the same database records every query a read function runs; each one is
// then run again under EXPLAIN ANALYZE (PostgreSQL), and the rows its plan
// really read from a table are summed, whatever plan the planner picked. SQLite
// has no row counts; there the plan's shape is returned (EXPLAIN QUERY PLAN).
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, type CompiledQuery } from 'kysely';
import type { Database } from '../../src/store/schema.js';
import type { DialectName, TestServer } from '../helpers/server.js';

export interface RecordingDb {
  db: Kysely<Database>;
  /** Runs `fn` and returns what it answered plus every query it ran. */
  record<T>(fn: (db: Kysely<Database>) => Promise<T>): Promise<{ result: T; queries: CompiledQuery[] }>;
  /** Rows the query reads from `table` (PostgreSQL: summed over the plan's scan nodes). */
  rowsRead(query: CompiledQuery, table: string): Promise<number>;
  /** The SQLite plan, one line per step (EXPLAIN QUERY PLAN). */
  sqlitePlan(query: CompiledQuery): string[];
  close(): Promise<void>;
}

export interface PlanNode {
  'Relation Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

/** Rows the plan really read from `table`: summed over its scan nodes, loops and filtered rows included. */
export function sumRows(node: PlanNode, table: string): number {
  let n = 0;
  if (node['Relation Name'] === table) {
    const perLoop =
      (node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0);
    n += perLoop * (node['Actual Loops'] ?? 1);
  }
  for (const child of node.Plans ?? []) n += sumRows(child, table);
  return n;
}

/**
 * A recording Kysely on the database of `t` (a test server, or any dialect and URL).
 * SQLite opens the file read-only unless `writable` (then it waits for the write lock
 * like the server's connections do).
 */
export function recordingDb(
  t: TestServer | { dialect: DialectName; url: string },
  options: { writable?: boolean } = {},
): RecordingDb {
  const target = 'deps' in t ? { dialect: t.deps.store.dialect, url: t.database.url } : t;
  let log: CompiledQuery[] | null = null;
  const onLog = (e: { level: string; query: CompiledQuery }) => {
    if (e.level === 'query' && log) log.push(e.query);
  };
  /** Runs `fn`, keeping every query it sends. */
  const record = async <T>(db: Kysely<Database>, fn: (db: Kysely<Database>) => Promise<T>) => {
    log = [];
    try {
      const result = await fn(db);
      return { result, queries: log };
    } finally {
      log = null;
    }
  };
  if (target.dialect === 'postgres') {
    const pool = new pg.Pool({ connectionString: target.url, max: 2 });
    // An idle client the test database's drop terminates (57P01) reports on the pool: it is over by then.
    pool.on('error', () => {});
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: onLog });
    return {
      db,
      record: (fn) => record(db, fn),
      async rowsRead(query, table) {
        const res = await pool.query(`explain (analyze, format json) ${query.sql}`, query.parameters as unknown[]);
        const plan = (res.rows[0]['QUERY PLAN'] as { Plan: PlanNode }[])[0].Plan;
        return sumRows(plan, table);
      },
      sqlitePlan() {
        throw new Error('not SQLite');
      },
      close: () => db.destroy(),
    };
  }
  const file = target.url.replace(/^sqlite:/, '');
  const raw = new BetterSqlite3(file, { readonly: !options.writable });
  if (options.writable) raw.pragma('busy_timeout = 5000');
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: raw }), log: onLog });
  return {
    db,
    record: (fn) => record(db, fn),
    async rowsRead() {
      throw new Error('SQLite has no row counts per plan node; use sqlitePlan');
    },
    sqlitePlan(query) {
      const params = query.parameters.map((p) => (typeof p === 'boolean' ? Number(p) : p));
      return (raw.prepare(`explain query plan ${query.sql}`).all(...(params as unknown[])) as { detail: string }[]).map(
        (r) => r.detail,
      );
    },
    close: () => db.destroy(),
  };
}
