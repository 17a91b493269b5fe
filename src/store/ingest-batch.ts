// One ingest batch as one database transaction: dedupe, daily quota, grouping into
// issues, regressions, sampling, stored events and tags, the hourly/daily/release
// aggregates and release-health sessions. Everything is read once per batch, merged
// in memory and written back with multi-row statements, so the number of statements
// grows with the distinct keys a batch touches (projects, issues, hours, releases),
// never with its events. docs/architecture.md ("The ingest writer (group commit)")
// explains the design.
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
import { issueAlertOutboxRow } from '../alerts/outbox.js';
import { DAY_MS, hourBucket, utcDay } from '../clock.js';
import type { IngestOutcome, IngestWork, Level, NormalizedEvent, SessionStatus } from '../ingest/types.js';
import type { Dialect, Store } from './database.js';
import { packPayloads, type PackedChunk, type PayloadSlot } from './payloads.js';
import { pgArrayLiteral } from './pg-arrays.js';
import { nameStatement } from './pg-statements.js';
import type { Database, EventTable, IssueRow, ReleaseRow, SessionRow } from './schema.js';

type Db = Kysely<Database>;

// Indexed text columns are clamped so that no single event can fail a whole batch
// with PostgreSQL's btree row-size limit (about 2.7 KB per index entry).
const MAX_RELEASE = 250;
const MAX_TAG_KEY = 200;
const MAX_TAG_VALUE = 200;
const MAX_KEY_ID = 200; // event_id, fingerprint, sid, user id and user key
const LEVELS: readonly Level[] = ['fatal', 'error', 'warning', 'info', 'debug'];

/** Values per `in (...)` list. */
const IN_CHUNK = 5_000;

// ---------------------------------------------------------------------------
// Preparation (outside the transaction, at submit time)
// ---------------------------------------------------------------------------

/** An event in the shape of its row, checked so that the database accepts it. */
export interface EventInput {
  source: NormalizedEvent;
  eventId: string;
  fingerprint: string;
  timestamp: number;
  level: Level;
  platform: string;
  release: string;
  dist: string;
  environment: string;
  userId: string | null;
  userEmail: string | null;
  userUsername: string | null;
  userIp: string | null;
  userKey: string | null;
  deviceId: string | null;
  deviceModel: string | null;
  osName: string | null;
  osVersion: string | null;
  screen: string;
  title: string;
  message: string;
  errorType: string;
  location: string;
  isCrash: boolean;
  sdkName: string;
  tags: [string, string][];
  tagsJson: string;
  /** JSON of the frames symbolicated at ingest (NormalizedEvent.symbolicated), else null. */
  symbolicated: string | null;
}

export interface SessionInput {
  sid: string;
  did: string | null;
  started: number;
  timestamp: number;
  status: SessionStatus;
  errors: number;
  release: string;
  environment: string;
}

export interface AggregateInput {
  started: number;
  release: string;
  total: number;
  crashed: number;
  errored: number;
}

export interface PreparedWork {
  projectId: number;
  receivedAt: number;
  events: EventInput[];
  sessions: SessionInput[];
  aggregates: AggregateInput[];
}

/** PostgreSQL text cannot hold NUL; both dialects drop it so they store the same thing. */
function text(value: unknown, max = 0): string {
  let s = typeof value === 'string' ? value : value == null ? '' : String(value);
  if (s.includes('\u0000')) s = s.replaceAll('\u0000', '');
  return max > 0 && s.length > max ? s.slice(0, max) : s;
}

function optText(value: unknown): string | null {
  return value == null ? null : text(value);
}

function time(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? Math.round(value) : fallback;
}

function count(value: unknown): number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : 0;
}

/** Turns a request's work into row-shaped input, outside the transaction. */
export function prepareWork(work: IngestWork): PreparedWork {
  const receivedAt = time(work.receivedAt, Date.now());
  const events = work.events.map((e) => {
    const tags: [string, string][] = [];
    const tagObject: Record<string, string> = {};
    for (const [k, v] of Object.entries(e.tags ?? {})) {
      const key = text(k, MAX_TAG_KEY);
      const value = text(v, MAX_TAG_VALUE);
      if (key === '' || Object.prototype.hasOwnProperty.call(tagObject, key)) continue;
      tagObject[key] = value;
      tags.push([key, value]);
    }
    const input: EventInput = {
      source: e,
      eventId: text(e.eventId, MAX_KEY_ID),
      fingerprint: text(e.fingerprint, MAX_KEY_ID),
      timestamp: time(e.timestamp, receivedAt),
      level: LEVELS.includes(e.level) ? e.level : 'info',
      platform: text(e.platform),
      release: text(e.release, MAX_RELEASE),
      dist: text(e.dist),
      environment: text(e.environment),
      userId: e.userId == null ? null : text(e.userId, MAX_KEY_ID),
      userEmail: optText(e.userEmail),
      userUsername: optText(e.userUsername),
      userIp: optText(e.userIp),
      userKey: e.userKey == null || e.userKey === '' ? null : text(e.userKey, MAX_KEY_ID),
      deviceId: optText(e.deviceId),
      deviceModel: optText(e.deviceModel),
      osName: optText(e.osName),
      osVersion: optText(e.osVersion),
      screen: text(e.screen),
      title: text(e.title),
      message: text(e.message),
      errorType: text(e.errorType),
      location: text(e.location),
      isCrash: e.isCrash === true,
      sdkName: text(e.sdkName),
      tags,
      tagsJson: JSON.stringify(tagObject),
      symbolicated: typeof e.symbolicated === 'string' ? text(e.symbolicated) : null,
    };
    return input;
  });
  const sessions = work.sessions.map((s) => ({
    sid: text(s.sid, MAX_KEY_ID),
    did: s.did == null || s.did === '' ? null : text(s.did),
    started: time(s.started, receivedAt),
    timestamp: time(s.timestamp, receivedAt),
    status: s.status,
    errors: count(s.errors),
    release: text(s.release, MAX_RELEASE),
    environment: text(s.environment),
  }));
  const aggregates = work.aggregates.map((a) => {
    // `unhandled` (browser SDKs' status for an unhandled error) counts as crashed (DECISIONS).
    const crashed = count(a.crashed) + count(a.unhandled);
    const errored = count(a.errored) + count(a.abnormal);
    return {
      started: time(a.started, receivedAt),
      release: text(a.release, MAX_RELEASE),
      total: count(a.exited) + errored + crashed,
      crashed,
      errored,
    };
  });
  return { projectId: work.project.id, receivedAt, events, sessions, aggregates };
}

/** The payload as received, which the batch stores in a payload chunk. */
export function rawSource(e: EventInput): Uint8Array {
  return e.source.raw ?? new Uint8Array(0);
}

/**
 * What new rows hold in `events.detail`: nothing. The detail is rebuilt from the raw
 * payload when asked for (src/read/events.ts), which spares ingest a JSON encoding and a
 * second compression per event and halves what each event writes. Rows written before
 * keep their encoded detail.
 */
const NO_DETAIL = Buffer.alloc(0);
/** What new rows hold in `events.raw`: nothing; the payload is in `payload_chunk` (src/store/payloads.ts). */
const NO_RAW = NO_DETAIL;

// ---------------------------------------------------------------------------
// The batch
// ---------------------------------------------------------------------------

export interface BatchOptions {
  /** Uniform draw in [0, 1) for sampling. */
  random: () => number;
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

export interface BatchResult {
  /** One per work, in order. */
  outcomes: IngestOutcome[];
  /** Events counted (not duplicates, not refused). */
  accepted: number;
  stored: number;
  duplicates: number;
  /** Events of works refused by the daily quota. */
  refused: number;
  /** Events and sessions of works whose project no longer exists. */
  dropped: number;
  sessionUpdates: number;
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

interface ProjectSettings {
  id: number;
  sample_keep_first: number;
  sample_rate: number;
  daily_quota: number;
}

type MutableIssue = Omit<IssueRow, 'id' | 'last_seen_minute'> & { id: number | null };

interface IssueState {
  row: MutableIssue;
  /** Releases with the first time seen, loaded only for resolved issues (the regression rule). */
  knownReleases: Map<string, number> | null;
  userKeys: Set<string>;
  releaseFirstSeen: Map<string, number>;
  hourly: Map<number, number>;
  /** Event times behind first_seen_id / last_seen_id, to compare new stored events with. */
  firstStoredTs: number;
  lastStoredTs: number;
}

type SeenRow = Insertable<Database['seen_events']>;

interface StoredEvent {
  input: EventInput;
  issue: IssueState;
  projectId: number;
  receivedAt: number;
  id: number | null;
  /** The event's seen_events row, which names the stored row once `id` is known. */
  seen: SeenRow;
  /** Its payload's chunk (by id) and byte range there, once the chunks have ids (placePayloads). */
  payload: { chunkId: number; start: number; length: number } | null;
}

/** A work's events that passed dedupe and quota, each with its seen_events row. */
interface AcceptedWork {
  work: PreparedWork;
  events: EventInput[];
  seen: SeenRow[];
}

interface Change {
  issue: IssueState;
  kind: 'new_issue' | 'regression';
  at: number;
  release: string;
}

type SessionClass = 'none' | 'ok' | 'errored' | 'crashed';

interface SessionState {
  row: SessionRow;
  before: SessionClass;
  changed: boolean;
}

interface ProjectHourly {
  project_id: number;
  bucket: number;
  release: string;
  events: number;
  crashes: number;
  errors: number;
  fatal: number;
  error: number;
  warning: number;
  info: number;
  debug: number;
}

interface SessionHourly {
  project_id: number;
  release: string;
  bucket: number;
  total: number;
  crashed: number;
  errored: number;
}

interface ReleaseAcc {
  first: number;
  last: number;
  platforms: Set<string>;
}

function sessionClass(status: string, errors: number): SessionClass {
  if (status === 'crashed' || status === 'unhandled') return 'crashed';
  if (status === 'errored' || status === 'abnormal' || errors > 0) return 'errored';
  return 'ok';
}

function secondsToNextUtcMidnight(at: number): number {
  return Math.max(1, Math.ceil((utcDay(at) + DAY_MS - at) / 1000));
}

function unique<T>(values: Iterable<T>): T[] {
  return [...new Set(values)];
}

function chunks<T>(values: T[], size: number): T[][] {
  if (values.length <= size) return values.length === 0 ? [] : [values];
  const out: T[][] = [];
  for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
  return out;
}

/** The keys one project's works touch: what the batch reads before planning. */
interface ProjectKeys {
  projectId: number;
  eventIds: string[];
  /** UTC days of the works that carry events (the daily quota). */
  days: number[];
  fingerprints: string[];
  releases: string[];
  sids: string[];
}

type IssueWithTimes = IssueRow & { first_ts: number | null; last_ts: number | null };

/** What the batch read about one project, under the project's lock. */
interface ProjectSnapshot {
  /** Event ids of the batch the project has seen before. */
  seen: Set<string>;
  /** PostgreSQL: an id taken from the events sequence for each event id new to the project. */
  eventIds: Map<string, number> | null;
  /** Events counted per UTC day (the daily quota). */
  used: Map<number, number>;
  issues: IssueWithTimes[];
  /** The releases (and when each was first seen) of the issues that are resolved. */
  resolvedReleases: { issue_id: number; release: string; first_seen: number }[];
  /** PostgreSQL: an id taken from the issues sequence for each fingerprint without an issue. */
  newIssueIds: Map<string, number> | null;
  releases: ReleaseRow[];
  sessions: SessionRow[];
}

function projectKeys(projectId: number, works: PreparedWork[]): ProjectKeys {
  const eventIds = new Set<string>();
  const days = new Set<number>();
  const fingerprints = new Set<string>();
  const releases = new Set<string>();
  const sids = new Set<string>();
  for (const w of works) {
    if (w.projectId !== projectId) continue;
    if (w.events.length > 0) days.add(utcDay(w.receivedAt));
    for (const e of w.events) {
      eventIds.add(e.eventId);
      fingerprints.add(e.fingerprint);
      if (e.release !== '') releases.add(e.release);
    }
    for (const s of w.sessions) sids.add(s.sid);
  }
  // Sorted fingerprints: PostgreSQL locks the issues in this order.
  return { projectId, eventIds: [...eventIds], days: [...days], fingerprints: [...fingerprints].sort(), releases: [...releases], sids: [...sids] };
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
  private readonly issues: IssueState[] = [];
  private readonly stored: StoredEvent[] = [];
  private readonly changes: Change[] = [];
  private readonly projectHourly = new Map<string, ProjectHourly>();
  private readonly releaseRows: Insertable<Database['releases']>[] = [];
  private readonly usage = new Map<string, { project_id: number; day: number; events: number }>();
  private readonly seen: SeenRow[] = [];
  private readonly sessions: SessionState[] = [];
  private readonly sessionHourly = new Map<string, SessionHourly>();
  /** PostgreSQL writes to send together at the end (see flushDeferred); `name` when a later one reads its output. */
  private readonly deferred: { name?: string; template: string[]; params: string[] }[] = [];
  private readonly result: BatchResult = {
    outcomes: [],
    accepted: 0,
    stored: 0,
    duplicates: 0,
    refused: 0,
    dropped: 0,
    sessionUpdates: 0,
  };

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
    this.result.outcomes = works.map(() => ({ kind: 'ok' }) as IngestOutcome);
    const projectIds = unique(works.map((w) => w.projectId)).sort((a, b) => a - b);
    const keys = projectIds.map((id) => projectKeys(id, works));
    const { projects, snapshots } = this.dialect === 'postgres' ? await this.readPostgres(keys) : await this.readSqlite(keys);
    for (const [k, id] of projectIds.entries()) {
      const indexes = works.flatMap((w, i) => (w.projectId === id ? [i] : []));
      const project = projects.get(id);
      if (!project) {
        // Deleted since the request was authenticated: there is nowhere to put its data.
        for (const i of indexes) this.result.dropped += works[i].events.length + works[i].sessions.length;
        continue;
      }
      this.planProject(project, indexes, works, snapshots[k]);
    }
    if (this.dialect === 'postgres') await this.writePostgres();
    else await this.writeSqlite();
    return this.result;
  }

  /** The issues this batch wrote, as they are now in the database (after its commit). */
  issueRows(): IssueWithTimes[] {
    return this.issues.map((s) => ({
      ...(s.row as IssueRow),
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
    const snapshots: ProjectSnapshot[] = [];
    for (const k of keys) {
      const pid = k.projectId;
      const snap: ProjectSnapshot = {
        seen: new Set(),
        eventIds: null,
        used: new Map(),
        issues: [],
        resolvedReleases: [],
        newIssueIds: null,
        releases: [],
        sessions: [],
      };
      snapshots.push(snap);
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
    const snapshots: ProjectSnapshot[] = [];
    for (const [events, used, issues, resolvedReleases, releases, sessions] of read) {
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
      snapshots.push({
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
  // The plan: in memory, from what was read.
  // -------------------------------------------------------------------------

  private planProject(project: ProjectSettings, indexes: number[], works: PreparedWork[], snap: ProjectSnapshot): void {
    const pid = project.id;

    // 1. Dedupe against what the project has seen.
    const seen = new Set(snap.seen);

    // 2. Daily quota, in submit order.
    const used = project.daily_quota > 0 ? new Map(snap.used) : new Map<number, number>();
    const accepted: AcceptedWork[] = [];
    for (const i of indexes) {
      const work = works[i];
      const local = new Set<string>();
      const fresh: EventInput[] = [];
      for (const e of work.events) {
        if (seen.has(e.eventId) || local.has(e.eventId)) {
          this.result.duplicates++;
          continue;
        }
        local.add(e.eventId);
        fresh.push(e);
      }
      const day = utcDay(work.receivedAt);
      if (fresh.length > 0) {
        const sofar = used.get(day) ?? 0;
        if (project.daily_quota > 0 && sofar + fresh.length > project.daily_quota) {
          this.result.outcomes[i] = { kind: 'quota_exceeded', retryAfterSeconds: secondsToNextUtcMidnight(work.receivedAt) };
          this.result.refused += fresh.length;
          continue;
        }
        used.set(day, sofar + fresh.length);
        const key = `${pid}:${day}`;
        const u = this.usage.get(key) ?? { project_id: pid, day, events: 0 };
        u.events += fresh.length;
        this.usage.set(key, u);
      }
      for (const id of local) seen.add(id);
      // stored_id is filled in once the stored events have their ids (linkStoredEvents).
      const rows: SeenRow[] = fresh.map((e) => ({ project_id: pid, event_id: e.eventId, received_at: work.receivedAt, stored_id: null }));
      this.seen.push(...rows);
      accepted.push({ work, events: fresh, seen: rows });
    }

    this.planEvents(project, accepted, snap);
    this.planSessions(pid, accepted.map((a) => a.work), snap);
  }

  private planEvents(project: ProjectSettings, accepted: AcceptedWork[], snap: ProjectSnapshot): void {
    const pid = project.id;
    if (!accepted.some((a) => a.events.length > 0)) return;

    // 3. The issues these events belong to (locked on PostgreSQL against concurrent
    //    status changes), with the event times behind first/last_seen_id.
    const byFingerprint = new Map<string, IssueState>();
    const byId = new Map<number, IssueState>();
    for (const { first_ts, last_ts, ...row } of snap.issues) {
      const state = newState({ ...row, id: num(row.id) });
      // A referenced event retention already deleted: first_seen_id stays (repairing it
      // is retention's job); last_seen_id moves to the newest stored event.
      state.firstStoredTs = row.first_seen_id === null ? Infinity : first_ts === null ? -Infinity : Number(first_ts);
      state.lastStoredTs = row.last_seen_id === null || last_ts === null ? -Infinity : Number(last_ts);
      byFingerprint.set(row.fingerprint, state);
      byId.set(num(row.id), state);
    }
    for (const s of byFingerprint.values()) if (s.row.status === 'resolved') s.knownReleases = new Map();
    for (const r of snap.resolvedReleases) byId.get(num(r.issue_id))?.knownReleases?.set(r.release, num(r.first_seen));
    // Only the issues an accepted event reaches are written back.
    const touched = new Set<IssueState>();

    // 4. Every event in order: grouping, regression, sampling, aggregates.
    const releases = new Map<string, ReleaseAcc>();
    for (const { work, events, seen } of accepted) {
      const at = work.receivedAt;
      for (const [i, e] of events.entries()) {
        let issue = byFingerprint.get(e.fingerprint);
        if (!issue) {
          issue = newState({
            id: snap.newIssueIds?.get(e.fingerprint) ?? null,
            project_id: pid,
            fingerprint: e.fingerprint,
            title: e.title,
            level: e.level,
            error_type: e.errorType,
            screen: e.screen,
            location: e.location,
            platform: e.platform,
            status: 'unresolved',
            event_count: 0,
            stored_count: 0,
            users: 0,
            first_seen: e.timestamp,
            last_seen: e.timestamp,
            first_seen_id: null,
            last_seen_id: null,
            first_release: e.release,
            last_release: e.release,
            resolved_release: null,
            resolved_at: null,
            regressed_at: null,
            created_at: at,
            updated_at: at,
          });
          byFingerprint.set(e.fingerprint, issue);
          this.changes.push({ issue, kind: 'new_issue', at, release: e.release });
        }
        if (!touched.has(issue)) {
          touched.add(issue);
          this.issues.push(issue);
        }
        const row = issue.row;

        if (row.status === 'resolved') {
          const resolvedAt = row.resolved_at ?? 0;
          let regress: boolean;
          if (e.release !== '') {
            const first = issue.knownReleases?.get(e.release);
            regress = !(first !== undefined && first < resolvedAt);
          } else {
            regress = e.timestamp > resolvedAt;
          }
          if (regress) {
            row.status = 'regression';
            row.regressed_at = at;
            this.changes.push({ issue, kind: 'regression', at, release: e.release });
          }
        }

        row.event_count += 1;
        if (e.timestamp >= row.last_seen) {
          row.last_seen = e.timestamp;
          row.last_release = e.release;
          row.level = e.level;
          row.title = e.title;
          row.error_type = e.errorType;
          row.screen = e.screen;
          row.location = e.location;
          row.platform = e.platform;
        }
        if (e.timestamp < row.first_seen) {
          row.first_seen = e.timestamp;
          row.first_release = e.release;
        }
        if (at > row.updated_at) row.updated_at = at;
        if (e.userKey !== null) issue.userKeys.add(e.userKey);
        if (e.release !== '') {
          const f = issue.releaseFirstSeen.get(e.release);
          if (f === undefined || e.timestamp < f) issue.releaseFirstSeen.set(e.release, e.timestamp);
          const acc = releases.get(e.release);
          if (acc) {
            if (e.timestamp < acc.first) acc.first = e.timestamp;
            if (e.timestamp > acc.last) acc.last = e.timestamp;
            if (e.platform !== '') acc.platforms.add(e.platform);
          } else {
            releases.set(e.release, { first: e.timestamp, last: e.timestamp, platforms: new Set(e.platform !== '' ? [e.platform] : []) });
          }
        }
        const bucket = hourBucket(e.timestamp);
        issue.hourly.set(bucket, (issue.hourly.get(bucket) ?? 0) + 1);
        this.countProjectHourly(pid, bucket, e);

        // Sampling. The draw happens only when neither the crash nor keep-first rule decides and
        // the rate is strictly between 0 and 1 (at 0 or 1 its outcome is already known).
        const keep =
          e.isCrash ||
          row.event_count <= project.sample_keep_first ||
          project.sample_rate >= 1 ||
          (project.sample_rate > 0 && this.options.random() < project.sample_rate);
        if (keep) {
          row.stored_count += 1;
          this.stored.push({ input: e, issue, projectId: pid, receivedAt: at, id: snap.eventIds?.get(e.eventId) ?? null, seen: seen[i], payload: null });
        }
        this.result.accepted++;
      }
    }

    // 5. Releases: merge first/last seen and platforms with the stored rows.
    for (const r of snap.releases) {
      const acc = releases.get(r.release);
      if (!acc) continue;
      acc.first = Math.min(acc.first, num(r.first_seen));
      acc.last = Math.max(acc.last, num(r.last_seen));
      for (const p of parsePlatforms(r.platforms)) acc.platforms.add(p);
    }
    for (const [release, acc] of releases) {
      this.releaseRows.push({
        project_id: pid,
        release,
        first_seen: acc.first,
        last_seen: acc.last,
        platforms: JSON.stringify([...acc.platforms].sort()),
      });
    }
  }

  private countProjectHourly(pid: number, bucket: number, e: EventInput): void {
    const key = `${pid}:${bucket}:${e.release}`;
    let h = this.projectHourly.get(key);
    if (!h) {
      h = { project_id: pid, bucket, release: e.release, events: 0, crashes: 0, errors: 0, fatal: 0, error: 0, warning: 0, info: 0, debug: 0 };
      this.projectHourly.set(key, h);
    }
    h.events += 1;
    if (e.isCrash) h.crashes += 1;
    else if (e.level === 'error') h.errors += 1;
    h[e.level] += 1;
  }

  private planSessions(pid: number, works: PreparedWork[], snap: ProjectSnapshot): void {
    const states = new Map<string, SessionState>();
    for (const r of snap.sessions) {
      const row = { ...r, started: num(r.started), errors: num(r.errors), updated_at: num(r.updated_at) };
      states.set(r.sid, { row, before: sessionClass(row.status, row.errors), changed: false });
    }
    for (const work of works) {
      for (const u of work.sessions) {
        this.result.sessionUpdates++;
        const state = states.get(u.sid);
        if (!state) {
          states.set(u.sid, {
            row: {
              project_id: pid,
              sid: u.sid,
              did: u.did,
              release: u.release,
              environment: u.environment,
              started: u.started,
              status: u.status,
              errors: u.errors,
              updated_at: u.timestamp,
            },
            before: 'none',
            changed: true,
          });
          continue;
        }
        // The latest update wins; an older one arriving late changes nothing.
        if (u.timestamp < state.row.updated_at) continue;
        state.row.status = u.status;
        state.row.errors = u.errors;
        state.row.updated_at = u.timestamp;
        if (state.row.did === null && u.did !== null) state.row.did = u.did;
        state.changed = true;
      }
      for (const a of work.aggregates) {
        if (a.total === 0) continue;
        const h = this.sessionBucket(pid, a.release, hourBucket(a.started));
        h.total += a.total;
        h.crashed += a.crashed;
        h.errored += a.errored;
      }
    }
    for (const state of states.values()) {
      if (!state.changed) continue;
      this.sessions.push(state);
      const after = sessionClass(state.row.status, state.row.errors);
      if (after === state.before) continue;
      const h = this.sessionBucket(pid, state.row.release, hourBucket(state.row.started));
      if (state.before === 'none') h.total += 1;
      if (state.before === 'crashed') h.crashed -= 1;
      if (state.before === 'errored') h.errored -= 1;
      if (after === 'crashed') h.crashed += 1;
      if (after === 'errored') h.errored += 1;
    }
  }

  private sessionBucket(pid: number, release: string, bucket: number): SessionHourly {
    const key = `${pid}:${bucket}:${release}`;
    let h = this.sessionHourly.get(key);
    if (!h) {
      h = { project_id: pid, release, bucket, total: 0, crashed: 0, errored: 0 };
      this.sessionHourly.set(key, h);
    }
    return h;
  }

  // -------------------------------------------------------------------------
  // Writes: one multi-row statement per table (chunked only for very large batches).
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

  /** The stored events' ids (known by now) on their seen rows, and each issue's first/last_seen_id by event time. */
  private linkStoredEvents(): void {
    for (const s of this.stored) {
      s.seen.stored_id = s.id;
      const issue = s.issue;
      const ts = s.input.timestamp;
      if (ts < issue.firstStoredTs) {
        issue.firstStoredTs = ts;
        issue.row.first_seen_id = s.id;
      }
      if (ts >= issue.lastStoredTs) {
        issue.lastStoredTs = ts;
        issue.row.last_seen_id = s.id;
      }
    }
    this.result.stored = this.stored.length;
  }

  /** The stored events' payloads compressed into chunks (src/store/payloads.ts); `members` index this.stored. */
  private packStoredPayloads(): { chunks: PackedChunk[]; slots: PayloadSlot[] } {
    return packPayloads(this.stored.map((s) => ({ projectId: s.projectId, receivedAt: s.receivedAt, payload: rawSource(s.input) })));
  }

  /** Each stored event's chunk id (`ids[i]` is chunk i's) and byte range. */
  private placePayloads(ids: number[], slots: PayloadSlot[]): void {
    this.stored.forEach((s, i) => {
      s.payload = { chunkId: ids[slots[i].chunk], start: slots[i].start, length: slots[i].length };
    });
  }

  private tagRows(): Record<string, unknown>[] {
    const tags: Record<string, unknown>[] = [];
    for (const s of this.stored) {
      for (const [key, value] of s.input.tags) tags.push({ project_id: s.projectId, event_id: s.id, key, value });
    }
    return tags;
  }

  private userRows(): Record<string, unknown>[] {
    const users: Record<string, unknown>[] = [];
    for (const s of this.issues) for (const key of s.userKeys) users.push({ issue_id: s.row.id, user_key: key });
    return users;
  }

  private async writeSqlite(): Promise<void> {
    // New issues first: events, users, hourly rows and changes need their ids.
    const fresh = this.issues.filter((s) => s.row.id === null);
    const created = await this.insertRows(
      'issues',
      ISSUE_COLUMNS,
      fresh.map((s) => issueColumns(s.row)),
      { returning: ['id', 'project_id', 'fingerprint'] },
    );
    const freshByKey = new Map(fresh.map((s) => [`${s.row.project_id}:${s.row.fingerprint}`, s]));
    for (const r of created) freshByKey.get(`${num(r.project_id)}:${r.fingerprint}`)!.row.id = num(r.id);

    // Payload chunks, then the stored events that name them, then first/last_seen_id by event time.
    const { chunks, slots } = this.packStoredPayloads();
    const chunkIds: number[] = [];
    for (const chunk of chunks) {
      const [row] = await this.insertRows('payload_chunks', CHUNK_COLUMNS, [chunkRow(chunk)], { returning: ['id'] });
      chunkIds.push(num(row.id));
    }
    this.placePayloads(chunkIds, slots);
    const inserted = await this.insertRows(
      'events',
      EVENT_COLUMNS,
      this.stored.map((s) => eventValues(s)),
      { returning: ['id', 'project_id', 'event_id'] },
    );
    const storedByKey = new Map(this.stored.map((s) => [`${s.projectId}:${s.input.eventId}`, s]));
    for (const r of inserted) storedByKey.get(`${num(r.project_id)}:${r.event_id}`)!.id = num(r.id);
    this.linkStoredEvents();
    await this.insertRows('event_tags', TAG_COLUMNS, this.tagRows());

    // Exact distinct users: only the keys new to the issue come back.
    const byId = new Map(this.issues.map((s) => [s.row.id!, s]));
    const added = await this.insertRows('issue_users', USER_COLUMNS, this.userRows(), {
      conflict: (oc) => oc.columns(['issue_id', 'user_key']).doNothing(),
      returning: ['issue_id'],
    });
    for (const r of added) byId.get(num(r.issue_id))!.row.users += 1;

    // Every touched issue with its final values (its row is locked, so absolute values are safe).
    await this.insertRows(
      'issues',
      ISSUE_COLUMNS,
      this.issues.map((s) => issueColumns(s.row)),
      { conflict: issueUpsert },
    );
    await this.writeAggregates();
  }

  /**
   * One statement: every id is known from the reads (readPostgres), so the events, their
   * tags and the issues go in with the aggregates. An issue's `users` grows by the user
   * keys the statement's `issue_users` insert reports as new to it.
   */
  private async writePostgres(): Promise<void> {
    const db = this.db as unknown as Kysely<any>;
    this.linkStoredEvents();
    // A chunk takes the id of its first event: ids are known from the reads, and an event
    // id is never taken twice. Chunks travel in a bytea[] parameter (two hex digits a
    // byte), which per-event blobs could not afford; a batch's chunks are a few KB.
    const { chunks, slots } = this.packStoredPayloads();
    const chunkIds = chunks.map((c) => this.stored[c.members[0]].id!);
    this.placePayloads(chunkIds, slots);
    await this.insertRows(
      'payload_chunks',
      CHUNK_COLUMNS_WITH_ID,
      chunks.map((c, i) => ({ id: chunkIds[i], ...chunkRow(c) })),
    );
    await this.insertRows('events', EVENT_COLUMNS_WITH_ID, this.stored.map((s) => ({ id: s.id, ...eventValues(s) })));
    await this.insertRows('event_tags', TAG_COLUMNS, this.tagRows());
    if (this.issues.length > 0) {
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
        params: pgArrays(USER_COLUMNS, this.userRows()),
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
          this.issues.map((s) => s.row as unknown as Record<string, unknown>),
        ),
      });
    }
    await this.writeAggregates();
    await this.flushDeferred();
  }

  /** Everything after the events and issues: the same statements on both databases. */
  private async writeAggregates(): Promise<void> {
    const issueReleases: Record<string, unknown>[] = [];
    const issueHourly: Record<string, unknown>[] = [];
    for (const s of this.issues) {
      for (const [release, first] of s.releaseFirstSeen) issueReleases.push({ issue_id: s.row.id, release, first_seen: first });
      for (const [bucket, events] of s.hourly) issueHourly.push({ issue_id: s.row.id, bucket, events });
    }
    // Only an earlier first time rewrites a known (issue, release) row: nearly every batch
    // names releases its issues already had, and an update that keeps the value still
    // writes a row version and its WAL on PostgreSQL (one per issue and release a batch).
    await this.insertRows('issue_releases', ISSUE_RELEASE_COLUMNS, issueReleases, {
      conflict: (oc) =>
        oc
          .columns(['issue_id', 'release'])
          .doUpdateSet({ first_seen: (eb: any) => eb.ref('excluded.first_seen') })
          .where((eb: any) => eb('excluded.first_seen', '<', eb.ref('issue_releases.first_seen'))),
    });
    await this.insertRows('issue_hourly', ISSUE_HOURLY_COLUMNS, issueHourly, { conflict: additive('issue_hourly', ['issue_id', 'bucket'], ['events']) });

    const changes = this.changes.map((c) => ({ project_id: c.issue.row.project_id, issue_id: c.issue.row.id, kind: c.kind, at: c.at, release: c.release }));
    await this.insertRows('issue_changes', CHANGE_COLUMNS, changes);
    // Alerts are recorded with what caused them (src/alerts/outbox.ts); a dispatcher sends them.
    const alerts = this.changes.map((c) =>
      issueAlertOutboxRow(c.issue.row.project_id, c.issue.row.id, c.kind, c.at, { ...c.issue.row, release: c.release }),
    );
    await this.insertRows('alert_outbox', OUTBOX_COLUMNS, alerts);

    await this.insertRows('project_hourly', PROJECT_HOURLY_COLUMNS, [...this.projectHourly.values()] as unknown as Record<string, unknown>[], {
      conflict: additive('project_hourly', ['project_id', 'bucket', 'release'], ['events', 'crashes', 'errors', 'fatal', 'error', 'warning', 'info', 'debug']),
    });
    await this.insertRows('releases', RELEASE_COLUMNS, this.releaseRows, {
      conflict: (oc) =>
        oc.columns(['project_id', 'release']).doUpdateSet({
          first_seen: (eb: any) => eb.ref('excluded.first_seen'),
          last_seen: (eb: any) => eb.ref('excluded.last_seen'),
          platforms: (eb: any) => eb.ref('excluded.platforms'),
        }),
    });
    await this.insertRows('daily_usage', USAGE_COLUMNS, [...this.usage.values()], { conflict: additive('daily_usage', ['project_id', 'day'], ['events']) });
    await this.insertRows('seen_events', SEEN_COLUMNS, this.seen, { conflict: (oc) => oc.columns(['project_id', 'event_id']).doNothing() });

    await this.insertRows(
      'sessions',
      SESSION_COLUMNS,
      this.sessions.map((s) => s.row as unknown as Record<string, unknown>),
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
    const deltas = [...this.sessionHourly.values()].filter((h) => h.total !== 0 || h.crashed !== 0 || h.errored !== 0);
    await this.insertRows('session_hourly', SESSION_HOURLY_COLUMNS, deltas as unknown as Record<string, unknown>[], {
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

function newState(row: MutableIssue): IssueState {
  return {
    row,
    knownReleases: null,
    userKeys: new Set(),
    releaseFirstSeen: new Map(),
    hourly: new Map(),
    firstStoredTs: Infinity,
    lastStoredTs: -Infinity,
  };
}

function issueColumns(row: MutableIssue): Record<string, unknown> {
  const { id: _id, ...values } = row;
  return values;
}

function chunkRow(c: PackedChunk): Record<string, unknown> {
  return { project_id: c.projectId, received_at: c.receivedAt, data: c.data };
}

function eventValues(s: StoredEvent): Insertable<EventTable> & Record<string, unknown> {
  const e = s.input;
  const payload = s.payload!;
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
    payload_chunk: payload.chunkId,
    payload_start: payload.start,
    payload_length: payload.length,
    symbolicated: e.symbolicated,
  };
}

function parsePlatforms(json: string): string[] {
  try {
    const v = JSON.parse(json);
    return Array.isArray(v) ? v.filter((p): p is string => typeof p === 'string') : [];
  } catch {
    return [];
  }
}
