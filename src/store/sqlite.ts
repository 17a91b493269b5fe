// SQLite: its dialect description, and one ingest batch as one transaction on a
// SQLite connection (better-sqlite3 on Node; D1 has its own module, d1.ts, since it
// refuses BEGIN). The batch reads the snapshot the planner needs (src/ingest/plan.ts)
// with `in (...)` lists, has it planned, and writes the write set with multi-row
// inserts of a few fixed sizes; new issues and events get their ids from RETURNING.
// docs/architecture.md ("The ingest writer (group commit)") explains the design.
import {
  CompiledQuery,
  type Compilable,
  type DatabaseConnection,
  type Kysely,
  type OnConflictBuilder,
  type RawBuilder,
} from 'kysely';
import {
  emptySnapshot,
  issueUserRows,
  linkStoredEvents,
  tagRows,
  type IssueWithTimes,
  type ProjectKeys,
  type ProjectSettings,
  type ProjectSnapshot,
  type WriteSet,
  type PreparedWork,
} from './write-set.js';
import { chunks, inListSize, insertRowCounts, type DialectCapabilities } from './dialect.js';
import {
  aggregateWrites,
  batchResult,
  chunkRow,
  CHUNK_COLUMNS,
  anyTableInserts,
  compileTakingOnly,
  EVENT_COLUMNS,
  eventValues,
  ISSUE_COLUMNS,
  issueColumns,
  issueUpsert,
  num,
  packStoredPayloads,
  TAG_COLUMNS,
  USER_COLUMNS,
  type BatchOptions,
  type BatchResult,
  type ColumnSpec,
  type Conflict,
  type Send,
} from './ingest-rows.js';
import type { Database, ReleaseRow, SessionRow } from './schema.js';

type Db = Kysely<Database>;

/** SQLite's compiled-in defaults (sqlite.org/limits.html), which better-sqlite3 keeps. */
export const SQLITE_CAPABILITIES: DialectCapabilities = {
  supportsInteractiveTransactions: true,
  // SQLITE_MAX_VARIABLE_NUMBER (since 3.32)
  maxBoundParameters: 32_766,
  // SQLITE_MAX_SQL_LENGTH
  maxStatementBytes: 1_000_000_000,
  // SQLITE_MAX_LENGTH
  maxValueBytes: 1_000_000_000,
};

/** Keys per `in (...)` read; each read binds the project id besides its list. */
const IN_LIST = inListSize(SQLITE_CAPABILITIES, 1);

/**
 * Rows per insert statement. Statements hold a fixed number of rows, so a few shapes
 * per table serve every batch from the prepared-statement cache
 * (src/editions/node/open-store.ts); building and compiling a VALUES list per batch
 * cost more than running it. The widest row (an event's) decides the largest.
 */
const INSERT_ROWS = insertRowCounts(SQLITE_CAPABILITIES, EVENT_COLUMNS.length);

export interface SqliteBatchOptions extends BatchOptions {
  /**
   * Issue rows kept from earlier batches of the same connection. Only for a connection
   * that writes nothing but ingest batches (the batch thread's), since the cache trusts
   * rows this connection wrote itself (see IssueCache).
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
  /** Merged fingerprints (issue_merges) with the fingerprint of the issue they go to. */
  private readonly aliases = new Map<string, string>();
  private dataVersion: number | null = null;

  /** Forgets everything unless `dataVersion` is the one seen when the rows were kept. */
  check(dataVersion: number): void {
    if (dataVersion !== this.dataVersion) {
      this.rows.clear();
      this.aliases.clear();
    }
    this.dataVersion = dataVersion;
  }

  /** The issue a merged fingerprint goes to, when both are kept. */
  alias(projectId: number, fingerprint: string): IssueWithTimes | undefined {
    const target = this.aliases.get(IssueCache.key(projectId, fingerprint));
    return target === undefined ? undefined : this.get(projectId, target);
  }

  /** Keeps a merged fingerprint's target (merges only ever happen on another connection, which clears the cache). */
  keepAlias(projectId: number, fingerprint: string, target: string): void {
    this.aliases.set(IssueCache.key(projectId, fingerprint), target);
    if (this.aliases.size > ISSUE_CACHE_SIZE) this.aliases.delete(this.aliases.keys().next().value!);
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
    this.aliases.clear();
    this.dataVersion = null;
  }

  get size(): number {
    return this.rows.size;
  }
}

/** Writes the works in one transaction on `connection`; throws (after rolling back) when the database fails. */
export async function commitSqliteBatch(
  db: Db,
  connection: DatabaseConnection,
  works: PreparedWork[],
  options: SqliteBatchOptions,
): Promise<BatchResult> {
  const send: Send = async (query) => (await connection.executeQuery(query)).rows as Record<string, unknown>[];
  const batch = new SqliteBatch(db, send, options);
  try {
    const result = await inTransaction(send, () => batch.run(works));
    if (options.issueCache) {
      for (const row of batch.issueRows()) options.issueCache.keep(row);
      for (const a of batch.aliasRows()) options.issueCache.keepAlias(a.projectId, a.fingerprint, a.target);
    }
    return result;
  } catch (err) {
    options.issueCache?.clear();
    throw err;
  }
}

const BEGIN_IMMEDIATE = CompiledQuery.raw('begin immediate');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');
const DATA_VERSION = CompiledQuery.raw('pragma data_version');

async function inTransaction<T>(send: Send, fn: () => Promise<T>): Promise<T> {
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

class SqliteBatch {
  /** The planner's write set, once planned. */
  private plan: WriteSet | null = null;
  /** What the batch read, per project. */
  private snapshots = new Map<number, ProjectSnapshot>();

  /** `db` only compiles queries; they run through `send`, on the transaction's connection. */
  constructor(
    private readonly db: Db,
    private readonly send: Send,
    private readonly options: SqliteBatchOptions,
  ) {}

  private rows<T>(query: Compilable | RawBuilder<unknown> | CompiledQuery): Promise<T[]> {
    const compiled = 'sql' in query ? query : 'isRawBuilder' in query ? query.compile(this.db) : query.compile();
    return this.send(compiled) as Promise<T[]>;
  }

  async run(works: PreparedWork[]): Promise<BatchResult> {
    const snapshot = await this.read(this.options.planner.batchKeys(works));
    this.snapshots = snapshot.snapshots;
    const plan = this.options.planner.planBatch(works, snapshot, this.options.random);
    this.plan = plan;
    await this.write(plan);
    return batchResult(plan);
  }

  /** The merged fingerprints this batch read, with the fingerprint of the issue each goes to. */
  aliasRows(): { projectId: number; fingerprint: string; target: string }[] {
    const out: { projectId: number; fingerprint: string; target: string }[] = [];
    for (const [projectId, snap] of this.snapshots) {
      const byId = new Map(snap.issues.map((i) => [num(i.id), i.fingerprint]));
      for (const [fingerprint, id] of snap.aliases) {
        const target = byId.get(id);
        if (target !== undefined) out.push({ projectId, fingerprint, target });
      }
    }
    return out;
  }

  /** The issues this batch wrote, as they are now in the database (after its commit). */
  issueRows(): IssueWithTimes[] {
    return (this.plan?.issues ?? []).map((s) => ({
      ...s.row,
      id: s.row.id!,
      // What read turns back into the same firstStoredTs / lastStoredTs.
      first_ts: Number.isFinite(s.firstStoredTs) ? s.firstStoredTs : null,
      last_ts: Number.isFinite(s.lastStoredTs) ? s.lastStoredTs : null,
    }));
  }

  // -------------------------------------------------------------------------
  // Reads: everything the plan needs, before it starts.
  // -------------------------------------------------------------------------

  /** Fresh sample/quota settings (the transaction holds the write lock already). */
  private projectSettings(ids: number[]) {
    return this.db
      .selectFrom('projects')
      .select(['id', 'sample_keep_first', 'sample_rate', 'daily_quota'])
      .where('id', 'in', ids)
      .orderBy('id');
  }

  /** The project's issues with the event times behind first/last_seen_id. */
  private issuesQuery(projectId: number) {
    return this.db
      .selectFrom('issues')
      .leftJoin('events as fe', 'fe.id', 'issues.first_seen_id')
      .leftJoin('events as le', 'le.id', 'issues.last_seen_id')
      .selectAll('issues')
      .select(['fe.timestamp as first_ts', 'le.timestamp as last_ts'])
      .where('issues.project_id', '=', projectId);
  }

  private async read(keys: ProjectKeys[]) {
    if (this.options.issueCache) {
      const [row] = await this.send(DATA_VERSION);
      this.options.issueCache.check(num(row.data_version));
    }
    const projects = new Map<number, ProjectSettings>();
    for (const part of chunks(
      keys.map((k) => k.projectId),
      IN_LIST,
    )) {
      for (const r of await this.rows<ProjectSettings>(this.projectSettings(part))) projects.set(num(r.id), r);
    }
    const snapshots = new Map<number, ProjectSnapshot>();
    for (const k of keys) {
      const pid = k.projectId;
      const snap = emptySnapshot();
      snapshots.set(pid, snap);
      if (!projects.has(pid)) continue;
      const db = this.db;
      for (const part of chunks(k.eventIds, IN_LIST)) {
        const rows = await this.rows<{ event_id: string }>(
          db.selectFrom('seen_events').select('event_id').where('project_id', '=', pid).where('event_id', 'in', part),
        );
        for (const r of rows) snap.seen.add(r.event_id);
      }
      if (projects.get(pid)!.daily_quota > 0 && k.days.length > 0) {
        const rows = await this.rows<{ day: number; events: number }>(
          db
            .selectFrom('daily_usage')
            .select(['day', 'events'])
            .where('project_id', '=', pid)
            .where('day', 'in', k.days),
        );
        for (const r of rows) snap.used.set(num(r.day), num(r.events));
      }
      const cache = this.options.issueCache;
      const unknown: string[] = [];
      const cachedIds = new Set<number>();
      for (const fingerprint of k.fingerprints) {
        const row = cache?.get(pid, fingerprint);
        const target = row ? undefined : cache?.alias(pid, fingerprint);
        if (row) {
          if (!cachedIds.has(num(row.id))) snap.issues.push(row);
          cachedIds.add(num(row.id));
        } else if (target) {
          snap.aliases.set(fingerprint, num(target.id));
          if (!cachedIds.has(num(target.id))) snap.issues.push(target);
          cachedIds.add(num(target.id));
        } else {
          unknown.push(fingerprint);
        }
      }
      for (const part of chunks(unknown, IN_LIST)) {
        snap.issues.push(
          ...(await this.rows<IssueWithTimes>(this.issuesQuery(pid).where('issues.fingerprint', 'in', part))),
        );
      }
      // Fingerprints no issue has: merged into another issue, or new.
      const known = new Set(snap.issues.map((i) => i.fingerprint));
      const missing = unknown.filter((f) => !known.has(f));
      for (const part of chunks(missing, IN_LIST)) {
        const rows = await this.rows<{ fingerprint: string; issue_id: number }>(
          db
            .selectFrom('issue_merges')
            .select(['fingerprint', 'issue_id'])
            .where('project_id', '=', pid)
            .where('fingerprint', 'in', part),
        );
        for (const r of rows) snap.aliases.set(r.fingerprint, num(r.issue_id));
      }
      const have = new Set(snap.issues.map((i) => num(i.id)));
      const targets = [...new Set(snap.aliases.values())].filter((id) => !have.has(id));
      for (const part of chunks(targets, IN_LIST)) {
        snap.issues.push(...(await this.rows<IssueWithTimes>(this.issuesQuery(pid).where('issues.id', 'in', part))));
      }
      await this.readKnownUsers(snap, k.userKeys);
      const resolved = snap.issues.filter((i) => i.status === 'resolved').map((i) => num(i.id));
      for (const part of chunks(resolved, IN_LIST)) {
        snap.resolvedReleases.push(
          ...(await this.rows<ProjectSnapshot['resolvedReleases'][number]>(
            db.selectFrom('issue_releases').select(['issue_id', 'release', 'first_seen']).where('issue_id', 'in', part),
          )),
        );
      }
      for (const part of chunks(k.releases, IN_LIST)) {
        snap.releases.push(
          ...(await this.rows<ReleaseRow>(
            db.selectFrom('releases').selectAll().where('project_id', '=', pid).where('release', 'in', part),
          )),
        );
      }
      for (const part of chunks(k.sids, IN_LIST)) {
        snap.sessions.push(
          ...(await this.rows<SessionRow>(
            db.selectFrom('sessions').selectAll().where('project_id', '=', pid).where('sid', 'in', part),
          )),
        );
      }
    }
    return { projects, snapshots };
  }

  /** The snooze rule's reads: for issues snoozed until a number of users, which of the batch's users they have. */
  private async readKnownUsers(snap: ProjectSnapshot, userKeys: string[]): Promise<void> {
    if (userKeys.length === 0) return;
    for (const issue of snap.issues) {
      if (issue.status !== 'ignored' || issue.ignore_users === null) continue;
      const id = num(issue.id);
      const known = new Set<string>();
      for (const part of chunks(userKeys, IN_LIST)) {
        const rows = await this.rows<{ user_key: string }>(
          this.db.selectFrom('issue_users').select('user_key').where('issue_id', '=', id).where('user_key', 'in', part),
        );
        for (const r of rows) known.add(r.user_key);
      }
      snap.knownUsers.set(id, known);
    }
  }

  /**
   * Inserts rows with VALUES lists of the sizes in INSERT_ROWS, run one after another;
   * resolves to the `returning` columns of the inserted rows.
   */
  private async insertRows(
    table: keyof Database,
    spec: ColumnSpec,
    rows: Record<string, unknown>[],
    options: { conflict?: Conflict; returning?: string[] } = {},
  ): Promise<Record<string, unknown>[]> {
    const db = anyTableInserts(this.db);
    const columns = spec.map(([name]) => name);
    const out: Record<string, unknown>[] = [];
    for (const part of insertChunks(rows)) {
      const text = insertText(db, table, spec, part.length, options);
      const parameters: unknown[] = [];
      for (const row of part) for (const name of columns) parameters.push(row[name] ?? null);
      const result = await this.send(CompiledQuery.raw(text, parameters));
      if (options.returning) out.push(...result);
    }
    return out;
  }

  private async write(plan: WriteSet): Promise<void> {
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
    const { chunks: packed, slots } = packStoredPayloads(plan, this.options.compress);
    const chunkIds: number[] = [];
    for (const chunk of packed) {
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
    for (const w of aggregateWrites(plan, this.options.planner))
      await this.insertRows(w.table, w.spec, w.rows, { conflict: w.conflict });
  }
}

function insertChunks<T>(rows: T[]): T[][] {
  const out: T[][] = [];
  let at = 0;
  for (const size of INSERT_ROWS) {
    while (rows.length - at >= size) {
      out.push(rows.slice(at, at + size));
      at += size;
    }
  }
  return out;
}

/** SQL text of each insert shape, compiled by Kysely once per process. */
const insertTexts = new Map<string, string>();

function insertText(
  db: ReturnType<typeof anyTableInserts>,
  table: string,
  spec: ColumnSpec,
  rowCount: number,
  options: { conflict?: (oc: OnConflictBuilder<any, any>) => any; returning?: string[] },
): string {
  // Each table has at most one conflict clause per returning list, so these name the shape.
  const key = `${table}|${rowCount}|${options.conflict ? 'upsert' : 'insert'}|${options.returning?.join(',') ?? ''}`;
  let text = insertTexts.get(key);
  if (text === undefined) {
    const placeholderRow = Object.fromEntries(spec.map(([name]) => [name, null]));
    let query = db.insertInto(table).values(Array.from({ length: rowCount }, () => placeholderRow));
    if (options.conflict) query = query.onConflict(options.conflict);
    if (options.returning) query = query.returning(options.returning) as any;
    // The parameters must be exactly the row values, in row-major spec order.
    text = compileTakingOnly(query, rowCount * spec.length, `insert into ${table}`).sql;
    insertTexts.set(key, text);
  }
  return text;
}
