// Migrations that change data or storage, checked on a database holding rows written by
// the schema before them (migrated step by step with Kysely's Migrator, as an older
// Faultline left it).
import { Migrator, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { findEvent } from '../../src/read/events.js';
import { issueDetail, listIssues, parseIssueListQuery } from '../../src/read/issues.js';
import { migrate, type Store } from '../../src/store/database.js';
import { openStore } from '../../src/editions/node/open-store.js';
import { StaticMigrationProvider } from '../../src/store/migrations.js';
import { createTestDatabase, dialects, type TestDatabase } from '../helpers/server.js';
import {
  countRowsByProject,
  insertEvent,
  insertIssue,
  orphanIssueRows,
  seedProjectData,
} from '../helpers/seed-rows.js';

async function migrateTo(store: Store, name: string): Promise<void> {
  const migrator = new Migrator({ db: store.db, provider: new StaticMigrationProvider(store.dialect) });
  const { error } = await migrator.migrateTo(name);
  if (error) throw error;
}

/** A project row as any schema version has it; returns its id. */
async function insertProject(store: Store): Promise<number> {
  const project = await store.db
    .insertInto('projects')
    .values({
      slug: 'p',
      name: 'P',
      platform: 'node',
      dsn_key: 'k'.repeat(32),
      sample_keep_first: 10,
      sample_rate: 1,
      daily_quota: 0,
      created_at: 1,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return Number(project.id);
}

async function indexNames(store: Store, table = 'events'): Promise<string[]> {
  const rows =
    store.dialect === 'postgres'
      ? await store.db
          .selectFrom('pg_indexes' as any)
          .select('indexname as name')
          .where('tablename', '=', table)
          .execute()
      : await store.db
          .selectFrom('sqlite_master' as any)
          .select('name')
          .where('type', '=', 'index')
          .where('tbl_name', '=', table)
          .execute();
  return rows.map((r: any) => String(r.name));
}

describe.each(dialects)('migrations on %s', (dialect) => {
  let database: TestDatabase | null = null;
  let store: Store | null = null;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
    store = null;
    database = null;
  });

  it('005 links every seen event id to its stored row and drops the events index on event_id', async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrateTo(store, '004_job_locks');
    const pid = await insertProject(store);
    // The 004 schema: seen_events has no stored_id yet.
    const old = store.db.withTables<{ seen_events: { project_id: number; event_id: string; received_at: number } }>();
    const issueId = await insertIssue(store.db, pid, 'a'.repeat(32), 1_767_000_000_000);
    const stored = ['1'.repeat(32), '2'.repeat(32)];
    const ids: number[] = [];
    for (const eventId of stored) {
      ids.push(await insertEvent(store.db, pid, issueId, 'a'.repeat(32), eventId, 1_767_000_000_000));
      await old.insertInto('seen_events').values({ project_id: pid, event_id: eventId, received_at: 1 }).execute();
    }
    // An event that was sampled out: seen, never stored.
    await old
      .insertInto('seen_events')
      .values({ project_id: pid, event_id: 'f'.repeat(32), received_at: 1 })
      .execute();
    expect(await indexNames(store)).toContain('events_project_event_id');

    await migrate(store);
    const seen = await store.db
      .selectFrom('seen_events')
      .select(['event_id', 'stored_id'])
      .orderBy('event_id')
      .execute();
    expect(seen.map((s) => [s.event_id, s.stored_id === null ? null : Number(s.stored_id)])).toEqual([
      [stored[0], ids[0]],
      [stored[1], ids[1]],
      ['f'.repeat(32), null],
    ]);
    expect(await indexNames(store)).not.toContain('events_project_event_id');
    expect(Number((await findEvent(store.db, pid, stored[1])).id)).toBe(ids[1]);
    await expect(findEvent(store.db, pid, 'f'.repeat(32))).rejects.toThrow(/not found/);
  });

  it('007 drops the events index on (issue_id, timestamp); the issue row names its latest and oldest events', async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrateTo(store, '006_postgres_blobs_not_recompressed');
    expect(await indexNames(store)).toContain('events_issue_timestamp');
    const pid = await insertProject(store);
    const fp = 'b'.repeat(32);
    const issueId = await insertIssue(store.db, pid, fp, 1_767_000_000_000);
    // Received in this order, with event times out of that order (an SDK sending late).
    const [middle, earliest, latest] = [
      await insertEvent(store.db, pid, issueId, fp, '1'.repeat(32), 1_767_000_200_000),
      await insertEvent(store.db, pid, issueId, fp, '2'.repeat(32), 1_767_000_100_000),
      await insertEvent(store.db, pid, issueId, fp, '3'.repeat(32), 1_767_000_300_000),
    ];
    // What ingest keeps on the issue row: the stored events with the earliest and latest times.
    await store.db
      .updateTable('issues')
      .set({ first_seen_id: earliest, last_seen_id: latest })
      .where('id', '=', issueId)
      .execute();

    await migrate(store);
    expect(await indexNames(store)).not.toContain('events_issue_timestamp');
    const detail = () => issueDetail(store!.db, pid, fp, { days: '30' }, 1_767_000_400_000);
    expect(await detail()).toMatchObject({ latest_event_id: latest, oldest_event_id: earliest });
    // Retention deleted both: the ids stay on the issue as history; the answer falls back to receive order.
    await store.db.deleteFrom('events').where('id', 'in', [earliest, latest]).execute();
    expect(await detail()).toMatchObject({ latest_event_id: middle, oldest_event_id: middle });
    await store.db.deleteFrom('events').where('id', '=', middle).execute();
    expect(await detail()).toMatchObject({ latest_event_id: null, oldest_event_id: null });
  });

  it('010 gives issues written before their last_seen_minute, and the list finds them by it', async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrateTo(store, '009_postgres_delete_triggers_for_ingest_keys');
    const pid = await insertProject(store);
    const minute = 1_767_000_000_000;
    // Two in one minute (inserted oldest last), one a minute later, one in the minute before.
    const seen: [string, number][] = [
      ['a'.repeat(32), minute + 59_999],
      ['b'.repeat(32), minute + 12],
      ['c'.repeat(32), minute + 60_000],
      ['d'.repeat(32), minute - 1],
    ];
    for (const [fp, at] of seen) await insertIssue(store.db, pid, fp, at);

    await migrate(store);
    const indexes = await indexNames(store, 'issues');
    expect(indexes).toContain('issues_project_last_seen_minute');
    expect(indexes).not.toContain('issues_project_last_seen');
    expect(indexes.includes('issues_project_last_release')).toBe(dialect !== 'postgres');
    const rows = await store.db
      .selectFrom('issues')
      .select(['fingerprint', 'last_seen_minute'])
      .orderBy('fingerprint')
      .execute();
    expect(rows.map((r) => [r.fingerprint, Number(r.last_seen_minute)])).toEqual([
      ['a'.repeat(32), minute],
      ['b'.repeat(32), minute],
      ['c'.repeat(32), minute + 60_000],
      ['d'.repeat(32), minute - 60_000],
    ]);
    const list = await listIssues(
      store.db,
      pid,
      parseIssueListQuery({ days: '1' }, minute + 120_000),
      minute + 120_000,
    );
    expect(list.total).toBe(4);
    expect(list.issues.map((i) => i.fingerprint[0])).toEqual(['c', 'a', 'b', 'd']);
  });

  it('020 fills session_users from the stored sessions (a user crashed in an hour when one of its sessions did) and drops the unused sessions index', async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrateTo(store, '019_alert_filters_and_digests');
    const pid = await insertProject(store);
    const hour = 1_767_000_000_000 - (1_767_000_000_000 % 3_600_000);
    const session = (sid: string, did: string | null, started: number, status: string) => ({
      project_id: pid,
      sid,
      did,
      release: 'app@1',
      environment: 'production',
      started,
      status,
      errors: 0,
      updated_at: started,
    });
    await store.db
      .insertInto('sessions')
      .values([
        session('a'.repeat(32), 'u1', hour + 60_000, 'exited'),
        session('b'.repeat(32), 'u1', hour + 120_000, 'unhandled'),
        session('c'.repeat(32), 'u2', hour + 3_599_999, 'ok'),
        session('d'.repeat(32), 'u2', hour + 3_600_000, 'crashed'),
        session('e'.repeat(32), null, hour, 'crashed'),
      ])
      .execute();
    await migrate(store);
    const rows = await store.db.selectFrom('session_users').selectAll().orderBy('bucket').orderBy('did').execute();
    expect(rows.map((r) => [r.release, Number(r.bucket), r.did, Number(r.crashed)])).toEqual([
      ['app@1', hour, 'u1', 1],
      ['app@1', hour, 'u2', 0],
      ['app@1', hour + 3_600_000, 'u2', 1],
    ]);
    expect(await indexNames(store, 'sessions')).not.toContain('sessions_project_release_started');
  });

  it('032 counts the attachments stored before it per hour, and then follows their rows and R2 payload objects', async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrateTo(store, '030_objects_in_r2');
    const pid = await insertProject(store);
    const hour = 1_767_000_000_000 - (1_767_000_000_000 % 3_600_000);
    const attachment = (digest: string, size: number, received_at: number) => ({
      project_id: pid,
      event_id: 'e'.repeat(32),
      digest,
      name: `${digest}.bin`,
      content_type: 'application/octet-stream',
      attachment_type: 'event.attachment',
      size,
      received_at,
    });
    await store.db
      .insertInto('attachments')
      .values([
        attachment('a', 100, hour + 1),
        attachment('b', 20, hour + 3_599_999),
        attachment('c', 5, hour + 3_600_000),
      ])
      .execute();
    await migrate(store);
    const usage = async () =>
      (
        await store!.db
          .selectFrom('storage_usage')
          .selectAll()
          .where('project_id', '=', pid)
          .orderBy('kind')
          .orderBy('bucket')
          .execute()
      ).map((r) => [r.kind, Number(r.bucket), Number(r.count), Number(r.bytes)]);
    expect(await usage()).toEqual([
      ['attachments', hour, 2, 120],
      ['attachments', hour + 3_600_000, 1, 5],
    ]);
    await store.db.deleteFrom('attachments').where('digest', '=', 'c').execute();
    await store.db
      .insertInto('attachments')
      .values(attachment('d', 7, hour + 10))
      .execute();
    // A payload chunk whose blob is an object counts the object's length.
    await store.db
      .insertInto('payload_chunks')
      .values({
        id: 1,
        project_id: pid,
        received_at: hour + 5,
        data: new Uint8Array(0),
        r2_key: 'payloads/x',
        object_bytes: 900,
      })
      .execute();
    await store.db
      .insertInto('payload_chunks')
      .values({
        id: 2,
        project_id: pid,
        received_at: hour + 6,
        data: new Uint8Array(30),
        r2_key: null,
        object_bytes: null,
      })
      .execute();
    expect(await usage()).toEqual([
      ['attachments', hour, 3, 127],
      ['payloads', hour, 2, 930],
    ]);
    await store.db.deleteFrom('payload_chunks').where('r2_key', '=', 'payloads/x').execute();
    expect((await usage()).at(-1)).toEqual(['payloads', hour, 1, 30]);
  });

  it('009: deleting an event, an issue or a project still removes the rows under it, for rows written before', async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrateTo(store, '008_payload_chunks');
    const db = store.db;
    const now = 1_767_000_000_000;
    const projectIds: number[] = [];
    for (const slug of ['a', 'b', 'c']) {
      const p = await db
        .insertInto('projects')
        .values({
          slug,
          name: slug,
          platform: 'node',
          dsn_key: slug.repeat(32),
          sample_keep_first: 10,
          sample_rate: 1,
          daily_quota: 0,
          created_at: 1,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      projectIds.push(Number(p.id));
      await seedProjectData(db, Number(p.id), now);
    }
    const [a, b, c] = projectIds;
    await migrate(store);
    const untouched = await countRowsByProject(db, c);
    const tagsOf = async (pid: number) =>
      Number(
        (
          await db
            .selectFrom('event_tags')
            .select((eb) => eb.fn.countAll().as('n'))
            .where('project_id', '=', pid)
            .executeTakeFirstOrThrow()
        ).n,
      );

    // An event: its tags go with it, nothing else does.
    const before = await countRowsByProject(db, a);
    await db.deleteFrom('events').where('project_id', '=', a).execute();
    expect(await countRowsByProject(db, a)).toEqual({ ...before, events: 0, event_tags: 0 });

    // An issue: its events (and their tags) and its per-release, per-user, hourly and change rows.
    expect(await tagsOf(b)).toBe(1);
    await db.deleteFrom('issues').where('project_id', '=', b).execute();
    const afterIssue = await countRowsByProject(db, b);
    for (const table of [
      'issues',
      'issue_releases',
      'issue_users',
      'issue_hourly',
      'issue_changes',
      'events',
      'event_tags',
    ])
      expect(afterIssue[table], table).toBe(0);
    expect(afterIssue.seen_events, "rows that are not the issue's stay").toBe(1);
    for (const [table, n] of Object.entries(await orphanIssueRows(db))) expect(n, `orphans in ${table}`).toBe(0);

    // A project: everything under it, and nothing of another project.
    await db.deleteFrom('projects').where('id', 'in', [a, b]).execute();
    for (const pid of [a, b])
      for (const [table, n] of Object.entries(await countRowsByProject(db, pid)))
        expect(n, `${table} of project ${pid}`).toBe(0);
    expect(await countRowsByProject(db, c)).toEqual(untouched);
  });
});

/** Runs `check` on a fresh PostgreSQL database migrated to the latest version. */
async function onMigratedPostgres(check: (store: Store) => Promise<void>): Promise<void> {
  const database = await createTestDatabase('postgres');
  const store = await openStore(database.url);
  try {
    await migrate(store);
    await check(store);
  } finally {
    await store.close();
    await database.drop();
  }
}

describe.skipIf(!dialects.includes('postgres'))('migration 006 on postgres', () => {
  it('stores the payload blobs without PostgreSQL compressing them again', async () => {
    await onMigratedPostgres(async (store) => {
      const rows = await store.db
        .selectFrom('pg_attribute' as any)
        .select(['attname', 'attstorage'])
        .where('attrelid', '=', sql`'events'::regclass` as any)
        .where('attname', 'in', ['raw', 'detail'])
        .orderBy('attname')
        .execute();
      expect(rows.map((r: any) => [r.attname, r.attstorage])).toEqual([
        ['detail', 'e'],
        ['raw', 'e'],
      ]);
    });
  });
});

describe.skipIf(!dialects.includes('postgres'))('migration 009 on postgres', () => {
  it('leaves ingest one foreign key to check, events to issues; issue_changes keeps its own', async () => {
    await onMigratedPostgres(async (store) => {
      const keys = await sql<{
        table: string;
      }>`select conrelid::regclass::text as table from pg_constraint where contype = 'f' order by 1`.execute(store.db);
      // Alert (012), symbol (013), uploader (014, 018), issue merge (017), account (021) and cron monitor (025) tables keep theirs: the ingest batch writes only alert_outbox, and only for new issues and regressions (check-ins are written apart, a few rows each).
      expect(keys.rows.map((r) => r.table)).toEqual([
        'alert_channels',
        'alert_deliveries',
        'alert_outbox',
        'alert_rules',
        'attachment_chunks',
        'attachments',
        'cli_releases',
        'events',
        'issue_changes',
        'issue_changes',
        'issue_merges',
        'issue_merges',
        'monitor_checkins',
        'monitor_checkins',
        'monitors',
        'personal_tokens',
        'proguard_releases',
        'release_commits',
        'release_deploys',
        'symbol_chunks',
        'symbol_files',
        'symbol_jobs',
        'upload_assemblies',
        'user_feedback',
        'user_invites',
        'user_sessions',
      ]);
      const triggers = await sql<{
        name: string;
      }>`select tgname as name from pg_trigger where not tgisinternal order by 1`.execute(store.db);
      // 026 adds storage usage: a row trigger on payload_chunks and its own delete trigger on
      // projects; 032 a row trigger on attachments.
      expect(triggers.rows.map((r) => r.name)).toEqual([
        'attachments_storage_usage',
        'events_delete_rows',
        'issues_delete_rows',
        'payload_chunks_storage_usage',
        'projects_delete_rows',
        'projects_delete_storage_usage',
      ]);
    });
  });
});
