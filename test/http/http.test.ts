// Cross-cutting HTTP behaviour through the real server on each database: API-key
// auth, rate limits, 404/405/400/413/500 error shapes, request ids and the
// one-log-line-per-request contract.
import http from 'node:http';
import net from 'node:net';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { isAuthExempt } from '../../src/http/auth.js';
import { MemoryRateLimiter } from '../../src/http/rate-limit.js';
import { captureLogger } from '../helpers/log-capture.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';

const MINUTE = 60_000;

/** A GET from a chosen loopback source address (fetch cannot pick one). */
function getFrom(url: string, localAddress: string, headers: Record<string, string> = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { localAddress, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

/**
 * A request on its own connection (no keep-alive reuse): the server may close a
 * connection whose large body it refused without reading. Chunks are written as
 * they come, so an array body is sent chunked (no Content-Length).
 */
function send(
  url: string,
  method: string,
  body: Uint8Array | Uint8Array[],
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      res.on('error', reject);
    });
    // The server may answer and close before the whole body is written; the answer is what counts.
    req.on('error', (err) => (req.destroyed && (req as any).res ? undefined : reject(err)));
    if (Array.isArray(body)) {
      for (const chunk of body) req.write(chunk);
      req.end();
    } else {
      req.setHeader('content-length', body.length);
      req.end(body);
    }
  });
}

describe('auth exemptions', () => {
  it.each([
    ['/health', true],
    ['/api/1/envelope', true],
    ['/api/1/envelope/', true],
    ['/api/42/store', true],
    ['/api/42/store/', true],
    ['/api/x/envelope/', false],
    ['/api/1/envelope/extra', false],
    ['/api/0/organizations/o/chunk-upload/', false],
    ['/api/0/projects/o/p/files/dsyms/', false],
    ['/api/projects', false],
    ['/healthz', false],
  ])('%s exempt: %s', (path, exempt) => {
    expect(isAuthExempt(path)).toBe(exempt);
  });
});

describe('in-memory rate limiter', () => {
  it('counts per key in fixed one-minute windows', async () => {
    const limiter = new MemoryRateLimiter(2);
    const t0 = 10 * MINUTE + 59_000;
    expect((await limiter.hit('a', t0)).allowed).toBe(true);
    expect((await limiter.hit('a', t0)).allowed).toBe(true);
    const third = await limiter.hit('a', t0);
    expect(third).toEqual({ allowed: false, retryAfterSeconds: 1 });
    expect((await limiter.hit('b', t0)).allowed).toBe(true);
    // A fixed window: one second later is a new minute.
    expect((await limiter.hit('a', t0 + 1000)).allowed).toBe(true);
  });
  it('never refuses when the limit is 0', async () => {
    const limiter = new MemoryRateLimiter(0);
    for (let i = 0; i < 5000; i++) expect((await limiter.hit('a', 0)).allowed).toBe(true);
  });
});

describe.each(dialects)('API-key auth on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: ' key-one , key-two,' } });
  });
  afterAll(async () => {
    await t?.close();
  });
  const raw = (path: string, init: RequestInit = {}) => fetch(t.url + path, init);

  it('refuses management routes without a key', async () => {
    for (const [method, path] of [
      ['GET', '/api/projects'],
      ['POST', '/api/projects'],
      ['GET', '/api/projects/x'],
      ['PATCH', '/api/projects/x'],
      ['DELETE', '/api/projects/x'],
      ['POST', '/api/projects/x/rotate-key'],
      ['GET', '/api/projects/x/issues'],
      ['GET', '/api/nothing-here'],
      ['GET', '/api/0/organizations/o/chunk-upload/'],
      ['POST', '/api/0/projects/o/p/files/difs/assemble/'],
    ]) {
      const res = await raw(path, { method, body: method === 'GET' ? undefined : '{"slug":"sneaky"}' });
      expect(res.status, `${method} ${path}`).toBe(401);
      expect(await res.json()).toEqual({ error: 'unauthorized' });
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
    }
    expect((await t.api('/api/projects/sneaky')).status).toBe(404);
  });

  it('refuses a wrong key, another scheme, a prefix of a key and an empty bearer', async () => {
    for (const authorization of [
      'Bearer key-three',
      'Bearer key-on',
      'Bearer key-one-more',
      'Basic a2V5LW9uZQ==',
      'key-one',
      'Bearer ',
      'Bearer key-one key-two',
    ]) {
      const res = await raw('/api/projects', { headers: { authorization } });
      expect(res.status, authorization).toBe(401);
      expect(await res.json()).toEqual({ error: 'unauthorized' });
    }
  });

  it('accepts each configured key (whitespace around keys in API_KEYS ignored)', async () => {
    for (const key of ['key-one', 'key-two']) {
      const res = await raw('/api/projects', { headers: { authorization: `Bearer ${key}` } });
      expect(res.status, key).toBe(200);
    }
    const lower = await raw('/api/projects', { headers: { authorization: 'bearer key-two' } });
    expect(lower.status).toBe(200);
  });

  it('a valid key reaches unknown routes as 404', async () => {
    const res = await t.api('/api/nothing-here');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: 'not found' });
  });

  it('leaves /health and the ingest routes open', async () => {
    const health = await raw('/health');
    expect(health.status).toBe(200);
    for (const path of ['/api/1/envelope/', '/api/1/envelope', '/api/1/store/', '/api/1/store']) {
      const preflight = await raw(path, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
      });
      expect(preflight.status, `OPTIONS ${path}`).not.toBe(401);
      const post = await raw(path, { method: 'POST', body: '{}' });
      const text = await post.text();
      expect(text, `POST ${path}`).not.toBe(JSON.stringify({ error: 'unauthorized' }));
    }
  });
});

describe.each(dialects)('open management API on %s', (dialect) => {
  it('needs no key when API_KEYS is empty', async () => {
    const t = await startTestServer(dialect, { env: { API_KEYS: '' } });
    try {
      const res = await fetch(t.url + '/api/projects');
      expect(res.status).toBe(200);
      const created = await fetch(t.url + '/api/projects', { method: 'POST', body: JSON.stringify({ slug: 'open' }) });
      expect(created.status).toBe(201);
      const withJunkKey = await fetch(t.url + '/api/projects', { headers: { authorization: 'Bearer whatever' } });
      expect(withJunkKey.status).toBe(200);
    } finally {
      await t.close();
    }
  });
});

describe.each(dialects)('rate limits on %s', (dialect) => {
  it('allows RATE_LIMIT requests per key per minute, then 429 with Retry-After', async () => {
    const clock = new ManualClock(100 * MINUTE + 15_000);
    const t = await startTestServer(dialect, { clock, env: { API_KEYS: 'alpha,beta', RATE_LIMIT: '3' } });
    const as = (key: string, path = '/api/projects') =>
      fetch(t.url + path, { headers: { authorization: `Bearer ${key}` } });
    try {
      for (let i = 0; i < 3; i++) expect((await as('alpha')).status).toBe(200);
      const limited = await as('alpha');
      expect(limited.status).toBe(429);
      expect(await limited.json()).toEqual({ error: 'rate limit exceeded' });
      expect(limited.headers.get('retry-after')).toBe('45');
      // Every route of the key counts, including unknown ones, and stays limited.
      expect((await as('alpha', '/api/projects/x')).status).toBe(429);
      // Another key has its own budget.
      expect((await as('beta')).status).toBe(200);
      // Health and unauthenticated requests do not spend a key's budget.
      for (let i = 0; i < 5; i++) expect((await fetch(t.url + '/health')).status).toBe(200);
      for (let i = 0; i < 5; i++) expect((await fetch(t.url + '/api/projects')).status).toBe(401);
      expect((await as('beta')).status).toBe(200);
      expect((await as('beta')).status).toBe(200);
      expect((await as('beta')).status).toBe(429);
      // The next minute starts a new window.
      clock.advance(45_000);
      expect((await as('alpha')).status).toBe(200);
      expect((await as('beta')).status).toBe(200);
    } finally {
      await t.close();
    }
  });

  it('keys the open API on the client address', async () => {
    const clock = new ManualClock(200 * MINUTE);
    const t = await startTestServer(dialect, { clock, env: { RATE_LIMIT: '2' } });
    try {
      const url = t.url + '/api/projects';
      expect(await getFrom(url, '127.0.0.1')).toBe(200);
      expect(await getFrom(url, '127.0.0.1')).toBe(200);
      expect(await getFrom(url, '127.0.0.1')).toBe(429);
      expect(await getFrom(url, '127.0.0.2')).toBe(200);
      expect(await getFrom(url, '127.0.0.2')).toBe(200);
      expect(await getFrom(url, '127.0.0.2')).toBe(429);
    } finally {
      await t.close();
    }
  });

  it('RATE_LIMIT=0 disables the limit', async () => {
    const clock = new ManualClock(300 * MINUTE);
    const t = await startTestServer(dialect, { clock, env: { API_KEYS: 'k', RATE_LIMIT: '0' } });
    try {
      // More than the default 600 in one minute.
      const statuses = new Set<number>();
      for (let batch = 0; batch < 13; batch++) {
        const results = await Promise.all(
          Array.from({ length: 50 }, () => t.api('/api/nothing').then((r) => r.status)),
        );
        for (const s of results) statuses.add(s);
      }
      expect([...statuses]).toEqual([404]);
    } finally {
      await t.close();
    }
  });
});

describe.each(dialects)('errors, request ids and logs on %s', (dialect) => {
  let t: TestServer;
  let lines: Record<string, any>[];
  beforeAll(async () => {
    const capture = captureLogger();
    lines = capture.lines;
    t = await startTestServer(dialect, { logger: capture.logger, env: { API_KEYS: 'k' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  // Paths outside /api and /health are the dashboard's (test/dashboard covers them).
  it('answers unknown routes with 404 {"error":"not found"}', async () => {
    for (const path of ['/api', '/api/nope', '/api/projects/x/y/z/w', '/health/more']) {
      const res = await t.api(path);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      expect(await res.json()).toEqual({ error: 'not found' });
    }
  });

  it('answers a wrong method on a known path with 405 and Allow', async () => {
    const cases: [string, string, string[]][] = [
      ['DELETE', '/api/projects', ['GET', 'HEAD', 'POST']],
      ['PUT', '/api/projects', ['GET', 'HEAD', 'POST']],
      ['PUT', '/api/projects/abc', ['DELETE', 'GET', 'HEAD', 'PATCH']],
      ['GET', '/api/projects/abc/rotate-key', ['POST']],
      ['POST', '/health', ['GET', 'HEAD']],
      ['DELETE', '/health', ['GET', 'HEAD']],
    ];
    for (const [method, path, allowed] of cases) {
      const res = await t.api(path, { method });
      expect(res.status, `${method} ${path}`).toBe(405);
      const allow = (res.headers.get('allow') ?? '')
        .split(',')
        .map((s) => s.trim())
        .sort();
      for (const m of allowed) expect(allow, `${method} ${path}`).toContain(m);
      expect(allow).not.toContain(method);
      const body = await res.json();
      expect(Object.keys(body)).toEqual(['error']);
      expect(body.error).toContain(`method ${method} is not allowed`);
    }
  });

  it('HEAD works where GET does', async () => {
    const res = await t.api('/api/projects', { method: 'HEAD' });
    expect(res.status).toBe(200);
  });

  it('refuses management bodies over 1 MB with 413, with or without Content-Length', async () => {
    const auth = { authorization: 'Bearer k' };
    const enc = (text: string) => new TextEncoder().encode(text);
    const big = enc(JSON.stringify({ slug: 'huge', name: 'x'.repeat(1024 * 1024) }));
    const sized = await send(t.url + '/api/projects', 'POST', big, auth);
    expect(sized.status).toBe(413);
    expect(JSON.parse(sized.body).error).toContain('request body too large');

    const chunks = [
      enc('{"slug":"huge","name":"'),
      new Uint8Array(600 * 1024).fill(120),
      new Uint8Array(600 * 1024).fill(120),
      enc('"}'),
    ];
    const chunked = await send(t.url + '/api/projects', 'POST', chunks, auth);
    expect(chunked.status).toBe(413);
    expect(JSON.parse(chunked.body).error).toContain('request body too large');
    expect((await t.api('/api/projects/huge')).status).toBe(404);

    // Just under the limit is read and validated normally.
    const under = enc(JSON.stringify({ slug: 'huge', name: 'x'.repeat(1024 * 1024 - 40) }));
    expect(under.length).toBeLessThanOrEqual(1024 * 1024);
    const ok = await send(t.url + '/api/projects', 'POST', under, auth);
    expect(ok.status).toBe(400);
    expect(JSON.parse(ok.body).error).toContain('name must be a non-empty string of at most 200 characters');
    const okChunked = await send(
      t.url + '/api/projects',
      'POST',
      [under.subarray(0, 500_000), under.subarray(500_000)],
      auth,
    );
    expect(okChunked.status).toBe(400);
  });

  it('does not apply the 1 MB limit to ingest or uploader routes', async () => {
    const body = new Uint8Array(2 * 1024 * 1024).fill(32);
    for (const path of ['/api/1/envelope/', '/api/1/store/', '/api/0/organizations/o/chunk-upload/']) {
      const res = await send(t.url + path, 'POST', body, { authorization: 'Bearer k' });
      expect(res.status, path).not.toBe(413);
    }
  });

  it('gives every response its own request id and keeps a well-formed incoming one', async () => {
    const a = await t.api('/api/projects');
    const b = await t.api('/nope');
    const idA = a.headers.get('x-request-id');
    const idB = b.headers.get('x-request-id');
    expect(idA).toMatch(/^[\w-]{8,}$/);
    expect(idB).toMatch(/^[\w-]{8,}$/);
    expect(idA).not.toBe(idB);
    const given = await t.api('/api/projects', { headers: { 'x-request-id': 'trace-abc-123' } });
    expect(given.headers.get('x-request-id')).toBe('trace-abc-123');
    const unsafe = await t.api('/api/projects', { headers: { 'x-request-id': 'bad id <script>' } });
    expect(unsafe.headers.get('x-request-id')).not.toBe('bad id <script>');
  });

  it('logs one JSON line per request with method, path, status, duration and request id', async () => {
    const res = await t.api('/api/projects/missing?sentry_key=secret', {
      headers: { 'x-request-id': 'log-line-check' },
    });
    expect(res.status).toBe(404);
    const mine = lines.filter((l) => l.request_id === 'log-line-check');
    expect(mine).toHaveLength(1);
    const [line] = mine;
    expect(line).toMatchObject({
      level: 30,
      method: 'GET',
      path: '/api/projects/missing',
      status: 404,
      request_id: 'log-line-check',
    });
    expect(typeof line.duration_ms).toBe('number');
    expect(line.duration_ms).toBeGreaterThanOrEqual(0);
    expect(JSON.stringify(line)).not.toContain('secret');
    const unauth = await fetch(t.url + '/api/projects', { headers: { 'x-request-id': 'log-unauth' } });
    expect(unauth.status).toBe(401);
    expect(lines.filter((l) => l.request_id === 'log-unauth')).toMatchObject([
      { status: 401, method: 'GET', path: '/api/projects' },
    ]);
  });

  it('answers an unexpected failure with 500 {"error":"internal error"} and logs it with the request id', async () => {
    const db = t.deps.store.db;
    await sql`alter table projects rename to projects_away`.execute(db);
    try {
      const res = await t.api('/api/projects', { headers: { 'x-request-id': 'boom-500' } });
      expect(res.status).toBe(500);
      expect(await res.json()).toEqual({ error: 'internal error' });
      const errorLine = lines.find((l) => l.request_id === 'boom-500' && l.level === 50);
      expect(errorLine).toBeDefined();
      expect(errorLine!.err?.message).toMatch(/projects/);
      expect(lines.filter((l) => l.request_id === 'boom-500' && l.level === 30)).toMatchObject([{ status: 500 }]);
    } finally {
      await sql`alter table projects_away rename to projects`.execute(db);
    }
    expect((await t.api('/api/projects')).status).toBe(200);
  });
});

describe('keep-alive connections', () => {
  it('stay open while idle past Node’s 5 s default, so a client reusing one is not reset', async () => {
    const t = await startTestServer('sqlite');
    const { port } = new URL(t.url);
    const socket = net.connect(Number(port), '127.0.0.1');
    let received = '';
    let closedAt: number | null = null;
    socket.on('data', (chunk) => (received += chunk.toString()));
    socket.on('close', () => (closedAt = Date.now()));
    const answers = () => received.split('HTTP/1.1 200').length - 1;
    const waitFor = async (n: number) => {
      for (let i = 0; i < 100 && answers() < n; i++) await new Promise((r) => setTimeout(r, 20));
    };
    try {
      await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      socket.write('GET /health HTTP/1.1\r\nHost: faultline\r\n\r\n');
      await waitFor(1);
      expect(answers()).toBe(1);
      // Node closes an idle connection about a second after keepAliveTimeout (5 s by default).
      await new Promise((r) => setTimeout(r, 6_800));
      expect(closedAt).toBeNull();
      socket.write('GET /health HTTP/1.1\r\nHost: faultline\r\n\r\n');
      await waitFor(2);
      expect(answers()).toBe(2);
    } finally {
      socket.destroy();
      await t.close();
    }
  }, 15_000);
});
