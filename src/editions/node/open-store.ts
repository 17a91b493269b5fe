// Opening the database named by DATABASE_URL on Node: a SQLite file through
// better-sqlite3 (pragmas, the prepared-statement cache, the background WAL
// checkpointer) or PostgreSQL through a pg pool (pipelining, named writes, keepalive).
// Everything about connecting lives here; query code only sees the Store.
import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect, sql, type SqliteDatabase } from 'kysely';
import {
  DatabaseConfigError,
  parseDatabaseUrl,
  redact,
  type Store,
  transactionalAtomic,
} from '../../store/database.js';
import { namedStatement } from '../../store/pg-statements.js';
import { POSTGRES_CAPABILITIES } from '../../store/postgres.js';
import type { Database } from '../../store/schema.js';
import { SQLITE_CAPABILITIES } from '../../store/sqlite.js';
import {
  CommitTally,
  startWalCheckpointer,
  WRITER_AUTOCHECKPOINT_PAGES,
  type WalCheckpointer,
} from './wal-checkpointer.js';

/** A Store opened on Node. */
export interface NodeStore extends Store {
  /**
   * SQLite with background checkpoints: where ingest counts its transactions for the
   * checkpointer's pace (the batch thread records into its buffer).
   */
  commitTally?: CommitTally;
}

function toNumber(v: string): number {
  return Number(v);
}

export interface OpenStoreOptions {
  /**
   * SQLite: checkpoint the WAL on a worker thread instead of inside the commits of
   * this connection (see wal-checkpointer.ts). For the long-running server; short
   * CLI commands and tests leave it off. Ignored for PostgreSQL and :memory:.
   */
  backgroundCheckpoints?: boolean;
  /** Hears about failed background checkpoints. */
  onCheckpointError?: (message: string) => void;
  /** SQLite: this connection's page cache in MB (default 16). */
  pageCacheMb?: number;
}

/** Page size of a new SQLite database (bytes). */
export const SQLITE_PAGE_SIZE = 8192;

/** SQLite page cache of a connection unless it asks for another size. */
const DEFAULT_PAGE_CACHE_MB = 16;

export async function openStore(url: string | undefined, options: OpenStoreOptions = {}): Promise<NodeStore> {
  const target = parseDatabaseUrl(url);
  return target.dialect === 'sqlite' ? openSqlite(target.path, options) : openPostgres(target.url);
}

/**
 * Creates the missing folders above a SQLite file one at a time, outermost first.
 * Node's recursive mkdir loops for ever where the kernel answers ENOENT for a folder it
 * will not create (`/proc/x`); one level at a time, that answer is a clear error.
 */
function makeParentFolders(file: string): void {
  const missing: string[] = [];
  for (let dir = path.dirname(path.resolve(file)); !fs.existsSync(dir); dir = path.dirname(dir)) {
    missing.unshift(dir);
    if (path.dirname(dir) === dir) break;
  }
  for (const dir of missing) {
    try {
      fs.mkdirSync(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw new DatabaseConfigError(
        `DATABASE_URL: cannot create the folder ${dir} for SQLite database ${file}: ${(err as Error).message}`,
      );
    }
  }
}

function openSqlite(file: string, options: OpenStoreOptions): NodeStore {
  const memory = file === ':memory:';
  if (!memory) makeParentFolders(file);
  let raw: BetterSqlite3.Database;
  try {
    raw = new BetterSqlite3(file);
    // 8 KB pages instead of SQLite's 4 KB: a 50-event commit writes 63 WAL frames instead
    // of 89 (more bytes, fewer frames: much of what a batch dirties is one page per
    // index wherever it lands), and the WAL and the checkpointer pay system calls per
    // frame (measured: +12 % requests/s).
    // It takes effect only while the file is still empty: a database created with
    // another page size keeps it (in WAL mode only a VACUUM outside WAL could change it).
    raw.pragma(`page_size = ${SQLITE_PAGE_SIZE}`);
    // WAL: readers never block the writer. synchronous=NORMAL keeps every committed
    // transaction across a process kill (-9); only an OS crash could lose the last ones.
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = NORMAL');
    raw.pragma('foreign_keys = ON');
    raw.pragma('busy_timeout = 5000');
    // 16 MB of page cache by default: 64 MB buys no ingest speed (measured) and costs
    // 40 MB of RSS; the read routes' indexes stay hot in the OS page cache anyway.
    raw.pragma(`cache_size = -${Math.max(1, Math.round((options.pageCacheMb ?? DEFAULT_PAGE_CACHE_MB) * 1024))}`);
    raw.pragma('temp_store = MEMORY');
  } catch (err) {
    throw new DatabaseConfigError(`DATABASE_URL: cannot open SQLite database ${file}: ${(err as Error).message}`);
  }
  let checkpointer: WalCheckpointer | null = null;
  let commitTally: CommitTally | undefined;
  if (options.backgroundCheckpoints && !memory) {
    commitTally = new CommitTally();
    checkpointer = startWalCheckpointer(path.resolve(file), options.onCheckpointError, commitTally);
    raw.pragma(`wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`);
  }
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  return {
    db,
    dialect: 'sqlite',
    capabilities: SQLITE_CAPABILITIES,
    atomic: transactionalAtomic(db),
    description: `sqlite:${memory ? file : path.resolve(file)}`,
    commitTally,
    async ping() {
      try {
        if (!memory) fs.accessSync(file, fs.constants.R_OK | fs.constants.W_OK);
        raw.prepare('select count(*) from projects').get();
        return true;
      } catch {
        return false;
      }
    },
    async close() {
      await checkpointer?.stop();
      await db.destroy();
    },
  };
}

/** Prepared statements kept per SQL text; the ingest batch reuses a handful of shapes. */
const STATEMENT_CACHE_SIZE = 500;

/**
 * better-sqlite3 compiles a statement on every prepare(), and Kysely's driver prepares
 * each query anew: on the ingest path that compile costs more than running the
 * statements (measured). This keeps the most recent statements by
 * SQL text. A statement still iterating (busy) is never handed out twice.
 */
function withStatementCache(raw: BetterSqlite3.Database): SqliteDatabase {
  const cache = new Map<string, BetterSqlite3.Statement>();
  const prepare = (source: string): BetterSqlite3.Statement => {
    const cached = cache.get(source);
    if (cached && !cached.busy) {
      // Map order is insertion order: re-inserting marks it most recently used.
      cache.delete(source);
      cache.set(source, cached);
      return cached;
    }
    const statement = raw.prepare(source);
    if (!cached) {
      cache.set(source, statement);
      if (cache.size > STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    }
    return statement;
  };
  return { prepare, close: () => raw.close() };
}

async function openPostgres(url: string): Promise<Store> {
  const pool = new pg.Pool({
    connectionString: url,
    // Statements sent before the previous one answered go out at once instead of
    // waiting their turn: the ingest batch pipelines its reads and its commit
    // (src/store/postgres.ts). Code that awaits each statement is unaffected.
    pipeline: true,
    max: 10,
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    // A server that vanishes without closing the connection is noticed by TCP
    // keepalive instead of after the OS default of two hours.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    types: {
      getTypeParser(oid: number, format?: any) {
        // int8 and numeric arrive as strings; every value we store is below 2^53.
        if (oid === 20 || oid === 1700) return toNumber;
        return pg.types.getTypeParser(oid, format);
      },
    } as any,
  });
  // An idle client losing its server must not crash the process; the next query fails instead.
  pool.on('error', () => {});
  // pg-pool removes its listener from a checked-out client, so a connection lost in
  // the middle of a query would emit an unhandled 'error' and kill the process; the
  // query itself still rejects, which is all callers need.
  pool.on('connect', (client) => {
    client.on('error', () => {});
    sendNamedStatements(client);
  });
  const description = redact(url);
  try {
    const client = await pool.connect();
    client.release();
  } catch (err) {
    await pool.end().catch(() => {});
    throw new DatabaseConfigError(
      `DATABASE_URL: cannot connect to PostgreSQL ${description}: ${(err as Error).message}`,
    );
  }
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  return {
    db,
    dialect: 'postgres',
    capabilities: POSTGRES_CAPABILITIES,
    atomic: transactionalAtomic(db),
    description,
    async ping(timeoutMs = 2000) {
      const query = sql`select 1`.execute(db).then(
        () => true,
        () => false,
      );
      const timeout = new Promise<boolean>((resolve) => setTimeout(() => resolve(false), timeoutMs).unref());
      return Promise.race([query, timeout]);
    },
    async close() {
      await db.destroy();
    },
  };
}

/**
 * Makes a pool client send the texts src/store/pg-statements.ts marked as named
 * statements: the first use on a connection prepares it (node-postgres remembers which
 * connection prepared which name), later uses only bind and execute. Kysely calls
 * `client.query(text, values)`; anything else passes through unchanged.
 */
function sendNamedStatements(client: pg.PoolClient): void {
  const query = client.query as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = function (this: pg.PoolClient, ...args: unknown[]) {
    const [text, values] = args;
    if (typeof text === 'string' && Array.isArray(values) && args.length === 2) {
      const name = namedStatement(text);
      if (name !== undefined) return query.call(this, { name, text, values });
    }
    return query.apply(this, args);
  };
}
