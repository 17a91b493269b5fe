// The store on Cloudflare D1 (the serverless edition): a Kysely dialect over a D1
// binding and the Store built on it. D1 speaks SQLite, so queries and migrations take
// their SQLite path (`dialect: 'sqlite'`); what differs is here:
// - Introspection skips D1's internal `_cf_*` tables, whose table info D1 refuses, so
//   Kysely's Migrator can list the tables.
// - D1 refuses BEGIN: there are no interactive transactions. A Kysely transaction on
//   this dialect runs its statements one by one, each atomic on its own. Work whose
//   statements must commit together goes through `Store.atomic` (here D1's
//   `db.batch()`, one atomic unit), the one write path of every domain.
// - Blobs come back from D1 as arrays of byte values; they are turned into Uint8Array.
// - D1 binds at most 100 parameters per statement and takes statements up to 100 KB
//   (local D1 under Miniflare enforces neither). Shared queries bind more (a page of
//   500 ids, bulk status changes of 500 fingerprints), so a statement over the limit
//   has its values written into the SQL as literals (fitToD1), and one that still
//   does not fit fails here, naming the limit, locally as it would on Cloudflare.
// Web APIs only.
import { withBucket, type BlobBucket } from './blobs.js';
import {
  type CompiledQuery,
  Kysely,
  type QueryExecutorProvider,
  SqliteAdapter,
  SqliteQueryCompiler,
  sql,
  type DatabaseConnection,
  type DatabaseIntrospector,
  type DatabaseMetadata,
  type DatabaseMetadataOptions,
  type Dialect,
  type Driver,
  type QueryResult,
  type SchemaMetadata,
  type TableMetadata,
} from 'kysely';
import type { Store } from './database.js';
import type { DialectCapabilities } from './dialect.js';
import type { Database } from './schema.js';

/** The part of Cloudflare's D1 binding this module uses (workers-types' D1Database). */
export interface D1Binding {
  prepare(query: string): D1PreparedStatement;
  batch(statements: D1PreparedStatement[]): Promise<D1Result[]>;
}

export interface D1PreparedStatement {
  bind(...values: unknown[]): D1PreparedStatement;
  all(): Promise<D1Result>;
}

export interface D1Result {
  results?: Record<string, unknown>[];
  /** `size_after`: the database file's bytes after the statement (D1 reports it with every answer). */
  meta?: { changes?: number; last_row_id?: number; size_after?: number };
}

/** D1 binds null, numbers, text and byte buffers; everything else is mapped onto those. */
function bindable(value: unknown): unknown {
  if (value === undefined) return null;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'boolean') return value ? 1 : 0;
  if (value instanceof Uint8Array) {
    // D1 takes an ArrayBuffer for a BLOB; a view of a larger buffer is copied to its bytes.
    return value.byteOffset === 0 && value.byteLength === value.buffer.byteLength ? value.buffer : value.slice().buffer;
  }
  return value;
}

/** D1's limits (developers.cloudflare.com/d1/platform/limits); no BEGIN, only atomic batches. */
export const D1_CAPABILITIES: DialectCapabilities = {
  supportsInteractiveTransactions: false,
  maxBoundParameters: 100,
  maxStatementBytes: 100 * 1024,
  // The largest string, BLOB or row
  maxValueBytes: 2_000_000,
};
export const D1_MAX_BOUND_PARAMETERS = D1_CAPABILITIES.maxBoundParameters;
export const D1_MAX_STATEMENT_BYTES = D1_CAPABILITIES.maxStatementBytes;
export const D1_MAX_VALUE_BYTES = D1_CAPABILITIES.maxValueBytes;

export class D1LimitError extends Error {
  override name = 'D1LimitError';
}

/** `value` as an SQLite literal, or undefined when it must stay bound. */
function sqliteLiteral(value: unknown): string | undefined {
  if (value === null || value === undefined) return 'NULL';
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : undefined;
  if (typeof value === 'bigint') return String(value);
  if (typeof value === 'boolean') return value ? '1' : '0';
  // SQLite string literals have no escapes but the doubled quote; text with NUL stays bound.
  if (typeof value === 'string') return value.includes('\0') ? undefined : `'${value.replaceAll("'", "''")}'`;
  if (value instanceof Uint8Array) {
    let hex = '';
    for (const b of value) hex += b.toString(16).padStart(2, '0');
    return `X'${hex}'`;
  }
  return undefined;
}

/** The end (exclusive) of the quoted token opening at `start`, where a doubled quote is a quote. */
function quotedEnd(text: string, start: number, close: string): number {
  let i = start + 1;
  for (;;) {
    const at = text.indexOf(close, i);
    if (at < 0) return text.length;
    if (text[at + 1] === close && close !== ']') {
      i = at + 2;
      continue;
    }
    return at + 1;
  }
}

/** The statement D1 is sent: within D1's parameter count, else with its values inlined. */
export function fitToD1(query: { sql: string; parameters: readonly unknown[] }): {
  sql: string;
  parameters: unknown[];
} {
  let { sql: text } = query;
  let parameters = [...query.parameters];
  if (parameters.length > D1_MAX_BOUND_PARAMETERS) {
    const kept: unknown[] = [];
    let out = '';
    let next = 0;
    for (let i = 0; i < text.length; ) {
      const ch = text[i];
      const close = ch === "'" || ch === '"' || ch === '`' ? ch : ch === '[' ? ']' : null;
      const comment = ch === '-' && text[i + 1] === '-' ? '\n' : ch === '/' && text[i + 1] === '*' ? '*/' : null;
      if (close || comment) {
        const end = close
          ? quotedEnd(text, i, close)
          : text.indexOf(comment!, i + 2) < 0
            ? text.length
            : text.indexOf(comment!, i + 2) + comment!.length;
        out += text.slice(i, end);
        i = end;
      } else if (ch === '?') {
        if (next >= parameters.length) throw new D1LimitError('statement has more placeholders than parameters');
        const value = parameters[next++];
        const literal = sqliteLiteral(value);
        if (literal === undefined) kept.push(value);
        out += literal ?? '?';
        i += 1;
      } else {
        out += ch;
        i += 1;
      }
    }
    if (next !== parameters.length) throw new D1LimitError('statement has fewer placeholders than parameters');
    text = out;
    parameters = kept;
  }
  if (parameters.length > D1_MAX_BOUND_PARAMETERS) {
    throw new D1LimitError(
      `statement binds ${parameters.length} parameters; D1 binds at most ${D1_MAX_BOUND_PARAMETERS}`,
    );
  }
  const bytes = new TextEncoder().encode(text).byteLength;
  if (bytes > D1_MAX_STATEMENT_BYTES) {
    throw new D1LimitError(`statement is ${bytes} bytes; D1 takes at most ${D1_MAX_STATEMENT_BYTES}`);
  }
  return { sql: text, parameters };
}

function prepare(binding: D1Binding, query: CompiledQuery): D1PreparedStatement {
  const fitted = fitToD1(query);
  const statement = binding.prepare(fitted.sql);
  return fitted.parameters.length === 0 ? statement : statement.bind(...fitted.parameters.map(bindable));
}

function toQueryResult<R>(result: D1Result): QueryResult<R> {
  const rows = (result.results ?? []) as Record<string, unknown>[];
  for (const row of rows) {
    for (const key in row) {
      const v = row[key];
      // The only arrays in D1's results are BLOB values.
      if (Array.isArray(v)) row[key] = Uint8Array.from(v as number[]);
    }
  }
  const changes = result.meta?.changes;
  const lastRowId = result.meta?.last_row_id;
  return {
    rows: rows as R[],
    numAffectedRows: changes === undefined ? undefined : BigInt(changes),
    insertId: lastRowId === undefined || lastRowId === null ? undefined : BigInt(lastRowId),
  };
}

class D1Connection implements DatabaseConnection {
  constructor(private readonly binding: D1Binding) {}

  async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    return toQueryResult<R>(await prepare(this.binding, query).all());
  }

  // biome-ignore lint/correctness/useYield: D1 cannot stream, so this generator only throws
  async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
    throw new Error('D1 does not stream query results');
  }
}

class D1Driver implements Driver {
  private readonly connection: D1Connection;

  constructor(binding: D1Binding) {
    this.connection = new D1Connection(binding);
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    return this.connection;
  }

  // No BEGIN / COMMIT / ROLLBACK: D1 refuses them (see the header).
  async beginTransaction(): Promise<void> {}

  async commitTransaction(): Promise<void> {}

  async rollbackTransaction(): Promise<void> {}

  async releaseConnection(): Promise<void> {}

  async destroy(): Promise<void> {}
}

/** SQLite's introspection, without D1's internal tables. */
class D1Introspector implements DatabaseIntrospector {
  constructor(private readonly db: QueryExecutorProvider) {}

  async getSchemas(): Promise<SchemaMetadata[]> {
    return [];
  }

  async getTables(options: DatabaseMetadataOptions = { withInternalKyselyTables: false }): Promise<TableMetadata[]> {
    const internal = options.withInternalKyselyTables ? [] : ['kysely_migration', 'kysely_migration_lock'];
    const tables = await sql<{ name: string; type: string }>`
      select name, type from sqlite_master
      where type in ('table', 'view') and name not like 'sqlite\\_%' escape '\\' and name not like '\\_cf\\_%' escape '\\'
      order by name`.execute(this.db);
    const out: TableMetadata[] = [];
    for (const table of tables.rows) {
      if (internal.includes(table.name)) continue;
      const columns = await sql<{ name: string; type: string; notnull: number; dflt_value: unknown; pk: number }>`
        select name, type, "notnull", dflt_value, pk from pragma_table_info(${table.name}) order by cid`.execute(
        this.db,
      );
      const pk = columns.rows.filter((c) => c.pk > 0);
      const rowid = pk.length === 1 && pk[0].type.toLowerCase() === 'integer' ? pk[0].name : null;
      out.push({
        name: table.name,
        isView: table.type === 'view',
        columns: columns.rows.map((c) => ({
          name: c.name,
          dataType: c.type,
          isNullable: !c.notnull,
          isAutoIncrementing: c.name === rowid,
          hasDefaultValue: c.dflt_value != null,
        })),
      });
    }
    return out;
  }

  async getMetadata(options?: DatabaseMetadataOptions): Promise<DatabaseMetadata> {
    return { tables: await this.getTables(options) };
  }
}

export class D1Dialect implements Dialect {
  constructor(private readonly binding: D1Binding) {}

  createAdapter() {
    return new SqliteAdapter();
  }

  createDriver(): Driver {
    return new D1Driver(this.binding);
  }

  createQueryCompiler() {
    return new SqliteQueryCompiler();
  }

  // Kysely's Dialect passes the Kysely instance; the introspector only runs raw SQL on it.
  createIntrospector(db: QueryExecutorProvider): DatabaseIntrospector {
    return new D1Introspector(db);
  }
}

/** The Store over a D1 binding; `name` is for logs. */
export function openD1Store(binding: D1Binding, name = 'DB', blobs?: BlobBucket): Store {
  // With a bucket, symbol and upload chunks keep their bytes there (src/store/blobs.ts).
  const db = withBucket(new Kysely<Database>({ dialect: new D1Dialect(binding) }), blobs);
  const atomic = async (queries: CompiledQuery[]): Promise<QueryResult<unknown>[]> => {
    if (queries.length === 0) return [];
    const results = await binding.batch(queries.map((q) => prepare(binding, q)));
    return results.map((r) => toQueryResult(r));
  };
  return {
    db,
    dialect: 'sqlite',
    capabilities: D1_CAPABILITIES,
    description: `d1:${name}`,
    atomic,
    async sizeBytes() {
      const result = await binding.prepare('SELECT 1').all();
      const size = result.meta?.size_after;
      return typeof size === 'number' && Number.isFinite(size) ? size : null;
    },
    async ping() {
      try {
        await sql`select 1`.execute(db);
        return true;
      } catch {
        return false;
      }
    },
    async close() {},
  };
}
