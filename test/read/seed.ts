// Cheap bulk rows for tests that need thousands of events or hundreds of issues
// (page caps, bounded-work checks): one INSERT … SELECT over a recursive counter
// per call, on the real schema of either database. Rows look like stored events
// (every NOT NULL column filled) but skip ingest, so aggregates are not written;
// use these only where a test reads events, event_tags or issues rows.
import { randomBytes } from 'node:crypto';
import { sql, type Kysely } from 'kysely';
import type { Store } from '../../src/store/database.js';
import type { Database } from '../../src/store/schema.js';

type Db = Kysely<Database>;
/** A number parameter as a 64-bit integer (PostgreSQL would otherwise infer int4 or text). */
const big = (n: number) => sql`cast(${n} as bigint)`;

let issueCounter = 0;

/** One issue row (unresolved, counts left at zero unless given). Returns its id and fingerprint. */
export async function seedIssue(
  db: Db,
  projectId: number,
  o: { lastSeen: number; firstSeen?: number; title?: string; fingerprint?: string; eventCount?: number },
): Promise<{ id: number; fingerprint: string }> {
  issueCounter += 1;
  const fingerprint = o.fingerprint ?? randomBytes(16).toString('hex');
  const row = await db
    .insertInto('issues')
    .values({
      project_id: projectId,
      fingerprint,
      title: o.title ?? `SeededError: seeded issue ${issueCounter}`,
      level: 'error',
      error_type: 'SeededError',
      screen: '',
      location: '',
      platform: 'node',
      status: 'unresolved',
      event_count: o.eventCount ?? 0,
      stored_count: o.eventCount ?? 0,
      users: 0,
      first_seen: o.firstSeen ?? o.lastSeen,
      last_seen: o.lastSeen,
      first_seen_id: null,
      last_seen_id: null,
      first_release: '',
      last_release: '',
      resolved_release: null,
      resolved_at: null,
      regressed_at: null,
      created_at: o.lastSeen,
      updated_at: o.lastSeen,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { id: Number(row.id), fingerprint };
}

/**
 * Many issue rows of one project in one statement, inserted in the order of i = 1 … count
 * with last_seen = lastSeen - (i / ties) × step ms (integer division: `ties` rows share
 * each time; by default every row 1 ms older than the one before).
 */
export async function seedIssues(
  db: Db,
  projectId: number,
  count: number,
  lastSeen: number,
  o: { step?: number; ties?: number } = {},
): Promise<void> {
  const prefix = randomBytes(8).toString('hex');
  const last = big(lastSeen);
  const seen = sql`${last} - (i / ${big(o.ties ?? 1)}) * ${big(o.step ?? 1)}`;
  await sql`
    with recursive g(i) as (select 1 union all select i + 1 from g where i < ${big(count)})
    insert into issues (project_id, fingerprint, title, level, error_type, screen, location, platform, status,
      event_count, stored_count, users, first_seen, last_seen, first_release, last_release, created_at, updated_at)
    select ${big(projectId)}, ${prefix} || cast(i as text), 'SeededError: bulk ' || cast(i as text), 'error', 'SeededError', '', '', 'node', 'unresolved',
      1, 1, 0, ${seen}, ${seen}, '', '', ${last}, ${last}
    from g order by i`.execute(db);
}

export interface SeedEvents {
  projectId: number;
  issueId: number;
  fingerprint: string;
  count: number;
  /** Event time of row i (0-based, inserted in this order so ids grow with i): start + i × step. */
  start: number;
  step: number;
  /** Receive time of every row; default: each row's event time. */
  receivedAt?: number;
  release?: string;
  deviceModel?: string | null;
  message?: string;
  /** Tags written both to events.tags and to event_tags. */
  tags?: Record<string, string>;
}

/** Inserts `count` events in one statement; returns the first and last id. */
export async function seedEvents(store: Store, o: SeedEvents): Promise<{ first: number; last: number }> {
  const db = store.db;
  const prefix = randomBytes(8).toString('hex');
  const blob = sql`cast(${Buffer.from('{}')} as ${sql.raw(store.dialect === 'postgres' ? 'bytea' : 'blob')})`;
  const ts = sql`${big(o.start)} + (i - 1) * ${big(o.step)}`;
  const received = o.receivedAt === undefined ? ts : big(o.receivedAt);
  const tags = o.tags ?? {};
  await sql`
    with recursive g(i) as (select 1 union all select i + 1 from g where i < ${big(o.count)})
    insert into events (project_id, issue_id, event_id, fingerprint, timestamp, received_at, level, platform, release, dist,
      environment, device_model, screen, error_type, error_location, title, message, is_crash, sdk_name, tags, detail, raw)
    select ${big(o.projectId)}, ${big(o.issueId)}, ${prefix} || cast(i as text), ${o.fingerprint}, ${ts}, ${received}, 'error', 'node',
      ${o.release ?? ''}, '', 'production', cast(${o.deviceModel ?? null} as text), '', 'SeededError', '', 'SeededError: seeded',
      ${o.message ?? 'seeded'}, 0, 'seed', ${JSON.stringify(tags)}, ${blob}, ${blob}
    from g order by i`.execute(db);
  const range = await db
    .selectFrom('events')
    .select((eb) => [eb.fn.min<number>('id').as('first'), eb.fn.max<number>('id').as('last')])
    .where('issue_id', '=', o.issueId)
    .where('event_id', 'like', `${prefix}%`)
    .executeTakeFirstOrThrow();
  const first = Number(range.first);
  const last = Number(range.last);
  for (const [key, value] of Object.entries(tags)) {
    await sql`
      insert into event_tags (project_id, event_id, key, value)
      select project_id, id, cast(${key} as text), cast(${value} as text) from events
      where issue_id = ${o.issueId} and id >= ${first} and id <= ${last}`.execute(db);
  }
  return { first, last };
}
