// Bounded work of the read queries that walk events, measured on the real
// database: on PostgreSQL every query is re-run under EXPLAIN ANALYZE and the
// rows its plan really read are counted (whatever plan the planner picked after
// ANALYZE); on SQLite the plan must search, never scan, events and event_tags.
// Also: the events list with a time window ends (more=false) where no older
// event can be in the window, and `q` folds case the same way on both sides.
import { sql, type CompiledQuery } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { listEvents, parseEventListQuery } from '../../src/read/events.js';
import { issueDetail } from '../../src/read/issues.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { recordingDb, type RecordingDb } from './plan.js';
import { seedEvents, seedIssue } from './seed.js';
import {
  DAY,
  GROUPS,
  HOUR,
  NOW,
  createProject,
  getJson,
  iso,
  newEventId,
  sendEvents,
  type EventSpec,
  type TestProject,
} from './support.js';

describe.each(dialects)('bounded event walks on %s', (dialect) => {
  let t: TestServer;
  let rec: RecordingDb;
  let p: TestProject;
  let tagged: { first: number; last: number };
  let breakdownIssue: string;
  let breakdownProject: TestProject;

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
    const store = t.deps.store;
    p = await createProject(t);
    const noisy = await createProject(t);
    breakdownProject = await createProject(t);
    // P's 2 000 tagged events, then 8 000 newer events of another project with the same tags.
    const ip = await seedIssue(store.db, p.id, { lastSeen: NOW - 9 * DAY });
    tagged = await seedEvents(store, {
      projectId: p.id,
      issueId: ip.id,
      fingerprint: ip.fingerprint,
      count: 2000,
      start: NOW - 10 * DAY,
      step: 1000,
      tags: { feature: 'x', region: 'eu' },
    });
    const iq = await seedIssue(store.db, noisy.id, { lastSeen: NOW - 8 * DAY });
    await seedEvents(store, {
      projectId: noisy.id,
      issueId: iq.id,
      fingerprint: iq.fingerprint,
      count: 8000,
      start: NOW - 9 * DAY,
      step: 1000,
      tags: { feature: 'x', region: 'eu' },
    });
    // An issue with 10 000 events on release "new" in the last day and 1 000 older ones (still in the 7-day window).
    const ib = await seedIssue(store.db, breakdownProject.id, { lastSeen: NOW - HOUR });
    breakdownIssue = ib.fingerprint;
    const common = {
      projectId: breakdownProject.id,
      issueId: ib.id,
      fingerprint: ib.fingerprint,
      step: 1000,
      deviceModel: 'Pixel 8',
    };
    await seedEvents(store, { ...common, count: 1000, start: NOW - 3 * DAY, release: 'old' });
    await seedEvents(store, { ...common, count: 10_000, start: NOW - DAY, release: 'new' });
    if (dialect === 'postgres') await sql`analyze events, event_tags`.execute(store.db);
    rec = recordingDb(t);
  }, 60_000);

  afterAll(async () => {
    await rec?.close();
    await t?.close();
  });

  const list = (query: Record<string, string>) =>
    rec.record((db) => listEvents(db, p.id, parseEventListQuery(query, NOW)));
  /** The page query (the one selecting the summary columns), not the floor lookups. */
  const pageQuery = (queries: CompiledQuery[]) => queries.find((q) => q.sql.includes('"events"."tags"'))!;

  it('reads about one page of events and tags per tag-filtered page, first page or deep', async () => {
    const deep = String(tagged.first + 1000);
    for (const [query, firstId] of [
      [{ 'tag.feature': 'x' }, tagged.last],
      [{ 'tag.feature': 'x', before: deep }, tagged.first + 999],
      [{ 'tag.feature': 'x', 'tag.region': 'eu' }, tagged.last],
      [{ 'tag.feature': 'x', 'tag.region': 'eu', before: deep }, tagged.first + 999],
    ] as const) {
      const label = JSON.stringify(query);
      const { result, queries } = await list(query);
      // Every one of P's events has both tags: a full page of P's newest events below the cursor.
      expect(
        result.events.map((e) => e.id),
        label,
      ).toEqual(Array.from({ length: 50 }, (_, i) => firstId - i));
      expect(result.more, label).toBe(true);
      const page = pageQuery(queries);
      if (dialect === 'postgres') {
        // 51 index entries and 51 events (plus one probe per event for the second tag); before the
        // bounds the plan read every newer event of the other project, or every tag of the value.
        expect(await rec.rowsRead(page, 'events'), label).toBeLessThanOrEqual(60);
        expect(await rec.rowsRead(page, 'event_tags'), label).toBeLessThanOrEqual(query['tag.region'] ? 120 : 60);
      } else {
        const plan = rec.sqlitePlan(page);
        expect(
          plan.filter((line) => /SCAN (events|event_tags|t)\b/.test(line)),
          label,
        ).toEqual([]);
      }
    }
  });

  it('drives a sparse tag filter from the tag index, not from the project’s newer events', async () => {
    // 20 old tagged events under 5 000 newer untagged ones of the same project: walking the
    // project's events newest first and probing each for the tag would read all 5 000.
    const sparse = await createProject(t);
    const issue = await seedIssue(t.deps.store.db, sparse.id, { lastSeen: NOW - DAY });
    const base = { projectId: sparse.id, issueId: issue.id, fingerprint: issue.fingerprint, step: 1000 };
    const rare = await seedEvents(t.deps.store, {
      ...base,
      count: 20,
      start: NOW - 5 * DAY,
      tags: { customer: 'rare' },
    });
    await seedEvents(t.deps.store, { ...base, count: 5000, start: NOW - 4 * DAY });
    if (dialect === 'postgres') await sql`analyze events, event_tags`.execute(t.deps.store.db);
    const { result, queries } = await rec.record((db) =>
      listEvents(db, sparse.id, parseEventListQuery({ 'tag.customer': 'rare' }, NOW)),
    );
    expect(result.events.map((e) => e.id)).toEqual(Array.from({ length: 20 }, (_, i) => rare.last - i));
    expect(result.more).toBe(false);
    const page = pageQuery(queries);
    if (dialect === 'postgres') {
      expect(await rec.rowsRead(page, 'events')).toBeLessThanOrEqual(30);
    } else {
      // Each tagged entry looks its event up by primary key; no walk over the project's events.
      const plan = rec.sqlitePlan(page).join('\n');
      expect(plan).toMatch(/SEARCH events USING INTEGER PRIMARY KEY \(rowid=\?\)/);
      expect(plan).not.toMatch(/events_project_id/);
    }
  });

  it('bounds a second tag filter by project and by the page range', async () => {
    // A residual filter (q) makes the walk examine up to the scan budget: the second tag's
    // lookups stay inside P's tags of that range.
    const { result, queries } = await list({
      'tag.feature': 'x',
      'tag.region': 'eu',
      q: 'no such text',
      before: String(tagged.first + 1000),
    });
    expect(result).toEqual({ events: [], more: false, next_before: null });
    const page = pageQuery(queries);
    expect(page.sql).toMatch(/"t"\."project_id" = /);
    if (dialect === 'postgres') {
      // 999 events below the cursor: their tag entries and at most one probe each, none of the other project's.
      expect(await rec.rowsRead(page, 'event_tags'), 'tags read').toBeLessThanOrEqual(2 * 999 + 10);
      expect(await rec.rowsRead(page, 'events'), 'events read').toBeLessThanOrEqual(999 + 10);
    } else {
      expect(rec.sqlitePlan(page).filter((line) => /SCAN (events|event_tags|t)\b/.test(line))).toEqual([]);
    }
  });

  it('counts the breakdown over the issue’s newest 10 000 stored events of the window', async () => {
    const { body } = await getJson(t, `/api/projects/${breakdownProject.slug}/issues/${breakdownIssue}`);
    expect(body.breakdown).toEqual({
      release: [{ value: 'new', count: 10_000 }],
      device_model: [{ value: 'Pixel 8', count: 10_000 }],
      os_version: [],
      environment: [{ value: 'production', count: 10_000 }],
    });
    // A window holding fewer than 10 000 events counts all of them.
    const older = (
      await getJson(
        t,
        `/api/projects/${breakdownProject.slug}/issues/${breakdownIssue}?from=${iso(NOW - 4 * DAY)}&to=${iso(NOW - 2 * DAY)}`,
      )
    ).body;
    expect(older.breakdown.release).toEqual([{ value: 'old', count: 1000 }]);
    // The walk stops after the newest N events: with N = 1 000 of the 11 000 in the window, the
    // plan reads about 1 000 rows (the index backwards), not the issue's whole window.
    const { result, queries } = await rec.record((db) =>
      issueDetail(db, breakdownProject.id, breakdownIssue, {}, NOW, { breakdownEvents: 1000 }),
    );
    expect(result.breakdown.release).toEqual([{ value: 'new', count: 1000 }]);
    // The page's reads run at once, so the breakdown is found by what it groups, not by its place.
    const grouped = queries.find((q) => /group by/i.test(q.sql) && /device_model/.test(q.sql))!;
    if (dialect === 'postgres') expect(await rec.rowsRead(grouped, 'events')).toBeLessThanOrEqual(1000 + 100);
    else expect(rec.sqlitePlan(grouped).join('\n')).toMatch(/SEARCH events USING (COVERING )?INDEX events_issue_id/);
  });
});

describe.each(dialects)('events list with a time window on %s', (dialect) => {
  let t: TestServer;
  let clock: ManualClock;
  let p: TestProject;
  let recent: { first: number; last: number };
  let edge: EventSpec;
  let unicode: EventSpec[];

  const spec = (group: EventSpec['group'], timestamp: number): EventSpec => ({
    eventId: newEventId(),
    group,
    timestamp,
    release: 'app@1.0.0',
    environment: 'production',
    userId: null,
    deviceModel: null,
    deviceId: null,
    osName: 'Debian',
    osVersion: '12',
    screen: 'GET /',
    tags: {},
  });

  beforeAll(async () => {
    clock = new ManualClock(NOW - 10 * DAY);
    t = await startTestServer(dialect, { clock, env: { RATE_LIMIT: '0' } });
    const store = t.deps.store;
    p = await createProject(t);
    const issue = await seedIssue(store.db, p.id, { lastSeen: NOW - HOUR });
    const common = { projectId: p.id, issueId: issue.id, fingerprint: issue.fingerprint, step: 1000 };
    // History: 300 events received (and sent) ten days ago.
    await seedEvents(store, { ...common, count: 300, start: NOW - 10 * DAY });
    // Received 59 minutes before the window of days=1 opens, with an event time 30 s inside it
    // (less than an hour ahead of the receive time, so ingest keeps it).
    clock.set(NOW - DAY - 59 * 60_000);
    edge = spec(GROUPS[0], NOW - DAY + 30_000);
    await sendEvents(t, p, [edge]);
    recent = await seedEvents(store, { ...common, count: 20, start: NOW - 2 * HOUR });
    clock.set(NOW);
    unicode = [
      spec({ ...GROUPS[4], key: 'unicode', value: 'Échec du paiement à Zürich' }, NOW - 10 * 60_000),
      spec({ ...GROUPS[4], key: 'ascii', value: 'Payment FAILED in Zurich' }, NOW - 9 * 60_000),
    ];
    await sendEvents(t, p, unicode);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  it('answers more=false where older events cannot be in the window, without walking the history', async () => {
    const page = await listEvents(t.deps.store.db, p.id, parseEventListQuery({ days: '1', limit: '50' }, NOW), {
      scanBudget: 40,
    });
    const edgeId = (await getJson(t, `/api/projects/${p.slug}/events/${edge.eventId}`)).body.id;
    const recentIds = Array.from({ length: 20 }, (_, i) => recent.last - i);
    expect(page.events.map((e) => e.id).slice(2)).toEqual([...recentIds, edgeId]);
    expect(page.more).toBe(false);
    expect(page.next_before).toBeNull();
    // Through HTTP with the default budget too; a window in the history still finds it.
    const all = (await getJson(t, `/api/projects/${p.slug}/events?days=1&limit=500`)).body;
    expect(all.events).toHaveLength(23);
    expect(all.more).toBe(false);
    const old = (
      await getJson(t, `/api/projects/${p.slug}/events?from=${iso(NOW - 11 * DAY)}&to=${iso(NOW - 9 * DAY)}&limit=500`)
    ).body;
    expect(old.events).toHaveLength(300);
    expect(old.more).toBe(false);
  });

  it('folds case in q the same way on both sides of the match', async () => {
    const ids = async (path: string) =>
      ((await getJson(t, `/api/projects/${p.slug}${path}`)).body.events as { event_id: string }[]).map(
        (e) => e.event_id,
      );
    const [accented, ascii] = unicode.map((e) => e.eventId);
    // The text as stored, in any ASCII case, always matches.
    expect(await ids(`/events?q=${encodeURIComponent('Échec du')}`)).toEqual([accented]);
    expect(await ids(`/events?q=${encodeURIComponent('ÉCHEC DU')}`)).toEqual([accented]);
    expect(await ids(`/events?q=${encodeURIComponent('failed in zurich')}`)).toEqual([ascii]);
    const issues = (
      await getJson(t, `/api/projects/${p.slug}/issues?q=${encodeURIComponent('Échec')}`)
    ).body.issues.map((i: any) => i.title);
    expect(issues).toEqual(['Échec du paiement à Zürich']);
    // Non-ASCII letters in another case: PostgreSQL folds them (this database's ctype), SQLite does not.
    const folded = await ids(`/events?q=${encodeURIComponent('échec du paiement à zÜrich')}`);
    expect(folded).toEqual(dialect === 'postgres' ? [accented] : []);
  });
});
