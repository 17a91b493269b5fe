// Sampling, daily quota (with its reset at UTC midnight on an injected clock) and
// dedupe of resent event ids, all through HTTP and checked in the store.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  envelope,
  errorEvent,
  eventId,
  eventsOf,
  issuesOf,
  makeProject,
  post,
  rowCounts,
  sessionUpdate,
  usageOf,
} from './helpers.js';

describe.each(dialects)('sampling and dedupe on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('keeps the first sample_keep_first events of an issue, then samples at sample_rate; crashes are always kept', async () => {
    const p = await makeProject(t, { sample_keep_first: 2, sample_rate: 0 });
    for (let i = 0; i < 5; i++) {
      const res = await post(
        t,
        p,
        envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now(), fn: 'sampled' }) }]),
      );
      expect(res.status).toBe(200);
    }
    let [issue] = await issuesOf(t, p);
    expect(Number(issue.event_count)).toBe(5);
    expect(Number(issue.stored_count)).toBe(2);
    expect((await eventsOf(t, p)).length).toBe(2);
    expect(await usageOf(t, p)).toBe(5);

    // The same issue crashing: stored although the rate is 0.
    const crash = eventId();
    const res = await post(
      t,
      p,
      envelope({}, [
        { type: 'event', payload: errorEvent({ id: crash, timestamp: t.clock.now(), fn: 'sampled', handled: false }) },
      ]),
    );
    expect(res.status).toBe(200);
    [issue] = await issuesOf(t, p);
    expect(Number(issue.event_count)).toBe(6);
    expect(Number(issue.stored_count)).toBe(3);
    const events = await eventsOf(t, p);
    expect(events.map((e) => e.event_id)).toContain(crash);
    expect(events.find((e) => e.event_id === crash)?.is_crash).toBe(1);
  });

  it('gives an issue none of whose events was stored no first or last event id, through the API too', async () => {
    const p = await makeProject(t, { sample_keep_first: 0, sample_rate: 0 });
    for (let i = 0; i < 2; i++) {
      expect(
        (
          await post(
            t,
            p,
            envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now(), fn: 'never-stored' }) }]),
          )
        ).status,
      ).toBe(200);
    }
    const [issue] = (await (await t.api(`/api/projects/${p.slug}/issues`)).json()).issues;
    expect(issue).toMatchObject({ event_count: 2, stored_count: 0, first_seen_id: null, last_seen_id: null });
  });

  it('stores every event with sample_rate 1 past keep-first', async () => {
    const p = await makeProject(t, { sample_keep_first: 0, sample_rate: 1 });
    for (let i = 0; i < 3; i++) {
      expect(
        (await post(t, p, envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now() }) }]))).status,
      ).toBe(200);
    }
    const [issue] = await issuesOf(t, p);
    expect(Number(issue.event_count)).toBe(3);
    expect(Number(issue.stored_count)).toBe(3);
  });

  it('stores and counts a resent event_id once', async () => {
    const p = await makeProject(t);
    const id = eventId();
    const body = envelope({ event_id: id }, [
      { type: 'event', payload: errorEvent({ id, timestamp: t.clock.now(), user: 'u1' }) },
    ]);
    const first = await post(t, p, body);
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ id });
    const after = await rowCounts(t);
    // The SDK resends after a timeout: same answer, nothing added.
    const again = await post(t, p, body);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ id });
    expect(await rowCounts(t)).toEqual(after);
    // Twice inside one envelope counts once as well.
    const id2 = eventId();
    const twice = errorEvent({ id: id2, timestamp: t.clock.now() });
    expect(
      (
        await post(
          t,
          p,
          envelope({}, [
            { type: 'event', payload: twice },
            { type: 'event', payload: twice },
          ]),
        )
      ).status,
    ).toBe(200);
    const [issue] = await issuesOf(t, p);
    expect(Number(issue.event_count)).toBe(2);
    expect(Number(issue.stored_count)).toBe(2);
    expect((await eventsOf(t, p)).map((e) => e.event_id).sort()).toEqual([id, id2].sort());
    expect(await usageOf(t, p)).toBe(2);
  });
});

describe.each(dialects)('daily quota on %s', (dialect) => {
  let t: TestServer;
  // One minute before UTC midnight.
  const clock = new ManualClock(Date.UTC(2026, 10, 20, 23, 59, 0));
  beforeAll(async () => {
    t = await startTestServer(dialect, { clock });
  });
  afterAll(async () => {
    await t?.close();
  });

  const events = (n: number) =>
    envelope(
      {},
      Array.from({ length: n }, () => ({ type: 'event', payload: errorEvent({ timestamp: clock.now() }) })),
    );

  it('refuses a whole envelope that would pass the quota, until 00:00 UTC', async () => {
    const p = await makeProject(t, { daily_quota: 3 });
    expect((await post(t, p, events(2))).status).toBe(200);
    const before = await rowCounts(t);

    const refused = await post(t, p, events(2));
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ error: 'daily quota exceeded' });
    expect(refused.headers.get('retry-after')).toBe('60');
    expect(refused.headers.get('x-sentry-rate-limits')).toBe('60:error;default:project:quota');
    expect(await rowCounts(t)).toEqual(before);

    // One more still fits.
    expect((await post(t, p, events(1))).status).toBe(200);
    expect(await usageOf(t, p)).toBe(3);
    clock.advance(30_000);
    const full = await post(t, p, events(1));
    expect(full.status).toBe(429);
    expect(full.headers.get('retry-after')).toBe('30');

    // Sessions are never refused by the quota.
    const s = await post(t, p, envelope({}, [{ type: 'session', payload: sessionUpdate({ started: clock.now() }) }]));
    expect(s.status).toBe(200);

    // A new UTC day: accepted again.
    clock.set(Date.UTC(2026, 10, 21, 0, 0, 0));
    expect((await post(t, p, events(3))).status).toBe(200);
    expect((await post(t, p, events(1))).status).toBe(429);
    expect(await usageOf(t, p)).toBe(6);
    expect(Number((await issuesOf(t, p))[0].event_count)).toBe(6);
  });
});
