// PostgreSQL: its dialect description, and one ingest batch as one transaction on a
// pooled connection in pipeline mode. The reads go out together behind `begin`, with
// array parameters and one index probe per key; the ids of new rows come from the
// sequences in those reads, so the whole write set goes out as one statement of
// data-modifying CTEs with `commit` right behind it: two round trips a batch.
// docs/architecture.md ("The ingest writer (group commit)") explains the design.
import { CompiledQuery, sql, type Compilable, type DatabaseConnection, type Kysely, type RawBuilder } from 'kysely';
import {
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
import type { DialectCapabilities } from './dialect.js';
import {
  aggregateWrites,
  batchResult,
  chunkRow,
  CHUNK_COLUMNS_WITH_ID,
  anyTableInserts,
  compileTakingOnly,
  EVENT_COLUMNS_WITH_ID,
  eventValues,
  ISSUE_COLUMNS_WITH_ID,
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
import { pgArrayLiteral } from './pg-arrays.js';
import { nameStatement } from './pg-statements.js';
import type { Database, ReleaseRow, SessionRow } from './schema.js';

type Db = Kysely<Database>;

/** PostgreSQL's bounds (postgresql.org/docs/current/limits.html and the wire protocol). */
export const POSTGRES_CAPABILITIES: DialectCapabilities = {
  supportsInteractiveTransactions: true,
  // The Bind message counts parameters in 16 bits.
  maxBoundParameters: 65_535,
  // A protocol message, and a field value, are at most 1 GB - 1.
  maxStatementBytes: 1024 * 1024 * 1024 - 1,
  maxValueBytes: 1024 * 1024 * 1024 - 1,
};

/**
 * Code units of an array parameter, at most: its UTF-8 bytes (at most three per UTF-16
 * code unit) stay within a value's limit.
 */
const MAX_ARRAY_LITERAL_LENGTH = Math.floor(POSTGRES_CAPABILITIES.maxValueBytes / 3);

const BEGIN = CompiledQuery.raw('begin');
const COMMIT = CompiledQuery.raw('commit');
const ROLLBACK = CompiledQuery.raw('rollback');

/** Writes the works in one transaction on `connection`; throws (after rolling back) when the database fails. */
export function commitPostgresBatch(
  db: Db,
  connection: DatabaseConnection,
  works: PreparedWork[],
  options: BatchOptions,
): Promise<BatchResult> {
  return inPipelinedTransaction(connection, (send) => new PostgresBatch(db, send, options).run(works));
}

/**
 * On PostgreSQL the batch's statements are pipelined (the pool's clients run in pg's
 * pipeline mode): `begin` goes out with the batch's reads, and `commit` right behind
 * its one writing statement, so a batch waits for two round trips instead of about
 * ten. Under load each round trip cost 1-4 ms here (the PostgreSQL server and this
 * process share the cores), most of a batch's time. A failing
 * statement aborts the transaction; the statements behind it fail or, for `commit`,
 * roll back, so nothing is committed; the connection is left outside any transaction.
 */
async function inPipelinedTransaction<T>(connection: DatabaseConnection, fn: (send: Send) => Promise<T>): Promise<T> {
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

/**
 * PostgreSQL: the project's rows of `table` whose `column` is one of `keys`, each found
 * by its own index probe (see read).
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

// A fingerprint merged into another issue (issue_merges) reads, and locks, that issue.
const PG_MERGED_INTO = `left join lateral (select t.fingerprint from issue_merges m join issues t on t.id = m.issue_id
    where m.project_id = $2 and m.fingerprint = f.fingerprint offset 0) mt on true`;

const PG_READ_ISSUES = `select f.fingerprint as key, i.*, fe.timestamp as first_ts, le.timestamp as last_ts,
    case when i.id is null then nextval('issues_id_seq') end as new_id
  from unnest($1::text[]) with ordinality as f(fingerprint, n)
  ${PG_MERGED_INTO}
  left join lateral (select * from issues where project_id = $2 and fingerprint = coalesce(mt.fingerprint, f.fingerprint) for update) i on true
  left join events fe on fe.id = i.first_seen_id
  left join events le on le.id = i.last_seen_id
  order by f.n`;

const PG_READ_RESOLVED_RELEASES = `select r.issue_id, r.release, r.first_seen
  from (select distinct coalesce(mt.fingerprint, f.fingerprint) as fingerprint from unnest($1::text[]) as f(fingerprint) ${PG_MERGED_INTO}) f
  cross join lateral (select id from issues where project_id = $2 and fingerprint = f.fingerprint and status = 'resolved' offset 0) i
  cross join lateral (select issue_id, release, first_seen from issue_releases where issue_id = i.id offset 0) r`;

class PostgresBatch {
  /** Writes to send together at the end (see flushDeferred); `name` when a later one reads its output. */
  private readonly deferred: { name?: string; template: string[]; params: string[] }[] = [];

  /** `db` only compiles queries; they run through `send`, on the transaction's connection. */
  constructor(
    private readonly db: Db,
    private readonly send: Send,
    private readonly options: BatchOptions,
  ) {}

  private rows<T>(query: Compilable | RawBuilder<unknown> | CompiledQuery): Promise<T[]> {
    const compiled = 'sql' in query ? query : 'isRawBuilder' in query ? query.compile(this.db) : query.compile();
    return this.send(compiled) as Promise<T[]>;
  }

  async run(works: PreparedWork[]): Promise<BatchResult> {
    const plan = this.options.planner.planBatch(
      works,
      await this.read(this.options.planner.batchKeys(works)),
      this.options.random,
    );
    await this.write(plan);
    return batchResult(plan);
  }

  /**
   * The snapshot's reads as one pipeline. Lists travel as one array parameter each, and every
   * key is looked up on its own (a LATERAL subquery the planner cannot turn into a join),
   * so the plans probe the primary keys whatever the statistics say: without them (a new
   * database, or autovacuum off) PostgreSQL hashed every seen event id of the project to
   * check 60 new ones, 9 ms per batch at 30 000 events and growing. The ids of the rows
   * the batch may insert come from the sequences here too (only for event ids and
   * fingerprints not in the database yet), so the writes need no RETURNING and fit in
   * one statement; ids of events that sampling or the quota then drop stay unused.
   */
  private async read(keys: ProjectKeys[]) {
    const lock = this.rows<ProjectSettings>(CompiledQuery.raw(PG_LOCK_PROJECTS, [keys.map((k) => k.projectId)]));
    const reads = keys.map((k) => {
      const pid = k.projectId;
      const fingerprints = pgArrayLiteral(k.fingerprints, 'text');
      return Promise.all([
        this.rows<{ event_id: string; id: number | null }>(
          CompiledQuery.raw(PG_READ_EVENT_IDS, [pgArrayLiteral(k.eventIds, 'text'), pid]),
        ),
        this.rows<{ day: number; events: number }>(lookup('daily_usage', pid, 'day', k.days, 'int8')),
        // Locked in fingerprint order (projectKeys sorts them).
        this.rows<IssueWithTimes & { key: string; new_id: number | null }>(
          CompiledQuery.raw(PG_READ_ISSUES, [fingerprints, pid]),
        ),
        this.rows<ProjectSnapshot['resolvedReleases'][number]>(
          CompiledQuery.raw(PG_READ_RESOLVED_RELEASES, [fingerprints, pid]),
        ),
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
      const found = new Map<number, IssueWithTimes>();
      const aliases = new Map<string, number>();
      for (const { key, new_id, ...row } of issues) {
        if (new_id !== null) {
          newIssueIds.set(key, num(new_id));
          continue;
        }
        // The issue a merged fingerprint reads comes once, whatever else names it.
        found.set(num(row.id), row);
        if (row.fingerprint !== key) aliases.set(key, num(row.id));
      }
      snapshots.set(keys[k].projectId, {
        seen,
        eventIds,
        used: new Map(used.map((r) => [num(r.day), num(r.events)])),
        issues: [...found.values()],
        aliases,
        knownUsers: new Map(),
        resolvedReleases,
        newIssueIds,
        releases,
        sessions,
      });
    }
    // The snooze rule's reads, only when an issue is snoozed until a number of users.
    for (const key of keys) {
      const snap = snapshots.get(key.projectId)!;
      const snoozed = snap.issues
        .filter((i) => i.status === 'ignored' && i.ignore_users !== null)
        .map((i) => num(i.id));
      if (snoozed.length === 0 || key.userKeys.length === 0) continue;
      const rows = await this.rows<{ issue_id: number; user_key: string }>(
        CompiledQuery.raw(
          'select issue_id, user_key from issue_users where issue_id = any($1::int8[]) and user_key = any($2::text[])',
          [pgArrayLiteral(snoozed, 'int8'), pgArrayLiteral(key.userKeys, 'text')],
        ),
      );
      for (const id of snoozed) snap.knownUsers.set(id, new Set());
      for (const r of rows) snap.knownUsers.get(num(r.issue_id))?.add(r.user_key);
    }
    return { projects, snapshots };
  }

  // -------------------------------------------------------------------------

  /**
   * Inserts rows. SQLite: VALUES lists of a few fixed sizes, chunked under its 32 766

  /**
   * Inserts rows with one array parameter per column (`insert ... select * from
   * unnest(...)`), a fixed, small statement that costs a fraction of a VALUES list with a
   * parameter per value; it becomes part of the batch's one writing statement
   * (flushDeferred). Rows are split only when a column's array would pass a value's limit.
   */
  private insertRows(
    table: keyof Database,
    spec: ColumnSpec,
    rows: Record<string, unknown>[],
    conflict?: Conflict,
  ): void {
    const db = anyTableInserts(this.db);
    const columns = spec.map(([name]) => name);
    const template = pgWriteTemplate(`${table}|${conflict ? 'upsert' : 'insert'}`, spec.length, () => {
      const query = db
        .insertInto(table)
        .columns(columns)
        .expression(sql`select * from unnest(${unnestParameters(spec)})`);
      return conflict ? query.onConflict(conflict) : query;
    });
    for (const params of arrayParameters(spec, rows)) this.deferred.push({ template, params });
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

  /**
   * One statement: every id is known from the reads (read), so the events, their
   * tags and the issues go in with the aggregates. An issue's `users` grows by the user
   * keys the statement's `issue_users` insert reports as new to it.
   */
  private async write(plan: WriteSet): Promise<void> {
    const db = this.db;
    linkStoredEvents(plan);
    // A chunk takes the id of its first event: ids are known from the reads, and an event
    // id is never taken twice. Chunks travel in a bytea[] parameter (two hex digits a
    // byte), which per-event blobs could not afford; a batch's chunks are a few KB.
    const { chunks, slots } = packStoredPayloads(plan, this.options.compress);
    const chunkIds = chunks.map((c) => plan.stored[c.members[0]].id!);
    this.insertRows(
      'payload_chunks',
      CHUNK_COLUMNS_WITH_ID,
      chunks.map((c, i) => ({ id: chunkIds[i], ...chunkRow(c) })),
    );
    this.insertRows(
      'events',
      EVENT_COLUMNS_WITH_ID,
      plan.stored.map((s, i) => ({ id: s.id, ...eventValues(s, chunkIds, slots[i]) })),
    );
    this.insertRows('event_tags', TAG_COLUMNS, tagRows(plan));
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
    for (const w of aggregateWrites(plan, this.options.planner)) this.insertRows(w.table, w.spec, w.rows, w.conflict);
    await this.flushDeferred();
  }
}

/** The array parameters of `unnest(...)` on PostgreSQL for these rows: one literal per column. */
function pgArrays(spec: ColumnSpec, rows: Record<string, unknown>[]): string[] {
  return spec.map(([name, type]) =>
    pgArrayLiteral(
      rows.map((r) => r[name]),
      type,
    ),
  );
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
 * cost about 0.5 ms of this thread per batch, in the chain of a project's batches.
 * `parameters` is how many the statement takes: $1 … $n, in order.
 */
function pgWriteTemplate(key: string, parameters: number, build: () => Compilable): string[] {
  let template = pgWriteTemplates.get(key);
  if (template === undefined) {
    const { sql: text } = compileTakingOnly(build(), parameters, `write template ${key}`);
    const numbers = [...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
    if (numbers.length !== parameters || numbers.some((n, i) => n !== i + 1))
      throw new Error(`write template ${key}: expected the parameters $1 … $${parameters} in order`);
    template = text.split(/\$\d+/);
    pgWriteTemplates.set(key, template);
  }
  return template;
}

/**
 * The array parameters of the rows, as few sets as a value's limit allows (in practice
 * one: a batch's largest column is a few MB).
 */
function arrayParameters(spec: ColumnSpec, rows: Record<string, unknown>[]): string[][] {
  if (rows.length === 0) return [];
  const params = pgArrays(spec, rows);
  if (rows.length === 1 || params.every((p) => p.length <= MAX_ARRAY_LITERAL_LENGTH)) return [params];
  const half = rows.length >>> 1;
  return [...arrayParameters(spec, rows.slice(0, half)), ...arrayParameters(spec, rows.slice(half))];
}
