// Time windows: the parsing rules of docs/api.md "Time window" (days 1..90, RFC 3339 from/to,
// to exclusive, span at most 90 days, from before to), the same 400s on every
// route that takes a window, and `to` being exclusive on real stored data.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { ReadInputError } from '../../src/errors.js';
import { bucketList, dayList, parseRfc3339, parseWindow } from '../../src/read/window.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
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

describe('parseWindow', () => {
  const now = NOW;
  it('defaults to the 7 days ending now', () => {
    expect(parseWindow({}, now)).toEqual({ from: now - 7 * DAY, to: now });
    expect(parseWindow({ days: '30' }, now)).toEqual({ from: now - 30 * DAY, to: now });
    expect(parseWindow({}, now, { optional: true })).toBeNull();
  });

  it('takes from and to, to defaulting to now and from to to minus days', () => {
    expect(parseWindow({ from: '2026-03-01T00:00:00Z' }, now)).toEqual({ from: Date.UTC(2026, 2, 1), to: now });
    expect(parseWindow({ to: '2026-03-01T00:00:00Z', days: '2' }, now)).toEqual({
      from: Date.UTC(2026, 1, 27),
      to: Date.UTC(2026, 2, 1),
    });
    expect(parseWindow({ from: '2026-03-01T02:00:00+02:00', to: '2026-03-01T10:30:00.5Z' }, now)).toEqual({
      from: Date.UTC(2026, 2, 1),
      to: Date.UTC(2026, 2, 1, 10, 30, 0, 500),
    });
  });

  it('accepts a span of exactly 90 days and refuses 91', () => {
    const to = '2026-03-01T00:00:00.000Z';
    expect(parseWindow({ from: iso(Date.parse(to) - 90 * DAY), to }, now)).toEqual({
      from: Date.parse(to) - 90 * DAY,
      to: Date.parse(to),
    });
    expect(() => parseWindow({ from: iso(Date.parse(to) - 90 * DAY - 1), to }, now)).toThrow(/at most 90 days/);
    expect(() => parseWindow({ from: iso(Date.parse(to) - 91 * DAY), to }, now)).toThrow(ReadInputError);
    expect(parseWindow({ days: '90' }, now)).toEqual({ from: now - 90 * DAY, to: now });
  });

  it('refuses from at or after to, and bad values, with messages saying what is allowed', () => {
    expect(() => parseWindow({ from: '2026-03-02T00:00:00Z', to: '2026-03-01T00:00:00Z' }, now)).toThrow(
      'from must be before to',
    );
    expect(() => parseWindow({ from: '2026-03-01T00:00:00Z', to: '2026-03-01T00:00:00Z' }, now)).toThrow(
      'from must be before to',
    );
    for (const days of ['0', '91', '-1', '1.5', 'seven', '', '1e1']) {
      expect(() => parseWindow({ days }, now), days).toThrow(/days must be an integer from 1 to 90/);
    }
    for (const bad of [
      'yesterday',
      '2026-03-01',
      '2026-13-01T00:00:00Z',
      '2026-02-30T00:00:00Z',
      '2026-03-01T25:00:00Z',
      '2026-03-01T00:00:00',
      '1772323200',
      '',
    ]) {
      expect(() => parseWindow({ from: bad }, now), bad).toThrow(/from must be an RFC 3339 date-time/);
      expect(() => parseWindow({ to: bad }, now), bad).toThrow(/to must be an RFC 3339 date-time/);
    }
    expect(parseRfc3339('2024-02-29T23:59:59.999Z')).toBe(Date.UTC(2024, 1, 29, 23, 59, 59, 999));
    expect(parseRfc3339('2025-02-29T00:00:00Z')).toBeNull();
    expect(parseRfc3339('2100-02-29T00:00:00Z')).toBeNull();
    expect(parseRfc3339('2000-02-29T00:00:00Z')).toBe(Date.UTC(2000, 1, 29));
    expect(parseRfc3339('0050-06-01T00:00:00Z')).toBe(Date.parse('0050-06-01T00:00:00Z'));
    expect(parseRfc3339('2026-04-31T00:00:00Z')).toBeNull();
  });

  it('maps a window to the hour buckets starting inside it and the UTC days they touch', () => {
    const w = { from: Date.UTC(2026, 2, 1, 22, 30), to: Date.UTC(2026, 2, 2, 2, 0) };
    expect(bucketList(w).map(iso)).toEqual([
      '2026-03-01T23:00:00.000Z',
      '2026-03-02T00:00:00.000Z',
      '2026-03-02T01:00:00.000Z',
    ]);
    expect(dayList(w).map(iso)).toEqual(['2026-03-01T00:00:00.000Z', '2026-03-02T00:00:00.000Z']);
    expect(bucketList({ from: now - 7 * DAY, to: now })).toHaveLength(7 * 24);
    expect(bucketList({ from: Date.UTC(2026, 2, 1, 10, 10), to: Date.UTC(2026, 2, 1, 10, 50) })).toEqual([]);
  });
});

describe.each(dialects)('windows over HTTP on %s', (dialect) => {
  let t: TestServer;
  let p: TestProject;
  /** An event exactly on an hour boundary, and one a millisecond before it. */
  const edge = Date.UTC(2026, 2, 9, 10, 0, 0, 0);
  let onEdge: EventSpec;
  let justBefore: EventSpec;

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    const spec = (timestamp: number, group = GROUPS[0]): EventSpec => ({
      eventId: newEventId(),
      group,
      timestamp,
      release: 'app@1.0.0',
      environment: 'production',
      userId: 'u1',
      deviceModel: 'Pixel 8',
      deviceId: 'd1',
      osName: 'Android',
      osVersion: '14',
      screen: 'Main',
      tags: { k: 'v' },
    });
    onEdge = spec(edge);
    justBefore = spec(edge - 1, GROUPS[4]);
    await sendEvents(t, p, [onEdge, justBefore]);
  });

  afterAll(async () => {
    await t?.close();
  });

  const url = (path: string) => `/api/projects/${p.slug}${path}`;

  it('refuses bad windows with 400 and a JSON error on every route that takes one', async () => {
    const routes = ['/overview', '/issues', '/events', '/releases', '/releases/app%401.0.0'];
    const fp = (await getJson(t, url('/events'))).body.events[0].fingerprint;
    routes.push(`/issues/${fp}`);
    const bad = [
      ['days=0', /days must be an integer from 1 to 90/],
      ['days=91', /days must be an integer from 1 to 90/],
      ['days=abc', /days must be an integer/],
      ['from=2026-03-01', /from must be an RFC 3339 date-time/],
      ['to=tomorrow', /to must be an RFC 3339 date-time/],
      [`from=${iso(NOW - 91 * DAY)}`, /at most 90 days/],
      [`from=${iso(NOW - DAY)}&to=${iso(NOW - 2 * DAY)}`, /from must be before to/],
    ] as const;
    for (const route of routes) {
      for (const [query, message] of bad) {
        const res = await t.api(url(`${route}?${query}`));
        expect(res.status, `${route}?${query}`).toBe(400);
        const body = await res.json();
        expect(Object.keys(body)).toEqual(['error']);
        expect(body.error).toMatch(message);
      }
      const ok = await t.api(url(`${route}?from=${iso(NOW - 90 * DAY)}`));
      expect(ok.status, route).toBe(200);
    }
  });

  it('treats to as exclusive and from as inclusive', async () => {
    const ids = async (query: string) =>
      (await getJson(t, url(`/events?${query}`))).body.events.map((e: any) => e.event_id).sort();
    expect(await ids(`to=${iso(edge)}&days=1`)).toEqual([justBefore.eventId]);
    expect(await ids(`to=${iso(edge + 1)}&days=1`)).toEqual([onEdge.eventId, justBefore.eventId].sort());
    expect(await ids(`from=${iso(edge)}`)).toEqual([onEdge.eventId]);
    expect(await ids(`from=${iso(edge - 1)}&to=${iso(edge)}`)).toEqual([justBefore.eventId]);
    // No window at all: the events list is unbounded.
    expect(await ids('')).toHaveLength(2);

    // Aggregates: an hour bucket belongs to the window when it starts inside it.
    const totals = async (from: number, to: number) =>
      (await getJson(t, url(`/overview?from=${iso(from)}&to=${iso(to)}`))).body.totals.events;
    expect(await totals(edge - HOUR, edge)).toBe(1); // 09:00 bucket: the event at 09:59:59.999
    expect(await totals(edge - HOUR, edge + 1)).toBe(2); // the 10:00 bucket starts before to
    expect(await totals(edge, edge + HOUR)).toBe(1);
    expect(await totals(edge - HOUR + 1, edge)).toBe(0); // the 09:00 bucket starts before from
  });
});
