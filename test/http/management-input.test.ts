// Management input hygiene over real HTTP on both databases (docs/api.md
// "Conventions"): NUL in a path segment, a query parameter, a project name or a bulk
// fingerprint is 400, as is a lone surrogate in a JSON body; percent-encoded (or raw)
// dot segments never select another project (404); nothing is changed by any of
// these requests. The dashboard's forms refuse a NUL the same way.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../dashboard/fixture.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';

/** A request with its target sent byte for byte (fetch would resolve dot segments itself). */
function rawRequest(
  t: TestServer,
  method: string,
  target: string,
  body?: string,
): Promise<{ status: number; body: string }> {
  const url = new URL(t.url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path: target,
        headers: body ? { 'content-type': 'application/json' } : {},
      },
      (res) => {
        let text = '';
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

describe.each(dialects)('management input on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
    for (const slug of ['a', 'b'])
      expect((await t.api('/api/projects', { method: 'POST', json: { slug } })).status).toBe(201);
  });
  afterAll(() => t?.close());

  const projects = async () =>
    ((await (await t.api('/api/projects')).json()) as Array<{ slug: string; name: string }>).map(
      (p) => `${p.slug}:${p.name}`,
    );

  it.each([
    ['GET', '/api/projects/b/issues?q=%00'],
    ['GET', '/api/projects/b/events?release=%00'],
    ['GET', '/api/projects/b/issues?environment=x%00y'],
    ['GET', '/api/projects/%00'],
    ['GET', '/api/projects/b/issues/%00abc'],
    ['GET', '/api/projects/b/releases/v%00'],
    ['DELETE', '/api/projects/b%00'],
  ])('%s %s is 400', async (method, target) => {
    const res = await rawRequest(t, method, target);
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body).error).toMatch(/NUL/);
  });

  it.each([
    ['POST', '/api/projects', { slug: 'c', name: 'x\u0000y' }],
    ['POST', '/api/projects', { slug: 'c', name: 'x\ud800y' }],
    ['PATCH', '/api/projects/b', { name: 'n\u0000' }],
    ['POST', '/api/projects/b/issues/bulk', { fingerprints: ['f\u0000'], status: 'resolved' }],
  ])('%s %s with NUL or a lone surrogate in the body is 400', async (method, path, body) => {
    const before = await projects();
    const res = await t.api(path, { method, json: body });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/NUL character or a lone surrogate/);
    expect(await projects()).toEqual(before);
  });

  it.each([
    ['DELETE', '/api/projects/a/%2e%2e/b'],
    ['DELETE', '/api/projects/a/%2E%2E/b'],
    ['DELETE', '/api/projects/a/.%2e/b'],
    ['DELETE', '/api/projects/a/../b'],
    ['DELETE', '/api/projects/%2e%2e/projects/b'],
    ['POST', '/api/projects/a/%2e%2e/b/rotate-key'],
    ['PATCH', '/api/projects/x/%2e/../b'],
    ['GET', '/api/projects/a/issues/%2e%2e/%2e%2e/%2e%2e/b'],
  ])('%s %s selects nothing (404) and changes nothing', async (method, target) => {
    const before = await projects();
    const beforeKey = (await (await t.api('/api/projects/b')).json()) as { dsn: string };
    const res = await rawRequest(t, method, target, method === 'PATCH' ? '{"name":"changed"}' : undefined);
    expect(res.status).toBe(404);
    expect(await projects()).toEqual(before);
    expect(((await (await t.api('/api/projects/b')).json()) as { dsn: string }).dsn).toBe(beforeKey.dsn);
  });

  it.each([
    ['/new', { slug: 'c', name: 'x\u0000y' }],
    ['/b/settings', { name: 'n\u0000' }],
    ['/b/issues/bulk', { fingerprints: 'f\u0000', status: 'resolved' }],
  ])('the dashboard form %s with a NUL is 400 and changes nothing', async (path, fields) => {
    const before = await projects();
    const client = new Client(t.url);
    const res = await client.post(path, { ...fields, _csrf: await client.csrf('/') });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('NUL character');
    expect(await projects()).toEqual(before);
  });

  it('an encoded slash stays part of one segment', async () => {
    const res = await rawRequest(t, 'DELETE', '/api/projects/a%2f..%2fb');
    expect(res.status).toBe(404);
    expect(await projects()).toEqual(['a:a', 'b:b']);
  });
});
