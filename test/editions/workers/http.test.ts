// The HTTP contract of the serverless edition against the Worker in workerd with a
// real local D1: health, API-key auth, projects CRUD and rotate-key, the rate limit
// kept in D1, 404/405, and ingest's keys and encodings. The same answers the Node
// server gives (test/http); ingest's tables: test/editions/workers/runtime/d1-ingest.test.ts.
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALERTS_CRON } from '../../../src/editions/workers/crons.js';
import { startTestWorker, type TestWorker } from './harness.js';

const HEX32 = /^[0-9a-f]{32}$/;
const dsnKey = (dsn: string) => new URL(dsn).username;

function envelopeWithEvent(eventId = 'a'.repeat(32)): string {
  const event = { event_id: eventId, timestamp: Date.now() / 1000, level: 'error', message: 'boom', platform: 'node' };
  return [JSON.stringify({ event_id: event.event_id }), JSON.stringify({ type: 'event' }), JSON.stringify(event)].join(
    '\n',
  );
}

describe('the Worker with API keys', () => {
  let w: TestWorker;
  beforeAll(async () => {
    w = await startTestWorker({
      API_KEYS: 'secret, other',
      PUBLIC_URL: 'https://errors.example.com/tracker/',
      RATE_LIMIT: '0',
    });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('answers /health with 200 {"status":"ok"} without a key, with a request id and how full D1 is', async () => {
    const res = await fetch(w.url + '/health');
    expect(res.status).toBe(200);
    const body = (await res.json()) as { status: string; storage: { database_bytes: number; warning: string | null } };
    expect(body.status).toBe('ok');
    expect(body.storage.database_bytes).toBeGreaterThan(0);
    expect(body.storage.warning).toBeNull();
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('refuses management routes without a key, with a wrong one, and accepts each configured key', async () => {
    expect((await fetch(w.url + '/api/projects')).status).toBe(401);
    const wrong = await fetch(w.url + '/api/projects', { headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toEqual({ error: 'unauthorized' });
    for (const key of ['secret', 'other']) {
      expect((await fetch(w.url + '/api/projects', { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    }
  });

  it('creates, lists, gets, patches, rotates and deletes projects on D1', async () => {
    expect(await (await w.api('/api/projects')).json()).toEqual([]);
    const created = await w.api('/api/projects', {
      method: 'POST',
      json: { slug: 'shop', name: 'Shop', platform: 'android' },
    });
    expect(created.status).toBe(201);
    const shop = await created.json();
    expect(shop).toMatchObject({
      id: 1,
      slug: 'shop',
      name: 'Shop',
      platform: 'android',
      sample_keep_first: 100,
      sample_rate: 1,
      daily_quota: 0,
    });
    expect(shop.dsn).toMatch(/^https:\/\/[0-9a-f]{32}@errors\.example\.com\/tracker\/1$/);

    const dup = await w.api('/api/projects', { method: 'POST', json: { slug: 'shop' } });
    expect(dup.status).toBe(409);
    expect(Object.keys(await dup.json())).toEqual(['error']);
    const bad = await w.api('/api/projects', { method: 'POST', json: { slug: 'Not A Slug' } });
    expect(bad.status).toBe(400);

    expect((await w.api('/api/projects', { method: 'POST', json: { slug: 'web', name: 'Web' } })).status).toBe(201);
    expect((await (await w.api('/api/projects')).json()).map((p: { slug: string }) => p.slug)).toEqual(['shop', 'web']);
    expect(await (await w.api('/api/projects/shop')).json()).toEqual(shop);

    const patched = await w.api('/api/projects/shop', {
      method: 'PATCH',
      json: { name: 'The Shop', sample_rate: 0.5, daily_quota: 1000 },
    });
    expect(patched.status).toBe(200);
    expect(await patched.json()).toEqual({ ...shop, name: 'The Shop', sample_rate: 0.5, daily_quota: 1000 });

    const rotated = await w.api('/api/projects/shop/rotate-key', { method: 'POST' });
    expect(rotated.status).toBe(200);
    const after = await rotated.json();
    expect(dsnKey(after.dsn)).toMatch(HEX32);
    expect(dsnKey(after.dsn)).not.toBe(dsnKey(shop.dsn));
    const d1 = await w.d1();
    const keys = await d1
      .prepare('select dsn_key from projects where slug = ?')
      .bind('shop')
      .all<{ dsn_key: string }>();
    expect(keys.results).toEqual([{ dsn_key: dsnKey(after.dsn) }]);

    for (const [method, path] of [
      ['PATCH', '/api/projects/ghost'],
      ['DELETE', '/api/projects/ghost'],
      ['POST', '/api/projects/ghost/rotate-key'],
    ]) {
      const res = await w.api(path, { method, json: method === 'PATCH' ? { name: 'x' } : undefined });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(await res.json()).toEqual({ error: 'project "ghost" not found' });
    }

    const deleted = await w.api('/api/projects/web', { method: 'DELETE' });
    expect(deleted.status).toBe(204);
    expect((await w.api('/api/projects/web')).status).toBe(404);
    expect((await w.api('/api/projects', { method: 'POST', json: { slug: 'web' } })).status).toBe(201);
  });

  it('answers ingest with the right key 200 and the event id, with a rotated-out key 401', async () => {
    const created = await (await w.api('/api/projects', { method: 'POST', json: { slug: 'mobile' } })).json();
    const oldKey = dsnKey(created.dsn);
    const send = (key: string) =>
      fetch(`${w.url}/api/${created.id}/envelope/`, {
        method: 'POST',
        headers: {
          'x-sentry-auth': `Sentry sentry_version=7, sentry_key=${key}`,
          'content-type': 'application/x-sentry-envelope',
        },
        body: envelopeWithEvent(),
      });
    const accepted = await send(oldKey);
    expect(accepted.status).toBe(200);
    expect(await accepted.json()).toEqual({ id: 'a'.repeat(32) });
    expect(accepted.headers.get('access-control-allow-origin')).toBe('*');

    const rotated = await (await w.api('/api/projects/mobile/rotate-key', { method: 'POST' })).json();
    expect((await send(oldKey)).status).toBe(401);
    expect((await send(dsnKey(rotated.dsn))).status).toBe(200);
    const issues = await (await w.api('/api/projects/mobile/issues')).json();
    expect(issues.issues ?? issues).toHaveLength(1);
  });

  it('answers the CORS preflight on the ingest routes and takes an event on the legacy /store/ route', async () => {
    for (const path of ['/api/1/envelope/', '/api/1/store/']) {
      const res = await fetch(w.url + path, {
        method: 'OPTIONS',
        headers: {
          Origin: 'https://app.example.com',
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'x-sentry-auth, content-type',
        },
      });
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(res.headers.get('access-control-allow-methods'), path).toBe('POST, OPTIONS');
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim());
      expect(allowed, path).toEqual(expect.arrayContaining(['x-sentry-auth', 'content-type', 'content-encoding']));
    }
    const created = await (await w.api('/api/projects', { method: 'POST', json: { slug: 'legacy' } })).json();
    const event = {
      event_id: 'b'.repeat(32),
      timestamp: Date.now() / 1000,
      level: 'error',
      platform: 'python',
      exception: { values: [{ type: 'LegacyError', value: 'from /store/' }] },
    };
    const res = await fetch(`${w.url}/api/${created.id}/store/?sentry_key=${dsnKey(created.dsn)}&sentry_version=7`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', Origin: 'https://app.example.com' },
      body: JSON.stringify(event),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: 'b'.repeat(32) });
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    const issues = (await (await w.api('/api/projects/legacy/issues')).json()).issues;
    expect(issues.map((i: { title: string }) => i.title)).toEqual(['LegacyError: from /store/']);
  });

  it('decodes compressed ingest bodies in workerd: gzip, deflate and br reach the sink, broken ones are 400', async () => {
    const created = await (await w.api('/api/projects', { method: 'POST', json: { slug: 'encodings' } })).json();
    const send = (encoding: string, body: Uint8Array) =>
      fetch(`${w.url}/api/${created.id}/envelope/?sentry_key=${dsnKey(created.dsn)}`, {
        method: 'POST',
        headers: { 'content-encoding': encoding, 'content-type': 'application/x-sentry-envelope' },
        body: new Uint8Array(body),
      });
    const plain = (id: string) => Buffer.from(envelopeWithEvent(id.repeat(32)));
    for (const [encoding, packed, id] of [
      ['gzip', zlib.gzipSync(plain('1')), '1'],
      ['deflate', zlib.deflateSync(plain('2')), '2'],
      ['br', zlib.brotliCompressSync(plain('3')), '3'],
    ] as const) {
      const res = await send(encoding, packed);
      expect(res.status, encoding).toBe(200);
      expect(await res.json()).toEqual({ id: id.repeat(32) });
    }
    const events = await (await w.api('/api/projects/encodings/events')).json();
    expect((events.events ?? events).length).toBe(3);
    const broken = await send('gzip', zlib.gzipSync(plain('4')).subarray(0, 20));
    expect(broken.status).toBe(400);
    expect((await broken.json()).error).toMatch(/not valid gzip data/);
  });

  it('runs the 10-minute cron (crash spikes and alert deliveries; nothing to do on an empty database)', async () => {
    await expect(w.runCron(ALERTS_CRON)).resolves.toBeUndefined();
  });

  it('answers unknown routes 404 and wrong methods 405 with Allow', async () => {
    // Paths outside /api and /health are the dashboard's (test/dashboard).
    for (const path of ['/api', '/api/nope', '/api/projects/x/y/z/w', '/health/more']) {
      const res = await w.api(path);
      expect(res.status, path).toBe(404);
      expect(await res.json()).toEqual({ error: 'not found' });
    }
    for (const [method, path, allowed] of [
      ['DELETE', '/api/projects', ['GET', 'POST']],
      ['PUT', '/api/projects/abc', ['DELETE', 'GET', 'PATCH']],
      ['GET', '/api/projects/abc/rotate-key', ['POST']],
      ['POST', '/health', ['GET']],
    ] as const) {
      const res = await w.api(path, { method });
      expect(res.status, `${method} ${path}`).toBe(405);
      const allow = (res.headers.get('allow') ?? '').split(',').map((s) => s.trim());
      for (const m of allowed) expect(allow).toContain(m);
      expect((await res.json()).error).toContain(`method ${method} is not allowed`);
    }
  });

  it('refuses management bodies over 1 MB with 413', async () => {
    // workerd answers before reading the whole body and closes; when the client is still
    // writing, the reset can reach it before the answer (seen on a loaded machine), so a
    // reset without an answer is tried again: the answer, whenever one arrives, is a 413.
    for (let attempt = 1; ; attempt++) {
      try {
        const res = await w.api('/api/projects', {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: 'x'.repeat(1024 * 1024 + 1),
        });
        expect(res.status).toBe(413);
        return;
      } catch (err) {
        const code = ((err as Error).cause as { code?: string } | undefined)?.code;
        if (attempt === 3 || (code !== 'ECONNRESET' && code !== 'EPIPE')) throw err;
      }
    }
  });
});

describe('the Worker rate limit, kept in D1', () => {
  let w: TestWorker;
  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: 'alpha,beta', RATE_LIMIT: '3' });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('allows RATE_LIMIT requests per key per minute, then 429 with Retry-After', async () => {
    const as = (key: string) => fetch(w.url + '/api/projects', { headers: { authorization: `Bearer ${key}` } });
    // A minute boundary between the requests would start a new window: wait it out.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_500 - intoMinute));
    for (let i = 0; i < 3; i++) expect((await as('alpha')).status).toBe(200);
    const limited = await as('alpha');
    expect(limited.status).toBe(429);
    expect(await limited.json()).toEqual({ error: 'rate limit exceeded' });
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await as('beta')).status).toBe(200);
    // The budget is claimed in D1, where every isolate sees it.
    const d1 = await w.d1();
    const rows = await d1
      .prepare('select key, claimed from rate_limit_windows order by key')
      .all<{ key: string; claimed: number }>();
    expect(rows.results).toHaveLength(2); // one window per key (keys are stored as ids, not the keys)
    for (const row of rows.results) expect(row.key).toMatch(/^api:/);
    expect(rows.results.reduce((n, r) => n + r.claimed, 0)).toBeGreaterThanOrEqual(4);
  });
});

describe('the Worker with the API open', () => {
  let w: TestWorker;
  beforeAll(async () => {
    w = await startTestWorker({ RATE_LIMIT: '2' });
  });
  afterAll(async () => {
    await w?.close();
  });

  it('keys the open API on cf-connecting-ip', async () => {
    const from = (ip: string) =>
      w.miniflare.dispatchFetch('http://localhost/api/projects', { headers: { 'cf-connecting-ip': ip } });
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_500 - intoMinute));
    expect((await from('203.0.113.1')).status).toBe(200);
    expect((await from('203.0.113.1')).status).toBe(200);
    expect((await from('203.0.113.1')).status).toBe(429);
    expect((await from('203.0.113.2')).status).toBe(200);
  });
});

describe('the Worker with an invalid setting', () => {
  it('answers every request 500 naming the setting', async () => {
    const w = await startTestWorker({ RATE_LIMIT: 'lots' });
    try {
      const res = await fetch(w.url + '/health');
      expect(res.status).toBe(500);
      expect((await res.json()).error).toMatch(/^invalid settings: RATE_LIMIT must be an integer/);
    } finally {
      await w.close();
    }
  });
});

describe('the Worker when its D1 schema cannot be migrated', () => {
  let w: TestWorker;
  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: 'secret' });
    // A table in the way of the first migration, before the Worker's first request.
    await (await w.d1()).exec('CREATE TABLE projects (unrelated TEXT)');
  });
  afterAll(async () => {
    await w?.close();
  });

  it('answers /health with 503 {"status":"db unavailable"} and every other route with a 503 error', async () => {
    const health = await fetch(w.url + '/health');
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ status: 'db unavailable' });
    const projects = await w.api('/api/projects');
    expect(projects.status).toBe(503);
    expect((await projects.json()).error).toMatch(/database is unavailable/);
  });
});
