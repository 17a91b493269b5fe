// Retention: deletes raw events (with their tags, payload chunks and attachments), user feedback, seen event
// ids and sessions older than RETENTION_DAYS, the alert deliveries and recorded alerts
// done with and the upload assembly records that old (keeping the deliveries the API
// lists), and hourly/daily aggregates older than 400 days, in small batches so ingest
// is never locked out; issues are never deleted (their stored_count goes down,
// event_count stays). Also the hourly background job
// `serve` runs. One run at a time per database: a PostgreSQL advisory lock, or on
// SQLite a lease row in job_locks (so `faultline retention` from cron and `serve`
// on one file never overlap). On D1, which has no interactive transactions, an event
// batch is one `Store.atomic` (deleteEventBatchAtomically). Payload, attachment, symbol
// and upload chunks held in a bucket (src/store/blobs.ts) lose their objects after their
// rows. What domains own (the storage budget's plan: attachments first, then events;
// expired upload chunks) comes in as `RetentionDomains`, which the callers pass
// (src/editions/retention.ts), so the store imports no domain. Web APIs only, so the
// serverless edition's cron runs the same code.
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Logger } from '../logger.js';
import { DAY_MS, HOUR_MS, type Clock } from '../clock.js';
import {
  ATTACHMENT_PREFIX,
  deleteObjects,
  PAYLOAD_PREFIX,
  SYMBOL_PREFIX,
  sweepObjects,
  sweepUnnamedObjects,
  UPLOAD_PREFIX,
  type BlobBucket,
} from './blobs.js';
import type { Store } from './database.js';
import type { Database } from './schema.js';
import { DELIVERY_LIST_LIMIT } from '../limits.js';

type Db = Kysely<Database>;

/** Hourly timelines, sparklines and release health are kept this long (docs/operations.md "Retention": 400 days, a year of history with room). */
export const AGGREGATE_RETENTION_DAYS = 400;
export const DEFAULT_BATCH_SIZE = 5000;
/** Arbitrary constant shared by every faultline instance (the migration lock uses another). */
export const RETENTION_LOCK_KEY = 726_153_002;
/** The job_locks row of retention (SQLite). */
export const RETENTION_LEASE_NAME = 'retention';
/** How long a SQLite lease lasts without renewal: a crashed run blocks others at most this long. */
export const LEASE_MS = 5 * 60_000;
/** A running job renews its lease this often. */
export const LEASE_RENEW_MS = 60_000;

export type RetentionTable =
  | 'events'
  | 'event_tags'
  | 'payload_chunks'
  | 'attachments'
  | 'user_feedback'
  | 'seen_events'
  | 'sessions'
  | 'issue_hourly'
  | 'issue_environment_hourly'
  | 'project_hourly'
  | 'session_hourly'
  | 'session_users'
  | 'daily_usage'
  | 'alert_deliveries'
  | 'alert_outbox'
  | 'upload_assemblies';

export const RETENTION_TABLES: readonly RetentionTable[] = [
  'events',
  'event_tags',
  'payload_chunks',
  'attachments',
  'user_feedback',
  'seen_events',
  'sessions',
  'issue_hourly',
  'issue_environment_hourly',
  'project_hourly',
  'session_hourly',
  'session_users',
  'daily_usage',
  'alert_deliveries',
  'alert_outbox',
  'upload_assemblies',
];

export type RetentionCounts = Record<RetentionTable, number>;

export interface RetentionSummary {
  /** False when another instance held the lock and nothing was done. */
  ran: boolean;
  /** Rows older than this (epoch ms) were raw data to delete. */
  rawCutoff: number;
  /** Aggregate buckets older than this (epoch ms) were deleted. */
  aggregateCutoff: number;
  deleted: RetentionCounts;
  /** Distinct issues whose stored_count went down. */
  issuesUpdated: number;
  /** True when stopped early by the abort signal. */
  aborted: boolean;
}

export interface RetentionProgress {
  table: RetentionTable;
  /** Rows deleted by this batch. */
  batch: number;
  /** Rows of this table deleted so far in this run. */
  total: number;
}

/** A domain's own deletions, run after the store's tables (src/uploads/chunks.ts sweepExpiredChunks). */
export type RetentionSweeper = (db: Db, now: number) => Promise<unknown>;

/** What a project past its storage budget loses: everything received before each time (null: none). */
export interface BudgetPlan {
  attachmentsBefore: number | null;
  eventsBefore: number | null;
}

/**
 * What retention takes from the domains: sweepers run at the end of a run, and the plan
 * that makes a project with a storage budget fit it (src/privacy/usage.ts
 * storageBudgetPlan: attachments first, then events).
 */
export interface RetentionDomains {
  sweepers?: readonly RetentionSweeper[];
  budgetPlan?: (db: Db, project: { id: number; storage_budget_mb: number }) => Promise<BudgetPlan>;
}

export interface RetentionOptions extends RetentionDomains {
  now: number;
  retentionDays: number;
  aggregateDays?: number;
  batchSize?: number;
  /** Called after each batch that deleted rows; the run waits for a returned promise. */
  onProgress?: (p: RetentionProgress) => unknown;
  /** Checked between batches: a stopping server ends the run early. */
  signal?: { aborted: boolean };
  /**
   * The bucket payload, attachment, symbol and upload chunks may be in (src/store/blobs.ts):
   * a deleted payload chunk's object is deleted after its row, and objects older than the
   * cutoff's day (expired, or orphans of a batch that failed) are swept at the end, as are
   * symbol objects no row names and upload chunk objects of days before yesterday.
   */
  blobs?: BlobBucket;
  /**
   * The store's atomic write where it has no interactive transactions (D1). Elsewhere a
   * batch reads the events it deletes first: on PostgreSQL the atomic form's statements
   * would each pick the events anew, so a row written between them could be counted twice.
   */
  batch?: Store['atomic'];
}

export function emptyCounts(): RetentionCounts {
  return Object.fromEntries(RETENTION_TABLES.map((t) => [t, 0])) as RetentionCounts;
}

/** Lets queued work (the ingest writer's transactions) in between two batches. */
const yieldToOthers = () => new Promise<void>((resolve) => setTimeout(resolve, 0));

function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  // PostgreSQL deadlock / serialization failure (a batch racing the writer on an issue row); SQLite busy.
  return code === '40P01' || code === '40001' || code === 'SQLITE_BUSY';
}

async function withRetry<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (err) {
      if (attempt >= 5 || !isRetryable(err)) throw err;
      await new Promise((r) => setTimeout(r, 20 * attempt));
    }
  }
}

type EventBatchResult = { events: number; tags: number; issues: number[] };

/**
 * One batch of expired events without an interactive transaction: three statements
 * in one atomic batch, each picking the same events by the same subquery (the first
 * two leave `events` unchanged, so the third deletes exactly what they counted).
 */
async function deleteEventBatchAtomically(
  db: Db,
  batch: Store['atomic'],
  cutoff: number,
  batchSize: number,
  projectId?: number,
): Promise<EventBatchResult> {
  const inProject = projectId === undefined ? sql`` : sql` and project_id = ${projectId}`;
  const picked = sql`select id from events where received_at < ${cutoff}${inProject} order by id limit ${batchSize}`;
  const [, tags, gone] = await batch([
    sql`update issues set stored_count = max(0, stored_count - (select count(*) from events e where e.issue_id = issues.id and e.id in (${picked})))
        where id in (select issue_id from events where id in (${picked}))`.compile(db),
    sql`delete from event_tags where event_id in (${picked})`.compile(db),
    sql`delete from events where id in (${picked}) returning issue_id`.compile(db),
  ]);
  const issues = new Set<number>();
  for (const row of gone.rows as { issue_id: number }[]) issues.add(Number(row.issue_id));
  return { events: gone.rows.length, tags: Number(tags.numAffectedRows ?? 0), issues: [...issues] };
}

/** One batch of expired events: their tags, the rows, and the issues' stored_count. */
async function deleteEventBatch(
  db: Db,
  cutoff: number,
  batchSize: number,
  batch?: Store['atomic'],
  projectId?: number,
): Promise<EventBatchResult> {
  if (batch) return deleteEventBatchAtomically(db, batch, cutoff, batchSize, projectId);
  return withRetry(() =>
    db.transaction().execute(async (tx) => {
      let pick = tx.selectFrom('events').select('id').where('received_at', '<', cutoff);
      if (projectId !== undefined) pick = pick.where('project_id', '=', projectId);
      const picked = await pick.limit(batchSize).execute();
      if (picked.length === 0) return { events: 0, tags: 0, issues: [] };
      const ids = picked.map((r) => Number(r.id));
      const tags = await tx.deleteFrom('event_tags').where('event_id', 'in', ids).executeTakeFirst();
      // RETURNING counts only rows this batch really deleted, so stored_count never goes down twice.
      const gone = await tx.deleteFrom('events').where('id', 'in', ids).returning('issue_id').execute();
      const perIssue = new Map<number, number>();
      for (const r of gone) perIssue.set(Number(r.issue_id), (perIssue.get(Number(r.issue_id)) ?? 0) + 1);
      // Issues sharing the same decrement are updated together, in id order (fewer lock waits with the writer).
      const byCount = new Map<number, number[]>();
      for (const [issueId, n] of [...perIssue.entries()].sort((a, b) => a[0] - b[0])) {
        const list = byCount.get(n) ?? [];
        list.push(issueId);
        byCount.set(n, list);
      }
      for (const [n, issueIds] of byCount) {
        await tx
          .updateTable('issues')
          .set({ stored_count: sql<number>`case when stored_count >= ${n} then stored_count - ${n} else 0 end` })
          .where('id', 'in', issueIds)
          .execute();
      }
      return { events: gone.length, tags: Number(tags.numDeletedRows), issues: [...perIssue.keys()] };
    }),
  );
}

/**
 * Deletes up to `batchSize` rows of a table without an integer id: the keys of
 * the oldest matching rows are picked by the condition's index, then deleted by
 * row value (supported by PostgreSQL and SQLite ≥ 3.15).
 */
async function deleteKeyedBatch(
  db: Db,
  table: string,
  keys: string[],
  condition: RawBuilder<unknown>,
  batchSize: number,
  blobs?: BlobBucket,
): Promise<number> {
  const cols = sql.join(keys.map((k) => sql.ref(k)));
  const picked = sql`(${cols}) in (select ${cols} from ${sql.table(table)} where ${condition} limit ${batchSize})`;
  if (blobs && table === 'payload_chunks') {
    // The objects' keys come back from the delete itself; the objects go once it committed.
    const { rows } = await withRetry(() =>
      sql<{ r2_key: string | null }>`delete from payload_chunks where ${picked} returning r2_key`.execute(db),
    );
    await deleteObjects(
      blobs,
      rows.map((r) => r.r2_key),
    );
    return rows.length;
  }
  if (blobs && table === 'attachments') {
    // Their chunks go with them (foreign key): the chunks' object keys are read first, the
    // objects go once the rows are deleted (the day's sweep would leave a budget's alone).
    // By subquery, not an id list: D1 binds at most 100 values.
    const pick = sql`select id from attachments where ${condition} order by id limit ${batchSize}`;
    const keys = await sql<{
      r2_key: string | null;
    }>`select r2_key from attachment_chunks where attachment_id in (${pick}) and r2_key is not null`.execute(db);
    const result = await withRetry(() => sql`delete from attachments where id in (${pick})`.execute(db));
    await deleteObjects(
      blobs,
      keys.rows.map((k) => k.r2_key),
    );
    return Number(result.numAffectedRows ?? 0);
  }
  const result = await withRetry(() => sql`delete from ${sql.table(table)} where ${picked}`.execute(db));
  return Number(result.numAffectedRows ?? 0);
}

/** Which of `keys` a symbol chunk row names. */
async function namedSymbolObjects(db: Db, keys: string[]): Promise<Set<string>> {
  const named = new Set<string>();
  for (let i = 0; i < keys.length; i += 100) {
    const rows = await db
      .selectFrom('symbol_chunks')
      .select('r2_key')
      .where('r2_key', 'in', keys.slice(i, i + 100))
      .execute();
    for (const r of rows) if (r.r2_key) named.add(r.r2_key);
  }
  return named;
}

/** The retention work itself, without any locking (see runRetention). */
export async function retentionWork(db: Db, options: RetentionOptions): Promise<Omit<RetentionSummary, 'ran'>> {
  const batchSize = options.batchSize ?? DEFAULT_BATCH_SIZE;
  const rawCutoff = options.now - options.retentionDays * DAY_MS;
  const aggregateCutoff = options.now - (options.aggregateDays ?? AGGREGATE_RETENTION_DAYS) * DAY_MS;
  const deleted = emptyCounts();
  const issuesUpdated = new Set<number>();
  const stopped = () => options.signal?.aborted === true;
  const report = async (table: RetentionTable, batch: number) => {
    deleted[table] += batch;
    if (batch > 0) await options.onProgress?.({ table, batch, total: deleted[table] });
  };

  while (!stopped()) {
    const b = await deleteEventBatch(db, rawCutoff, batchSize, options.batch);
    deleted.event_tags += b.tags;
    for (const id of b.issues) issuesUpdated.add(id);
    await report('events', b.events);
    if (b.events < batchSize) break;
    await yieldToOthers();
  }

  const keyed = async (table: RetentionTable, keys: string[], condition: RawBuilder<unknown>) => {
    while (!stopped()) {
      const n = await deleteKeyedBatch(db, table, keys, condition, batchSize, options.blobs);
      await report(table, n);
      if (n < batchSize) break;
      await yieldToOthers();
    }
  };

  // A chunk's received_at is its newest event's, so once the events are gone (the loop
  // above ran to its end; a stopped run stops here too) none of its events is left.
  await keyed('payload_chunks', ['id'], sql`received_at < ${rawCutoff}`);
  // An attachment carries its event's received_at, so it goes with the event; its
  // chunks go with it (foreign key).
  await keyed('attachments', ['id'], sql`received_at < ${rawCutoff}`);
  await keyed('user_feedback', ['id'], sql`received_at < ${rawCutoff}`);

  // Storage budgets (docs/privacy.md "Storage"): a project past its budget loses its
  // oldest hours of attachments, then (when they are not enough) its oldest hours of
  // events, the same way as expired ones, until it fits: the plan comes from the domain
  // (src/privacy/usage.ts budgetPlan), from storage_usage (kept by triggers), not from
  // reading the rows.
  const budgeted = options.budgetPlan
    ? await db
        .selectFrom('projects')
        .select(['id', 'storage_budget_mb'])
        .where('storage_budget_mb', '>', 0)
        .orderBy('id')
        .execute()
    : [];
  for (const project of budgeted) {
    if (stopped()) break;
    const plan = await options.budgetPlan!(db, {
      id: project.id,
      storage_budget_mb: Number(project.storage_budget_mb),
    });
    if (plan.attachmentsBefore !== null)
      await keyed('attachments', ['id'], sql`project_id = ${project.id} and received_at < ${plan.attachmentsBefore}`);
    if (plan.eventsBefore === null) continue;
    while (!stopped()) {
      const b = await deleteEventBatch(db, plan.eventsBefore, batchSize, options.batch, project.id);
      deleted.event_tags += b.tags;
      for (const id of b.issues) issuesUpdated.add(id);
      await report('events', b.events);
      if (b.events < batchSize) break;
      await yieldToOthers();
    }
    await keyed('payload_chunks', ['id'], sql`project_id = ${project.id} and received_at < ${plan.eventsBefore}`);
  }
  await keyed('seen_events', ['project_id', 'event_id'], sql`received_at < ${rawCutoff}`);
  await keyed('sessions', ['project_id', 'sid'], sql`updated_at < ${rawCutoff}`);
  await keyed('issue_hourly', ['issue_id', 'bucket'], sql`bucket < ${aggregateCutoff}`);
  await keyed('issue_environment_hourly', ['issue_id', 'environment', 'bucket'], sql`bucket < ${aggregateCutoff}`);
  /**
   * A project's sent and failed deliveries older than the raw data, except its latest
   * DELIVERY_LIST_LIMIT (what `GET …/alerts/deliveries` lists), and its recorded alerts
   * that old which were taken out of the outbox and have no delivery left to send.
   */
  const deleteOldAlerts = async (projectId: number) => {
    const listed = await db
      .selectFrom('alert_deliveries')
      .select('id')
      .where('project_id', '=', projectId)
      .orderBy('id', 'desc')
      .offset(DELIVERY_LIST_LIMIT - 1)
      .limit(1)
      .executeTakeFirst();
    if (listed) {
      await keyed(
        'alert_deliveries',
        ['id'],
        sql`project_id = ${projectId} and id < ${Number(listed.id)} and state in ('sent', 'failed') and created_at < ${rawCutoff}`,
      );
    }
    await keyed(
      'alert_outbox',
      ['id'],
      sql`project_id = ${projectId} and state not in ('pending', 'held') and created_at < ${rawCutoff}
          and not exists (select 1 from alert_deliveries d where d.alert_id = alert_outbox.id and d.state = 'pending')`,
    );
  };
  // Per project, so each batch walks the (project_id, bucket, …) keys instead of the whole table.
  const projects = await db.selectFrom('projects').select('id').orderBy('id').execute();
  for (const { id } of projects) {
    await keyed(
      'project_hourly',
      ['project_id', 'bucket', 'release'],
      sql`project_id = ${id} and bucket < ${aggregateCutoff}`,
    );
    await keyed(
      'session_hourly',
      ['project_id', 'release', 'bucket'],
      sql`project_id = ${id} and bucket < ${aggregateCutoff}`,
    );
    await keyed(
      'session_users',
      ['project_id', 'release', 'bucket', 'did'],
      sql`project_id = ${id} and bucket < ${aggregateCutoff}`,
    );
    await keyed('daily_usage', ['project_id', 'day'], sql`project_id = ${id} and day < ${aggregateCutoff}`);
    await deleteOldAlerts(id);
  }
  // Answers to `assemble` polls: an upload finished (or abandoned) that long ago is not polled for.
  await keyed('upload_assemblies', ['project_id', 'kind', 'checksum'], sql`updated_at < ${rawCutoff}`);
  // Objects of days past the cutoff: the rows naming them are gone (the loops above ran
  // to their end), so what is left there is an orphan of a batch that failed.
  if (options.blobs && !stopped()) {
    await sweepObjects(options.blobs, PAYLOAD_PREFIX, rawCutoff, options.signal);
    // Attachment objects go with their rows (deleteKeyedBatch); an attachment is as old as
    // its event, so what is left here is an orphan too.
    await sweepObjects(options.blobs, ATTACHMENT_PREFIX, rawCutoff, options.signal);
  }
  for (const sweep of options.sweepers ?? []) if (!stopped()) await sweep(db, options.now);
  if (options.blobs && !stopped()) {
    // Upload chunk objects of days before yesterday outlived every chunk row.
    await sweepObjects(options.blobs, UPLOAD_PREFIX, options.now - DAY_MS, options.signal);
    // Symbol objects live as long as their file: those of a file replaced at commit, or
    // of a write that failed, are named by no row (written at least a day ago, so none is
    // a chunk whose row is still being written).
    await sweepUnnamedObjects(
      options.blobs,
      SYMBOL_PREFIX,
      options.now - DAY_MS,
      (keys) => namedSymbolObjects(db, keys),
      options.signal,
    );
  }
  if (!stopped()) await deleteAccountLeftovers(db, options.now);
  return { rawCutoff, aggregateCutoff, deleted, issuesUpdated: issuesUpdated.size, aborted: stopped() };
}

/** Audit entries are kept this long, whatever RETENTION_DAYS says (docs/api.md "Audit log"). */
export const AUDIT_RETENTION_DAYS = 400;
/** Dashboard sessions end 7 days idle (src/accounts/store.ts SESSION_IDLE_MS). */
const SESSION_IDLE_DAYS = 7;

/** Audit entries past 400 days, sessions past their end, invites past theirs. */
async function deleteAccountLeftovers(db: Db, now: number): Promise<void> {
  await db
    .deleteFrom('audit_log')
    .where('at', '<', now - AUDIT_RETENTION_DAYS * DAY_MS)
    .execute();
  await db
    .deleteFrom('user_sessions')
    .where((eb) => eb.or([eb('expires_at', '<=', now), eb('last_seen_at', '<=', now - SESSION_IDLE_DAYS * DAY_MS)]))
    .execute();
  await db.deleteFrom('user_invites').where('expires_at', '<=', now).execute();
}

/**
 * Takes the named lease when it is free or expired: one statement, so of two
 * processes racing for it exactly one gets it. Times are wall-clock epoch ms.
 */
export async function takeLease(
  db: Db,
  name: string,
  holder: string,
  now: number,
  leaseMs = LEASE_MS,
): Promise<boolean> {
  const res = await db
    .insertInto('job_locks')
    .values({ name, holder, expires_at: now + leaseMs })
    .onConflict((oc) =>
      oc
        .column('name')
        .doUpdateSet({ holder: (eb) => eb.ref('excluded.holder'), expires_at: (eb) => eb.ref('excluded.expires_at') })
        .where('job_locks.expires_at', '<', now),
    )
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
}

/** Extends a lease still held by `holder`; false when it was lost (expired and taken over). */
export async function renewLease(
  db: Db,
  name: string,
  holder: string,
  now: number,
  leaseMs = LEASE_MS,
): Promise<boolean> {
  const res = await db
    .updateTable('job_locks')
    .set({ expires_at: now + leaseMs })
    .where('name', '=', name)
    .where('holder', '=', holder)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

export async function releaseLease(db: Db, name: string, holder: string): Promise<void> {
  await db.deleteFrom('job_locks').where('name', '=', name).where('holder', '=', holder).execute();
}

/**
 * Runs `work` while holding the named lease, renewing it every LEASE_RENEW_MS; a lost
 * lease sets `lost.aborted` so the work stops after its current batch. Returns null
 * when another holder has it.
 */
async function withLease<T>(db: Db, name: string, work: (lost: { aborted: boolean }) => Promise<T>): Promise<T | null> {
  // The process id where there is one (a server), so an operator can tell holders apart.
  const holder = `${globalThis.process?.pid ?? 'isolate'}:${crypto.randomUUID().slice(0, 8)}`;
  if (!(await takeLease(db, name, holder, Date.now()))) return null;
  const lost = { aborted: false };
  let renewing: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    renewing = renewLease(db, name, holder, Date.now()).then(
      (held) => {
        if (!held) lost.aborted = true;
      },
      () => undefined, // a busy database: the next renewal tries again, well before expiry
    );
  }, LEASE_RENEW_MS);
  timer.unref?.(); // Node; Workers' timers have no unref
  try {
    return await work(lost);
  } finally {
    clearInterval(timer);
    await renewing;
    await releaseLease(db, name, holder);
  }
}

/**
 * Runs retention once, one run at a time per database: on PostgreSQL with
 * pg_try_advisory_lock, on SQLite with the job_locks lease (which holds across
 * processes, e.g. `faultline retention` from cron beside `serve`). When another
 * run holds it, returns `ran: false` and does nothing.
 */
export async function runRetention(store: Store, options: RetentionOptions): Promise<RetentionSummary> {
  const skipped = (): RetentionSummary => ({
    ran: false,
    rawCutoff: options.now - options.retentionDays * DAY_MS,
    aggregateCutoff: options.now - (options.aggregateDays ?? AGGREGATE_RETENTION_DAYS) * DAY_MS,
    deleted: emptyCounts(),
    issuesUpdated: 0,
    aborted: false,
  });
  if (store.dialect === 'postgres') {
    // The lock lives on one pinned connection for the whole run; the work uses the pool.
    return store.db.connection().execute(async (conn) => {
      const got = await sql<{ locked: boolean }>`select pg_try_advisory_lock(${RETENTION_LOCK_KEY}) as locked`.execute(
        conn,
      );
      if (!got.rows[0]?.locked) return skipped();
      try {
        return { ran: true, ...(await retentionWork(store.db, options)) };
      } finally {
        await sql`select pg_advisory_unlock(${RETENTION_LOCK_KEY})`.execute(conn);
      }
    });
  }
  const done = await withLease(store.db, RETENTION_LEASE_NAME, async (lost) => {
    const outer = options.signal;
    const signal = {
      get aborted() {
        return lost.aborted || outer?.aborted === true;
      },
    };
    return {
      ran: true,
      ...(await retentionWork(store.db, {
        batch: store.capabilities.supportsInteractiveTransactions ? undefined : store.atomic,
        ...options,
        signal,
      })),
    };
  });
  return done ?? skipped();
}

export function formatSummary(s: RetentionSummary): string {
  if (!s.ran) return 'retention: skipped, another instance is running it';
  const d = s.deleted;
  return (
    `retention: deleted ${d.events} events (and ${d.event_tags} event tags, ${d.payload_chunks} payload chunks, ${d.attachments} attachments, ${d.user_feedback} user feedback), ${d.seen_events} seen event ids, ` +
    `${d.sessions} sessions older than ${new Date(s.rawCutoff).toISOString()}; ` +
    `${d.issue_hourly} issue_hourly, ${d.issue_environment_hourly} issue_environment_hourly, ${d.project_hourly} project_hourly, ${d.session_hourly} session_hourly, ${d.session_users} session_users and ` +
    `${d.daily_usage} daily_usage rows older than ${new Date(s.aggregateCutoff).toISOString()}; ` +
    `${d.alert_deliveries} alert deliveries, ${d.alert_outbox} recorded alerts and ${d.upload_assemblies} upload assemblies done with; ` +
    `stored_count lowered on ${s.issuesUpdated} issues` +
    (s.aborted ? ' (stopped early)' : '')
  );
}

export interface RetentionJobDeps extends RetentionDomains {
  store: Store;
  clock: Clock;
  logger: Logger;
  retentionDays: number;
}

export interface RetentionJob {
  /** Stops the timer and waits for a run in progress to end (it stops after its current batch). */
  stop(): Promise<void>;
  /** Runs once now (also what the timer calls). */
  runOnce(): Promise<RetentionSummary | null>;
}

/**
 * The background retention of `serve`: first run `firstDelayMs` after start,
 * then every hour. Timers are unref'd so they never keep the process alive.
 */
export function startRetentionJob(
  deps: RetentionJobDeps,
  options: { firstDelayMs?: number; intervalMs?: number } = {},
): RetentionJob {
  const signal = { aborted: false };
  let current: Promise<RetentionSummary | null> | null = null;
  const runOnce = () => {
    if (current) return current;
    current = (async () => {
      try {
        const summary = await runRetention(deps.store, {
          now: deps.clock.now(),
          retentionDays: deps.retentionDays,
          sweepers: deps.sweepers,
          budgetPlan: deps.budgetPlan,
          signal,
        });
        if (summary.ran)
          deps.logger.info({ deleted: summary.deleted, issues_updated: summary.issuesUpdated }, formatSummary(summary));
        else deps.logger.debug('retention skipped: another instance holds the lock');
        return summary;
      } catch (err) {
        if (!signal.aborted) deps.logger.error({ err }, 'retention run failed; it will be retried at the next hour');
        return null;
      } finally {
        current = null;
      }
    })();
    return current;
  };
  const interval = setInterval(() => void runOnce(), options.intervalMs ?? HOUR_MS);
  interval.unref();
  const first = setTimeout(() => void runOnce(), options.firstDelayMs ?? 60_000);
  first.unref();
  return {
    runOnce,
    async stop() {
      signal.aborted = true;
      clearInterval(interval);
      clearTimeout(first);
      if (current) await current;
    },
  };
}
