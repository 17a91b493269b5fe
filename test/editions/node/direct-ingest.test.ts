// The Node edition answers SDK ingest POSTs without Hono (src/editions/node/ingest.ts).
// Each request here goes once to the real server (that listener) and once to the Hono
// app the other editions serve, on the same database: status, body and headers must be
// the same. Also the request id, the log line and the hand-over of everything else
// (preflight, 405, unusual paths) to the app.
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../../../src/editions/app.js';
import type { ProjectRow } from '../../../src/store/schema.js';
import { envelope, errorEvent, eventId, makeProject } from '../../ingest/helpers.js';
import { dialects, startTestServer, type TestServer } from '../../helpers/server.js';

/** Headers that describe the connection or a single answer, not the route's behaviour. */
const TRANSPORT = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'x-request-id']);

interface Answer {
  status: number;
  body: unknown;
  headers: Record<string, string>;
  requestId: string | null;
}

async function read(res: Response): Promise<Answer> {
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => {
    if (!TRANSPORT.has(name)) headers[name] = value;
  });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // compared as text
  }
  return { status: res.status, body, headers, requestId: res.headers.get('x-request-id') };
}

interface Case {
  name: string;
  path: (p: ProjectRow) => string;
  headers?: (p: ProjectRow) => Record<string, string>;
  /** Sent to both: a resent event is answered as the first send was (its id), so both answers match. */
  body: (p: ProjectRow) => Uint8Array | string;
  status: number;
}

const now = Date.now();
const authHeader = (p: ProjectRow) => ({
  'X-Sentry-Auth': `Sentry sentry_version=7, sentry_client=test/1.0, sentry_key=${p.dsn_key}`,
});
const eventEnvelope = () => {
  const id = eventId();
  return envelope({ event_id: id }, [{ type: 'event', payload: errorEvent({ id, timestamp: now }) }]);
};

const CASES: Case[] = [
  {
    name: 'envelope, key in the query',
    path: (p) => `/api/${p.id}/envelope/?sentry_version=7&sentry_key=${p.dsn_key}`,
    body: eventEnvelope,
    status: 200,
  },
  {
    name: 'envelope without trailing slash, X-Sentry-Auth',
    path: (p) => `/api/${p.id}/envelope`,
    headers: authHeader,
    body: eventEnvelope,
    status: 200,
  },
  {
    name: 'legacy store body',
    path: (p) => `/api/${p.id}/store/`,
    headers: (p) => ({ ...authHeader(p), 'Content-Type': 'application/json' }),
    body: () => JSON.stringify(errorEvent({ timestamp: now })),
    status: 200,
  },
  {
    name: 'session envelope',
    path: (p) => `/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`,
    body: () =>
      envelope({}, [
        {
          type: 'session',
          payload: {
            sid: eventId(),
            init: true,
            started: new Date(now).toISOString(),
            status: 'ok',
            attrs: { release: 'app@1.0.0' },
          },
        },
      ]),
    status: 200,
  },
  {
    name: 'unknown key',
    path: (p) => `/api/${p.id}/envelope/?sentry_key=${'0'.repeat(32)}`,
    body: eventEnvelope,
    status: 401,
  },
  { name: 'no key at all', path: (p) => `/api/${p.id}/envelope/`, body: eventEnvelope, status: 401 },
  {
    name: 'key of another project id',
    path: (p) => `/api/${p.id + 1000}/envelope/?sentry_key=${p.dsn_key}`,
    body: eventEnvelope,
    status: 401,
  },
  {
    name: 'malformed envelope',
    path: (p) => `/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`,
    body: () => 'not an envelope\n{',
    status: 400,
  },
  {
    name: 'undecodable gzip',
    path: (p) => `/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`,
    headers: () => ({ 'Content-Encoding': 'gzip' }),
    body: () => 'not gzip at all',
    status: 400,
  },
];

describe.each(dialects)('ingest without Hono on the Node edition (%s)', (dialect) => {
  let t: TestServer;
  let project: ProjectRow;
  let app: ReturnType<typeof createApp>;
  const lines: Record<string, any>[] = [];

  beforeAll(async () => {
    const stream = new Writable({
      write(chunk, _enc, cb) {
        for (const line of String(chunk).split('\n')) if (line.trim()) lines.push(JSON.parse(line));
        cb();
      },
    });
    t = await startTestServer(dialect, { logger: pino({ level: 'info' }, stream) });
    project = await makeProject(t);
    app = createApp(t.deps);
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each(CASES)('answers "$name" exactly as the Hono app does', async (c) => {
    const body = c.body(project);
    const init = () => ({ method: 'POST', headers: { ...(c.headers?.(project) ?? {}) }, body: body as BodyInit });
    const direct = await read(await fetch(t.url + c.path(project), init()));
    const viaApp = await read(await app.fetch(new Request(t.url + c.path(project), init())));
    expect(direct.status).toBe(c.status);
    expect(direct).toEqual({ ...viaApp, requestId: direct.requestId });
    expect(direct.requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(direct.headers['access-control-allow-origin']).toBe('*');
  });

  it('keeps a well-formed X-Request-Id, replaces a malformed one, and logs one line per request', async () => {
    const body = () => eventEnvelope() as unknown as BodyInit;
    const url = `${t.url}/api/${project.id}/envelope/?sentry_key=${project.dsn_key}`;
    const kept = await fetch(url, { method: 'POST', headers: { 'x-request-id': 'ingest-trace-1' }, body: body() });
    expect(kept.status).toBe(200);
    expect(kept.headers.get('x-request-id')).toBe('ingest-trace-1');
    const replaced = await fetch(url, { method: 'POST', headers: { 'x-request-id': 'bad id <x>' }, body: body() });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const mine = lines.filter((l) => l.request_id === 'ingest-trace-1');
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      level: 30,
      msg: 'request',
      method: 'POST',
      path: `/api/${project.id}/envelope/`,
      status: 200,
    });
    expect(typeof mine[0].duration_ms).toBe('number');
    expect(JSON.stringify(mine[0])).not.toContain(project.dsn_key);
  });

  it('hands preflight, other methods and percent-encoded paths to the app', async () => {
    const base = `${t.url}/api/${project.id}/envelope/`;
    const preflight = await fetch(base, { method: 'OPTIONS' });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('POST, OPTIONS');
    const get = await fetch(base);
    expect(get.status).toBe(405);
    expect(get.headers.get('access-control-allow-origin')).toBe('*');
    // Hono decodes the path; the direct listener leaves such requests to it.
    const encoded = await fetch(`${t.url}/api/${project.id}/%65nvelope/?sentry_key=${project.dsn_key}`, {
      method: 'POST',
      body: eventEnvelope() as unknown as BodyInit,
    });
    expect(encoded.status).toBe(200);
  });
});
