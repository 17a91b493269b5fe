// Issue merges as statements (docs/api.md "Merging issues"): merging an issue into another
// adds its counts, users, releases and hourly buckets to the target, moves its events,
// history and pending alerts there, maps its fingerprint (and the fingerprints already
// mapped to it) to the target in `issue_merges`, and deletes it. The statements are the
// same on every database (UPDATE ... FROM runs on SQLite 3.33+, D1 and PostgreSQL), take
// a handful of parameters each (D1 binds at most 100), and read everything they add
// from the database as they run, so on D1, whose batches are atomic but read nothing
// before, a batch still adds what the rows hold when it commits. Ingest consults the
// mapping for fingerprints no issue has (src/ingest/plan.ts `aliases`).
import { sql, type CompiledQuery, type Kysely, type Transaction } from 'kysely';
import type { Store } from './database.js';
import type { Database } from './schema.js';

type Db = Kysely<Database>;

/** An issue row as a merge needs it. */
export interface MergeIssue {
  id: number;
  fingerprint: string;
}

/** The columns that follow the newest event of the issues merged (plan.ts: the issue's latest event). */
const LATEST_COLUMNS = [
  'last_seen_id',
  'last_release',
  'title',
  'level',
  'error_type',
  'screen',
  'location',
  'platform',
] as const;
/** The columns that follow the oldest event. */
const EARLIEST_COLUMNS = ['first_seen_id', 'first_release'] as const;

/**
 * The statements that merge `source` into `target` (one issue of the same project each).
 * Run them in one transaction, or as one atomic batch on D1.
 */
export function mergeStatements(
  db: Db,
  projectId: number,
  target: MergeIssue,
  source: MergeIssue,
  now: number,
): CompiledQuery[] {
  const T = sql`cast(${target.id} as bigint)`;
  const S = source.id;
  const later = sql`s.last_seen > issues.last_seen`;
  const earlier = sql`s.first_seen < issues.first_seen`;
  const pick = (cond: typeof later, column: string) =>
    sql`${sql.ref(column)} = case when ${cond} then ${sql.ref(`s.${column}`)} else ${sql.ref(`issues.${column}`)} end`;
  return [
    sql`insert into issue_users (issue_id, user_key) select ${T}, user_key from issue_users where issue_id = ${S}
      on conflict (issue_id, user_key) do nothing`,
    sql`insert into issue_releases (issue_id, release, first_seen) select ${T}, release, first_seen from issue_releases where issue_id = ${S}
      on conflict (issue_id, release) do update set first_seen = excluded.first_seen where excluded.first_seen < issue_releases.first_seen`,
    sql`insert into issue_hourly (issue_id, bucket, events) select ${T}, bucket, events from issue_hourly where issue_id = ${S}
      on conflict (issue_id, bucket) do update set events = issue_hourly.events + excluded.events`,
    sql`insert into issue_environment_hourly (issue_id, environment, bucket, events) select ${T}, environment, bucket, events from issue_environment_hourly where issue_id = ${S}
      on conflict (issue_id, environment, bucket) do update set events = issue_environment_hourly.events + excluded.events`,
    // The target's status, resolution and creation stay; its counts add up, and the fields of
    // the first and the latest event come from whichever issue saw that event.
    sql`update issues set
        event_count = issues.event_count + s.event_count,
        stored_count = issues.stored_count + s.stored_count,
        users = (select count(*) from issue_users u where u.issue_id = issues.id),
        ${sql.join([...EARLIEST_COLUMNS.map((c) => pick(earlier, c)), ...LATEST_COLUMNS.map((c) => pick(later, c))])},
        first_seen = case when ${earlier} then s.first_seen else issues.first_seen end,
        last_seen = case when ${later} then s.last_seen else issues.last_seen end,
        updated_at = ${now}
      from issues s where issues.id = ${target.id} and s.id = ${S}`,
    sql`update events set issue_id = ${T}, fingerprint = cast(${target.fingerprint} as text) where issue_id = ${S}`,
    sql`update issue_changes set issue_id = ${T} where issue_id = ${S}`,
    sql`update alert_outbox set issue_id = ${T} where issue_id = ${S}`,
    sql`update issue_merges set issue_id = ${T} where issue_id = ${S}`,
    sql`insert into issue_merges (project_id, fingerprint, issue_id, merged_at)
      select project_id, fingerprint, ${T}, cast(${now} as bigint) from issues where id = ${S} and project_id = ${projectId}`,
    sql`delete from issue_users where issue_id = ${S}`,
    sql`delete from issue_releases where issue_id = ${S}`,
    sql`delete from issue_hourly where issue_id = ${S}`,
    sql`delete from issue_environment_hourly where issue_id = ${S}`,
    sql`delete from issues where id = ${S}`,
  ].map((q) => q.compile(db));
}

/**
 * The `merged` entry of the target's activity (issue_changes), once per merge request:
 * who merged (null: the service, re-symbolicating) and which fingerprints.
 */
export function mergedChange(
  db: Db,
  projectId: number,
  targetId: number,
  now: number,
  by: { actor: string | null; actorUserId: number | null; fingerprints: string[] } = {
    actor: null,
    actorUserId: null,
    fingerprints: [],
  },
): CompiledQuery {
  const data = JSON.stringify({ fingerprints: by.fingerprints });
  return sql`insert into issue_changes (project_id, issue_id, kind, at, release, actor, actor_user_id, data)
    select project_id, id, 'merged', cast(${now} as bigint), last_release, cast(${by.actor} as text), cast(${by.actorUserId} as bigint), cast(${data} as text)
    from issues where id = ${targetId} and project_id = ${projectId}`.compile(db);
}

/**
 * Maps `fingerprint` to the issue `issueId` (its later events go there), unless an issue
 * with that fingerprint exists or the fingerprint is mapped already.
 */
export function mapFingerprint(
  db: Db,
  projectId: number,
  fingerprint: string,
  issueId: number,
  now: number,
): CompiledQuery {
  return sql`insert into issue_merges (project_id, fingerprint, issue_id, merged_at)
    select cast(${projectId} as bigint), cast(${fingerprint} as text), cast(${issueId} as bigint), cast(${now} as bigint)
    where not exists (select 1 from issues where project_id = ${projectId} and fingerprint = ${fingerprint})
    on conflict (project_id, fingerprint) do nothing`.compile(db);
}

/** The issue a merged (or mapped) fingerprint's events go to, or undefined. */
export async function mergedIssueId(
  db: Db | Transaction<Database>,
  projectId: number,
  fingerprint: string,
): Promise<number | undefined> {
  const row = await db
    .selectFrom('issue_merges')
    .select('issue_id')
    .where('project_id', '=', projectId)
    .where('fingerprint', '=', fingerprint)
    .executeTakeFirst();
  return row ? Number(row.issue_id) : undefined;
}

/**
 * Runs `build`'s statements together: on D1 as one atomic batch (what `build` reads comes
 * before it), elsewhere in one transaction that first takes the project's ingest lock
 * (PostgreSQL: the row lock ingest batches take, src/store/postgres.ts; SQLite: the write
 * lock), so no ingest batch plans from issue rows the merge is changing.
 */
export async function runLocked<T>(
  store: Store,
  projectId: number,
  build: (reader: Db) => Promise<{ statements: CompiledQuery[]; result: T }>,
): Promise<T> {
  if (!store.capabilities.supportsInteractiveTransactions) {
    const { statements, result } = await build(store.db);
    await store.atomic(statements);
    return result;
  }
  // The reads `build` makes must come after the lock, so that no ingest batch on another
  // connection plans from the rows the statements change; one atomic write after reads
  // made outside it would let one slip in between (D1 runs one statement at a time).
  return store.db.transaction().execute(async (trx) => {
    await lockProject(store, trx, projectId);
    const { statements, result } = await build(trx);
    for (const q of statements) await trx.executeQuery(q);
    return result;
  });
}

/** Takes the lock ingest takes on a project, in a transaction (see runLocked). */
export async function lockProject(store: Store, trx: Transaction<Database>, projectId: number): Promise<void> {
  if (store.dialect === 'postgres') {
    await sql`select id from projects where id = ${projectId} for no key update`.execute(trx);
  } else {
    // A write first: SQLite takes its write lock now, before the reads the statements are built from.
    await sql`update projects set slug = slug where id = ${projectId}`.execute(trx);
  }
}
