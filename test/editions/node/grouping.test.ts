// Grouping through the group-commit writer: issue fields and counts, distinct users,
// stored event rows (tags, compressed detail and raw), and the aggregates written
// with each batch, compared with counts computed independently from the input.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hourBucket, utcDay } from '../../../src/clock.js';
import type { Level, NormalizedEvent } from '../../../src/ingest/types.js';
import { storedPayload } from '../../../src/editions/node/payloads.js';
import { dialects } from '../../helpers/server.js';
import {
  createProject,
  fp,
  makeEvent,
  makeWork,
  newWriter,
  openTestStore,
  type TestStore,
} from '../../helpers/factory.js';

const T = Date.UTC(2026, 0, 10, 12, 0, 0);
const MIN = 60_000;
const HOUR = 3_600_000;

describe.each(dialects)('writer grouping (%s)', (dialect) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openTestStore(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('groups one fingerprint into one issue with every field from the right event', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const f = fp('checkout');
    // Sent out of event-time order: the latest event (by time) arrives first.
    const latest = makeEvent({
      fingerprint: f,
      timestamp: T + 10 * MIN,
      level: 'fatal',
      release: 'app@1.2.0',
      title: 'TypeError: newest',
      userKey: 'u1',
      screen: 'PayScreen',
      location: 'pay.js:1',
      platform: 'javascript',
    });
    const earliest = makeEvent({
      fingerprint: f,
      timestamp: T - 5 * MIN,
      level: 'warning',
      release: 'app@1.0.0',
      title: 'TypeError: oldest',
      userKey: 'u2',
    });
    const middle = makeEvent({ fingerprint: f, timestamp: T, level: 'error', release: 'app@1.1.0', userKey: 'u1' });
    const anonymous = makeEvent({
      fingerprint: f,
      timestamp: T + MIN,
      level: 'info',
      release: 'app@1.1.0',
      userKey: null,
    });
    const r1 = Date.UTC(2026, 0, 10, 12, 30);
    const r2 = r1 + 5000;
    expect(await writer.submit(makeWork(project, { events: [latest, earliest], receivedAt: r1 }))).toEqual({
      kind: 'ok',
    });
    expect(await writer.submit(makeWork(project, { events: [middle, anonymous], receivedAt: r2 }))).toEqual({
      kind: 'ok',
    });
    await writer.close();

    const issues = await t.store.db.selectFrom('issues').selectAll().where('project_id', '=', project.id).execute();
    expect(issues).toHaveLength(1);
    const issue = issues[0];
    const events = await t.store.db
      .selectFrom('events')
      .select(['id', 'event_id', 'issue_id'])
      .where('project_id', '=', project.id)
      .execute();
    const idOf = (e: NormalizedEvent) => Number(events.find((r) => r.event_id === e.eventId)!.id);
    expect(events.every((r) => Number(r.issue_id) === Number(issue.id))).toBe(true);
    expect({ ...issue, id: 0, project_id: 0 }).toEqual({
      id: 0,
      project_id: 0,
      fingerprint: f,
      title: 'TypeError: newest',
      level: 'fatal',
      error_type: 'TypeError',
      screen: 'PayScreen',
      location: 'pay.js:1',
      platform: 'javascript',
      status: 'unresolved',
      event_count: 4,
      stored_count: 4,
      users: 2,
      first_seen: T - 5 * MIN,
      last_seen: T + 10 * MIN,
      last_seen_minute: Math.floor((T + 10 * MIN) / MIN) * MIN,
      first_seen_id: idOf(earliest),
      last_seen_id: idOf(latest),
      first_release: 'app@1.0.0',
      last_release: 'app@1.2.0',
      resolved_release: null,
      resolved_at: null,
      regressed_at: null,
      created_at: r1,
      updated_at: r2,
      // Triage's columns: no snooze, no assignee.
      ignore_until: null,
      ignore_count: null,
      ignore_users: null,
      ignored_event_count: null,
      ignored_users: null,
      assignee_id: null,
    });

    const releases = await t.store.db
      .selectFrom('issue_releases')
      .select(['release', 'first_seen'])
      .where('issue_id', '=', issue.id)
      .orderBy('release')
      .execute();
    expect(releases.map((r) => [r.release, Number(r.first_seen)])).toEqual([
      ['app@1.0.0', T - 5 * MIN],
      ['app@1.1.0', T],
      ['app@1.2.0', T + 10 * MIN],
    ]);
    const changes = await t.store.db
      .selectFrom('issue_changes')
      .selectAll()
      .where('project_id', '=', project.id)
      .execute();
    expect(changes.map((c) => [c.kind, Number(c.issue_id), Number(c.at), c.release])).toEqual([
      ['new_issue', Number(issue.id), r1, 'app@1.2.0'],
    ]);
  });

  it('keeps the earliest time an issue was seen on a release, whatever order later batches bring', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const f = fp('release-first-seen');
    const firstSeenOn = async () =>
      (
        await t.store.db
          .selectFrom('issue_releases')
          .innerJoin('issues', 'issues.id', 'issue_releases.issue_id')
          .select(['release', 'issue_releases.first_seen'])
          .where('issues.project_id', '=', project.id)
          .orderBy('release')
          .execute()
      ).map((r) => [r.release, Number(r.first_seen)]);
    for (const [timestamp, want] of [
      [T, T],
      [T + MIN, T], // later: kept
      [T - MIN, T - MIN], // earlier: lowered
      [T + 2 * MIN, T - MIN],
    ]) {
      expect(
        await writer.submit(
          makeWork(project, { events: [makeEvent({ fingerprint: f, timestamp, release: 'app@3.0.0' })] }),
        ),
      ).toEqual({ kind: 'ok' });
      expect(await firstSeenOn()).toEqual([['app@3.0.0', want]]);
    }
    await writer.close();
  });

  it('keeps fingerprints apart and counts distinct users exactly across batches', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const a = fp('a');
    const b = fp('b');
    // user keys as the normaliser derives them: id, else email, else username, else ip
    await writer.submit(
      makeWork(project, {
        events: [
          makeEvent({ fingerprint: a, userKey: 'id:1' }),
          makeEvent({ fingerprint: a, userKey: 'id:1' }),
          makeEvent({ fingerprint: b, userKey: 'id:1' }),
        ],
      }),
    );
    await writer.submit(
      makeWork(project, {
        events: [makeEvent({ fingerprint: a, userKey: 'id:1' }), makeEvent({ fingerprint: a, userKey: 'me@x.org' })],
      }),
    );
    await Promise.all([
      writer.submit(makeWork(project, { events: [makeEvent({ fingerprint: a, userKey: '10.0.0.1' })] })),
      writer.submit(
        makeWork(project, {
          events: [makeEvent({ fingerprint: a, userKey: '10.0.0.1' }), makeEvent({ fingerprint: b })],
        }),
      ),
    ]);
    await writer.close();
    const rows = await t.store.db
      .selectFrom('issues')
      .select(['fingerprint', 'event_count', 'stored_count', 'users'])
      .where('project_id', '=', project.id)
      .orderBy('fingerprint')
      .execute();
    expect(rows.map((r) => [r.fingerprint, Number(r.event_count), Number(r.stored_count), Number(r.users)])).toEqual([
      [a, 6, 6, 3],
      [b, 2, 2, 1],
    ]);
    const userRows = await t.store.db
      .selectFrom('issue_users')
      .innerJoin('issues', 'issues.id', 'issue_users.issue_id')
      .select(['issues.fingerprint', 'issue_users.user_key'])
      .where('issues.project_id', '=', project.id)
      .orderBy('issues.fingerprint')
      .orderBy('issue_users.user_key')
      .execute();
    expect(userRows.map((r) => [r.fingerprint, r.user_key])).toEqual([
      [a, '10.0.0.1'],
      [a, 'id:1'],
      [a, 'me@x.org'],
      [b, 'id:1'],
    ]);
  });

  it('stores every column of an event, its tags, and the raw payload in a payload chunk', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const raw = Buffer.from('{"event_id":"x","exception":{"values":[]},"note":"exactly as received \u00e9"}');
    const e = makeEvent({
      fingerprint: fp('columns'),
      isCrash: true,
      level: 'fatal',
      userId: '42',
      userEmail: 'a@b.c',
      userUsername: 'ann',
      userIp: '10.1.2.3',
      userKey: '42',
      deviceId: 'dev-1',
      deviceModel: 'Pixel 8',
      osName: 'Android',
      osVersion: '14',
      dist: '7',
      environment: 'staging',
      message: 'boom',
      tags: { os: 'Android 14', 'device.family': 'Pixel' },
      raw,
    });
    await writer.submit(makeWork(project, { events: [e], receivedAt: T + 1000 }));
    await writer.close();
    const row = await t.store.db
      .selectFrom('events')
      .selectAll()
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    const issue = await t.store.db
      .selectFrom('issues')
      .select('id')
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(Number(row.issue_id)).toBe(Number(issue.id));
    expect(row).toMatchObject({
      event_id: e.eventId,
      fingerprint: fp('columns'),
      timestamp: e.timestamp,
      received_at: T + 1000,
      level: 'fatal',
      platform: 'node',
      release: 'app@1.0.0',
      dist: '7',
      environment: 'staging',
      user_id: '42',
      user_email: 'a@b.c',
      user_username: 'ann',
      user_ip: '10.1.2.3',
      device_id: 'dev-1',
      device_model: 'Pixel 8',
      os_name: 'Android',
      os_version: '14',
      screen: 'GET /checkout',
      error_type: 'TypeError',
      error_location: 'checkout.js:42',
      title: 'TypeError: x is undefined',
      message: 'boom',
      is_crash: 1,
      sdk_name: 'sentry.javascript.node',
      symbolicated: null,
    });
    expect(JSON.parse(row.tags)).toEqual({ os: 'Android 14', 'device.family': 'Pixel' });
    // Only the raw payload is stored; the read API derives the detail from it.
    expect(row.detail.byteLength).toBe(0);
    expect(row.raw.byteLength).toBe(0);
    expect((await storedPayload(t.store.db, row)).equals(raw)).toBe(true);
    const chunk = await t.store.db
      .selectFrom('payload_chunks')
      .selectAll()
      .where('id', '=', Number(row.payload_chunk))
      .executeTakeFirstOrThrow();
    expect([
      Number(chunk.project_id),
      Number(chunk.received_at),
      Number(row.payload_start),
      Number(row.payload_length),
    ]).toEqual([project.id, T + 1000, 0, raw.length]);
    const tags = await t.store.db
      .selectFrom('event_tags')
      .selectAll()
      .where('event_id', '=', row.id)
      .orderBy('key')
      .execute();
    expect(tags.map((r) => [Number(r.project_id), r.key, r.value])).toEqual([
      [project.id, 'device.family', 'Pixel'],
      [project.id, 'os', 'Android 14'],
    ]);
  });

  it('writes text the databases can hold: NUL bytes dropped, indexed values clamped', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const e = makeEvent({
      fingerprint: fp('nul'),
      title: 'bad\u0000title',
      release: 'r'.repeat(5000),
      userId: 'i'.repeat(5000),
      userKey: 'i'.repeat(5000),
      tags: { k: 'v'.repeat(5000), 'n\u0000': 'x\u0000y' },
    });
    await writer.submit(makeWork(project, { events: [e] }));
    await writer.close();
    const row = await t.store.db
      .selectFrom('events')
      .select(['title', 'release', 'tags', 'user_id'])
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(row.title).toBe('badtitle');
    expect(row.user_id).toBe('i'.repeat(200));
    expect(row.release).toBe('r'.repeat(250));
    expect(JSON.parse(row.tags)).toEqual({ k: 'v'.repeat(200), n: 'xy' });
    const rel = await t.store.db
      .selectFrom('releases')
      .select('release')
      .where('project_id', '=', project.id)
      .execute();
    expect(rel.map((r) => r.release)).toEqual(['r'.repeat(250)]);
  });

  it('writes aggregates equal to counts computed from the input, sampled-out events included', async () => {
    const project = await createProject(t.store, { sample_keep_first: 3, sample_rate: 0.5 });
    // Deterministic pseudo-random input and draws.
    let seed = 7;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const writer = newWriter(t.store, { random: rnd });
    const levels: Level[] = ['fatal', 'error', 'warning', 'info', 'debug'];
    const releases = ['', 'app@1.0.0', 'app@2.0.0'];
    const platforms = ['node', 'python', 'cocoa'];
    const works = [];
    const all: { e: NormalizedEvent; receivedAt: number }[] = [];
    for (let w = 0; w < 12; w++) {
      const receivedAt = T + w * HOUR;
      const events = [];
      for (let i = 0; i < 7; i++) {
        const e = makeEvent({
          fingerprint: fp(`g${Math.floor(rnd() * 4)}`),
          timestamp: T - Math.floor(rnd() * 30) * HOUR + Math.floor(rnd() * 59) * MIN,
          level: levels[Math.floor(rnd() * levels.length)],
          isCrash: rnd() < 0.2,
          release: releases[Math.floor(rnd() * releases.length)],
          platform: platforms[Math.floor(rnd() * platforms.length)],
        });
        events.push(e);
        all.push({ e, receivedAt });
      }
      works.push(makeWork(project, { events, receivedAt }));
    }
    await Promise.all(works.slice(0, 6).map((w) => writer.submit(w)));
    await Promise.all(works.slice(6).map((w) => writer.submit(w)));
    await writer.close();
    const db = t.store.db;

    const issueHourly = await db
      .selectFrom('issue_hourly')
      .innerJoin('issues', 'issues.id', 'issue_hourly.issue_id')
      .select(['issues.fingerprint', 'issue_hourly.bucket', 'issue_hourly.events'])
      .where('issues.project_id', '=', project.id)
      .execute();
    const expectedIssueHourly = new Map<string, number>();
    for (const { e } of all) {
      const k = `${e.fingerprint}|${hourBucket(e.timestamp)}`;
      expectedIssueHourly.set(k, (expectedIssueHourly.get(k) ?? 0) + 1);
    }
    expect(new Map(issueHourly.map((r) => [`${r.fingerprint}|${Number(r.bucket)}`, Number(r.events)]))).toEqual(
      expectedIssueHourly,
    );

    const projectHourly = await db
      .selectFrom('project_hourly')
      .selectAll()
      .where('project_id', '=', project.id)
      .execute();
    const expectedProject = new Map<string, number[]>();
    for (const { e } of all) {
      const k = `${hourBucket(e.timestamp)}|${e.release}`;
      const v = expectedProject.get(k) ?? [0, 0, 0, 0, 0, 0, 0, 0];
      v[0] += 1;
      if (e.isCrash) v[1] += 1;
      if (e.level === 'error' && !e.isCrash) v[2] += 1;
      v[3 + levels.indexOf(e.level)] += 1;
      expectedProject.set(k, v);
    }
    expect(
      new Map(
        projectHourly.map((r) => [
          `${Number(r.bucket)}|${r.release}`,
          [r.events, r.crashes, r.errors, r.fatal, r.error, r.warning, r.info, r.debug].map(Number),
        ]),
      ),
    ).toEqual(expectedProject);

    const releaseRows = await db.selectFrom('releases').selectAll().where('project_id', '=', project.id).execute();
    const expectedReleases = new Map<string, { first: number; last: number; platforms: string[] }>();
    for (const { e } of all) {
      if (e.release === '') continue;
      const r = expectedReleases.get(e.release) ?? { first: Infinity, last: -Infinity, platforms: [] };
      r.first = Math.min(r.first, e.timestamp);
      r.last = Math.max(r.last, e.timestamp);
      if (!r.platforms.includes(e.platform)) r.platforms.push(e.platform);
      expectedReleases.set(e.release, r);
    }
    for (const r of expectedReleases.values()) r.platforms.sort();
    expect(
      new Map(
        releaseRows.map((r) => [
          r.release,
          { first: Number(r.first_seen), last: Number(r.last_seen), platforms: JSON.parse(r.platforms) },
        ]),
      ),
    ).toEqual(expectedReleases);

    const usage = await db.selectFrom('daily_usage').selectAll().where('project_id', '=', project.id).execute();
    const expectedUsage = new Map<number, number>();
    for (const { receivedAt } of all)
      expectedUsage.set(utcDay(receivedAt), (expectedUsage.get(utcDay(receivedAt)) ?? 0) + 1);
    expect(new Map(usage.map((r) => [Number(r.day), Number(r.events)]))).toEqual(expectedUsage);

    // Issue counters agree with the rows: every event counted, stored ones present.
    const issues = await db.selectFrom('issues').selectAll().where('project_id', '=', project.id).execute();
    const stored = await db.selectFrom('events').select(['issue_id']).where('project_id', '=', project.id).execute();
    expect(issues.reduce((n, i) => n + Number(i.event_count), 0)).toBe(all.length);
    for (const i of issues) {
      expect(Number(i.stored_count)).toBe(stored.filter((s) => Number(s.issue_id) === Number(i.id)).length);
      expect(Number(i.event_count)).toBe(all.filter(({ e }) => e.fingerprint === i.fingerprint).length);
    }
    expect(stored.length).toBeLessThan(all.length); // sampling really dropped some
  });
});
