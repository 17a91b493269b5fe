// One ingest batch as one database transaction: reads what the batch's works touch
// (the snapshot), has the planner apply the ingest rules (src/ingest/plan.ts), and
// writes the planner's write set with multi-row statements, so the number of
// statements grows with the distinct keys a batch touches (projects, issues, hours,
// releases), never with its events. docs/architecture.md ("The ingest writer (group
// commit)") explains the design.
import {
  CompiledQuery,
  sql,
  type Compilable,
  type DatabaseConnection,
  type Insertable,
  type Kysely,
  type OnConflictBuilder,
  type OnConflictDoNothingBuilder,
  type OnConflictUpdateBuilder,
  type RawBuilder,
} from 'kysely';
import {
  alertOutboxRows,
  batchKeys,
  emptySnapshot,
  issueChangeRows,
  issueHourlyRows,
  issueReleaseRows,
  issueUserRows,
  linkStoredEvents,
  planBatch,
  tagRows,
  type IssueWithTimes,
  type PlannedEvent,
  type PlannedIssueRow,
  type ProjectKeys,
  type ProjectSettings,
  type ProjectSnapshot,
  type Random,
  type WriteCounts,
  type WriteSet,
} from '../ingest/plan.js';
import { rawSource, type PreparedWork } from '../ingest/prepare.js';
import type { IngestOutcome } from '../ingest/types.js';
import type { Dialect, Store } from './database.js';
import { packPayloads, type CompressBlob, type PackedChunk, type PayloadSlot } from './payloads.js';
import { pgArrayLiteral } from './pg-arrays.js';
import { nameStatement } from './pg-statements.js';
import type { Database, EventTable, ReleaseRow, SessionRow } from './schema.js';

type Db = Kysely<Database>;

/** Values per `in (...)` list. */
const IN_CHUNK = 5_000;

/**
 * What new rows hold in `events.detail`: nothing. The detail is rebuilt from the raw
 * payload when asked for (src/read/events.ts), which spares ingest a JSON encoding and a
 * second compression per event and halves what each event writes. Rows written before
 * keep their encoded detail.
 */
const NO_DETAIL = new Uint8Array(0);
/** What new rows hold in `events.raw`: nothing; the payload is in `payload_chunk` (src/store/payloads.ts). */
const NO_RAW = NO_DETAIL;

// ---------------------------------------------------------------------------
// The batch
// ---------------------------------------------------------------------------

export interface BatchOptions {
  /** Uniform draws in [0, 1) for sampling. */
  random: Random;
  /** The edition's blob codec, for the payload chunks (Node: src/editions/node/codec.ts). */
  compress: CompressBlob;
  /**
   * SQLite: issue rows kept from earlier batches of the same connection. Only for a
   * connection that writes nothing but ingest batches (the batch thread's), since the
   * cache trusts rows this connection wrote itself (see IssueCache).
   */
  issueCache?: IssueCache;
}

/** Issues an IssueCache keeps, at most (a few hundred bytes each). */
const ISSUE_CACHE_SIZE = 5_000;

/**
 * The issue rows (with the event times behind first/last_seen_id) that a SQLite
 * connection's ingest batches wrote, so the next batch need not read them again: that
 * read joined each issue to two events, random pages of a large table, and took a
 * tenth of the batch thread's time. SQLite's `data_version` tells whether any other
 * connection (the main thread's status changes and deletions, retention, the CLI)
 * committed since; if so, everything is forgotten. A failed batch forgets everything
 * too.
 */
export class IssueCache {
  private readonly rows = new Map<string, IssueWithTimes>();
  private dataVersion: number | null = null;

  /** Forgets everything unless `dataVersion` is the one seen when the rows were kept. */
  check(dataVersion: number): void {
    if (dataVersion !== this.dataVersion) this.rows.clear();
    this.dataVersion = dataVersion;
  }

  private static key(projectId: number, fingerprint: string): string {
    return `${projectId}:${fingerprint}`;
  }

  get(projectId: number, fingerprint: string): IssueWithTimes | undefined {
    const key = IssueCache.key(projectId, fingerprint);
    const row = this.rows.get(key);
    if (row) {
      // Map order is insertion order: re-inserting marks it most recently used.
      this.rows.delete(key);
      this.rows.set(key, row);
    }
    return row;
  }

  keep(row: IssueWithTimes): void {
    const key = IssueCache.key(num(row.project_id), row.fingerprint);
    this.rows.delete(key);
    this.rows.set(key, row);
    if (this.rows.size > ISSUE_CACHE_SIZE) this.rows.delete(this.rows.keys().next().value!);
  }

  clear(): void {
    this.rows.clear();
    this.dataVersion = null;
  }

  get size(): number {
    return this.rows.size;
  }
}

/** A transaction's answer: the planner's outcomes and counts, and the events stored. */
export interface BatchResult extends WriteCounts {
  /** One per work, in order. */
  outcomes: IngestOutcome[];
  stored: number;
  /**
   * Set on the answer of a request the batch thread merged into another request's
   * transaction: that request's answer carries the transaction's counts.
   */
  merged?: boolean;
}

/** Writes the works in one transaction; throws (after rolling back) when the database fails. */
export async function commitIngestBatch(store: Store, works: PreparedWork[], options: BatchOptions): Promise<BatchResult> {
  return store.db.getExecutor().provideConnection(async (connection) => {
    if (store.dialect === 'postgres') return inPostgresTransaction(connection, (send) => new Batch(store.db, send, 'postgres', options).run(works));
    const send: Send = async (query) => (await connection.executeQuery(query)).rows as Record<string, unknown>[];
    const batch = new Batch(store.db, send, 'sqlite', options);
    try {
      const result = await inSqliteTransaction(send, () => batch.run(works));
      if (options.issueCache) for (const row of batch.issueRows()) options.issueCache.keep(row);
      return result;
    } catch (err) {
      options.issueCache?.clear();
      throw err;
    }
  });
}

/** Runs a compiled query on the batch's connection; resolves to its rows. */
type Send = (query: CompiledQuery) => Promise<Record<string, unknown>[]>;

const BEGIN = CompiledQuery.raw('begin');
const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
const DATA_VERSION = CompiledQuery.raw('pragma data_version');

async function inSqliteTransaction<T>(send: Send, fn: () => Promise<T>): Promise<T> {
  // BEGIN IMMEDIATE takes SQLite's write lock up front: a deferred transaction that
  // reads first could fail to upgrade when another process (the CLI) holds it.
  await send(BEGIN_IMMEDIATE);
  try {
    const result = await fn();
    await send(COMMIT);
    return result;
  } catch (err) {
    try {
      await send(ROLLBACK);
    } catch {
      // SQLite already rolled back on its own
    }
    throw err;
  }
}

/**
 * On PostgreSQL the batch's statements are pipelined (the pool's clients run in pg's
 * pipeline mode): `begin` goes out with the batch's reads, and `commit` right behind
 * its one writing statement, so a batch waits for two round trips instead of about
 * ten. Under load each round trip cost 1-4 ms here (the PostgreSQL server and this
 * process share the cores), most of a batch's time (BENCHMARKS.md). A failing
 * statement aborts the transaction; the statements behind it fail or, for `commit`,
 * roll back, so nothing is committed; the connection is left outside any transaction.
 */
async function inPostgresTransaction<T>(connection: DatabaseConnection, fn: (send: Send) => Promise<T>): Promise<T> {
  const sent: Promise<unknown>[] = [];
  const send: Send = (query) => {
    const rows = connection.executeQuery(query).then((r) => r.rows as Record<string, unknown>[]);
    // Every pipelined statement is awaited by the batch or here; none may reject unseen.
    rows.catch(() => {});
    sent.push(rows);
    return rows;
  };
  void send(BEGIN);
  try {
    const result = await fn(send);
    // fn sent `commit` itself, behind its last write; every statement must have succeeded.
    await Promise.all(sent);
    return result;
  } catch (err) {
    await Promise.allSettled(sent);
    try {
      await connection.executeQuery(ROLLBACK);
    } catch {
      // the connection is gone; the server rolled back
    }
    throw err;
  }
}

function chunks<T>(values: T[], size: number): T[][] {
  if (values.length <= size) return values.length === 0 ? [] : [values];
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

function num(value: unknown): number {
  return Number(value);
}

/**
 * PostgreSQL: the project's rows of `table` whose `column` is one of `keys`, each found
 * by its own index probe (see readPostgres).
 */
function lookup(table: keyof Database, projectId: number, column: string, keys: unknown[], type: 'text' | 'int8') {
  return CompiledQuery.raw(
    `select t.* from unnest($1::${type}[]) as k(v)
     cross join lateral (select * from "${table}" where project_id = $2 and "${column}" = k.v offset 0) t`,
    [pgArrayLiteral(keys, type), projectId],
  );
}

// The texts of the batch's PostgreSQL reads are fixed, so they are written out instead of
// being built with Kysely for every batch, like the write (pgWriteTemplate): the reads
// go out at the start of each batch, in the chain of a project's batches.

/**
 * Fresh sample/quota settings, and a lock that serialises ingest per project across
 * server instances (taken in id order, so never a deadlock). Every read-merge-write of
 * the batch relies on it. FOR NO KEY UPDATE still lets other transactions insert rows
 * that reference the project.
 */
const PG_LOCK_PROJECTS = `select "id", "sample_keep_first", "sample_rate", "daily_quota" from "projects"
  where id = any($1::int8[]) order by "id" for no key update`;

const PG_READ_EVENT_IDS = `select e.event_id, case when s.event_id is null then nextval('events_id_seq') end as id
  from unnest($1::text[]) as e(event_id)
  left join lateral (select event_id from seen_events where project_id = $2 and event_id = e.event_id offset 0) s on true`;

const PG_READ_ISSUES = `select f.fingerprint as key, i.*, fe.timestamp as first_ts, le.timestamp as last_ts,
    case when i.id is null then nextval('issues_id_seq') end as new_id
  from unnest($1::text[]) with ordinality as f(fingerprint, n)
  left join lateral (select * from issues where project_id = $2 and fingerprint = f.fingerprint for update) i on true
  left join events fe on fe.id = i.first_seen_id
  left join events le on le.id = i.last_seen_id
  order by f.n`;

const PG_READ_RESOLVED_RELEASES = `select r.issue_id, r.release, r.first_seen
  from unnest($1::text[]) as f(fingerprint)
  cross join lateral (select id from issues where project_id = $2 and fingerprint = f.fingerprint and status = 'resolved' offset 0) i
  cross join lateral (select issue_id, release, first_seen from issue_releases where issue_id = i.id offset 0) r`;

class Batch {
  /** PostgreSQL writes to send together at the end (see flushDeferred); `name` when a later one reads its output. */
  private readonly deferred: { name?: string; template: string[]; params: string[] }[] = [];
  /** The planner's write set, once planned. */
  private plan: WriteSet | null = null;

  /**
   * `db` only compiles queries; they run through `send`, on the transaction's
   * connection.
   */
  constructor(
    private readonly db: Db,
    private readonly send: Send,
    private readonly dialect: Dialect,
    private readonly options: BatchOptions,
  ) {}

  private rows<T>(query: Compilable | RawBuilder<unknown> | CompiledQuery): Promise<T[]> {
    const compiled = 'sql' in query ? query : 'isRawBuilder' in query ? query.compile(this.db) : query.compile();
    return this.send(compiled) as Promise<T[]>;
  }

  async run(works: PreparedWork[]): Promise<BatchResult> {
    const keys = batchKeys(works);
    const read = this.dialect === 'postgres' ? await this.readPostgres(keys) : await this.readSqlite(keys);
    const plan = planBatch(works, read, this.options.random);
    this.plan = plan;
    if (this.dialect === 'postgres') await this.writePostgres(plan);
    else await this.writeSqlite(plan);
    return { outcomes: plan.outcomes, ...plan.counts, stored: plan.stored.length };
  }

  /** The issues this batch wrote, as they are now in the database (after its commit). */
  issueRows(): IssueWithTimes[] {
    return (this.plan?.issues ?? []).map((s) => ({
      ...s.row,
      id: s.row.id!,
      // What readSqlite turns back into the same firstStoredTs / lastStoredTs.
      first_ts: Number.isFinite(s.firstStoredTs) ? s.firstStoredTs : null,
      last_ts: Number.isFinite(s.lastStoredTs) ? s.lastStoredTs : null,
    }));
  }

  // -------------------------------------------------------------------------
  // Reads: everything the plan needs, before it starts. On PostgreSQL they go out
  // together behind `begin`, in this order, and are awaited once.
  // -------------------------------------------------------------------------

  /** SQLite: fresh sample/quota settings (the transaction holds the write lock already; PostgreSQL: PG_LOCK_PROJECTS). */
  private projectSettings(ids: number[]) {
    return this.db.selectFrom('projects').select(['id', 'sample_keep_first', 'sample_rate', 'daily_quota']).where('id', 'in', ids).orderBy('id');
  }

  /** SQLite: the project's issues with the event times behind first/last_seen_id (readPostgres has its own, locking). */
  private issuesQuery(projectId: number) {
    return this.db
      .selectFrom('issues')
      .leftJoin('events as fe', 'fe.id', 'issues.first_seen_id')
      .leftJoin('events as le', 'le.id', 'issues.last_seen_id')
      .selectAll('issues')
      .select(['fe.timestamp as first_ts', 'le.timestamp as last_ts'])
      .where('issues.project_id', '=', projectId);
  }

  private async readSqlite(keys: ProjectKeys[]) {
    if (this.options.issueCache) {
      const [row] = await this.send(DATA_VERSION);
      this.options.issueCache.check(num(row.data_version));
    }
    const projects = new Map<number, ProjectSettings>();
    for (const part of chunks(keys.map((k) => k.projectId), IN_CHUNK)) {
      for (const r of await this.rows<ProjectSettings>(this.projectSettings(part))) projects.set(num(r.id), r);
    }
    const snapshots = new Map<number, ProjectSnapshot>();
    for (const k of keys) {
      const pid = k.projectId;
      const snap = emptySnapshot();
      snapshots.set(pid, snap);
      if (!projects.has(pid)) continue;
      const db = this.db;
      for (const part of chunks(k.eventIds, IN_CHUNK)) {
        const rows = await this.rows<{ event_id: string }>(db.selectFrom('seen_events').select('event_id').where('project_id', '=', pid).where('event_id', 'in', part));
        for (const r of rows) snap.seen.add(r.event_id);
      }
      if (projects.get(pid)!.daily_quota > 0 && k.days.length > 0) {
        const rows = await this.rows<{ day: number; events: number }>(db.selectFrom('daily_usage').select(['day', 'events']).where('project_id', '=', pid).where('day', 'in', k.days));
        for (const r of rows) snap.used.set(num(r.day), num(r.events));
      }
      const cache = this.options.issueCache;
      const unknown: string[] = [];
      for (const fingerprint of k.fingerprints) {
        const row = cache?.get(pid, fingerprint);
        if (row) snap.issues.push(row);
        else unknown.push(fingerprint);
      }
      for (const part of chunks(unknown, IN_CHUNK)) {
        snap.issues.push(...(await this.rows<IssueWithTimes>(this.issuesQuery(pid).where('issues.fingerprint', 'in', part))));
      }
      const resolved = snap.issues.filter((i) => i.status === 'resolved').map((i) => num(i.id));
      for (const part of chunks(resolved, IN_CHUNK)) {
        snap.resolvedReleases.push(
          ...(await this.rows<ProjectSnapshot['resolvedReleases'][number]>(db.selectFrom('issue_releases').select(['issue_id', 'release', 'first_seen']).where('issue_id', 'in', part))),
        );
      }
      for (const part of chunks(k.releases, IN_CHUNK)) {
        snap.releases.push(...(await this.rows<ReleaseRow>(db.selectFrom('releases').selectAll().where('project_id', '=', pid).where('release', 'in', part))));
      }
      for (const part of chunks(k.sids, IN_CHUNK)) {
        snap.sessions.push(...(await this.rows<SessionRow>(db.selectFrom('sessions').selectAll().where('project_id', '=', pid).where('sid', 'in', part))));
      }
    }
    return { projects, snapshots };
  }

  /**
   * The same reads as one pipeline. Lists travel as one array parameter each, and every
   * key is looked up on its own (a LATERAL subquery the planner cannot turn into a join),
   * so the plans probe the primary keys whatever the statistics say: without them (a new
   * database, or autovacuum off) PostgreSQL hashed every seen event id of the project to
   * check 60 new ones, 9 ms per batch at 30 000 events and growing. The ids of the rows
   * the batch may insert come from the sequences here too (only for event ids and
   * fingerprints not in the database yet), so the writes need no RETURNING and fit in
   * one statement; ids of events that sampling or the quota then drop stay unused.
   */
  private async readPostgres(keys: ProjectKeys[]) {
    const lock = this.rows<ProjectSettings>(CompiledQuery.raw(PG_LOCK_PROJECTS, [keys.map((k) => k.projectId)]));
    const reads = keys.map((k) => {
      const pid = k.projectId;
      const fingerprints = pgArrayLiteral(k.fingerprints, 'text');
      return Promise.all([
        this.rows<{ event_id: string; id: number | null }>(CompiledQuery.raw(PG_READ_EVENT_IDS, [pgArrayLiteral(k.eventIds, 'text'), pid])),
        this.rows<{ day: number; events: number }>(lookup('daily_usage', pid, 'day', k.days, 'int8')),
        // Locked in fingerprint order (projectKeys sorts them).
        this.rows<IssueWithTimes & { key: string; new_id: number | null }>(CompiledQuery.raw(PG_READ_ISSUES, [fingerprints, pid])),
        this.rows<ProjectSnapshot['resolvedReleases'][number]>(CompiledQuery.raw(PG_READ_RESOLVED_RELEASES, [fingerprints, pid])),
        this.rows<ReleaseRow>(lookup('releases', pid, 'release', k.releases, 'text')),
        this.rows<SessionRow>(lookup('sessions', pid, 'sid', k.sids, 'text')),
      ]);
    });
    // Awaited together: when the lock fails (a lost connection fails every pipelined
    // statement), a read awaited only after it would reject with nobody listening.
    const [locked, read] = await Promise.all([lock, Promise.all(reads)]);
    const projects = new Map<number, ProjectSettings>();
    for (const r of locked) projects.set(num(r.id), r);
    const snapshots = new Map<number, ProjectSnapshot>();
    for (const [k, [events, used, issues, resolvedReleases, releases, sessions]] of read.entries()) {
      const eventIds = new Map<string, number>();
      const seen = new Set<string>();
      for (const r of events) {
        if (r.id === null) seen.add(r.event_id);
        else eventIds.set(r.event_id, num(r.id));
      }
      const newIssueIds = new Map<string, number>();
      const found: IssueWithTimes[] = [];
      for (const { key, new_id, ...row } of issues) {
        if (new_id !== null) newIssueIds.set(key, num(new_id));
        else found.push(row);
      }
      snapshots.set(keys[k].projectId, {
        seen,
        eventIds,
        used: new Map(used.map((r) => [num(r.day), num(r.events)])),
        issues: found,
        resolvedReleases,
        newIssueIds,
        releases,
        sessions,
      });
    }
    return { projects, snapshots };
  }

  // -------------------------------------------------------------------------

  /**
   * Inserts rows. SQLite: VALUES lists of a few fixed sizes, chunked under its 32 766
   * bound parameters, run at once. PostgreSQL: one array parameter per column (`insert
   * ... select * from unnest(...)`), a fixed, small statement that costs a fraction of
   * a VALUES list with a parameter per value; it becomes part of the batch's one
   * writing statement (flushDeferred).
   */
  private async insertRows(
    table: keyof Database,
    spec: ColumnSpec,
    rows: Record<string, unknown>[],
    options: {
      conflict?: (oc: OnConflictBuilder<any, any>) => OnConflictUpdateBuilder<any, any> | OnConflictDoNothingBuilder<any, any>;
      /** SQLite only: the columns of the inserted rows to return. */
      returning?: string[];
    } = {},
  ): Promise<Record<string, unknown>[]> {
    const db = this.db as unknown as Kysely<any>;
    const columns = spec.map(([name]) => name);
    if (this.dialect === 'sqlite') {
      const out: Record<string, unknown>[] = [];
      for (const part of sqliteChunks(rows)) {
        const text = sqliteInsertText(db, table, spec, part.length, options);
        const parameters: unknown[] = [];
        for (const row of part) for (const name of columns) parameters.push(row[name] ?? null);
        const result = await this.send(CompiledQuery.raw(text, parameters));
        if (options.returning) out.push(...result);
      }
      return out;
    }
    const template = pgWriteTemplate(`${table}|${options.conflict ? 'upsert' : 'insert'}`, spec.length, () => {
      const query = db.insertInto(table).columns(columns).expression(sql`select * from unnest(${unnestParameters(spec)})`);
      return options.conflict ? query.onConflict(options.conflict) : query;
    });
    for (const part of chunks(rows, PG_ROWS)) this.deferred.push({ template, params: pgArrays(spec, part) });
    return [];
  }

  /**
   * Sends the deferred writes as one statement of data-modifying CTEs, and `commit`
   * right behind it: one round trip instead of one per table. They touch different
   * tables and only the issues read what a sibling returned (its new users), which
   * is what PostgreSQL allows of sibling CTEs.
   */
  private async flushDeferred(): Promise<void> {
    const queries = this.deferred.splice(0);
    let written: Promise<unknown> = Promise.resolve();
    if (queries.length > 0) {
      // Each write's parameters are numbered after those of the writes before it.
      const params: string[] = [];
      const numbered = ({ template, params: own }: (typeof queries)[number]) => {
        const offset = params.length;
        params.push(...own);
        return template.map((part, i) => (i === 0 ? part : `$${offset + i}${part}`)).join('');
      };
      const text =
        queries.length === 1 && !queries[0].name
          ? numbered(queries[0])
          : `with ${queries.map((q, i) => `"${q.name ?? `w${i}`}" as (${numbered(q)})`).join(', ')} select 1 as "done"`;
      nameStatement(text);
      written = this.send(CompiledQuery.raw(text, params));
    }
    const committed = this.send(COMMIT);
    await written;
    await committed;
  }

  /** The stored events' payloads compressed into chunks (src/store/payloads.ts); `members` index plan.stored. */
  private packStoredPayloads(plan: WriteSet): { chunks: PackedChunk[]; slots: PayloadSlot[] } {
    return packPayloads(
      plan.stored.map((s) => ({ projectId: s.projectId, receivedAt: s.receivedAt, payload: rawSource(s.input) })),
      this.options.compress,
    );
  }

  private async writeSqlite(plan: WriteSet): Promise<void> {
    // New issues first: events, users, hourly rows and changes need their ids.
    const fresh = plan.issues.filter((s) => s.row.id === null);
    const created = await this.insertRows(
      'issues',
      ISSUE_COLUMNS,
      fresh.map((s) => issueColumns(s.row)),
      { returning: ['id', 'project_id', 'fingerprint'] },
    );
    const freshByKey = new Map(fresh.map((s) => [`${s.row.project_id}:${s.row.fingerprint}`, s]));
    for (const r of created) freshByKey.get(`${num(r.project_id)}:${r.fingerprint}`)!.row.id = num(r.id);

    // Payload chunks, then the stored events that name them, then first/last_seen_id by event time.
    const { chunks, slots } = this.packStoredPayloads(plan);
    const chunkIds: number[] = [];
    for (const chunk of chunks) {
      const [row] = await this.insertRows('payload_chunks', CHUNK_COLUMNS, [chunkRow(chunk)], { returning: ['id'] });
      chunkIds.push(num(row.id));
    }
    const inserted = await this.insertRows(
      'events',
      EVENT_COLUMNS,
      plan.stored.map((s, i) => eventValues(s, chunkIds, slots[i])),
      { returning: ['id', 'project_id', 'event_id'] },
    );
    const storedByKey = new Map(plan.stored.map((s) => [`${s.projectId}:${s.input.eventId}`, s]));
    for (const r of inserted) storedByKey.get(`${num(r.project_id)}:${r.event_id}`)!.id = num(r.id);
    linkStoredEvents(plan);
    await this.insertRows('event_tags', TAG_COLUMNS, tagRows(plan));

    // Exact distinct users: only the keys new to the issue come back.
    const byId = new Map(plan.issues.map((s) => [s.row.id!, s]));
    const added = await this.insertRows('issue_users', USER_COLUMNS, issueUserRows(plan), {
      conflict: (oc) => oc.columns(['issue_id', 'user_key']).doNothing(),
      returning: ['issue_id'],
    });
    for (const r of added) byId.get(num(r.issue_id))!.row.users += 1;

    // Every touched issue with its final values (its row is locked, so absolute values are safe).
    await this.insertRows(
      'issues',
      ISSUE_COLUMNS,
      plan.issues.map((s) => issueColumns(s.row)),
      { conflict: issueUpsert },
    );
    await this.writeAggregates(plan);
  }

  /**
   * One statement: every id is known from the reads (readPostgres), so the events, their
   * tags and the issues go in with the aggregates. An issue's `users` grows by the user
   * keys the statement's `issue_users` insert reports as new to it.
   */
  private async writePostgres(plan: WriteSet): Promise<void> {
    const db = this.db as unknown as Kysely<any>;
    linkStoredEvents(plan);
    // A chunk takes the id of its first event: ids are known from the reads, and an event
    // id is never taken twice. Chunks travel in a bytea[] parameter (two hex digits a
    // byte), which per-event blobs could not afford; a batch's chunks are a few KB.
    const { chunks, slots } = this.packStoredPayloads(plan);
    const chunkIds = chunks.map((c) => plan.stored[c.members[0]].id!);
    await this.insertRows(
      'payload_chunks',
      CHUNK_COLUMNS_WITH_ID,
      chunks.map((c, i) => ({ id: chunkIds[i], ...chunkRow(c) })),
    );
    await this.insertRows('events', EVENT_COLUMNS_WITH_ID, plan.stored.map((s, i) => ({ id: s.id, ...eventValues(s, chunkIds, slots[i]) })));
    await this.insertRows('event_tags', TAG_COLUMNS, tagRows(plan));
    if (plan.issues.length > 0) {
      this.deferred.push({
        name: 'added_users',
        template: pgWriteTemplate('issue_users|added', USER_COLUMNS.length, () =>
          db
            .insertInto('issue_users')
            .columns(USER_COLUMNS.map(([name]) => name))
            .expression(sql`select * from unnest(${unnestParameters(USER_COLUMNS)})`)
            .onConflict((oc) => oc.columns(['issue_id', 'user_key']).doNothing())
            .returning('issue_id'),
        ),
        params: pgArrays(USER_COLUMNS, issueUserRows(plan)),
      });
      const columns = ISSUE_COLUMNS_WITH_ID.map(([name]) => name);
      this.deferred.push({
        template: pgWriteTemplate('issues|upsert', ISSUE_COLUMNS_WITH_ID.length, () =>
          db
            .insertInto('issues')
            .columns(columns)
            .expression(
              sql`select ${sql.join(columns.map((c) => (c === 'users' ? sql`u.users + coalesce(a.added, 0)` : sql.ref(`u.${c}`))))}
                  from unnest(${unnestParameters(ISSUE_COLUMNS_WITH_ID)}) as u(${sql.join(columns.map((c) => sql.id(c)))})
                  left join (select issue_id, count(*) as added from added_users group by issue_id) a on a.issue_id = u.id`,
            )
            .onConflict(issueUpsert),
        ),
        params: pgArrays(
          ISSUE_COLUMNS_WITH_ID,
          plan.issues.map((s) => s.row as unknown as Record<string, unknown>),
        ),
      });
    }
    await this.writeAggregates(plan);
    await this.flushDeferred();
  }

  /** Everything after the events and issues: the same statements on both databases. */
  private async writeAggregates(plan: WriteSet): Promise<void> {
    // Only an earlier first time rewrites a known (issue, release) row: nearly every batch
    // names releases its issues already had, and an update that keeps the value still
    // writes a row version and its WAL on PostgreSQL (one per issue and release a batch).
    await this.insertRows('issue_releases', ISSUE_RELEASE_COLUMNS, issueReleaseRows(plan), {
      conflict: (oc) =>
        oc
          .columns(['issue_id', 'release'])
          .doUpdateSet({ first_seen: (eb: any) => eb.ref('excluded.first_seen') })
          .where((eb: any) => eb('excluded.first_seen', '<', eb.ref('issue_releases.first_seen'))),
    });
    await this.insertRows('issue_hourly', ISSUE_HOURLY_COLUMNS, issueHourlyRows(plan), { conflict: additive('issue_hourly', ['issue_id', 'bucket'], ['events']) });

    await this.insertRows('issue_changes', CHANGE_COLUMNS, issueChangeRows(plan));
    await this.insertRows('alert_outbox', OUTBOX_COLUMNS, alertOutboxRows(plan));

    await this.insertRows('project_hourly', PROJECT_HOURLY_COLUMNS, plan.projectHourly as unknown as Record<string, unknown>[], {
      conflict: additive('project_hourly', ['project_id', 'bucket', 'release'], ['events', 'crashes', 'errors', 'fatal', 'error', 'warning', 'info', 'debug']),
    });
    await this.insertRows('releases', RELEASE_COLUMNS, plan.releases as unknown as Record<string, unknown>[], {
      conflict: (oc) =>
        oc.columns(['project_id', 'release']).doUpdateSet({
          first_seen: (eb: any) => eb.ref('excluded.first_seen'),
          last_seen: (eb: any) => eb.ref('excluded.last_seen'),
          platforms: (eb: any) => eb.ref('excluded.platforms'),
        }),
    });
    await this.insertRows('daily_usage', USAGE_COLUMNS, plan.usage as unknown as Record<string, unknown>[], { conflict: additive('daily_usage', ['project_id', 'day'], ['events']) });
    await this.insertRows('seen_events', SEEN_COLUMNS, plan.seen as unknown as Record<string, unknown>[], { conflict: (oc) => oc.columns(['project_id', 'event_id']).doNothing() });

    await this.insertRows(
      'sessions',
      SESSION_COLUMNS,
      plan.sessions as unknown as Record<string, unknown>[],
      {
        conflict: (oc) =>
          oc.columns(['project_id', 'sid']).doUpdateSet({
            did: (eb: any) => eb.ref('excluded.did'),
            status: (eb: any) => eb.ref('excluded.status'),
            errors: (eb: any) => eb.ref('excluded.errors'),
            updated_at: (eb: any) => eb.ref('excluded.updated_at'),
          }),
      },
    );
    await this.insertRows('session_hourly', SESSION_HOURLY_COLUMNS, plan.sessionHourly as unknown as Record<string, unknown>[], {
      conflict: additive('session_hourly', ['project_id', 'release', 'bucket'], ['total', 'crashed', 'errored']),
    });
  }
}

/** The array parameters of `unnest(...)` on PostgreSQL for these rows: one literal per column. */
function pgArrays(spec: ColumnSpec, rows: Record<string, unknown>[]): string[] {
  return spec.map(([name, type]) => pgArrayLiteral(rows.map((r) => r[name]), type));
}

/** `$1::int8[], $2::text[], …` in a statement compiled once as a template (pgWriteTemplate). */
function unnestParameters(spec: ColumnSpec) {
  return sql.join(spec.map(([, type]) => sql`${''}::${sql.raw(type)}[]`));
}

/** PostgreSQL write statements by table and conflict clause, cut at their parameters. */
const pgWriteTemplates = new Map<string, string[]>();

/**
 * The text of one of the batch's PostgreSQL writes, compiled by Kysely once per process
 * and kept cut at its parameters, so that flushDeferred can number them within the
 * batch's statement. Building and compiling the write with Kysely for every batch
 * cost about 0.5 ms of this thread per batch, in the chain of a project's batches
 * (BENCHMARKS.md). `parameters` is how many the statement takes: $1 … $n, in order.
 */
function pgWriteTemplate(key: string, parameters: number, build: () => Compilable): string[] {
  let template = pgWriteTemplates.get(key);
  if (template === undefined) {
    const { sql: text } = compileTakingOnly(build(), parameters, `write template ${key}`);
    const numbers = [...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
    if (numbers.length !== parameters || numbers.some((n, i) => n !== i + 1)) throw new Error(`write template ${key}: expected the parameters $1 … $${parameters} in order`);
    template = text.split(/\$\d+/);
    pgWriteTemplates.set(key, template);
  }
  return template;
}

/** An issue row written back: ingest's columns take the batch's final values. */
function issueUpsert(oc: OnConflictBuilder<any, any>) {
  return oc.columns(['project_id', 'fingerprint']).doUpdateSet(Object.fromEntries(ISSUE_UPDATED.map((c) => [c, (eb: any) => eb.ref(`excluded.${c}`)])));
}

/** Column names with their PostgreSQL array element type, in insert order. */
type ColumnSpec = readonly (readonly [string, 'int8' | 'text' | 'bytea'])[];

/** Rows per PostgreSQL statement: bounds statement size, not parameters (one per column). */
const PG_ROWS = 5_000;

/**
 * SQLite statements hold a fixed number of rows, so a few shapes per table serve every
 * batch from the prepared-statement cache (src/store/database.ts); building and
 * compiling a VALUES list per batch cost more than running it. The largest size keeps
 * a 30-column event insert under SQLite's 32 766 bound parameters.
 */
const SQLITE_CHUNK_SIZES = [512, 128, 32, 8, 1] as const;

function sqliteChunks<T>(rows: T[]): T[][] {
  const out: T[][] = [];
  let at = 0;
  for (const size of SQLITE_CHUNK_SIZES) {
    while (rows.length - at >= size) {
      out.push(rows.slice(at, at + size));
      at += size;
    }
  }
  return out;
}

/**
 * Compiles a statement kept as a text for reuse (sqliteInsertText, pgWriteTemplate):
 * it must take exactly the row values as parameters, so its conflict clause takes none.
 */
function compileTakingOnly(query: Compilable, parameters: number, what: string): CompiledQuery {
  const compiled = query.compile();
  if (compiled.parameters.length !== parameters) throw new Error(`${what}: takes ${compiled.parameters.length} parameters, not ${parameters} (the conflict clause must take none)`);
  return compiled;
}

/** SQL text of each SQLite insert shape, compiled by Kysely once per process. */
const sqliteInsertTexts = new Map<string, string>();

function sqliteInsertText(
  db: Kysely<any>,
  table: string,
  spec: ColumnSpec,
  rowCount: number,
  options: { conflict?: (oc: OnConflictBuilder<any, any>) => any; returning?: string[] },
): string {
  // Each table has at most one conflict clause per returning list, so these name the shape.
  const key = `${table}|${rowCount}|${options.conflict ? 'upsert' : 'insert'}|${options.returning?.join(',') ?? ''}`;
  let text = sqliteInsertTexts.get(key);
  if (text === undefined) {
    const placeholderRow = Object.fromEntries(spec.map(([name]) => [name, null]));
    let query = db.insertInto(table).values(Array.from({ length: rowCount }, () => placeholderRow));
    if (options.conflict) query = query.onConflict(options.conflict);
    if (options.returning) query = query.returning(options.returning) as any;
    // The parameters must be exactly the row values, in row-major spec order.
    text = compileTakingOnly(query, rowCount * spec.length, `insert into ${table}`).sql;
    sqliteInsertTexts.set(key, text);
  }
  return text;
}

const ISSUE_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['fingerprint', 'text'],
  ['title', 'text'],
  ['level', 'text'],
  ['error_type', 'text'],
  ['screen', 'text'],
  ['location', 'text'],
  ['platform', 'text'],
  ['status', 'text'],
  ['event_count', 'int8'],
  ['stored_count', 'int8'],
  ['users', 'int8'],
  ['first_seen', 'int8'],
  ['last_seen', 'int8'],
  ['first_seen_id', 'int8'],
  ['last_seen_id', 'int8'],
  ['first_release', 'text'],
  ['last_release', 'text'],
  ['resolved_release', 'text'],
  ['resolved_at', 'int8'],
  ['regressed_at', 'int8'],
  ['created_at', 'int8'],
  ['updated_at', 'int8'],
];

/** What ingest owns in an issue row; resolved_release/resolved_at and created_at are left alone. */
const ISSUE_UPDATED = [
  'title',
  'level',
  'error_type',
  'screen',
  'location',
  'platform',
  'status',
  'event_count',
  'stored_count',
  'users',
  'first_seen',
  'last_seen',
  'first_seen_id',
  'last_seen_id',
  'first_release',
  'last_release',
  'regressed_at',
  'updated_at',
] as const;

const EVENT_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['issue_id', 'int8'],
  ['event_id', 'text'],
  ['fingerprint', 'text'],
  ['timestamp', 'int8'],
  ['received_at', 'int8'],
  ['level', 'text'],
  ['platform', 'text'],
  ['release', 'text'],
  ['dist', 'text'],
  ['environment', 'text'],
  ['user_id', 'text'],
  ['user_email', 'text'],
  ['user_username', 'text'],
  ['user_ip', 'text'],
  ['device_id', 'text'],
  ['device_model', 'text'],
  ['os_name', 'text'],
  ['os_version', 'text'],
  ['screen', 'text'],
  ['error_type', 'text'],
  ['error_location', 'text'],
  ['title', 'text'],
  ['message', 'text'],
  ['is_crash', 'int8'],
  ['sdk_name', 'text'],
  ['tags', 'text'],
  ['detail', 'bytea'],
  ['raw', 'bytea'],
  ['payload_chunk', 'int8'],
  ['payload_start', 'int8'],
  ['payload_length', 'int8'],
  ['symbolicated', 'text'],
];
const CHUNK_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['received_at', 'int8'],
  ['data', 'bytea'],
];
const CHUNK_COLUMNS_WITH_ID: ColumnSpec = [['id', 'int8'], ...CHUNK_COLUMNS];

const EVENT_COLUMNS_WITH_ID: ColumnSpec = [['id', 'int8'], ...EVENT_COLUMNS];
const ISSUE_COLUMNS_WITH_ID: ColumnSpec = [['id', 'int8'], ...ISSUE_COLUMNS];

const TAG_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['event_id', 'int8'],
  ['key', 'text'],
  ['value', 'text'],
];
const USER_COLUMNS: ColumnSpec = [
  ['issue_id', 'int8'],
  ['user_key', 'text'],
];
const ISSUE_RELEASE_COLUMNS: ColumnSpec = [
  ['issue_id', 'int8'],
  ['release', 'text'],
  ['first_seen', 'int8'],
];
const ISSUE_HOURLY_COLUMNS: ColumnSpec = [
  ['issue_id', 'int8'],
  ['bucket', 'int8'],
  ['events', 'int8'],
];
const CHANGE_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['issue_id', 'int8'],
  ['kind', 'text'],
  ['at', 'int8'],
  ['release', 'text'],
];
const OUTBOX_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['type', 'text'],
  ['issue_id', 'int8'],
  ['payload', 'text'],
  ['state', 'text'],
  ['created_at', 'int8'],
];
const PROJECT_HOURLY_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['bucket', 'int8'],
  ['release', 'text'],
  ['events', 'int8'],
  ['crashes', 'int8'],
  ['errors', 'int8'],
  ['fatal', 'int8'],
  ['error', 'int8'],
  ['warning', 'int8'],
  ['info', 'int8'],
  ['debug', 'int8'],
];
const RELEASE_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['release', 'text'],
  ['first_seen', 'int8'],
  ['last_seen', 'int8'],
  ['platforms', 'text'],
];
const USAGE_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['day', 'int8'],
  ['events', 'int8'],
];
const SEEN_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['event_id', 'text'],
  ['received_at', 'int8'],
  ['stored_id', 'int8'],
];
const SESSION_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['sid', 'text'],
  ['did', 'text'],
  ['release', 'text'],
  ['environment', 'text'],
  ['started', 'int8'],
  ['status', 'text'],
  ['errors', 'int8'],
  ['updated_at', 'int8'],
];
const SESSION_HOURLY_COLUMNS: ColumnSpec = [
  ['project_id', 'int8'],
  ['release', 'text'],
  ['bucket', 'int8'],
  ['total', 'int8'],
  ['crashed', 'int8'],
  ['errored', 'int8'],
];

/** ON CONFLICT (key) DO UPDATE SET c = table.c + excluded.c for each counter. */
function additive(table: string, key: string[], counters: string[]) {
  return (oc: OnConflictBuilder<any, any>) =>
    oc.columns(key).doUpdateSet(Object.fromEntries(counters.map((c) => [c, (eb: any) => eb(`${table}.${c}`, '+', eb.ref(`excluded.${c}`))])));
}

function issueColumns(row: PlannedIssueRow): Record<string, unknown> {
  const { id: _id, ...values } = row;
  return values;
}

function chunkRow(c: PackedChunk): Record<string, unknown> {
  return { project_id: c.projectId, received_at: c.receivedAt, data: c.data };
}

/** An event's row; its payload is at `slot` of the chunk whose id is `chunkIds[slot.chunk]`. */
function eventValues(s: PlannedEvent, chunkIds: number[], slot: PayloadSlot): Insertable<EventTable> & Record<string, unknown> {
  const e = s.input;
  return {
    project_id: s.projectId,
    issue_id: s.issue.row.id!,
    event_id: e.eventId,
    fingerprint: e.fingerprint,
    timestamp: e.timestamp,
    received_at: s.receivedAt,
    level: e.level,
    platform: e.platform,
    release: e.release,
    dist: e.dist,
    environment: e.environment,
    user_id: e.userId,
    user_email: e.userEmail,
    user_username: e.userUsername,
    user_ip: e.userIp,
    device_id: e.deviceId,
    device_model: e.deviceModel,
    os_name: e.osName,
    os_version: e.osVersion,
    screen: e.screen,
    error_type: e.errorType,
    error_location: e.location,
    title: e.title,
    message: e.message,
    is_crash: e.isCrash ? 1 : 0,
    sdk_name: e.sdkName,
    tags: e.tagsJson,
    detail: NO_DETAIL,
    raw: NO_RAW,
    payload_chunk: chunkIds[slot.chunk],
    payload_start: slot.start,
    payload_length: slot.length,
    symbolicated: e.symbolicated,
  };
}
