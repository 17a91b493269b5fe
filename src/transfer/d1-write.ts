// Import's write path where the database has no interactive transactions (D1, whose
// `Store.atomic` is one `db.batch()`): a batch of lines is planned by the line type's
// own `write`, against a database handle that answers reads at once and records every
// write, then the recorded statements go to the database as one `Store.atomic`. So a
// batch of lines is written whole or not at all, never half of one row (an event without
// its payload chunk, tags and seen_events row).
//
// The recorded writes are the line types' idempotent statements (INSERT … ON CONFLICT DO
// NOTHING; for a table without a unique key, INSERT … SELECT … WHERE NOT EXISTS:
// insertMissingRows; conditional UPDATEs and DELETEs) or plain INSERTs with ids read just
// before; when another writer got in between the reads and the batch, the idempotent
// statements find its rows and add nothing, and a plain INSERT fails the batch on a
// unique key as a whole, which import runs again from fresh reads (import.ts). So two
// imports of the same file at once (a resent `faultline import --to`, two people) add
// each row once, without a lease that a request cut short by the Workers runtime could
// leave held. Multi-row INSERTs are
// split into statements within D1's 100 bound parameters (values stay bound, so a
// statement's text stays small; a symbol chunk or payload chunk is one bound value well
// under D1's 2 MB). An INSERT's `returning 1 as one` rows (insertRows with a conflict
// target) tell how many rows were really added; the line type counted them as added
// while planning, and the difference is moved to kept here.
//
// Work a line type defers until its rows are committed (ImportContext.afterCommit: a
// symbol file made ready once its chunks are all in) runs after the batch, planned and
// written the same way. Projects are written directly: creating one needs the id the
// database assigns, and each project is one INSERT, atomic on its own.
import {
  CompiledQuery,
  type DatabaseConnection,
  type Driver,
  Kysely,
  type QueryResult,
  SqliteAdapter,
  SqliteIntrospector,
  SqliteQueryCompiler,
} from 'kysely';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { D1_MAX_BOUND_PARAMETERS } from '../store/d1.js';
import type { BatchItem, BatchOutcome, ImportContext, LineType } from './line-type.js';

/** Line types written statement by statement (see the header). */
const DIRECT_TYPES = new Set(['project']);

interface Recorded {
  query: CompiledQuery;
  /** Rows the planner was told this INSERT … RETURNING added (all of its rows). */
  assumed: number;
}

const READ = /^\s*(select|with)\b/i;
const COUNTED_TAIL = ' returning 1 as one';

/** A Kysely whose reads run on `store` now and whose writes are recorded for one batch. */
function recordingDb(store: Store, recorded: Recorded[]): Kysely<Database> {
  const real = store.db;
  const connection: DatabaseConnection = {
    async executeQuery<R>(query: CompiledQuery): Promise<QueryResult<R>> {
      if (READ.test(query.sql)) return real.executeQuery<R>(query);
      let rows: unknown[] = [];
      for (const part of splitInsert(query)) {
        const counted = part.sql.endsWith(COUNTED_TAIL);
        const assumed = counted ? tuplesOf(part) : 0;
        recorded.push({ query: part, assumed });
        if (counted) rows = rows.concat(Array.from({ length: assumed }, () => ({ one: 1 })));
      }
      return { rows: rows as R[], numAffectedRows: 0n };
    },
    // biome-ignore lint/correctness/useYield: a batch cannot stream, so this generator only throws
    async *streamQuery<R>(): AsyncIterableIterator<QueryResult<R>> {
      throw new Error('an import batch does not stream');
    },
  };
  const driver: Driver = {
    async init() {},
    async acquireConnection() {
      return connection;
    },
    async beginTransaction() {},
    async commitTransaction() {},
    async rollbackTransaction() {},
    async releaseConnection() {},
    async destroy() {},
  };
  return new Kysely<Database>({
    dialect: {
      createAdapter: () => new SqliteAdapter(),
      createDriver: () => driver,
      createQueryCompiler: () => new SqliteQueryCompiler(),
      createIntrospector: (db) => new SqliteIntrospector(db),
    },
  });
}

/** Value tuples of an INSERT as insertRows or insertMissingRows builds it (`… values (?, ?), (?, ?)…`). */
function tuplesOf(query: CompiledQuery): number {
  const shape = insertShape(query.sql);
  return shape ? query.parameters.length / shape.columns : 1;
}

/**
 * The columns of an INSERT whose values are bound tuples, and where the tuples start:
 * `insert into "t" (…) values (?, …), …` (insertRows) or
 * `insert into "t" (…) select * from (values (?, …), …) as v where …` (insertMissingRows).
 */
function insertShape(text: string): { columns: number; head: string } | null {
  const match = /^insert into "(?:[^"]|"")*" \(([^)]*)\) (?:select \* from \()?values /i.exec(text);
  return match ? { columns: match[1].split(',').length, head: match[0] } : null;
}

/**
 * An INSERT of many rows (insertShape) as several within D1's bound-parameter
 * limit; any other statement as it is (the D1 store inlines or refuses it).
 */
export function splitInsert(query: CompiledQuery): CompiledQuery[] {
  if (query.parameters.length <= D1_MAX_BOUND_PARAMETERS) return [query];
  const text = query.sql;
  const shape = insertShape(text);
  if (!shape) return [query];
  const { columns, head } = shape;
  if (columns > D1_MAX_BOUND_PARAMETERS || query.parameters.length % columns !== 0) return [query];
  const tuple = `(${new Array(columns).fill('?').join(', ')})`;
  const rows = query.parameters.length / columns;
  const body = new Array(rows).fill(tuple).join(', ');
  if (text.slice(head.length, head.length + body.length) !== body) return [query];
  const tail = text.slice(head.length + body.length);
  const perStatement = Math.floor(D1_MAX_BOUND_PARAMETERS / columns);
  const parts: CompiledQuery[] = [];
  for (let r = 0; r < rows; r += perStatement) {
    const n = Math.min(perStatement, rows - r);
    parts.push(
      CompiledQuery.raw(
        head + new Array(n).fill(tuple).join(', ') + tail,
        query.parameters.slice(r * columns, (r + n) * columns),
      ),
    );
  }
  return parts;
}

/**
 * Writes a batch of lines as one Store.atomic (then the work deferred until after
 * it, each step a batch of its own). `context` builds the line type's ImportContext over
 * a database handle.
 */
export async function writeBatchAtomically(
  store: Store,
  type: LineType,
  items: BatchItem<unknown>[],
  context: (db: Kysely<Database>, afterCommit?: ImportContext['afterCommit']) => ImportContext,
): Promise<BatchOutcome> {
  if (DIRECT_TYPES.has(type.type)) return type.write(context(store.db), items);
  let pending: ((ctx: ImportContext) => Promise<void>)[] = [];
  const afterCommit = (fn: (ctx: ImportContext) => Promise<void>) => void pending.push(fn);
  const recorded: Recorded[] = [];
  const outcome = await type.write(context(recordingDb(store, recorded), afterCommit), items);
  const results = await store.atomic(recorded.map((r) => r.query));
  let notAdded = 0;
  recorded.forEach((r, i) => {
    if (r.assumed > 0) notAdded += r.assumed - (results[i]?.rows.length ?? 0);
  });
  // Deferred work, then what it deferred in turn, each written as one batch.
  while (pending.length > 0) {
    const steps = pending;
    pending = [];
    for (const step of steps) {
      const after: Recorded[] = [];
      await step(context(recordingDb(store, after), afterCommit));
      if (after.length > 0) await store.atomic(after.map((r) => r.query));
    }
  }
  return { added: outcome.added - notAdded, kept: outcome.kept + notAdded, problems: outcome.problems };
}
