// The read API over a realistic data set ingested through the real envelope
// route with an injected clock: six days of events on four releases (one with
// "@", "+" and one with "/"), sessions and session aggregates. Every field of
// every response is compared with values computed here from what was sent.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { compress } from '../../src/editions/node/codec.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  DAY,
  GROUPS,
  HOUR,
  NOW,
  RELEASES,
  bucketsOf,
  createProject,
  dayOf,
  getJson,
  hourOf,
  inBuckets,
  inWindow,
  isCrash,
  iso,
  makeDataset,
  makeSessions,
  rate,
  sendAggregates,
  sendEvents,
  sendSessions,
  sessionTotals,
  titleOf,
  type AggregateSpec,
  type EventSpec,
  type SessionSpec,
  type TestProject,
  type Window,
} from './support.js';
import { seedEvents, seedIssue, seedIssues } from './seed.js';

const EVENT_COUNT = 420;

describe.each(dialects)('read API on %s', (dialect) => {
  let t: TestServer;
  let p: TestProject;
  let events: EventSpec[];
  let sessions: SessionSpec[];
  let aggregates: AggregateSpec[];
  /** event_id → integer id, from the events list. */
  const idOf = new Map<string, number>();
  /** group key → issue fingerprint, from the events list. */
  const fingerprintOf = new Map<string, string>();
  const defaultWindow: Window = { from: NOW - 7 * DAY, to: NOW };

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    events = makeDataset(11, EVENT_COUNT, NOW);
    sessions = makeSessions(12, 90, NOW);
    aggregates = [
      { started: hourOf(NOW) - 2 * HOUR, release: RELEASES[3], exited: 7, errored: 2, abnormal: 1, crashed: 1 },
      { started: hourOf(NOW) - 30 * HOUR, release: RELEASES[2], exited: 4, errored: 0, abnormal: 0, crashed: 2 },
      { started: hourOf(NOW) - 3 * DAY, release: RELEASES[1], exited: 5, errored: 1, abnormal: 0, crashed: 0 },
    ];
    await sendEvents(t, p, events);
    await sendSessions(t, p, sessions);
    await sendAggregates(t, p, aggregates);

    let before: number | null = null;
    do {
      const { status, body }: { status: number; body: any } = await getJson(
        t,
        `/api/projects/${p.slug}/events?limit=500${before ? `&before=${before}` : ''}`,
      );
      expect(status).toBe(200);
      for (const e of body.events) idOf.set(e.event_id, e.id);
      before = body.next_before;
    } while (before !== null);
    expect(idOf.size).toBe(EVENT_COUNT);
    for (const e of events) {
      const { body } = await getJson(t, `/api/projects/${p.slug}/events/${e.eventId}`);
      const known = fingerprintOf.get(e.group.key);
      if (known) expect(body.fingerprint).toBe(known);
      else fingerprintOf.set(e.group.key, body.fingerprint);
      if (fingerprintOf.size === GROUPS.length) break;
    }
    expect(new Set(fingerprintOf.values()).size).toBe(GROUPS.length);
  }, 180_000);

  afterAll(async () => {
    await t?.close();
  });

  const url = (path: string) => `/api/projects/${p.slug}${path}`;
  const eventsOf = (key: string) => events.filter((e) => e.group.key === key);
  const byTime = (list: EventSpec[]) =>
    [...list].sort((a, b) => a.timestamp - b.timestamp || idOf.get(a.eventId)! - idOf.get(b.eventId)!);

  /** The issue object the API should return for a group (everything computed from the sent events). */
  function expectedIssue(key: string) {
    const list = byTime(eventsOf(key));
    const first = list[0];
    const last = list[list.length - 1];
    const g = first.group;
    return {
      fingerprint: fingerprintOf.get(key),
      title: titleOf(g),
      level: g.level,
      error_type: g.kind === 'exception' ? g.type : '',
      screen: last.screen,
      location: g.kind === 'exception' ? `${g.file}:${g.line}` : '',
      platform: g.platform,
      status: 'unresolved',
      event_count: list.length,
      stored_count: list.length,
      users: new Set(list.filter((e) => e.userId).map((e) => e.userId)).size,
      first_seen: iso(first.timestamp),
      last_seen: iso(last.timestamp),
      first_seen_id: idOf.get(first.eventId),
      last_seen_id: idOf.get(last.eventId),
      first_release: first.release,
      last_release: last.release,
      resolved_release: null,
      created_at: iso(NOW),
      updated_at: iso(NOW),
      ignore_until: null,
      ignore_count: null,
      ignore_users: null,
      assignee: null,
      feedback_count: 0,
    };
  }

  function expectedSparkline(key: string): number[] {
    const current = hourOf(NOW);
    return Array.from({ length: 24 }, (_, i) => {
      const b = current - (23 - i) * HOUR;
      return eventsOf(key).filter((e) => hourOf(e.timestamp) === b).length;
    });
  }

  it('lists issues with every field, a sparkline and the total', async () => {
    const { status, body } = await getJson(t, url('/issues'));
    expect(status).toBe(200);
    expect(body.total).toBe(GROUPS.length);
    expect(body.issues).toHaveLength(GROUPS.length);
    const expectedOrder = [...GROUPS]
      .map((g) => ({ key: g.key, last: Math.max(...eventsOf(g.key).map((e) => e.timestamp)) }))
      .sort((a, b) => b.last - a.last)
      .map((x) => fingerprintOf.get(x.key));
    expect(body.issues.map((i: any) => i.fingerprint)).toEqual(expectedOrder);
    for (const issue of body.issues) {
      const key = [...fingerprintOf].find(([, f]) => f === issue.fingerprint)![0];
      expect(issue).toEqual({ ...expectedIssue(key), sparkline: expectedSparkline(key) });
      expect(issue.sparkline.reduce((a: number, b: number) => a + b, 0)).toBe(
        eventsOf(key).filter((e) => e.timestamp >= hourOf(NOW) - 23 * HOUR).length,
      );
    }
  });

  it('filters issues by status, level, release and q, sorts and pages', async () => {
    const all = GROUPS.map((g) => ({ key: g.key, ...expectedIssue(g.key) }));
    const fps = (body: any) => body.issues.map((i: any) => i.fingerprint);

    for (const level of ['fatal', 'error', 'warning', 'info', 'debug']) {
      const { body } = await getJson(t, url(`/issues?level=${level}`));
      const want = all.filter((i) => i.level === level);
      expect(body.total).toBe(want.length);
      expect(new Set(fps(body))).toEqual(new Set(want.map((i) => i.fingerprint)));
    }
    for (const release of [...RELEASES, '']) {
      const { body } = await getJson(t, url(`/issues?release=${encodeURIComponent(release)}`));
      const want = all.filter((i) => i.last_release === release);
      expect(body.total).toBe(want.length);
      expect(new Set(fps(body))).toEqual(new Set(want.map((i) => i.fingerprint)));
    }
    // q: case-insensitive substring of the title or the location (a `key:value` text quoted); LIKE wildcards are literal.
    for (const [q, keys] of [
      ['cannot READ', ['cart']],
      ['pool.js', ['db']],
      ['"checkout.js:17"', ['checkout-crash']],
      ['%', []],
      ['_', []],
      ['payment provider', ['payment-warning']],
    ] as const) {
      const { body } = await getJson(t, url(`/issues?q=${encodeURIComponent(q)}`));
      expect(new Set(fps(body))).toEqual(new Set(keys.map((k) => fingerprintOf.get(k))));
      expect(body.total).toBe(keys.length);
    }
    expect((await getJson(t, url('/issues?status=unresolved'))).body.total).toBe(GROUPS.length);
    expect((await getJson(t, url('/issues?status=ignored'))).body).toEqual({ issues: [], total: 0 });

    const byEvents = [...all].sort((a, b) => b.event_count - a.event_count);
    const sortedEvents = (await getJson(t, url('/issues?sort=events'))).body.issues.map((i: any) => i.event_count);
    expect(sortedEvents).toEqual(byEvents.map((i) => i.event_count));
    const byFirst = [...all]
      .sort((a, b) => Date.parse(b.first_seen) - Date.parse(a.first_seen))
      .map((i) => i.fingerprint);
    expect(fps((await getJson(t, url('/issues?sort=first_seen'))).body)).toEqual(byFirst);

    const full = fps((await getJson(t, url('/issues'))).body);
    const page1 = (await getJson(t, url('/issues?limit=3'))).body;
    const page2 = (await getJson(t, url('/issues?limit=3&offset=3'))).body;
    const page3 = (await getJson(t, url('/issues?limit=3&offset=6'))).body;
    expect(page1.total).toBe(GROUPS.length);
    expect(page2.total).toBe(GROUPS.length);
    expect([...fps(page1), ...fps(page2), ...fps(page3)]).toEqual(full);
    expect(fps(page3)).toHaveLength(GROUPS.length - 6);

    // Window on last_seen: the last day holds only issues seen in it.
    const lastDay = { from: NOW - DAY, to: NOW };
    const { body: day } = await getJson(t, url('/issues?days=1'));
    const want = all.filter((i) => inWindow(lastDay, Date.parse(i.last_seen)));
    expect(new Set(fps(day))).toEqual(new Set(want.map((i) => i.fingerprint)));
    // A window that ends before anything was seen.
    const { body: old } = await getJson(t, url(`/issues?from=${iso(NOW - 20 * DAY)}&to=${iso(NOW - 10 * DAY)}`));
    expect(old).toEqual({ issues: [], total: 0 });
  });

  it('refuses bad issue list parameters with 400', async () => {
    for (const q of [
      'status=open',
      'level=critical',
      'sort=title',
      'limit=0',
      'limit=abc',
      'offset=-1',
      'offset=10001',
      'days=0',
    ]) {
      const res = await t.api(url(`/issues?${q}`));
      expect(res.status, q).toBe(400);
      expect(Object.keys(await res.json())).toEqual(['error']);
    }
    expect((await getJson(t, url('/issues?offset=10000'))).body).toEqual({ issues: [], total: GROUPS.length });
    expect((await getJson(t, '/api/projects/no-such-project/issues')).status).toBe(404);
  });

  it('refuses a parameter a route does not take with 400 naming those it does', async () => {
    const someIssue = (await getJson(t, url('/issues?limit=1'))).body.issues[0].fingerprint;
    const someEvent = (await getJson(t, url('/events?limit=1'))).body.events[0].id;
    const cases: [string, RegExp][] = [
      // A misspelt filter would otherwise answer the whole list as if filtered.
      [
        '/events?issue=abc',
        /unknown parameter "issue"; allowed: level, release, .*fingerprint, q, crash, before, limit, days, from, to, tag\.<key>/,
      ],
      [
        '/issues?page=2',
        /unknown parameter "page"; allowed: status, level, release, environment, assignee, q, sort, limit, offset, days, from, to/,
      ],
      ['/overview?limit=5', /unknown parameter "limit"; allowed: days, from, to/],
      [`/issues/${someIssue}?status=resolved`, /unknown parameter "status"; allowed: days, from, to/],
      ['/releases?sort=crash_free', /unknown parameter "sort"/],
      [`/releases/${encodeURIComponent('shop@1.0.0')}?limit=1`, /unknown parameter "limit"/],
      [`/events/${someEvent}?full=1`, /unknown parameter "full"; this route takes none/],
    ];
    for (const [path, message] of cases) {
      const res = await t.api(url(path));
      expect(res.status, path).toBe(400);
      expect((await res.json()).error, path).toMatch(message);
    }
    // What the routes take still passes, tag filters included.
    expect((await getJson(t, url('/events?tag.region=eu&days=7&limit=5'))).status).toBe(200);
  });

  it('caps limit at 500 on the issues and events lists', async () => {
    // A project of its own with 501 issues and 501 events (rows written directly: cheap).
    const big = await createProject(t);
    await seedIssues(t.deps.store.db, big.id, 501, NOW - HOUR);
    const issue = await seedIssue(t.deps.store.db, big.id, { lastSeen: NOW - HOUR });
    const seeded = await seedEvents(t.deps.store, {
      projectId: big.id,
      issueId: issue.id,
      fingerprint: issue.fingerprint,
      count: 501,
      start: NOW - 2 * HOUR,
      step: 1000,
    });
    const bigUrl = (path: string) => `/api/projects/${big.slug}${path}`;
    for (const limit of ['500', '501', '100000']) {
      const issues = (await getJson(t, bigUrl(`/issues?limit=${limit}`))).body;
      expect(issues.total, limit).toBe(502);
      expect(issues.issues, limit).toHaveLength(500);
      const events = (await getJson(t, bigUrl(`/events?limit=${limit}`))).body;
      expect(
        events.events.map((e: any) => e.id),
        limit,
      ).toEqual(Array.from({ length: 500 }, (_, i) => seeded.last - i));
      expect(events.more, limit).toBe(true);
      expect(events.next_before, limit).toBe(seeded.last - 499);
    }
    const rest = (await getJson(t, bigUrl(`/events?limit=100000&before=${seeded.last - 499}`))).body;
    expect(rest).toMatchObject({ more: false, next_before: null });
    expect(rest.events.map((e: any) => e.id)).toEqual([seeded.first]);
    expect((await getJson(t, bigUrl('/issues?limit=100000&offset=500'))).body.issues).toHaveLength(2);
  });

  it('returns issue detail with timeline, breakdown and the newest and oldest stored events', async () => {
    for (const w of [
      { query: '', window: defaultWindow },
      { query: '?days=2', window: { from: NOW - 2 * DAY, to: NOW } },
      {
        query: `?from=${iso(NOW - 5 * DAY - 30 * 60_000)}&to=${iso(NOW - 3 * DAY)}`,
        window: { from: NOW - 5 * DAY - 30 * 60_000, to: NOW - 3 * DAY },
      },
    ]) {
      for (const g of GROUPS) {
        const { status, body } = await getJson(t, url(`/issues/${fingerprintOf.get(g.key)}${w.query}`));
        expect(status).toBe(200);
        const list = eventsOf(g.key);
        const { timeline, breakdown, latest_event_id, oldest_event_id, from, to, ...issue } = body;
        expect(issue).toEqual(expectedIssue(g.key));
        expect(from).toBe(iso(w.window.from));
        expect(to).toBe(iso(w.window.to));
        expect(timeline).toEqual(
          bucketsOf(w.window).map((b) => ({
            bucket: iso(b),
            events: list.filter((e) => hourOf(e.timestamp) === b).length,
          })),
        );
        const inWin = list.filter((e) => inWindow(w.window, e.timestamp));
        const top = (values: (string | null)[]) => {
          const counts = new Map<string, number>();
          for (const v of values) if (v) counts.set(v, (counts.get(v) ?? 0) + 1);
          return [...counts]
            .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
            .slice(0, 10)
            .map(([value, count]) => ({ value, count }));
        };
        expect(breakdown).toEqual({
          release: top(inWin.map((e) => e.release)),
          device_model: top(inWin.map((e) => e.deviceModel)),
          // With the OS name: a bare `14` says nothing when an issue spans platforms.
          os_version: top(inWin.map((e) => `${e.osName} ${e.osVersion}`)),
          environment: top(inWin.map((e) => e.environment)),
        });
        const sorted = byTime(list);
        expect(latest_event_id).toBe(idOf.get(sorted[sorted.length - 1].eventId));
        expect(oldest_event_id).toBe(idOf.get(sorted[0].eventId));
      }
    }
    expect((await getJson(t, url('/issues/0123456789abcdef0123456789abcdef'))).status).toBe(404);
    expect((await getJson(t, url(`/issues/${fingerprintOf.get('cart')}?days=91`))).status).toBe(400);
  });

  it('lists events newest first with every summary field', async () => {
    const { body } = await getJson(t, url('/events?limit=500'));
    expect(body.more).toBe(false);
    expect(body.next_before).toBeNull();
    const ids = body.events.map((e: any) => e.id);
    expect(ids).toEqual([...ids].sort((a, b) => b - a));
    const spec = new Map(events.map((e) => [e.eventId, e]));
    for (const e of body.events) {
      const s = spec.get(e.event_id)!;
      expect(e).toEqual({
        id: idOf.get(s.eventId),
        event_id: s.eventId,
        time: iso(s.timestamp),
        received_at: iso(NOW),
        level: s.group.level,
        title: titleOf(s.group),
        // Messages: the message; exceptions: the main exception's value.
        message: s.group.value,
        release: s.release,
        dist: '',
        environment: s.environment,
        platform: 'node',
        fingerprint: fingerprintOf.get(s.group.key),
        crash: isCrash(s.group),
        error_type: s.group.kind === 'exception' ? s.group.type : '',
        error_location: s.group.kind === 'exception' ? `${s.group.file}:${s.group.line}` : '',
        screen: s.screen,
        user: s.userId
          ? { id: s.userId, email: `${s.userId}@example.com`, username: null, ip_address: '10.0.0.7' }
          : null,
        device: { id: s.deviceId, model: s.deviceModel },
        os: { name: 'Debian', version: s.osVersion },
        tags: expect.objectContaining(s.tags),
      });
    }
  });

  it('filters events by every exact-match field, tags, q, crash and window', async () => {
    const ids = async (query: string) => {
      const { status, body } = await getJson(t, url(`/events?limit=500&${query}`));
      expect(status, query).toBe(200);
      return new Set<number>(body.events.map((e: any) => e.id));
    };
    const want = (pred: (e: EventSpec) => boolean) => new Set(events.filter(pred).map((e) => idOf.get(e.eventId)!));
    const cases: [string, (e: EventSpec) => boolean][] = [
      ['level=warning', (e) => e.group.level === 'warning'],
      ['level=fatal', (e) => e.group.level === 'fatal'],
      [`release=${encodeURIComponent(RELEASES[2])}`, (e) => e.release === RELEASES[2]],
      [`release=${encodeURIComponent(RELEASES[3])}`, (e) => e.release === RELEASES[3]],
      ['release=', (e) => e.release === ''],
      ['environment=staging', (e) => e.environment === 'staging'],
      ['platform=node', () => true],
      ['platform=python', () => false],
      ['error_type=ConnectionError', (e) => e.group.type === 'ConnectionError'],
      ['user_id=user-3', (e) => e.userId === 'user-3'],
      ['device_id=dev-2', (e) => e.deviceId === 'dev-2'],
      [`device_model=${encodeURIComponent('iPhone15,2')}`, (e) => e.deviceModel === 'iPhone15,2'],
      ['os_version=17.4', (e) => e.osVersion === '17.4'],
      [`screen=${encodeURIComponent('POST /checkout')}`, (e) => e.screen === 'POST /checkout'],
      ['error_location=cart.js:42', (e) => e.group.key === 'cart'],
      [`fingerprint=${fingerprintOf.get('db')}`, (e) => e.group.key === 'db'],
      ['fingerprint=ffffffffffffffffffffffffffffffff', () => false],
      ['tag.feature=search', (e) => e.tags.feature === 'search'],
      ['tag.feature=search&tag.region=eu', (e) => e.tags.feature === 'search' && e.tags.region === 'eu'],
      [
        `tag.region=us&fingerprint=${fingerprintOf.get('cart')}`,
        (e) => e.tags.region === 'us' && e.group.key === 'cart',
      ],
      ['tag.nope=x', () => false],
      ['q=WARMED', (e) => e.group.key === 'cache-info'],
      ['crash=1', (e) => isCrash(e.group)],
      ['crash=true&environment=production', (e) => isCrash(e.group) && e.environment === 'production'],
      ['crash=0', () => true],
      [
        'level=error&release=app%401.1.0&user_id=user-1',
        (e) => e.group.level === 'error' && e.release === 'app@1.1.0' && e.userId === 'user-1',
      ],
      ['days=1', (e) => inWindow({ from: NOW - DAY, to: NOW }, e.timestamp)],
      [
        `from=${iso(NOW - 4 * DAY)}&to=${iso(NOW - 2 * DAY)}`,
        (e) => inWindow({ from: NOW - 4 * DAY, to: NOW - 2 * DAY }, e.timestamp),
      ],
      [`to=${iso(NOW - 3 * DAY)}`, (e) => inWindow({ from: NOW - 10 * DAY, to: NOW - 3 * DAY }, e.timestamp)],
    ];
    for (const [query, pred] of cases) {
      const expected = want(pred);
      expect(
        expected.size > 0 || query.includes('python') || query.includes('nope') || query.includes('ffff'),
        query,
      ).toBe(true);
      expect(await ids(query), query).toEqual(expected);
    }
    for (const bad of ['crash=maybe', 'before=abc', 'before=0', 'limit=0', 'days=91', 'from=yesterday']) {
      expect((await getJson(t, url(`/events?${bad}`))).status, bad).toBe(400);
    }
  });

  it('returns event detail by id and by event_id with the full stored event', async () => {
    const crash = byTime(eventsOf('checkout-crash'))[0];
    const message = byTime(eventsOf('payment-warning'))[0];
    for (const s of [crash, message]) {
      const id = idOf.get(s.eventId)!;
      const byId = await getJson(t, url(`/events/${id}`));
      expect(byId.status).toBe(200);
      const dashed = `${s.eventId.slice(0, 8)}-${s.eventId.slice(8, 12)}-${s.eventId.slice(12, 16)}-${s.eventId.slice(16, 20)}-${s.eventId.slice(20)}`;
      const byEventId = await getJson(t, url(`/events/${dashed.toUpperCase()}`));
      expect(byEventId.body).toEqual(byId.body);
      const d = byId.body;
      expect(d.id).toBe(id);
      expect(d.event_id).toBe(s.eventId);
      expect(d.time).toBe(iso(s.timestamp));
      expect(d.fingerprint).toBe(fingerprintOf.get(s.group.key));
      expect(d.crash).toBe(isCrash(s.group));
      expect(d.breadcrumbs).toHaveLength(2);
      expect(d.breadcrumbs[1]).toMatchObject({ category: 'console', message: 'loading cart' });
      expect(d.tags).toMatchObject(s.tags);
      expect(d.contexts.runtime).toEqual({ name: 'node', version: 'v20.20.2' });
      expect(d.contexts.os).toMatchObject({ name: 'Debian', version: s.osVersion });
      if (s.userId)
        expect(d.user).toMatchObject({ id: s.userId, email: `${s.userId}@example.com`, ip_address: '10.0.0.7' });
      expect(d.sdk).toMatchObject({ name: 'sentry.javascript.node', version: '11.12.0' });
      expect(d.server_name).toBe('web-1');
      expect(d.extra).toEqual({ attempt: 1 });
      expect(d.symbolicated).toBe(false);
      expect(d.raw_encoding).toBe('json');
      expect(d.raw.event_id).toBe(s.eventId);
      expect(d.raw.timestamp).toBe(s.timestamp / 1000);
      if (s.group.kind === 'exception') {
        expect(d.exceptions).toHaveLength(1);
        const ex = d.exceptions[0];
        expect(ex).toMatchObject({ type: s.group.type, value: s.group.value, mechanism: { handled: s.group.handled } });
        expect(ex.frames.map((f: any) => f.function)).toEqual([
          'asyncRunEntryPointWithESMLoader',
          'handle',
          s.group.fn,
        ]);
        expect(ex.frames[2]).toMatchObject({
          filename: `/srv/app/src/${s.group.file}`,
          lineno: s.group.line,
          in_app: true,
        });
        expect(ex.symbolicated_frames).toBeNull();
        expect(d.raw.exception.values[0].stacktrace.frames).toHaveLength(3);
      } else {
        expect(d.exceptions).toEqual([]);
        expect(d.message).toBe(s.group.value);
        expect(d.raw.message).toBe(s.group.value);
      }
    }
    // Symbolicated frames (one list per exception, as symbolication stores them) go beside the originals;
    // a raw payload that is not JSON comes back as base64.
    const id = idOf.get(crash.eventId)!;
    const frames = [{ function: 'CheckoutView.render', filename: 'src/checkout/view.tsx', lineno: 88, in_app: true }];
    await t.deps.store.db
      .updateTable('events')
      .set({ symbolicated: JSON.stringify([frames]) })
      .where('id', '=', id)
      .execute();
    const symbolicated = (await getJson(t, url(`/events/${id}`))).body;
    expect(symbolicated.symbolicated).toBe(true);
    expect(symbolicated.exceptions[0].symbolicated_frames).toEqual(frames);
    expect(symbolicated.exceptions[0].frames).toHaveLength(3);
    expect(symbolicated.raw_encoding).toBe('json');
    // A stored payload that is not JSON (ingest never stores one) still answers, as base64;
    // here in a blob of the row's own, as rows written before payload chunks keep it.
    await t.deps.store.db
      .updateTable('events')
      .set({ raw: compress(Buffer.from([0xff, 0x00, 0x10])), payload_chunk: null })
      .where('id', '=', id)
      .execute();
    const notJson = await getJson(t, url(`/events/${id}`));
    expect(notJson.status).toBe(200);
    expect(notJson.body.raw_encoding).toBe('base64');
    expect(notJson.body.raw).toBe('/wAQ');
    expect(notJson.body.exceptions).toEqual([]);
    expect((await getJson(t, url('/events/999999999'))).status).toBe(404);
    expect((await getJson(t, url('/events/0123456789abcdef0123456789abcdef'))).status).toBe(404);
    expect((await getJson(t, url('/events/not-an-id'))).status).toBe(404);
  });

  function expectedRelease(release: string, w: Window) {
    const list = events.filter((e) => e.release === release);
    const inW = list.filter((e) => inBuckets(w, e.timestamp));
    const s = sessionTotals(w, sessions, aggregates, release);
    // Users: distinct dids of the release's sessions in the window, crashed when any of theirs crashed.
    const mine = sessions.filter((x) => x.release === release && inBuckets(w, x.started) && x.did);
    const u = {
      total: new Set(mine.map((x) => x.did)).size,
      crashed: new Set(mine.filter((x) => x.status === 'crashed').map((x) => x.did)).size,
    };
    const introduced = GROUPS.filter((g) => {
      const first = byTime(eventsOf(g.key))[0];
      return first.release === release && inWindow(w, first.timestamp);
    });
    return {
      release,
      platforms: ['node'],
      first_seen: iso(Math.min(...list.map((e) => e.timestamp))),
      last_seen: iso(Math.max(...list.map((e) => e.timestamp))),
      events: inW.length,
      crashes: inW.filter((e) => isCrash(e.group)).length,
      errors: inW.filter((e) => e.group.level === 'error' && !isCrash(e.group)).length,
      // The seeded sessions hold no ANR (test/read/anr.test.ts covers the ANR rate).
      sessions: { ...s, anr: 0 },
      crash_free_rate: rate(s),
      users: u,
      crash_free_users_rate: u.total === 0 ? null : 1 - u.crashed / u.total,
      anr_rate: s.total === 0 ? null : 0,
      new_issues: introduced.length,
      // Releases only events reveal: nothing sentry-cli recorded.
      date_created: null,
      date_released: null,
      commit_count: 0,
      commits: [],
      deploy_count: 0,
      deploys: [],
    };
  }

  it('lists releases with events, sessions, crash-free rate and new issues', async () => {
    for (const [query, w] of [
      ['', defaultWindow],
      ['?days=30', { from: NOW - 30 * DAY, to: NOW }],
      ['?days=1', { from: NOW - DAY, to: NOW }],
    ] as const) {
      const { status, body } = await getJson(t, url(`/releases${query}`));
      expect(status).toBe(200);
      const active = RELEASES.filter((r) => {
        const ts = events.filter((e) => e.release === r).map((e) => e.timestamp);
        return Math.max(...ts) >= w.from || sessionTotals(w, sessions, aggregates, r).total > 0;
      });
      const want = active
        .map((r) => expectedRelease(r, w))
        .sort((a, b) => Date.parse(b.first_seen) - Date.parse(a.first_seen));
      expect(body.releases.map((r: any) => r.release)).toEqual(want.map((r) => r.release));
      for (let i = 0; i < want.length; i++) {
        const { crash_free_rate, ...rest } = body.releases[i];
        const { crash_free_rate: wantRate, ...wantRest } = want[i];
        expect(rest).toEqual(wantRest);
        if (wantRate === null) expect(crash_free_rate).toBeNull();
        else expect(crash_free_rate).toBeCloseTo(wantRate, 12);
      }
    }
  });

  it('returns release detail for versions with @, + and / (raw or %2F)', async () => {
    const w = { from: NOW - 5 * DAY, to: NOW };
    for (const release of RELEASES) {
      // Encoded (%40, %2B, %2F) and raw in the path.
      const paths = [encodeURIComponent(release), release];
      for (const path of paths) {
        const { status, body } = await getJson(t, url(`/releases/${path}?days=5`));
        expect(status, path).toBe(200);
        const { crash_free_rate, ...rel } = body.release;
        const { crash_free_rate: wantRate, ...wantRel } = expectedRelease(release, w);
        expect(rel).toEqual(wantRel);
        expect(crash_free_rate === null ? null : Number(crash_free_rate.toFixed(12))).toEqual(
          wantRate === null ? null : Number(wantRate.toFixed(12)),
        );
        expect(body.from).toBe(iso(w.from));
        expect(body.to).toBe(iso(w.to));
        const buckets = bucketsOf(w);
        expect(body.timeline).toEqual(
          buckets.map((b) => {
            const inB = events.filter((e) => e.release === release && hourOf(e.timestamp) === b);
            return { bucket: iso(b), events: inB.length, crashes: inB.filter((e) => isCrash(e.group)).length };
          }),
        );
        const days = [...new Set(buckets.map(dayOf))];
        expect(body.daily_health.map((d: any) => d.day)).toEqual(days.map(iso));
        for (const [i, day] of days.entries()) {
          const dw = { from: Math.max(day, buckets[0]), to: Math.min(day + DAY, w.to) };
          const s = sessionTotals(dw, sessions, aggregates, release);
          const got = body.daily_health[i];
          expect({ total: got.total, crashed: got.crashed, errored: got.errored }).toEqual(s);
          if (s.total === 0) expect(got.crash_free_rate).toBeNull();
          else expect(got.crash_free_rate).toBeCloseTo(rate(s)!, 12);
        }
        const introduced = GROUPS.filter((g) => byTime(eventsOf(g.key))[0].release === release).map((g) =>
          fingerprintOf.get(g.key),
        );
        const present = GROUPS.filter((g) => byTime(eventsOf(g.key)).at(-1)!.release === release).map((g) =>
          fingerprintOf.get(g.key),
        );
        expect(new Set(body.issues_introduced.map((i: any) => i.fingerprint))).toEqual(new Set(introduced));
        expect(new Set(body.issues_present.map((i: any) => i.fingerprint))).toEqual(new Set(present));
        for (const issue of [...body.issues_introduced, ...body.issues_present]) {
          const key = [...fingerprintOf].find(([, f]) => f === issue.fingerprint)![0];
          expect(issue).toEqual({ ...expectedIssue(key), sparkline: expectedSparkline(key) });
        }
      }
    }
    expect((await getJson(t, url('/releases/no-such-release'))).status).toBe(404);
    expect((await getJson(t, url(`/releases/${encodeURIComponent(RELEASES[0])}?from=2026-01-01`))).status).toBe(400);
  });

  it('returns the overview with totals, levels, new issues, crash-free and the per-release timeline', async () => {
    for (const [query, w] of [
      ['', defaultWindow],
      ['?days=1', { from: NOW - DAY, to: NOW }],
      [
        `?from=${iso(NOW - 4 * DAY)}&to=${iso(NOW - 2 * DAY + 20 * 60_000)}`,
        { from: NOW - 4 * DAY, to: NOW - 2 * DAY + 20 * 60_000 },
      ],
    ] as const) {
      const { status, body } = await getJson(t, url(`/overview${query}`));
      expect(status).toBe(200);
      const inW = events.filter((e) => inBuckets(w, e.timestamp));
      const timeline = new Map<string, { bucket: string; release: string; events: number; crashes: number }>();
      for (const e of inW) {
        const k = `${hourOf(e.timestamp)}|${e.release}`;
        const item = timeline.get(k) ?? { bucket: iso(hourOf(e.timestamp)), release: e.release, events: 0, crashes: 0 };
        item.events += 1;
        if (isCrash(e.group)) item.crashes += 1;
        timeline.set(k, item);
      }
      // crash_free: among releases with sessions in the window, the one first seen last (its
      // first event or first session hour, whichever came first), ties to the greater version.
      const allStarts = [
        ...sessions.map((s) => ({ release: s.release, started: s.started })),
        ...aggregates.map((a) => ({ release: a.release, started: a.started })),
      ];
      const inWindowReleases = new Set(allStarts.filter((s) => inBuckets(w, s.started)).map((s) => s.release));
      let crashFree: any = null;
      if (inWindowReleases.size > 0) {
        const firstSeen = (release: string) =>
          Math.min(
            ...events.filter((e) => e.release === release).map((e) => e.timestamp),
            ...allStarts.filter((s) => s.release === release).map((s) => hourOf(s.started)),
          );
        const release = [...inWindowReleases].sort(
          (a, b) => firstSeen(b) - firstSeen(a) || (b < a ? -1 : b > a ? 1 : 0),
        )[0];
        const s = sessionTotals(w, sessions, aggregates, release);
        crashFree = { release, rate: rate(s), sessions: s.total };
      }
      const { crash_free, ...rest } = body;
      expect(rest).toEqual({
        from: iso(w.from),
        to: iso(w.to),
        totals: {
          events: inW.length,
          crashes: inW.filter((e) => isCrash(e.group)).length,
          errors: inW.filter((e) => e.group.level === 'error' && !isCrash(e.group)).length,
        },
        levels: {
          fatal: inW.filter((e) => e.group.level === 'fatal').length,
          error: inW.filter((e) => e.group.level === 'error').length,
          warning: inW.filter((e) => e.group.level === 'warning').length,
          info: inW.filter((e) => e.group.level === 'info' || e.group.level === 'debug').length,
        },
        new_issues: GROUPS.filter((g) => inWindow(w, byTime(eventsOf(g.key))[0].timestamp)).length,
        regressions: 0,
        timeline: [...timeline.values()].sort((a, b) =>
          a.bucket < b.bucket
            ? -1
            : a.bucket > b.bucket
              ? 1
              : a.release < b.release
                ? -1
                : a.release > b.release
                  ? 1
                  : 0,
        ),
      });
      if (crashFree === null) expect(crash_free).toBeNull();
      else {
        expect(crash_free.release).toBe(crashFree.release);
        expect(crash_free.sessions).toBe(crashFree.sessions);
        expect(crash_free.rate).toBeCloseTo(crashFree.rate, 12);
      }
    }
  });
});
