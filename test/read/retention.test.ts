// Retention on both databases: events (with tags), seen event ids and sessions
// older than RETENTION_DAYS go, aggregates older than 400 days go, issues and
// younger aggregates stay, so every sparkline, timeline, overview and release
// answer is unchanged; stored_count goes down, event_count does not. Also the
// batches never lock ingest out (an envelope is answered while a run is paused
// between batches), one run at a time per database (advisory lock on PostgreSQL;
// a lease that holds across processes on SQLite), the background job, and the
// `faultline retention` command as a real process.
import pg from 'pg';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import {
  RETENTION_LOCK_KEY,
  runRetention,
  startRetentionJob,
  type RetentionProgress,
} from '../../src/store/retention.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { ensureBuilt, runCli } from '../helpers/cli.js';
import {
  DAY,
  GROUPS,
  HOUR,
  NOW,
  RELEASES,
  createProject,
  getJson,
  hourOf,
  makeDataset,
  makeSessions,
  sendEvents,
  sendSessions,
  type EventSpec,
  type SessionSpec,
  type TestProject,
} from './support.js';
import pino from 'pino';

const A = NOW - 35 * DAY; // received long ago: expired
const B = NOW - 10 * DAY; // received ten days ago: kept
const R = NOW - HOUR; // received in the last hour: kept, and on the sparklines
const ANCIENT = hourOf(NOW - 420 * DAY) + 17 * 60_000; // event time older than the 400-day aggregate retention

describe.each(dialects)('retention on %s', (dialect) => {
  let t: TestServer;
  let clock: ManualClock;
  let p: TestProject;
  let old: EventSpec[];
  let ancient: EventSpec[];
  let kept: EventSpec[];
  let oldSessions: SessionSpec[];
  let keptSessions: SessionSpec[];
  const db = () => t.deps.store.db;

  beforeAll(async () => {
    clock = new ManualClock(A);
    t = await startTestServer(dialect, { clock, env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    old = makeDataset(31, 60, A, 2);
    ancient = [0, 1, 2].map((i) => ({
      ...makeDataset(40 + i, 1, A)[0],
      group: GROUPS[1],
      release: RELEASES[0],
      timestamp: ANCIENT + i * 1000,
    }));
    oldSessions = makeSessions(32, 20, A, 2);
    await sendEvents(t, p, [...old, ...ancient]);
    await sendSessions(t, p, oldSessions);
    clock.set(B);
    const newer = makeDataset(33, 50, B, 2);
    keptSessions = makeSessions(34, 15, B, 2);
    await sendEvents(t, p, newer);
    await sendSessions(t, p, keptSessions);
    clock.set(R);
    const recent = makeDataset(35, 30, R, 0.5);
    await sendEvents(t, p, recent);
    kept = [...newer, ...recent];
    clock.set(NOW);
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  const url = (path: string) => `/api/projects/${p.slug}${path}`;
  const eventRows = async () =>
    db().selectFrom('events').select(['id', 'event_id', 'issue_id', 'payload_chunk']).execute();
  const count = async (
    table:
      | 'event_tags'
      | 'payload_chunks'
      | 'seen_events'
      | 'sessions'
      | 'project_hourly'
      | 'issue_hourly'
      | 'session_hourly'
      | 'daily_usage',
  ) =>
    Number(
      (
        await db()
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  /** Every aggregate-based answer of the read API, with the stored-event parts set aside. */
  async function snapshot() {
    const issues = (await getJson(t, url('/issues?days=90&limit=500'))).body;
    const out: Record<string, unknown> = { overview: (await getJson(t, url('/overview?days=90'))).body };
    out.releases = (await getJson(t, url('/releases?days=90'))).body;
    const stored = new Map<string, number>();
    out.issues = issues.issues.map((i: any) => {
      stored.set(i.fingerprint, i.stored_count);
      const { stored_count, ...rest } = i;
      return rest;
    });
    for (const i of issues.issues) {
      const d = (await getJson(t, url(`/issues/${i.fingerprint}?days=90`))).body;
      out[`timeline ${i.fingerprint}`] = d.timeline;
      out[`counts ${i.fingerprint}`] = [d.event_count, d.first_seen, d.last_seen, d.status, d.users];
    }
    for (const r of RELEASES) {
      const d = (await getJson(t, url(`/releases/${encodeURIComponent(r)}?days=90`))).body;
      const strip = (list: any[]) => list.map(({ stored_count, ...rest }: any) => rest);
      out[`release ${r}`] = {
        ...d,
        issues_introduced: strip(d.issues_introduced),
        issues_present: strip(d.issues_present),
      };
    }
    return { out, stored };
  }

  it('deletes expired raw data in batches and keeps issues and aggregates intact', async () => {
    const before = await snapshot();
    const rowsBefore = await eventRows();
    expect(rowsBefore).toHaveLength(old.length + ancient.length + kept.length);
    const expired = new Set([...old, ...ancient].map((e) => e.eventId));
    const expiredRows = rowsBefore.filter((r) => expired.has(r.event_id));
    const expiredIds = expiredRows.map((r) => Number(r.id));
    const tagsOfExpired = Number(
      (
        await db()
          .selectFrom('event_tags')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('event_id', 'in', expiredIds)
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(tagsOfExpired).toBeGreaterThanOrEqual(expiredIds.length * 2);
    const chunksOfExpired = Number(
      (
        await db()
          .selectFrom('payload_chunks')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('received_at', '<', NOW - 30 * DAY)
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(chunksOfExpired).toBeGreaterThan(0);
    // The new_issue alerts the old events recorded (no channel: set aside by the server's
    // dispatcher, which takes them within about a second) are done with.
    const pendingOld = async () =>
      Number(
        (
          await db()
            .selectFrom('alert_outbox')
            .select((eb) => eb.fn.countAll<number>().as('n'))
            .where('created_at', '<', NOW - 30 * DAY)
            .where('state', '=', 'pending')
            .executeTakeFirstOrThrow()
        ).n,
      );
    for (let waited = 0; (await pendingOld()) > 0 && waited < 10_000; waited += 50)
      await new Promise((r) => setTimeout(r, 50));
    const alertsDone = Number(
      (
        await db()
          .selectFrom('alert_outbox')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('created_at', '<', NOW - 30 * DAY)
          .where('state', '<>', 'pending')
          .executeTakeFirstOrThrow()
      ).n,
    );
    expect(alertsDone).toBeGreaterThan(0);
    const counts = {
      chunks: await count('payload_chunks'),
      tags: await count('event_tags'),
      seen: await count('seen_events'),
      sessions: await count('sessions'),
      ph: await count('project_hourly'),
      ih: await count('issue_hourly'),
      sh: await count('session_hourly'),
      du: await count('daily_usage'),
    };
    expect(counts.sessions).toBe(oldSessions.length + keptSessions.length);
    const deletedPerIssue = new Map<number, number>();
    for (const r of expiredRows)
      deletedPerIssue.set(Number(r.issue_id), (deletedPerIssue.get(Number(r.issue_id)) ?? 0) + 1);

    const progress: RetentionProgress[] = [];
    const summary = await runRetention(t.deps.store, {
      now: NOW,
      retentionDays: 30,
      batchSize: 7,
      onProgress: (x) => progress.push(x),
    });
    expect(summary.ran).toBe(true);
    expect(summary.aborted).toBe(false);
    expect(summary.deleted).toEqual({
      events: expired.size,
      event_tags: tagsOfExpired,
      payload_chunks: chunksOfExpired,
      attachments: 0,
      user_feedback: 0,
      seen_events: expired.size,
      sessions: oldSessions.length,
      issue_hourly: 1, // the ancient events: one issue, one hour
      issue_environment_hourly: 1, // and one environment
      project_hourly: 1, // one hour, one release
      session_hourly: 0,
      session_users: 0,
      daily_usage: 0,
      alert_deliveries: 0,
      alert_outbox: alertsDone,
      upload_assemblies: 0,
    });
    expect(summary.issuesUpdated).toBe(deletedPerIssue.size);
    // Batches of at most 7 rows, each reported with a running total.
    const eventBatches = progress.filter((x) => x.table === 'events');
    expect(eventBatches.length).toBe(Math.ceil(expired.size / 7));
    expect(eventBatches.every((x) => x.batch <= 7)).toBe(true);
    expect(eventBatches.at(-1)!.total).toBe(expired.size);

    // Raw rows: the expired ones are gone, the rest untouched.
    const rowsAfter = await eventRows();
    expect(new Set(rowsAfter.map((r) => r.event_id))).toEqual(new Set(kept.map((e) => e.eventId)));
    expect(await count('event_tags')).toBe(counts.tags - tagsOfExpired);
    // Every chunk left holds a kept event's payload, and every kept event's chunk is there.
    expect(await count('payload_chunks')).toBe(counts.chunks - chunksOfExpired);
    const chunkIds = new Set((await db().selectFrom('payload_chunks').select('id').execute()).map((c) => Number(c.id)));
    expect(new Set(rowsAfter.map((r) => Number(r.payload_chunk)))).toEqual(chunkIds);
    const keptDetail = (await getJson(t, url(`/events/${rowsAfter[0].id}`))).body;
    expect(keptDetail.raw.event_id).toBe(rowsAfter[0].event_id);
    expect(await count('seen_events')).toBe(counts.seen - expired.size);
    const sessionIds = (await db().selectFrom('sessions').select('sid').execute()).map((s) => s.sid);
    expect(new Set(sessionIds)).toEqual(new Set(keptSessions.map((s) => s.sid)));
    expect((await getJson(t, url(`/events/${expiredIds[0]}`))).status).toBe(404);
    expect((await getJson(t, url(`/events/${old[0].eventId}`))).status).toBe(404);
    const listed = (await getJson(t, url('/events?limit=500'))).body.events.map((e: any) => e.event_id);
    expect(new Set(listed)).toEqual(new Set(kept.map((e) => e.eventId)));

    // Aggregates: only the rows older than 400 days went.
    expect(await count('project_hourly')).toBe(counts.ph - 1);
    expect(await count('issue_hourly')).toBe(counts.ih - 1);
    expect(await count('session_hourly')).toBe(counts.sh);
    expect(await count('daily_usage')).toBe(counts.du);
    const oldAgg = await db()
      .selectFrom('project_hourly')
      .select('bucket')
      .where('bucket', '<', NOW - 400 * DAY)
      .execute();
    expect(oldAgg).toEqual([]);

    // Every aggregate-based answer is unchanged; stored_count went down by what was deleted.
    const after = await snapshot();
    expect(after.out).toEqual(before.out);
    const issueIds = new Map(
      (await db().selectFrom('issues').select(['id', 'fingerprint', 'event_count', 'stored_count']).execute()).map(
        (i) => [i.fingerprint, i],
      ),
    );
    expect(issueIds.size).toBe(GROUPS.length);
    for (const [fp, storedBefore] of before.stored) {
      const issue = issueIds.get(fp)!;
      expect(after.stored.get(fp)).toBe(storedBefore - (deletedPerIssue.get(Number(issue.id)) ?? 0));
      expect(Number(issue.stored_count)).toBe(after.stored.get(fp));
    }
    // The newest/oldest stored events now come from the kept ones.
    const keptIds = new Set(rowsAfter.map((r) => Number(r.id)));
    for (const fp of before.stored.keys()) {
      const detail = (await getJson(t, url(`/issues/${fp}`))).body;
      for (const id of [detail.oldest_event_id, detail.latest_event_id])
        if (id !== null) expect(keptIds.has(id)).toBe(true);
      expect(detail.oldest_event_id === null).toBe(after.stored.get(fp) === 0);
    }

    // A second run finds nothing left to delete.
    const again = await runRetention(t.deps.store, { now: NOW, retentionDays: 30 });
    expect(Object.values(again.deleted).every((n) => n === 0)).toBe(true);
  });

  /** A retention run that waits in its progress callback after its first batch until resumed. */
  function pausedRun(options: { batchSize: number }) {
    let onPaused!: () => void;
    const paused = new Promise<void>((resolve) => (onPaused = resolve));
    let resume!: () => void;
    const resumed = new Promise<void>((resolve) => (resume = resolve));
    const progress: RetentionProgress[] = [];
    let finished = false;
    const run = runRetention(t.deps.store, {
      now: NOW,
      retentionDays: 30,
      batchSize: options.batchSize,
      onProgress: async (x) => {
        progress.push(x);
        if (progress.length === 1) {
          onPaused();
          await resumed;
        }
      },
    }).finally(() => (finished = true));
    return { run, paused, resume, progress, finished: () => finished };
  }

  it('never locks ingest out: an envelope sent while a run is mid-way is answered and stored before the run goes on', async () => {
    clock.set(NOW - 40 * DAY);
    const expiring = makeDataset(51, 40, NOW - 40 * DAY, 1);
    await sendEvents(t, p, expiring);
    clock.set(NOW);
    const arriving = makeDataset(52, 25, NOW, 1);
    const r = pausedRun({ batchSize: 3 });
    await r.paused;
    // The run has deleted its first batch and waits: ingest gets the database meanwhile.
    await sendEvents(t, p, arriving, 4);
    expect(r.finished()).toBe(false);
    expect(r.progress).toEqual([{ table: 'events', batch: 3, total: 3 }]);
    const during = new Set((await eventRows()).map((row) => row.event_id));
    for (const e of arriving) expect(during.has(e.eventId)).toBe(true);
    expect(expiring.filter((e) => during.has(e.eventId))).toHaveLength(expiring.length - 3);
    r.resume();
    const summary = await r.run;
    expect(summary.deleted.events).toBe(expiring.length);
    const ids = new Set((await eventRows()).map((row) => row.event_id));
    for (const e of arriving) expect(ids.has(e.eventId)).toBe(true);
    for (const e of expiring) expect(ids.has(e.eventId)).toBe(false);
  });

  it('runs as a background job that can be stopped', async () => {
    clock.set(NOW - 31 * DAY);
    const expiring = makeDataset(61, 5, NOW - 31 * DAY, 1);
    await sendEvents(t, p, expiring);
    clock.set(NOW);
    const job = startRetentionJob(
      { store: t.deps.store, clock, logger: pino({ level: 'silent' }), retentionDays: 30 },
      { firstDelayMs: 3_600_000 },
    );
    const summary = await job.runOnce();
    await job.stop();
    expect(summary?.ran).toBe(true);
    expect(summary?.deleted.events).toBe(5);
  });

  if (dialect === 'postgres') {
    it('runs one instance at a time on PostgreSQL', async () => {
      const holder = new pg.Client({ connectionString: t.database.url });
      await holder.connect();
      try {
        await holder.query('select pg_advisory_lock($1)', [RETENTION_LOCK_KEY]);
        const skipped = await runRetention(t.deps.store, { now: NOW, retentionDays: 30 });
        expect(skipped.ran).toBe(false);
        await holder.query('select pg_advisory_unlock($1)', [RETENTION_LOCK_KEY]);
        expect((await runRetention(t.deps.store, { now: NOW, retentionDays: 30 })).ran).toBe(true);
      } finally {
        await holder.end();
      }
      // The lock is released after a run: nothing holds it now.
      const free = await sql<{
        n: number;
      }>`select count(*)::int as n from pg_locks where locktype = 'advisory' and objid = ${RETENTION_LOCK_KEY}`.execute(
        t.deps.store.db,
      );
      expect(free.rows[0].n).toBe(0);
    });
  }

  if (dialect === 'sqlite') {
    it('runs one at a time on one SQLite file, also across processes (cron and serve)', async () => {
      ensureBuilt();
      clock.set(NOW - 45 * DAY);
      const expiring = makeDataset(81, 6, NOW - 45 * DAY, 1);
      await sendEvents(t, p, expiring);
      clock.set(NOW);
      const r = pausedRun({ batchSize: 2 });
      await r.paused;
      // `faultline retention` from cron, in another process, while this run holds the lease.
      const cron = await runCli(['retention'], {
        DATABASE_URL: t.database.url,
        RETENTION_DAYS: '36500',
        LOG_LEVEL: 'silent',
      });
      expect(cron.code, cron.stderr).toBe(0);
      expect(cron.stdout).toBe('retention: skipped, another instance is running it\n');
      // And a second run in this process.
      expect((await runRetention(t.deps.store, { now: NOW, retentionDays: 30 })).ran).toBe(false);
      r.resume();
      const summary = await r.run;
      expect(summary.ran).toBe(true);
      expect(summary.deleted.events).toBe(expiring.length);
      // The lease is given back at the end: the next run (another process) runs.
      expect(await db().selectFrom('job_locks').selectAll().execute()).toEqual([]);
      const next = await runCli(['retention'], {
        DATABASE_URL: t.database.url,
        RETENTION_DAYS: '36500',
        LOG_LEVEL: 'silent',
      });
      expect(next.stdout).toMatch(/^retention: deleted 0 events/);
      // A lease still valid keeps runs out; one left expired by a crashed run does not.
      await db()
        .insertInto('job_locks')
        .values({ name: 'retention', holder: 'other-host:1', expires_at: Date.now() + 60_000 })
        .execute();
      expect((await runRetention(t.deps.store, { now: NOW, retentionDays: 30 })).ran).toBe(false);
      await db()
        .updateTable('job_locks')
        .set({ expires_at: Date.now() - 1 })
        .execute();
      expect((await runRetention(t.deps.store, { now: NOW, retentionDays: 30 })).ran).toBe(true);
      expect(await db().selectFrom('job_locks').selectAll().execute()).toEqual([]);
    }, 120_000);
  }
});

describe.each(dialects)('faultline retention command on %s', (dialect) => {
  it('deletes what is older than RETENTION_DAYS with progress on stderr and a summary', async () => {
    ensureBuilt();
    const now = Date.now();
    const clock = new ManualClock(now - 8 * DAY);
    const t = await startTestServer(dialect, { clock, env: { RATE_LIMIT: '0' } });
    try {
      const p = await createProject(t);
      const expiring = makeDataset(71, 12, now - 8 * DAY, 1);
      await sendEvents(t, p, expiring);
      clock.set(now - HOUR);
      const keptEvents = makeDataset(72, 6, now - HOUR, 0.5);
      await sendEvents(t, p, keptEvents);
      const before = (await getJson(t, `/api/projects/${p.slug}/issues?days=30&limit=500`)).body;

      const bad = await runCli(['retention', '--batch-size', '0'], { DATABASE_URL: t.database.url });
      expect(bad.code).toBe(1);
      expect(bad.stderr).toMatch(/--batch-size must be an integer/);

      const res = await runCli(['retention', '--batch-size', '5'], {
        DATABASE_URL: t.database.url,
        RETENTION_DAYS: '7',
        LOG_LEVEL: 'silent',
      });
      expect(res.code, res.stderr).toBe(0);
      expect(res.stderr).toMatch(/older than 7 days/);
      expect(res.stderr).toMatch(/events: 5 deleted/);
      expect(res.stderr).toMatch(/events: 12 deleted/);
      expect(res.stdout).toMatch(
        /^retention: deleted 12 events \(and \d+ event tags, \d+ payload chunks, \d+ attachments, \d+ user feedback\), 12 seen event ids, 0 sessions/,
      );

      const rows = await t.deps.store.db.selectFrom('events').select('event_id').execute();
      expect(new Set(rows.map((r) => r.event_id))).toEqual(new Set(keptEvents.map((e) => e.eventId)));
      const after = (await getJson(t, `/api/projects/${p.slug}/issues?days=30&limit=500`)).body;
      const strip = (b: any) => b.issues.map(({ stored_count, ...rest }: any) => rest);
      expect(strip(after)).toEqual(strip(before));
      expect(after.issues.reduce((s: number, i: any) => s + i.stored_count, 0)).toBe(keptEvents.length);
      expect(after.issues.reduce((s: number, i: any) => s + i.event_count, 0)).toBe(
        expiring.length + keptEvents.length,
      );
    } finally {
      await t.close();
    }
  }, 120_000);
});
