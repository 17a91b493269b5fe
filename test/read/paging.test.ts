// Keyset paging of the events list: walking 1 000 events with `before` while
// new events keep arriving loses and repeats nothing, on the plain list and on
// the filtered paths (tag join, fingerprint, exact match).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { listEvents, parseEventListQuery } from '../../src/read/events.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  DAY,
  NOW,
  createProject,
  getJson,
  makeDataset,
  sendEvents,
  type EventSpec,
  type TestProject,
} from './support.js';

describe.each(dialects)('events paging on %s', (dialect) => {
  let t: TestServer;
  let p: TestProject;
  let initial: EventSpec[];
  let extraSeed = 100;

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    initial = makeDataset(7, 1000, NOW, 3);
    await sendEvents(t, p, initial, 16);
  }, 180_000);

  afterAll(async () => {
    await t?.close();
  });

  /** Pages through the list with `query`, sending `perPage` new events between two pages. */
  async function walk(query: string, limit: number, perPage: number, start: number | null = null) {
    const seen: number[] = [];
    const eventIds: string[] = [];
    let before: number | null = start;
    let pages = 0;
    for (;;) {
      const res: { status: number; body: any } = await getJson(
        t,
        `/api/projects/${p.slug}/events?limit=${limit}${query}${before === null ? '' : `&before=${before}`}`,
      );
      expect(res.status).toBe(200);
      const { events, more, next_before } = res.body;
      pages += 1;
      expect(events.length).toBeLessThanOrEqual(limit);
      for (const e of events) {
        seen.push(e.id);
        eventIds.push(e.event_id);
      }
      if (!more) {
        expect(next_before).toBeNull();
        break;
      }
      expect(events).toHaveLength(limit);
      expect(next_before).toBe(events[events.length - 1].id);
      before = next_before;
      if (perPage > 0) await sendEvents(t, p, makeDataset(extraSeed++, perPage, NOW, 1));
    }
    return { seen, eventIds, pages };
  }

  it('walks 1 000 events with before while new events arrive: none lost, none repeated', async () => {
    const { seen, eventIds, pages } = await walk('', 37, 5);
    expect(pages).toBe(Math.ceil(1000 / 37));
    expect(seen).toHaveLength(1000);
    expect(new Set(seen).size).toBe(1000);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeLessThan(seen[i - 1]);
    expect(new Set(eventIds)).toEqual(new Set(initial.map((e) => e.eventId)));
  });

  it('pages the same way through filtered lists', async () => {
    const known = new Set(initial.map((e) => e.eventId));
    const all = (await getJson(t, `/api/projects/${p.slug}/events?limit=500`)).body;
    const fingerprint = all.events.find((e: any) => e.title.startsWith('TypeError'))!.fingerprint;
    // Start above the newest initial event: events sent by the walk above are newer still.
    const start = Math.max(...all.events.filter((e: any) => known.has(e.event_id)).map((e: any) => e.id)) + 1;
    for (const [query, pred] of [
      ['&tag.feature=search', (e: EventSpec) => e.tags.feature === 'search'],
      ['&tag.feature=search&tag.region=us', (e: EventSpec) => e.tags.feature === 'search' && e.tags.region === 'us'],
      [`&fingerprint=${fingerprint}`, (e: EventSpec) => e.group.key === 'cart'],
      [
        '&environment=staging&crash=1',
        (e: EventSpec) => e.environment === 'staging' && (e.group.level === 'fatal' || !e.group.handled),
      ],
      [`&days=1`, (e: EventSpec) => e.timestamp >= NOW - DAY],
    ] as const) {
      const { seen, eventIds } = await walk(query, 23, 2, start);
      expect(new Set(seen).size, query).toBe(seen.length);
      // Events sent while paging are newer than the first page, so only initial ones appear.
      const initialSeen = eventIds.filter((id) => known.has(id));
      expect(initialSeen.length, query).toBe(eventIds.length);
      expect(new Set(initialSeen), query).toEqual(new Set(initial.filter(pred).map((e) => e.eventId)));
    }
  });

  it('examines at most the scan budget per page and still loses nothing', async () => {
    const known = new Set(initial.map((e) => e.eventId));
    const project = (
      await t.deps.store.db.selectFrom('projects').select('id').where('slug', '=', p.slug).executeTakeFirstOrThrow()
    ).id;
    const newest = (await getJson(t, `/api/projects/${p.slug}/events?limit=500`)).body.events.filter((e: any) =>
      known.has(e.event_id),
    );
    const start = Math.max(...newest.map((e: any) => e.id)) + 1;
    // Each case: the query, what it matches, and which events the walking index holds.
    const all = () => true;
    for (const [query, pred, walked] of [
      ['q=invalid array', (e: EventSpec) => e.group.key === 'checkout-crash', all],
      [
        'tag.region=eu&environment=staging',
        (e: EventSpec) => e.tags.region === 'eu' && e.environment === 'staging',
        (e: EventSpec) => e.tags.region === 'eu',
      ],
      [
        'user_id=user-4&crash=1',
        (e: EventSpec) => e.userId === 'user-4' && (e.group.level === 'fatal' || !e.group.handled),
        (e: EventSpec) => e.userId === 'user-4',
      ],
      ['device_model=Pixel%208', (e: EventSpec) => e.deviceModel === 'Pixel 8', all],
    ] as const) {
      const params = Object.fromEntries(new URLSearchParams(`${query}&limit=10`));
      const found: string[] = [];
      let before: number | undefined = start;
      let pages = 0;
      let shortPages = 0;
      for (;;) {
        const page = await listEvents(
          t.deps.store.db,
          project,
          parseEventListQuery({ ...params, before: String(before) }, NOW),
          { scanBudget: 40 },
        );
        pages += 1;
        if (page.more && page.events.length < 10) shortPages += 1;
        found.push(...page.events.map((e) => e.event_id));
        if (!page.more) break;
        expect(page.next_before!).toBeLessThan(before!);
        before = page.next_before!;
      }
      const want = initial.filter(pred).map((e) => e.eventId);
      expect(new Set(found), query).toEqual(new Set(want));
      expect(found.length, query).toBe(want.length);
      // Each page walked at most 41 index entries (the budget and the floor entry itself).
      expect(pages, query).toBeGreaterThanOrEqual(Math.ceil(initial.filter(walked).length / 41));
      if (query.startsWith('q=')) expect(shortPages, query).toBeGreaterThan(pages / 2);
    }
  });
});
