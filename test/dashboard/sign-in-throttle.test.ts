// The dashboard's API-key sign-in throttle over the real server, on SQLite and
// PostgreSQL, with the injected clock: 10 failures per client address or per account in
// 15 minutes, then 429 with Retry-After (the right key included) until the oldest
// failures stop counting; successes do not count; concurrent guesses cannot all pass one
// check; the count lives in the database, so a second instance on it sees it too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import {
  deleteRateLimitWindowsBefore,
  type FailureBucket,
  signInRetryAfterSeconds,
  SignInThrottle,
} from '../../src/store/rate-limits.js';
import {
  createTestDatabase,
  dialects,
  startTestServer,
  type TestDatabase,
  type TestServer,
} from '../helpers/server.js';
import { Client } from './fixture.js';

const KEY = 'throttle-test-key-0123456789abcdef';
const MINUTE = 60_000;
/** 12:00:30 UTC: half a minute into a minute, so Retry-After shows the whole-minute rounding. */
const START = Date.UTC(2026, 0, 10, 12, 0, 30);

describe('signInRetryAfterSeconds', () => {
  it('waits until the oldest minutes leave the window and fewer than the limit remain', () => {
    const at = (m: number) => Date.UTC(2026, 0, 10, 12, m);
    const now = at(5) + 10_000;
    // A limit of 10 failures in 15 minutes, asked at 12:05:10.
    const retryAfter = (buckets: FailureBucket[]) => signInRetryAfterSeconds(buckets, now, 10, 15 * MINUTE);
    // 10 failures at 12:00 and 12:03: one more fits once 12:00's minute (and its 6) is out, at 12:16.
    expect(
      retryAfter([
        { start: at(3), failures: 4 },
        { start: at(0), failures: 6 },
      ]),
    ).toBe((at(16) - now) / 1000);
    // 12 failures: dropping 12:00's 3 leaves 9 < 10, so the same moment.
    expect(
      retryAfter([
        { start: at(0), failures: 3 },
        { start: at(3), failures: 9 },
      ]),
    ).toBe((at(16) - now) / 1000);
    expect(
      retryAfter([
        { start: at(0), failures: 1 },
        { start: at(3), failures: 10 },
      ]),
    ).toBe((at(19) - now) / 1000);
  });
});

describe.each(dialects)('dashboard sign-in throttle (%s)', (dialect) => {
  let database: TestDatabase;
  let clock: ManualClock;
  let a: TestServer;
  let b: TestServer;

  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    clock = new ManualClock(START);
    // Two instances on one database; RATE_LIMIT off: the throttle holds on its own.
    a = await startTestServer(dialect, { database, clock, env: { API_KEYS: KEY, RATE_LIMIT: '0' } });
    b = await startTestServer(dialect, { database, clock, env: { API_KEYS: KEY, RATE_LIMIT: '0' } });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await database?.drop();
  });

  /** A sign-in from the client `address` (the test client is the trusted loopback proxy naming it). */
  const signIn = (t: TestServer, key: string, address = '198.51.100.1') =>
    new Client(t.url).post('/login', { key, next: '/' }, { 'x-forwarded-for': address });
  const clear = () => a.deps.store.db.deleteFrom('rate_limit_windows').execute();

  it('after 10 failures, on either instance, answers 429 to the right key too until 15 minutes after the failures’ minute', async () => {
    await clear();
    clock.set(START);
    for (let i = 0; i < 10; i++) expect((await signIn(i % 2 ? a : b, `wrong-${i}`)).status).toBe(401);
    const refused = await signIn(a, KEY);
    expect(refused.status).toBe(429);
    // The failures' minute (12:00) stops counting at 12:16:00; it is 12:00:30.
    expect(refused.headers.get('retry-after')).toBe(String(15 * 60 + 30));
    expect(await refused.text()).toContain('Too many failed sign-ins');
    expect(refused.headers.getSetCookie().some((l) => l.startsWith('faultline_session='))).toBe(false);
    clock.set(Date.UTC(2026, 0, 10, 12, 15, 59));
    expect((await signIn(b, KEY)).status).toBe(429);
    clock.set(Date.UTC(2026, 0, 10, 12, 16, 0));
    expect((await signIn(b, KEY)).status).toBe(303);
  });

  it('counts failures per account: wrong keys from many addresses count together', async () => {
    await clear();
    clock.set(START);
    for (let i = 0; i < 10; i++) expect((await signIn(a, `wrong-${i}`, `203.0.113.${i + 1}`)).status).toBe(401);
    expect((await signIn(a, KEY, '203.0.113.200')).status).toBe(429);
  });

  it('does not count successful sign-ins', async () => {
    await clear();
    clock.set(START);
    for (let i = 0; i < 9; i++) expect((await signIn(a, `wrong-${i}`)).status).toBe(401);
    for (let i = 0; i < 5; i++) expect((await signIn(b, KEY)).status).toBe(303);
    expect((await signIn(a, 'wrong-9')).status).toBe(401);
    expect((await signIn(a, KEY)).status).toBe(429);
  });

  it('lets at most 10 of many concurrent wrong guesses be checked, and counts only those', async () => {
    await clear();
    clock.set(START);
    const statuses = await Promise.all(
      Array.from({ length: 30 }, (_, i) => signIn(i % 2 ? a : b, `guess-${i}`).then((r) => r.status)),
    );
    const checked = statuses.filter((s) => s === 401).length;
    expect(checked).toBeGreaterThan(0);
    expect(checked).toBeLessThanOrEqual(10);
    expect(statuses.every((s) => s === 401 || s === 429)).toBe(true);
    // Refused guesses are not counted: exactly the rest of the 10 can still be tried.
    for (let i = checked; i < 10; i++) expect((await signIn(a, `late-${i}`)).status).toBe(401);
    expect((await signIn(a, KEY)).status).toBe(429);
  });

  it('limits a client address on its own, and another address on another account is not affected', async () => {
    await clear();
    const throttle = new SignInThrottle(a.deps.store, 10, 15 * MINUTE);
    for (let i = 0; i < 10; i++) expect((await throttle.begin('192.0.2.1', 'alice', START)).allowed).toBe(true);
    expect((await throttle.begin('192.0.2.1', 'bob', START)).allowed).toBe(false);
    expect((await throttle.begin('192.0.2.2', 'alice', START)).allowed).toBe(false);
    expect((await throttle.begin('192.0.2.2', 'carol', START)).allowed).toBe(true);
  });

  it('keeps its counts when the request rate limiter sweeps its past minutes', async () => {
    await clear();
    const throttle = new SignInThrottle(a.deps.store, 10, 15 * MINUTE);
    for (let i = 0; i < 10; i++) expect((await throttle.begin('192.0.2.9', 'dave', START)).allowed).toBe(true);
    await deleteRateLimitWindowsBefore(a.deps.store, START + 5 * MINUTE);
    expect((await throttle.begin('192.0.2.9', 'dave', START + 5 * MINUTE)).allowed).toBe(false);
  });
});
