// What an ingest batch reads before it plans: one index probe per key of the batch,
// never a walk over everything the project has. The batch's queries are recorded
// on the real database and run again under EXPLAIN ANALYZE (PostgreSQL: the rows
// each plan really read, without statistics, as on a new database or with
// autovacuum off) or EXPLAIN QUERY PLAN (SQLite: every table is searched, not
// scanned). Before the reads probed key by key, PostgreSQL hashed every seen event
// id of the project to check a batch's new ones.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareWork } from '../../../src/ingest/prepare.js';
import { compress } from '../../../src/editions/node/codec.js';
import { ingestPlanner } from '../../../src/ingest/plan.js';
import { commitIngestBatch } from '../../../src/store/ingest-batch.js';
import { IssueCache } from '../../../src/store/sqlite.js';
import { mergeStatements } from '../../../src/store/issue-merges.js';
import { openStore } from '../../../src/editions/node/open-store.js';
import type { Store } from '../../../src/store/database.js';
import { dialects } from '../../helpers/server.js';
import { recordingDb, type RecordingDb } from '../../read/plan.js';
import {
  createProject,
  fp,
  hex32,
  makeEvent,
  makeSession,
  makeWork,
  openTestStore,
  type TestStore,
} from '../../helpers/factory.js';

const SEEN = 20_000;
const ISSUES = 3_000;
const SESSIONS = 5_000;
const TABLES = ['seen_events', 'issues', 'issue_releases', 'releases', 'sessions', 'daily_usage'] as const;

describe.each(dialects)('ingest batch reads on %s', (dialect) => {
  let t: TestStore;
  let project: Awaited<ReturnType<typeof createProject>>;
  let rec: RecordingDb;

  beforeAll(async () => {
    t = await openTestStore(dialect);
    project = await createProject(t.store);
    const pid = project.id;
    const db = t.store.db;
    // A project with history: seen event ids, issues (some resolved, with releases), sessions.
    const series = (count: number) =>
      sql.raw(
        `(with recursive s(n) as (select 1 union all select n + 1 from s where n < ${count}) select n from s) as g`,
      );
    await sql`insert into seen_events (project_id, event_id, received_at, stored_id) select ${pid}, 'old' || n, 0, null from ${series(SEEN)}`.execute(
      db,
    );
    await sql`insert into issues (project_id, fingerprint, title, level, error_type, screen, location, platform, status, event_count, stored_count, users,
                first_seen, last_seen, first_seen_id, last_seen_id, first_release, last_release, resolved_release, resolved_at, regressed_at, created_at, updated_at)
              select ${pid}, 'old' || n, 't', 'error', 'E', '', '', 'node', case when n % 2 = 0 then 'resolved' else 'unresolved' end, 1, 0, 0,
                0, 0, null, null, 'r1', 'r1', null, 1, null, 0, 0 from ${series(ISSUES)}`.execute(db);
    await sql`insert into issue_releases (issue_id, release, first_seen) select id, 'r1', 0 from issues where project_id = ${pid}`.execute(
      db,
    );
    await sql`insert into sessions (project_id, sid, did, release, environment, started, status, errors, updated_at)
              select ${pid}, 'old' || n, null, 'r1', 'production', 0, 'ok', 0, 0 from ${series(SESSIONS)}`.execute(db);
    await sql`insert into releases (project_id, release, first_seen, last_seen, platforms) values (${pid}, 'r1', 0, 0, '[]')`.execute(
      db,
    );
    rec = recordingDb({ dialect, url: t.database.url }, { writable: true });
  }, 60_000);

  afterAll(async () => {
    await rec?.close();
    await t?.close();
  });

  it('looks up each key of the batch instead of walking the project', async () => {
    // 60 events: new ids, a resent one, existing (resolved) issues and new ones; sessions old and new.
    const events = Array.from({ length: 60 }, (_, i) =>
      makeEvent({
        eventId: i === 0 ? 'old7' : hex32(),
        fingerprint: i % 2 === 0 ? `old${i + 2}` : fp(`new${i}`),
        release: 'r1',
      }),
    );
    const sessions = [makeSession({ sid: 'old9', release: 'r1' }), makeSession({ release: 'r1' })];
    const works = [
      makeWork(project, { events: events.slice(0, 30), sessions }),
      makeWork(project, { events: events.slice(30) }),
    ].map(prepareWork);
    const { result, queries } = await rec.record((db) =>
      commitIngestBatch({ ...t.store, db }, works, { planner: ingestPlanner, random: () => 0, compress }),
    );
    expect(result).toMatchObject({ accepted: 59, duplicates: 1, stored: 59, sessionUpdates: 2 });

    const reads = queries.filter((q) => /^\s*select/i.test(q.sql));
    expect(reads.length).toBeGreaterThanOrEqual(5);
    for (const q of reads) {
      if (dialect === 'sqlite') {
        // SQLite: a table of the project is searched by its key, never scanned.
        for (const step of rec.sqlitePlan(q))
          expect(step, q.sql).not.toMatch(new RegExp(`^SCAN (${TABLES.join('|')})\\b`));
      } else {
        // PostgreSQL: each statement reads about as many rows as the batch has keys.
        for (const table of TABLES)
          expect(await rec.rowsRead(q, table), `${table} in ${q.sql}`).toBeLessThanOrEqual(200);
      }
    }
  });
});

describe('SQLite ingest batches with an issue cache (the batch thread keeps one)', () => {
  let t: TestStore;
  let other: Store;
  let rec: RecordingDb;
  beforeAll(async () => {
    t = await openTestStore('sqlite');
    // Another connection to the same file, as the server's main thread has.
    other = await openStore(t.database.url);
    rec = recordingDb({ dialect: 'sqlite', url: t.database.url }, { writable: true });
  });
  afterAll(async () => {
    await rec?.close();
    await other?.close();
    await t?.close();
  });

  /** Runs the batch on the recording connection: its result, and how many of its statements read issues. */
  async function issueReadsOf<T>(run: (store: Store) => Promise<T>): Promise<{ result: T; reads: number }> {
    const { result, queries } = await rec.record((db) => run({ ...t.store, db }));
    return { result, reads: queries.filter((q) => /from "issues"/.test(q.sql)).length };
  }

  it('reads an issue once, then takes it from the cache until another connection commits', async () => {
    const project = await createProject(t.store);
    const cache = new IssueCache();
    /** Commits one work of these events; `reads`: how many of its statements read issues. */
    const batch = (events: ReturnType<typeof makeEvent>[]) =>
      issueReadsOf((store) =>
        commitIngestBatch(store, [prepareWork(makeWork(project, { events }))], {
          planner: ingestPlanner,
          random: () => 0,
          compress,
          issueCache: cache,
        }),
      );
    const event = (at: number) => makeEvent({ fingerprint: fp('cached'), release: 'r1', timestamp: at });

    expect((await batch([event(Date.UTC(2026, 0, 10, 12))])).reads).toBe(1);
    expect(cache.size).toBe(1);

    expect((await batch([event(Date.UTC(2026, 0, 10, 13))])).reads).toBe(0);

    // The issue is resolved through another connection: the cache must not hide it.
    await other.db
      .updateTable('issues')
      .set({ status: 'resolved', resolved_at: Date.UTC(2026, 0, 11), resolved_release: 'r1' })
      .where('project_id', '=', project.id)
      .execute();
    const regressed = await batch([
      makeEvent({ fingerprint: fp('cached'), release: 'r2', timestamp: Date.UTC(2026, 0, 12) }),
    ]);
    expect(regressed.result.accepted).toBe(1);
    expect(regressed.reads).toBe(1);
    const issue = await t.store.db
      .selectFrom('issues')
      .selectAll()
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(issue).toMatchObject({ status: 'regression', event_count: 3, stored_count: 3 });
    // The rows it kept are what the database holds: first/last stored events included.
    const ids = (
      await t.store.db
        .selectFrom('events')
        .select(['id', 'timestamp'])
        .where('project_id', '=', project.id)
        .orderBy('timestamp')
        .execute()
    ).map((r) => Number(r.id));
    expect([Number(issue.first_seen_id), Number(issue.last_seen_id)]).toEqual([ids[0], ids[2]]);

    expect((await batch([event(Date.UTC(2026, 0, 10, 11))])).reads).toBe(0);
    const after = await t.store.db
      .selectFrom('issues')
      .selectAll()
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    const first = await t.store.db
      .selectFrom('events')
      .select('id')
      .where('project_id', '=', project.id)
      .orderBy('timestamp')
      .limit(1)
      .executeTakeFirstOrThrow();
    expect(after).toMatchObject({
      event_count: 4,
      first_seen_id: first.id,
      last_seen_id: issue.last_seen_id,
      status: 'regression',
    });
  });

  it('keeps a merged fingerprint with the issue it was merged into: its next batches read nothing', async () => {
    const project = await createProject(t.store);
    const cache = new IssueCache();
    const reads = async (fingerprint: string, at: number) => {
      const { queries } = await rec.record((db) =>
        commitIngestBatch(
          { ...t.store, db },
          [prepareWork(makeWork(project, { events: [makeEvent({ fingerprint, release: 'r1', timestamp: at })] }))],
          { planner: ingestPlanner, random: () => 0, compress, issueCache: cache },
        ),
      );
      return queries.filter((q) => /from "(issues|issue_merges)"/.test(q.sql)).length;
    };
    const day = Date.UTC(2026, 0, 10, 12);
    await reads(fp('target'), day);
    await reads(fp('merged'), day + 1);
    // Merged through another connection (as the API does): the cache is forgotten.
    const rows = await other.db
      .selectFrom('issues')
      .select(['id', 'fingerprint'])
      .where('project_id', '=', project.id)
      .execute();
    const target = rows.find((r) => r.fingerprint === fp('target'))!;
    const source = rows.find((r) => r.fingerprint === fp('merged'))!;
    await other.atomic(
      mergeStatements(
        other.db,
        project.id,
        { id: Number(target.id), fingerprint: target.fingerprint },
        { id: Number(source.id), fingerprint: source.fingerprint },
        day + 2,
      ),
    );
    // The first batch reads the issue, the mapping and its target; the next ones nothing.
    expect(await reads(fp('merged'), day + 3)).toBe(3);
    expect(await reads(fp('merged'), day + 4)).toBe(0);
    expect(await reads(fp('target'), day + 5)).toBe(0);
    const issue = await t.store.db
      .selectFrom('issues')
      .selectAll()
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(issue).toMatchObject({ fingerprint: fp('target'), event_count: 5 });
  });

  it('forgets everything when a batch fails', async () => {
    const project = await createProject(t.store);
    const store: Store = { ...t.store, db: rec.db };
    const cache = new IssueCache();
    await commitIngestBatch(
      store,
      [prepareWork(makeWork(project, { events: [makeEvent({ fingerprint: fp('fails') })] }))],
      { planner: ingestPlanner, random: () => 0, compress, issueCache: cache },
    );
    expect(cache.size).toBe(1);
    const bad = makeEvent({ fingerprint: fp('fails') });
    await sql
      .raw(
        `create trigger fail_cached before insert on events when new.event_id = '${bad.eventId}' begin select raise(abort, 'injected'); end`,
      )
      .execute(t.store.db);
    await expect(
      commitIngestBatch(store, [prepareWork(makeWork(project, { events: [bad] }))], {
        planner: ingestPlanner,
        random: () => 0,
        compress,
        issueCache: cache,
      }),
    ).rejects.toThrow(/injected/);
    expect(cache.size).toBe(0);
    await sql.raw('drop trigger fail_cached').execute(t.store.db);
  });
});
