// The store on Cloudflare D1 (the serverless edition): a Kysely dialect over a D1
// binding and the Store built on it. D1 speaks SQLite, so queries and migrations take
// their SQLite path (`dialect: 'sqlite'`); what differs is here:
// - Introspection skips D1's internal `_cf_*` tables, whose table info D1 refuses, so
//   Kysely's Migrator can list the tables.
// - D1 refuses BEGIN: there are no interactive transactions. A Kysely transaction on
//   this dialect runs its statements one by one, each atomic on its own. Work whose
//   statements must commit together goes through `Store.batch` (D1's `db.batch()`,
//   one atomic unit) instead; retention does (src/store/retention.ts).
// - Blobs come back from D1 as arrays of byte values; they are turned into Uint8Array.
// Web APIs only.
import {
  CompiledQuery,
  Kysely,
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
  meta?: { changes?: number; last_row_id?: number };
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

function prepare(binding: D1Binding, query: CompiledQuery): D1PreparedStatement {
  const statement = binding.prepare(query.sql);
  return query.parameters.length === 0 ? statement : statement.bind(...query.parameters.map(bindable));
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

  // eslint-disable-next-line require-yield
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
  constructor(private readonly db: Kysely<any>) {}

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
        select name, type, "notnull", dflt_value, pk from pragma_table_info(${table.name}) order by cid`.execute(this.db);
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

  createIntrospector(db: Kysely<any>): DatabaseIntrospector {
    return new D1Introspector(db);
  }
}

/** The Store over a D1 binding; `name` is for logs. */
export function openD1Store(binding: D1Binding, name = 'DB'): Store {
  const db = new Kysely<Database>({ dialect: new D1Dialect(binding) });
  return {
    db,
    dialect: 'sqlite',
    description: `d1:${name}`,
    async batch(queries) {
      if (queries.length === 0) return [];
      const results = await binding.batch(queries.map((q) => prepare(binding, q)));
      return results.map((r) => toQueryResult(r));
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
