import http from 'node:http';
// Ingest routes over real HTTP: paths, CORS, every place a DSN key can come from,
// protocol version, and the per-key rate limit.
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { dsnOf, envelope, errorEvent, eventId, eventsOf, makeProject, post, rowCounts } from './helpers.js';

const EXPOSE = 'x-sentry-error, x-sentry-rate-limits, retry-after';

describe.each(dialects)('ingest routes on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { CORS_ORIGIN: 'https://app.example.com' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each(['/api/1/envelope/', '/api/1/envelope', '/api/1/store/', '/api/1/store'])(
    'answers the CORS preflight on %s',
    async (path) => {
      const res = await fetch(t.url + path, {
        method: 'OPTIONS',
        headers: {
          Origin: 'https://app.example.com',
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'x-sentry-auth, content-type',
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(res.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS');
      const allowed = (res.headers.get('access-control-allow-headers') ?? '').split(',').map((h) => h.trim());
      for (const h of [
        'x-sentry-auth',
        'content-type',
        'content-encoding',
        'authorization',
        'x-requested-with',
        'transfer-encoding',
      ]) {
        expect(allowed).toContain(h);
      }
      expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSE);
      expect(res.headers.get('access-control-max-age')).toBe('3600');
    },
  );

  it('accepts the key in the query string, X-Sentry-Auth, Authorization: Sentry, and the envelope dsn', async () => {
    const p = await makeProject(t);
    const now = t.clock.now();
    const ids: string[] = [];
    for (const auth of ['query', 'header', 'authorization'] as const) {
      const id = eventId();
      ids.push(id);
      const res = await post(
        t,
        p,
        envelope({ event_id: id }, [{ type: 'event', payload: errorEvent({ id, timestamp: now }) }]),
        { auth },
      );
      expect(res.status, auth).toBe(200);
      expect(await res.json()).toEqual({ id });
      expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
      expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSE);
    }
    const id = eventId();
    ids.push(id);
    const res = await post(
      t,
      p,
      envelope({ event_id: id, dsn: dsnOf(t, p) }, [{ type: 'event', payload: errorEvent({ id, timestamp: now }) }]),
      {
        auth: 'none',
      },
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id });
    const stored = await eventsOf(t, p);
    expect(stored.map((e) => e.event_id).sort()).toEqual([...ids].sort());
  });

  it('accepts Authorization: Basic base64(<key>:) and refuses a malformed one with 401', async () => {
    const p = await makeProject(t);
    const basic = (credentials: string) => ({ Authorization: `Basic ${Buffer.from(credentials).toString('base64')}` });
    const id = eventId();
    const body = () =>
      envelope({ event_id: id }, [{ type: 'event', payload: errorEvent({ id, timestamp: t.clock.now() }) }]);
    const ok = await post(t, p, body(), { auth: 'none', headers: basic(`${p.dsn_key}:`) });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ id });
    // A secret after the colon is ignored, as sentry_secret is; the scheme is case-insensitive.
    expect(
      (
        await post(t, p, body(), {
          auth: 'none',
          headers: { Authorization: `basic ${Buffer.from(`${p.dsn_key}:old-secret`).toString('base64')}` },
        })
      ).status,
    ).toBe(200);
    expect((await eventsOf(t, p)).map((e) => e.event_id)).toEqual([id]);

    const before = await rowCounts(t);
    for (const headers of [
      { Authorization: 'Basic' },
      { Authorization: 'Basic !!!not base64!!!' },
      basic(p.dsn_key), // no colon
      basic(`:${p.dsn_key}`), // empty key
      basic(`${'f'.repeat(32)}:`), // wrong key
    ]) {
      const res = await post(t, p, body(), { auth: 'none', headers });
      expect(res.status, headers.Authorization).toBe(401);
      expect((await res.json()).error).toMatch(/DSN key|Authorization/);
    }
    // The same key twice (query and Basic) is fine; different keys are refused.
    expect((await post(t, p, body(), { headers: basic(`${p.dsn_key}:`) })).status).toBe(200);
    expect((await post(t, p, body(), { headers: basic(`${'f'.repeat(32)}:`) })).status).toBe(401);
    expect(await rowCounts(t)).toEqual(before);
  });

  it("gives the envelope's event_id to the first event without an id only; the others get ids of their own", async () => {
    const p = await makeProject(t);
    const envelopeId = eventId();
    const own = eventId();
    const withoutId = () => {
      const e = errorEvent({ timestamp: t.clock.now() });
      delete e.event_id;
      return e;
    };
    const res = await post(
      t,
      p,
      envelope({ event_id: envelopeId }, [
        { type: 'event', payload: withoutId() },
        { type: 'event', payload: errorEvent({ id: own, timestamp: t.clock.now() }) },
        { type: 'event', payload: withoutId() },
        { type: 'event', payload: withoutId() },
      ]),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: envelopeId });
    const ids = (await eventsOf(t, p)).map((e) => e.event_id);
    expect(ids).toHaveLength(4);
    expect(new Set(ids).size).toBe(4);
    expect(ids).toContain(envelopeId);
    expect(ids).toContain(own);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
  });

  it('after rotate-key, the old DSN key is refused at once (401) and the new one accepted', async () => {
    const created = await t.api('/api/projects', { method: 'POST', json: { slug: `rotate-${eventId().slice(0, 8)}` } });
    expect(created.status).toBe(201);
    const project = (await created.json()) as { id: number; slug: string; dsn: string };
    const oldKey = new URL(project.dsn).username;
    const send = (key: string) => {
      const id = eventId();
      return fetch(`${t.url}/api/${project.id}/envelope/?sentry_key=${key}`, {
        method: 'POST',
        body: envelope({ event_id: id }, [
          { type: 'event', payload: errorEvent({ id, timestamp: t.clock.now() }) },
        ]) as BodyInit,
      });
    };
    expect((await send(oldKey)).status).toBe(200);

    const rotated = await t.api(`/api/projects/${project.slug}/rotate-key`, { method: 'POST' });
    expect(rotated.status).toBe(200);
    const newKey = new URL(((await rotated.json()) as { dsn: string }).dsn).username;
    expect(newKey).not.toBe(oldKey);
    const before = await rowCounts(t);
    const refused = await send(oldKey);
    expect(refused.status).toBe(401);
    expect((await refused.json()).error).toMatch(/DSN key/);
    expect(await rowCounts(t)).toEqual(before);
    const accepted = await send(newKey);
    expect(accepted.status).toBe(200);
    const stored = await t.deps.store.db
      .selectFrom('events')
      .select('id')
      .where('project_id', '=', project.id)
      .execute();
    expect(stored).toHaveLength(2);
  });

  it('takes the path with or without the trailing slash', async () => {
    const p = await makeProject(t);
    const id = eventId();
    const res = await post(
      t,
      p,
      envelope({}, [{ type: 'event', payload: errorEvent({ id, timestamp: t.clock.now() }) }]),
      { trailingSlash: false },
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id });
  });

  it('answers 200 without an id when the envelope carries no event', async () => {
    const p = await makeProject(t);
    const res = await post(t, p, envelope({}, [{ type: 'client_report', payload: { discarded_events: [] } }]));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
  });

  it('accepts the legacy store endpoint with JSON, and an envelope sent to it', async () => {
    const p = await makeProject(t);
    const a = eventId();
    let res = await post(t, p, JSON.stringify(errorEvent({ id: a, timestamp: t.clock.now() })), {
      endpoint: 'store',
      auth: 'header',
      headers: { 'Content-Type': 'application/json' },
      gzip: true,
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: a });
    const b = eventId();
    res = await post(
      t,
      p,
      envelope({ event_id: b }, [{ type: 'event', payload: errorEvent({ id: b, timestamp: t.clock.now() }) }]),
      {
        endpoint: 'store',
        headers: { 'Content-Type': 'application/x-sentry-envelope' },
      },
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: b });
    expect((await eventsOf(t, p)).map((e) => e.event_id).sort()).toEqual([a, b].sort());
  });

  it('refuses a protocol version above 7 with 400 and accepts older ones', async () => {
    const p = await makeProject(t);
    const body = envelope({}, [{ type: 'client_report', payload: {} }]);
    let res = await fetch(`${t.url}/api/${p.id}/envelope/?sentry_version=8&sentry_key=${p.dsn_key}`, {
      method: 'POST',
      body: body as BodyInit,
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toMatch(/sentry_version/);
    for (const v of ['5', '6', '7', '7.0']) {
      res = await fetch(`${t.url}/api/${p.id}/envelope/`, {
        method: 'POST',
        body: body as BodyInit,
        headers: { 'X-Sentry-Auth': `Sentry sentry_key=${p.dsn_key}, sentry_version=${v}` },
      });
      expect(res.status, v).toBe(200);
    }
  });

  it('refuses conflicting keys and a dsn naming another project with 401', async () => {
    const p = await makeProject(t);
    const other = await makeProject(t);
    const before = await rowCounts(t);
    const event = () => [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now() }) }];
    let res = await post(t, p, envelope({}, event()), {
      auth: 'header',
      headers: { Authorization: `Sentry sentry_key=${other.dsn_key}` },
    });
    expect(res.status).toBe(401);
    res = await post(t, p, envelope({ dsn: dsnOf(t, other) }, event()), { auth: 'none' });
    expect(res.status).toBe(401);
    res = await post(t, p, envelope({ dsn: dsnOf(t, other) }, event()), { auth: 'query' });
    expect(res.status).toBe(401);
    res = await post(t, p, envelope({ dsn: 'not a dsn' }, event()), { auth: 'none' });
    expect(res.status).toBe(401);
    expect(await rowCounts(t)).toEqual(before);
  });

  it('refuses two keys in repeated X-Sentry-Auth headers or sentry_key parameters, and a dsn with malformed percent-encoding, with 401 on both ingest paths', async () => {
    const p = await makeProject(t);
    const other = await makeProject(t);
    const before = await rowCounts(t);
    // The second path is percent-encoded, so the Node edition hands it to the app instead of its direct listener.
    for (const path of [`/api/${p.id}/envelope/`, `/api/%3${String(p.id)[0]}${String(p.id).slice(1)}/envelope/`]) {
      const body = envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now() }) }]);
      const raw = (headers: Record<string, string | string[]>, query = '', data: Uint8Array = body) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = http.request(`${t.url}${path}${query}`, { method: 'POST' }, (res) => {
            let text = '';
            res.on('data', (d) => (text += d));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
          });
          for (const [k, v] of Object.entries(headers)) req.setHeader(k, v);
          req.on('error', reject);
          req.end(data);
        });
      const twoHeaders = await raw({
        'X-Sentry-Auth': [
          `Sentry sentry_version=7, sentry_key=${p.dsn_key}`,
          `Sentry sentry_version=7, sentry_key=${other.dsn_key}`,
        ],
      });
      expect(twoHeaders.status, path).toBe(401);
      expect(JSON.parse(twoHeaders.body).error).toMatch(/different DSN keys/);
      const sameTwice = await raw({
        'X-Sentry-Auth': [`Sentry sentry_key=${p.dsn_key}`, `Sentry sentry_key=${p.dsn_key}`],
      });
      expect(sameTwice.status, path).toBe(200);
      expect((await raw({}, `?sentry_key=${p.dsn_key}&sentry_key=${other.dsn_key}`)).status, path).toBe(401);
      const badDsn = envelope({ dsn: `http://%ff@127.0.0.1/${p.id}` }, [
        { type: 'event', payload: errorEvent({ timestamp: t.clock.now() }) },
      ]);
      const malformed = await raw({}, '', badDsn);
      expect(malformed.status, path).toBe(401);
      expect(JSON.parse(malformed.body).error).toMatch(/dsn/);
    }
    const after = await rowCounts(t);
    // Only the two requests that sent the same key twice were stored.
    expect(after.events - before.events).toBe(2);
  });

  it('does not treat a non-numeric project id as an ingest path', async () => {
    const p = await makeProject(t);
    const res = await post(t, p, envelope({}, []), { projectId: p.slug });
    expect(res.status).toBe(404);
  });

  it('answers other methods with 405, with the CORS headers', async () => {
    for (const method of ['GET', 'PUT', 'DELETE']) {
      const res = await fetch(`${t.url}/api/1/envelope/`, { method });
      expect(res.status).toBe(405);
      expect(
        res.headers
          .get('allow')
          ?.split(',')
          .map((m) => m.trim())
          .sort(),
      ).toEqual(['OPTIONS', 'POST']);
      expect((await res.json()).error).toMatch(/POST/);
      expect(res.headers.get('access-control-allow-origin'), method).toBe('https://app.example.com');
      expect(res.headers.get('access-control-expose-headers'), method).toBe(EXPOSE);
    }
  });

  it('an unexpected failure (500) on an ingest path carries the CORS headers; other paths get none', async () => {
    const p = await makeProject(t);
    // No request is known to fail unexpectedly, so the writer is made to throw an error
    // the pipeline does not expect, as a bug would.
    const submit = t.deps.ingest.submit;
    t.deps.ingest.submit = () => Promise.reject(new Error('injected bug'));
    let res: Response;
    try {
      res = await post(t, p, envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now() }) }]));
    } finally {
      t.deps.ingest.submit = submit;
    }
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ error: 'internal error' });
    expect(res.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(res.headers.get('access-control-expose-headers')).toBe(EXPOSE);
    const health = await fetch(`${t.url}/health`);
    expect(health.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('stores an event nested deeper than JSON.stringify can recurse, and serves its detail', async () => {
    // Ingest once encoded a normalised copy of every event and failed (500) on this one.
    const p = await makeProject(t);
    const depth = 200_000;
    const id = eventId();
    const deep = `{"event_id":"${id}","message":"deep","extra":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    const res = await post(t, p, `{}\n{"type":"event"}\n${deep}`);
    expect(res.status).toBe(200);
    expect((await eventsOf(t, p)).map((e) => e.event_id)).toEqual([id]);
  });

  it.each([
    ['gzip', gzipSync],
    ['x-gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ] as const)('decodes a %s body', async (encoding, compress) => {
    const p = await makeProject(t);
    const id = eventId();
    const body = compress(envelope({}, [{ type: 'event', payload: errorEvent({ id, timestamp: t.clock.now() }) }]));
    const res = await post(t, p, body, { headers: { 'Content-Encoding': encoding } });
    expect(res.status).toBe(200);
    expect((await eventsOf(t, p)).map((e) => e.event_id)).toEqual([id]);
  });

  it('resolves {{auto}} user IPs from X-Forwarded-For, else the connection', async () => {
    const p = await makeProject(t);
    const event = (id: string) => ({
      ...errorEvent({ id, timestamp: t.clock.now() }),
      user: { id: 'u', ip_address: '{{auto}}' },
    });
    const [a, b] = [eventId(), eventId()];
    expect(
      (
        await post(t, p, envelope({}, [{ type: 'event', payload: event(a) }]), {
          headers: { 'X-Forwarded-For': '203.0.113.7, 10.0.0.1' },
        })
      ).status,
    ).toBe(200);
    expect((await post(t, p, envelope({}, [{ type: 'event', payload: event(b) }]))).status).toBe(200);
    const ips = new Map((await eventsOf(t, p)).map((e) => [e.event_id, e.user_ip]));
    expect(ips.get(a)).toBe('203.0.113.7');
    expect(ips.get(b)).toBe('127.0.0.1');
  });

  it('reads a chunked body without Content-Type or Content-Length, as the Node SDK sends it', async () => {
    const p = await makeProject(t);
    const id = eventId();
    const bytes = envelope({ event_id: id, sent_at: new Date(t.clock.now()).toISOString() }, [
      { type: 'event', payload: errorEvent({ id, timestamp: t.clock.now() }) },
    ]);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < bytes.length; i += 100) controller.enqueue(bytes.subarray(i, i + 100));
        controller.close();
      },
    });
    const res = await fetch(`${t.url}/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
      method: 'POST',
      body: stream,
      duplex: 'half',
    } as RequestInit);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id });
  });
});

describe.each(dialects)('ingest rate limit on %s', (dialect) => {
  let t: TestServer;
  const clock = new ManualClock(Date.UTC(2026, 10, 21, 12, 0, 10));
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { RATE_LIMIT: '3' }, clock });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('limits each DSN key per minute with 429, Retry-After and X-Sentry-Rate-Limits', async () => {
    const p = await makeProject(t);
    const other = await makeProject(t);
    const body = () => envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: clock.now() }) }]);
    for (let i = 0; i < 3; i++) expect((await post(t, p, body())).status).toBe(200);
    const before = await rowCounts(t);
    const res = await post(t, p, body());
    expect(res.status).toBe(429);
    expect(await res.json()).toEqual({ error: 'rate limit exceeded' });
    // 10 s into the minute: 50 s left.
    expect(res.headers.get('retry-after')).toBe('50');
    expect(res.headers.get('x-sentry-rate-limits')).toBe('50::key');
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(await rowCounts(t)).toEqual(before);
    // Another project's key has its own budget.
    expect((await post(t, other, body())).status).toBe(200);
    // The next minute starts afresh.
    clock.advance(60_000);
    expect((await post(t, p, body())).status).toBe(200);
  });
});
