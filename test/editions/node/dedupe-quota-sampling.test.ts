// Dedupe of resent event_ids, the daily quota (refusal, what a refused work leaves
// behind, reset at UTC midnight) and sampling (keep-first, then the rate; crashes
// always) through the group-commit writer.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS, utcDay } from '../../../src/clock.js';
import type { ProjectRow } from '../../../src/store/schema.js';
import { dialects } from '../../helpers/server.js';
import {
  createProject,
  fp,
  hex32,
  makeEvent,
  makeSession,
  makeWork,
  newWriter,
  openTestStore,
  sequence,
  type TestStore,
} from '../../helpers/factory.js';

const T = Date.UTC(2026, 0, 10, 12, 0, 0);

describe.each(dialects)('writer dedupe, quota and sampling (%s)', (dialect) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openTestStore(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function issueCounts(project: ProjectRow) {
    const rows = await t.store.db
      .selectFrom('issues')
      .select(['fingerprint', 'event_count', 'stored_count'])
      .where('project_id', '=', project.id)
      .orderBy('fingerprint')
      .execute();
    return rows.map((r) => [r.fingerprint, Number(r.event_count), Number(r.stored_count)]);
  }
  async function usage(project: ProjectRow) {
    const rows = await t.store.db
      .selectFrom('daily_usage')
      .select(['day', 'events'])
      .where('project_id', '=', project.id)
      .orderBy('day')
      .execute();
    return rows.map((r) => [Number(r.day), Number(r.events)]);
  }
  async function storedEventIds(project: ProjectRow) {
    const rows = await t.store.db
      .selectFrom('events')
      .select('event_id')
      .where('project_id', '=', project.id)
      .orderBy('id')
      .execute();
    return rows.map((r) => r.event_id);
  }

  it('stores and counts a resent event_id once: within a work, within a batch and across batches', async () => {
    const project = await createProject(t.store);
    const other = await createProject(t.store);
    const writer = newWriter(t.store);
    const id = hex32();
    const f = fp('dup');
    await Promise.all([
      writer.submit(
        makeWork(project, {
          events: [makeEvent({ eventId: id, fingerprint: f }), makeEvent({ eventId: id, fingerprint: f })],
        }),
      ),
      writer.submit(makeWork(project, { events: [makeEvent({ eventId: id, fingerprint: f })] })),
    ]);
    expect(writer.stats().batchesCommitted).toBe(1);
    expect(await writer.submit(makeWork(project, { events: [makeEvent({ eventId: id, fingerprint: f })] }))).toEqual({
      kind: 'ok',
    });
    // The same event_id in another project is another event.
    await writer.submit(makeWork(other, { events: [makeEvent({ eventId: id, fingerprint: f })] }));
    await writer.close();
    expect(await issueCounts(project)).toEqual([[f, 1, 1]]);
    expect(await issueCounts(other)).toEqual([[f, 1, 1]]);
    expect(await storedEventIds(project)).toEqual([id]);
    expect(await usage(project)).toEqual([[utcDay(T), 1]]);
    const seen = await t.store.db
      .selectFrom('seen_events')
      .select('event_id')
      .where('project_id', '=', project.id)
      .execute();
    expect(seen.map((r) => r.event_id)).toEqual([id]);
    expect(writer.stats()).toMatchObject({ eventsReceived: 5, eventsAccepted: 2, eventsDuplicate: 3 });
  });

  it('refuses a work whose events would pass the daily quota, whole, until the next UTC midnight', async () => {
    const project = await createProject(t.store, { daily_quota: 3 });
    const writer = newWriter(t.store);
    const lateEvening = Date.UTC(2026, 0, 10, 23, 59, 0);
    const f = fp('quota');
    const first = [makeEvent({ fingerprint: f }), makeEvent({ fingerprint: f })];
    expect(await writer.submit(makeWork(project, { events: first, receivedAt: lateEvening }))).toEqual({ kind: 'ok' });

    // 2 + 2 > 3: refused whole, sessions in it included.
    const refused = [makeEvent({ fingerprint: f }), makeEvent({ fingerprint: f })];
    const refusedSession = makeSession();
    expect(
      await writer.submit(makeWork(project, { events: refused, sessions: [refusedSession], receivedAt: lateEvening })),
    ).toEqual({
      kind: 'quota_exceeded',
      retryAfterSeconds: 60,
    });
    // Sessions alone are never refused; duplicates of accepted events do not count.
    const session = makeSession();
    expect(await writer.submit(makeWork(project, { sessions: [session], receivedAt: lateEvening }))).toEqual({
      kind: 'ok',
    });
    expect(await writer.submit(makeWork(project, { events: [first[0]], receivedAt: lateEvening + 1000 }))).toEqual({
      kind: 'ok',
    });
    // Exactly reaching the quota is allowed; one more is not.
    expect(
      await writer.submit(
        makeWork(project, { events: [makeEvent({ fingerprint: f })], receivedAt: lateEvening + 2000 }),
      ),
    ).toEqual({ kind: 'ok' });
    expect(
      await writer.submit(
        makeWork(project, { events: [makeEvent({ fingerprint: f })], receivedAt: lateEvening + 30_500 }),
      ),
    ).toEqual({
      kind: 'quota_exceeded',
      retryAfterSeconds: 30,
    });

    expect(await issueCounts(project)).toEqual([[f, 3, 3]]);
    expect(await usage(project)).toEqual([[utcDay(lateEvening), 3]]);
    const sids = await t.store.db.selectFrom('sessions').select('sid').where('project_id', '=', project.id).execute();
    expect(sids.map((r) => r.sid)).toEqual([session.sid]);

    // After midnight the quota starts again, and the refused events are new events then.
    const nextDay = utcDay(lateEvening) + DAY_MS;
    expect(await writer.submit(makeWork(project, { events: refused, receivedAt: nextDay }))).toEqual({ kind: 'ok' });
    await writer.close();
    expect(await issueCounts(project)).toEqual([[f, 5, 5]]);
    expect(await usage(project)).toEqual([
      [utcDay(lateEvening), 3],
      [nextDay, 2],
    ]);
  });

  it('decides the quota in submit order within one batch', async () => {
    const project = await createProject(t.store, { daily_quota: 2 });
    const writer = newWriter(t.store);
    const outcomes = await Promise.all(
      [1, 2, 1, 1].map((n) =>
        writer.submit(
          makeWork(project, { events: Array.from({ length: n }, () => makeEvent({ fingerprint: fp('order') })) }),
        ),
      ),
    );
    expect(writer.stats().batchesCommitted).toBe(1);
    expect(outcomes.map((o) => o.kind)).toEqual(['ok', 'quota_exceeded', 'ok', 'quota_exceeded']);
    await writer.close();
    expect(await usage(project)).toEqual([[utcDay(T), 2]]);
  });

  it('counts usage for projects without a quota', async () => {
    const project = await createProject(t.store, { daily_quota: 0 });
    const writer = newWriter(t.store);
    await writer.submit(makeWork(project, { events: Array.from({ length: 5 }, () => makeEvent()) }));
    await writer.close();
    expect(await usage(project)).toEqual([[utcDay(T), 5]]);
  });

  it('samples: keeps the first events of an issue, then draws against the rate; crashes always', async () => {
    const project = await createProject(t.store, { sample_keep_first: 2, sample_rate: 0.5 });
    // Draws happen only for events 3 onwards that are not crashes.
    const writer = newWriter(t.store, { random: sequence([0.9, 0.1, 0.5, 0.49]) });
    const f = fp('sampled');
    const events = [
      makeEvent({ fingerprint: f }), // 1: kept (keep-first)
      makeEvent({ fingerprint: f }), // 2: kept (keep-first)
      makeEvent({ fingerprint: f }), // 3: 0.9 -> dropped
      makeEvent({ fingerprint: f, isCrash: true }), // 4: crash -> kept, no draw
      makeEvent({ fingerprint: f }), // 5: 0.1 -> kept
    ];
    await writer.submit(makeWork(project, { events }));
    await writer.submit(makeWork(project, { events: [makeEvent({ fingerprint: f }), makeEvent({ fingerprint: f })] })); // 6: 0.5 -> dropped, 7: 0.49 -> kept
    await writer.close();
    const kept = [events[0], events[1], events[3], events[4]].map((e) => e.eventId);
    const stored = await storedEventIds(project);
    expect(stored.slice(0, 4)).toEqual(kept);
    expect(stored).toHaveLength(5);
    expect(await issueCounts(project)).toEqual([[f, 7, 5]]);
    // Sampled-out events are still deduplicated and counted in usage.
    const seen = await t.store.db
      .selectFrom('seen_events')
      .select(['event_id', 'stored_id'])
      .where('project_id', '=', project.id)
      .execute();
    expect(seen).toHaveLength(7);
    expect(await usage(project)).toEqual([[utcDay(T), 7]]);
    // Each seen id of a stored event names its row (the event_id lookup); the others none.
    const rows = await t.store.db
      .selectFrom('events')
      .select(['id', 'event_id'])
      .where('project_id', '=', project.id)
      .execute();
    const rowOf = new Map(rows.map((r) => [r.event_id, Number(r.id)]));
    expect(new Map(seen.map((s) => [s.event_id, s.stored_id === null ? null : Number(s.stored_id)]))).toEqual(
      new Map(seen.map((s) => [s.event_id, rowOf.get(s.event_id) ?? null])),
    );
    expect(seen.filter((s) => s.stored_id === null).map((s) => s.event_id)).toEqual(
      expect.arrayContaining([events[2].eventId]),
    );
    expect(seen.filter((s) => s.stored_id === null)).toHaveLength(2);
  });

  it('stores only crashes with keep-first 0 and a rate of 0, without drawing', async () => {
    const project = await createProject(t.store, { sample_keep_first: 0, sample_rate: 0 });
    const writer = newWriter(t.store, { random: sequence([]) });
    const f = fp('none');
    await writer.submit(
      makeWork(project, {
        events: [
          makeEvent({ fingerprint: f }),
          makeEvent({ fingerprint: f, isCrash: true }),
          makeEvent({ fingerprint: f }),
        ],
      }),
    );
    await writer.close();
    expect(await issueCounts(project)).toEqual([[f, 3, 1]]);
    const issue = await t.store.db
      .selectFrom('issues')
      .select(['first_seen_id', 'last_seen_id'])
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    const crash = await t.store.db
      .selectFrom('events')
      .select('id')
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect([issue.first_seen_id, issue.last_seen_id].map(Number)).toEqual([Number(crash.id), Number(crash.id)]);
  });
});
