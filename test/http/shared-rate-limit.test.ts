// The database-backed rate limiter: the budget of a key holds across every limiter
// (server instance) sharing one database, on both dialects, and across two real
// servers on one PostgreSQL database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { leaseSize, SharedRateLimiter } from '../../src/store/rate-limits.js';
import { openTestStore, type TestStore } from '../helpers/factory.js';
import { createTestDatabase, dialects, startTestServer } from '../helpers/server.js';
import { envelope, errorEvent, makeProject, post } from '../ingest/helpers.js';

const MINUTE = 60_000;

describe.each(dialects)('shared rate limiter on %s', (dialect) => {
  let ts: TestStore;
  beforeAll(async () => {
    ts = await openTestStore(dialect);
  });
  afterAll(async () => {
    await ts?.close();
  });

  it('lets exactly the limit through across instances hitting one key at once', async () => {
    const limit = 100;
    expect(leaseSize(limit)).toBeGreaterThan(1); // several requests per database round trip
    const a = new SharedRateLimiter(ts.store, limit);
    const b = new SharedRateLimiter(ts.store, limit);
    const t0 = 1000 * MINUTE + 5_000;
    // Each instance alone asks for more than the limit, so neither is left holding part of
    // a lease it cannot spend (that part would be lost to the other: see SharedRateLimiter).
    const hits = Array.from({ length: 300 }, (_, i) => (i % 2 ? a : b).hit('dsn:k1', t0));
    const decisions = await Promise.all(hits);
    expect(decisions.filter((d) => d.allowed)).toHaveLength(limit);
    expect(decisions.every((d) => d.retryAfterSeconds === 55)).toBe(true);
    // Another key has its own budget; the next minute starts afresh.
    expect((await a.hit('dsn:k2', t0)).allowed).toBe(true);
    expect((await b.hit('dsn:k1', t0 + 1_000)).allowed).toBe(false);
    expect((await b.hit('dsn:k1', t0 + MINUTE)).allowed).toBe(true);
  });

  it('spends a lease in memory: one round trip per lease, not per request', async () => {
    const limit = 500; // lease of 10
    const limiter = new SharedRateLimiter(ts.store, limit);
    const t0 = 2000 * MINUTE;
    for (let i = 0; i < 25; i++) expect((await limiter.hit('api:lease', t0)).allowed).toBe(true);
    const row = await ts.store.db
      .selectFrom('rate_limit_windows')
      .select('claimed')
      .where('key', '=', 'api:lease')
      .where('window_start', '=', t0)
      .executeTakeFirstOrThrow();
    expect(Number(row.claimed)).toBe(30); // three leases of 10
  });

  it('forgets windows that ended more than a minute ago', async () => {
    const limiter = new SharedRateLimiter(ts.store, 10);
    const t0 = 3000 * MINUTE;
    await limiter.hit('api:old', t0);
    await limiter.hit('api:old', t0 + 2 * MINUTE);
    // The sweep runs in the background when a window starts; give it a moment.
    await new Promise((r) => setTimeout(r, 100));
    const windows = await ts.store.db
      .selectFrom('rate_limit_windows')
      .select('window_start')
      .where('key', '=', 'api:old')
      .execute();
    expect(windows.map((w) => Number(w.window_start))).toEqual([t0 + 2 * MINUTE]);
  });

  it('lets requests through when the database does not answer (the write path answers 503)', async () => {
    const broken = await openTestStore(dialect);
    const limiter = new SharedRateLimiter(broken.store, 1);
    await broken.close();
    expect((await limiter.hit('api:x', 4000 * MINUTE)).allowed).toBe(true);
  });
});

describe.runIf(dialects.includes('postgres'))('two servers on one postgres database', () => {
  it('share the per-DSN-key ingest limit', async () => {
    const database = await createTestDatabase('postgres');
    const clock = new ManualClock(5000 * MINUTE + 10_000);
    const env = { RATE_LIMIT: '5' };
    const one = await startTestServer('postgres', { database, clock, env });
    const two = await startTestServer('postgres', { database, clock, env });
    try {
      const project = await makeProject(one);
      const statuses: number[] = [];
      let limited: Response | undefined;
      for (let i = 0; i < 8; i++) {
        const body = envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: clock.now() }) }]);
        const res = await post(i % 2 ? two : one, project, body);
        statuses.push(res.status);
        if (res.status === 429) limited = res;
        await res.arrayBuffer();
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(5);
      expect(statuses.filter((s) => s === 429)).toHaveLength(3);
      expect(limited?.headers.get('x-sentry-rate-limits')).toBe('50::key');
      expect(limited?.headers.get('retry-after')).toBe('50');
    } finally {
      await one.close();
      await two.close();
      await database.drop();
    }
  });
});
