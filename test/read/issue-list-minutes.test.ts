// The issues list finds its window and its default order through the minute of
// last_seen (issues_project_last_seen_minute, migration 010), so that ingest's issue
// updates, which move last_seen and last_release with nearly every event, touch no
// index (HOT updates on PostgreSQL). Checked here: the pages are exactly those of
// "last_seen in [from, to), last_seen desc, id desc" computed from the rows, windows
// and pages that cut through minutes included; the page query reads the newest minutes
// only; and no index of issues holds a column ingest rewrites with every event.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { listIssues, parseIssueListQuery } from '../../src/read/issues.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { recordingDb, type RecordingDb } from './plan.js';
import { seedIssues } from './seed.js';
import { DAY, HOUR, NOW, createProject, getJson, iso, type TestProject } from './support.js';

const MINUTE = 60_000;
/** Issues of the project: a pair sharing a last_seen every 10 s, 12 a minute, over 8 hours. */
const COUNT = 6000;
const STEP = 10_000;

describe.each(dialects)('issues list by the minute of last_seen on %s', (dialect) => {
  let t: TestServer;
  let rec: RecordingDb;
  let p: TestProject;
  let rows: { id: number; fingerprint: string; last_seen: number }[];

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    // Inserted newest first, so ids grow as last_seen falls: id order is the reverse of
    // the list's order, within a minute too; pairs share a last_seen (ties: id desc).
    await seedIssues(t.deps.store.db, p.id, COUNT, NOW - 7 * MINUTE, { step: STEP, ties: 2 });
    const all = await t.deps.store.db
      .selectFrom('issues')
      .select(['id', 'fingerprint', 'last_seen'])
      .where('project_id', '=', p.id)
      .execute();
    rows = all.map((r) => ({ id: Number(r.id), fingerprint: r.fingerprint, last_seen: Number(r.last_seen) }));
    if (dialect === 'postgres') await sql`analyze issues`.execute(t.deps.store.db);
    rec = recordingDb(t);
  }, 60_000);

  afterAll(async () => {
    await rec?.close();
    await t?.close();
  });

  /** The page the list must answer, from the rows themselves. */
  function expected(from: number, to: number, offset: number, limit: number) {
    const inWindow = rows
      .filter((r) => r.last_seen >= from && r.last_seen < to)
      .sort((a, b) => b.last_seen - a.last_seen || b.id - a.id);
    return { total: inWindow.length, fingerprints: inWindow.slice(offset, offset + limit).map((r) => r.fingerprint) };
  }

  it('answers the pages of last_seen desc, id desc, for windows and pages that cut through minutes', async () => {
    const windows = [
      { from: NOW - 5 * HOUR - 17 * MINUTE - 250, to: NOW - 2 * HOUR - 23 * MINUTE - 12_345 },
      { from: NOW - 4 * HOUR - 30_000, to: NOW - 3 * HOUR + 1 },
      { from: NOW - 7 * DAY, to: NOW },
    ];
    for (const w of windows) {
      for (const [offset, limit] of [
        [0, 25],
        [50, 30],
        [110, 100],
      ]) {
        const want = expected(w.from, w.to, offset, limit);
        const { status, body } = await getJson(
          t,
          `/api/projects/${p.slug}/issues?from=${iso(w.from)}&to=${iso(w.to)}&offset=${offset}&limit=${limit}`,
        );
        expect(status).toBe(200);
        expect(body.total).toBe(want.total);
        expect(body.issues.map((i: { fingerprint: string }) => i.fingerprint)).toEqual(want.fingerprints);
      }
    }
    // The default window (7 days) holds all of them; its first page is the newest.
    const { body } = await getJson(t, `/api/projects/${p.slug}/issues?limit=5`);
    expect(body.total).toBe(COUNT);
    expect(body.issues.map((i: { fingerprint: string }) => i.fingerprint)).toEqual(
      expected(NOW - 7 * DAY, NOW, 0, 5).fingerprints,
    );
  });

  it('gives the pages and the total of a filtered list (search, level, status), a page past the end included', async () => {
    const w = { from: NOW - 5 * HOUR - 17 * MINUTE - 250, to: NOW - 2 * HOUR - 23 * MINUTE - 12_345 };
    // Titles are "SeededError: bulk <i>"; "bulk 1" matches i = 1, 10-19, 100-199, 1000-1999.
    const titled = new Map(
      (await t.deps.store.db.selectFrom('issues').select(['id', 'title']).where('project_id', '=', p.id).execute()).map(
        (r) => [Number(r.id), r.title],
      ),
    );
    const matching = rows
      .filter((r) => r.last_seen >= w.from && r.last_seen < w.to && titled.get(r.id)!.toLowerCase().includes('bulk 1'))
      .sort((a, b) => b.last_seen - a.last_seen || b.id - a.id);
    expect(matching.length).toBeGreaterThan(100);
    for (const [offset, limit] of [
      [0, 25],
      [60, 50],
      [matching.length + 10, 20],
    ]) {
      const url = `/api/projects/${p.slug}/issues?from=${iso(w.from)}&to=${iso(w.to)}&q=BULK%201&level=error&status=unresolved&offset=${offset}&limit=${limit}`;
      const { status, body } = await getJson(t, url);
      expect(status).toBe(200);
      expect(body.total, url).toBe(matching.length);
      expect(body.issues.map((i: { fingerprint: string }) => i.fingerprint)).toEqual(
        matching.slice(offset, offset + limit).map((r) => r.fingerprint),
      );
    }
    const none = await getJson(t, `/api/projects/${p.slug}/issues?q=no%20such%20title`);
    expect(none.body).toMatchObject({ issues: [], total: 0 });
  });

  it('reads the newest minutes of the window for the first page, not every issue in it', async () => {
    const { queries } = await rec.record((db) => listIssues(db, p.id, parseIssueListQuery({ limit: '25' }, NOW), NOW));
    const page = queries.find((q) => /order by/i.test(q.sql))!;
    if (dialect === 'postgres') {
      // 12 issues a minute: the 25 of the page and the rest of their last minute.
      expect(await rec.rowsRead(page, 'issues')).toBeLessThanOrEqual(25 + 12);
    } else {
      expect(rec.sqlitePlan(page).join('\n')).toMatch(/SEARCH issues USING INDEX issues_project_last_seen_minute/);
    }
  });

  it('indexes no column of issues that ingest rewrites with every event', async () => {
    const db = t.deps.store.db;
    const indexed =
      dialect === 'postgres'
        ? (
            await sql<{ column: string }>`select a.attname as "column" from pg_index i
              join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
              where i.indrelid = 'issues'::regclass`.execute(db)
          ).rows.map((r) => r.column)
        : (
            await sql<{ column: string }>`select ii.name as "column" from pragma_index_list('issues') il
              join pragma_index_info(il.name) ii`.execute(db)
          ).rows.map((r) => r.column);
    expect(indexed).toContain('last_seen_minute');
    const everyEvent = ['last_seen', 'last_seen_id', 'event_count', 'stored_count', 'users', 'updated_at'];
    // SQLite has no HOT updates to win and keeps last_release's index (migration 010).
    if (dialect === 'postgres') everyEvent.push('last_release');
    expect(indexed.filter((c) => everyEvent.includes(c))).toEqual([]);
  });
});
