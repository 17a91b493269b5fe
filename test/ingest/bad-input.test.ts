// Bad ingest requests: each gets its exact status, and the stored data is proven
// unchanged (row counts of every table ingest writes, before and after). Requests
// that are partly good show exactly the good part stored.
import http from 'node:http';
import zlib, { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  dsnOf,
  envelope,
  errorEvent,
  eventId,
  eventsOf,
  makeProject,
  post,
  rowCounts,
  sessionUpdate,
  sessionsOf,
} from './helpers.js';

const MB20 = 20 * 1024 * 1024;

/**
 * POSTs chunks as they come (Transfer-Encoding: chunked, no Content-Length) on a
 * connection of its own: the server may answer and stop reading before the body is
 * complete, and the answer is what counts.
 */
function postChunked(t: TestServer, p: ProjectRow, chunks: Iterable<Uint8Array>): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${t.url}/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`,
      { method: 'POST', agent: false },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => {
          const headers = new Headers();
          for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') headers.set(k, v);
          resolve(new Response(Buffer.concat(parts), { status: res.statusCode, headers }));
        });
        res.on('error', reject);
      },
    );
    req.on('error', (err) => (req.destroyed && (req as any).res ? undefined : reject(err)));
    expect(req.getHeader('content-length')).toBeUndefined();
    (async () => {
      for (const chunk of chunks) {
        if (req.destroyed) return;
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r).once('close', r));
      }
      req.end();
    })().catch(reject);
  });
}

function* over20Mb(): Generator<Uint8Array> {
  yield Buffer.from('{}\n{"type":"attachment"}\n');
  const mb = Buffer.alloc(1024 * 1024, 0x61);
  for (let i = 0; i < 21; i++) yield mb;
}

interface BadCase {
  name: string;
  status: number;
  /** Builds the request; runs after the projects exist. */
  send(t: TestServer, p: ProjectRow, other: ProjectRow): Promise<Response>;
  error?: RegExp;
}

function oneEvent(t: TestServer) {
  return envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now() }) }]);
}

const cases: BadCase[] = [
  {
    name: 'wrong key',
    status: 401,
    send: (t, p) => post(t, p, oneEvent(t), { key: 'f'.repeat(32) }),
    error: /DSN key/,
  },
  {
    name: "another project's key",
    status: 401,
    send: (t, p, other) => post(t, p, oneEvent(t), { key: other.dsn_key, auth: 'header' }),
  },
  { name: 'no key', status: 401, send: (t, p) => post(t, p, oneEvent(t), { auth: 'none' }), error: /missing DSN key/ },
  {
    name: 'unknown project id with a valid key',
    status: 401,
    send: (t, p) => post(t, p, oneEvent(t), { projectId: 999999 }),
  },
  { name: 'header line not JSON', status: 400, send: (t, p) => post(t, p, '{"event_id": nope\n{"type":"event"}\n{}') },
  { name: 'empty body', status: 400, send: (t, p) => post(t, p, '') },
  {
    name: 'truncated gzip',
    status: 400,
    send: (t, p) => {
      const gz = gzipSync(oneEvent(t));
      return post(t, p, gz.subarray(0, gz.length - 12), { headers: { 'Content-Encoding': 'gzip' } });
    },
  },
  {
    name: '20 MB + 1 byte',
    status: 413,
    send: (t, p) => {
      const head = Buffer.from('{}\n{"type":"attachment"}\n');
      const body = Buffer.alloc(MB20 + 1, 0x61);
      head.copy(body);
      return post(t, p, body);
    },
  },
  {
    name: '20 MB + 1 byte declared by Content-Length on the store endpoint',
    status: 413,
    send: (t, p) =>
      post(t, p, Buffer.alloc(MB20 + 1, 0x20), { endpoint: 'store', headers: { 'Content-Type': 'application/json' } }),
  },
  {
    name: 'a chunked body without Content-Length that passes 20 MB',
    status: 413,
    send: (t, p) => postChunked(t, p, over20Mb()),
    error: /exceeds the limit/,
  },
  {
    name: 'a store body that is not JSON',
    status: 400,
    send: (t, p) =>
      post(t, p, 'this is not an event: {nope}', {
        endpoint: 'store',
        headers: { 'Content-Type': 'application/json' },
      }),
    error: /store body/,
  },
  {
    name: 'sentry_version=8',
    status: 400,
    send: (t, p) =>
      post(t, p, oneEvent(t), {
        headers: { 'X-Sentry-Auth': `Sentry sentry_key=${p.dsn_key}, sentry_version=8` },
        auth: 'none',
      }),
    error: /unsupported protocol version 8/,
  },
  {
    name: 'a 30 KB gzip that decodes past 20 MB',
    status: 413,
    send: (t, p) => {
      const bomb = gzipSync(Buffer.alloc(30 * 1024 * 1024, 0));
      expect(bomb.length).toBeLessThan(40 * 1024);
      return post(t, p, bomb, { headers: { 'Content-Encoding': 'gzip' } });
    },
  },
  {
    name: 'a deflate body that decodes past 20 MB',
    status: 413,
    send: (t, p) => {
      const bomb = deflateSync(Buffer.alloc(30 * 1024 * 1024, 0));
      expect(bomb.length).toBeLessThan(40 * 1024);
      return post(t, p, bomb, { headers: { 'Content-Encoding': 'deflate' } });
    },
    error: /decoded request body exceeds/,
  },
  {
    name: 'a br body that decodes past 20 MB',
    status: 413,
    send: (t, p) => {
      const bomb = brotliCompressSync(Buffer.alloc(30 * 1024 * 1024, 0), {
        params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 1 },
      });
      expect(bomb.length).toBeLessThan(8 * 1024);
      return post(t, p, bomb, { headers: { 'Content-Encoding': 'br' } });
    },
    error: /decoded request body exceeds/,
  },
  {
    name: '101 events',
    status: 413,
    send: (t, p) =>
      post(
        t,
        p,
        envelope(
          {},
          Array.from({ length: 101 }, () => ({ type: 'event', payload: errorEvent({ timestamp: t.clock.now() }) })),
        ),
      ),
    error: /101 event/,
  },
];

describe.each(dialects)('bad ingest input on %s', (dialect) => {
  let t: TestServer;
  let p: ProjectRow;
  let other: ProjectRow;
  beforeAll(async () => {
    t = await startTestServer(dialect);
    p = await makeProject(t);
    other = await makeProject(t);
    // Something stored already, so "unchanged" is not trivially "empty".
    const res = await post(t, p, oneEvent(t));
    expect(res.status).toBe(200);
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each(cases)('$name → $status, nothing stored', async (c) => {
    const before = await rowCounts(t);
    const res = await c.send(t, p, other);
    expect(res.status).toBe(c.status);
    const body = (await res.json()) as { error?: string };
    expect(typeof body.error).toBe('string');
    expect(res.headers.get('x-sentry-error')).toBe(body.error);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    if (c.error) expect(body.error).toMatch(c.error);
    expect(await rowCounts(t)).toEqual(before);
  });

  it('accepts and drops an unknown item type (200, nothing stored)', async () => {
    const before = await rowCounts(t);
    const res = await post(
      t,
      p,
      envelope({}, [
        { type: 'hologram', payload: { x: 1 } },
        { type: 'transaction', payload: { type: 'transaction' } },
      ]),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    expect(await rowCounts(t)).toEqual(before);
  });

  it('accepts 100 events in one envelope', async () => {
    const q = await makeProject(t);
    const items = Array.from({ length: 100 }, () => ({
      type: 'event',
      payload: errorEvent({ timestamp: t.clock.now() }),
    }));
    const res = await post(t, q, envelope({}, items));
    expect(res.status).toBe(200);
    expect((await eventsOf(t, q)).length).toBe(100);
  });

  it('stores the good events of an envelope where one event is not JSON', async () => {
    const q = await makeProject(t);
    const good = [eventId(), eventId()];
    const res = await post(
      t,
      q,
      envelope({}, [
        { type: 'event', payload: errorEvent({ id: good[0], timestamp: t.clock.now() }) },
        { type: 'event', payload: '{"event_id": "oops", this is not json' },
        { type: 'event', payload: errorEvent({ id: good[1], timestamp: t.clock.now() }), withLength: true },
      ]),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: good[0] });
    expect((await eventsOf(t, q)).map((e) => e.event_id).sort()).toEqual([...good].sort());
  });

  it('an item whose length runs past the end is skipped; the items before it are stored', async () => {
    const q = await makeProject(t);
    const good = eventId();
    const first = envelope({}, [{ type: 'event', payload: errorEvent({ id: good, timestamp: t.clock.now() }) }]);
    const broken = Buffer.from(
      `\n{"type":"event","length":5000}\n${JSON.stringify(errorEvent({ timestamp: t.clock.now() }))}`,
    );
    const res = await post(t, q, Buffer.concat([first, broken]));
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: good });
    expect((await eventsOf(t, q)).map((e) => e.event_id)).toEqual([good]);
  });

  it('an envelope whose only item has a length past the end stores nothing (200)', async () => {
    const before = await rowCounts(t);
    const res = await post(
      t,
      p,
      Buffer.from(`{}\n{"type":"event","length":5000}\n${JSON.stringify(errorEvent({ timestamp: t.clock.now() }))}`),
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    expect(await rowCounts(t)).toEqual(before);
  });

  it('all the refused requests above leave the first event as the only one of the project', async () => {
    expect((await eventsOf(t, p)).length).toBe(1);
  });
});

describe.each(dialects)('database failure during ingest on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 503, leaves nothing half-written, and takes the resend', async () => {
    const p = await makeProject(t);
    const id = eventId();
    const body = envelope({ event_id: id }, [
      { type: 'event', payload: errorEvent({ id, timestamp: t.clock.now() }) },
      { type: 'session', payload: sessionUpdate({ started: t.clock.now(), status: 'crashed', errors: 1 }) },
    ]);
    const before = await rowCounts(t);
    // The table written last in the transaction disappears: everything before it must roll back.
    await sql`alter table session_hourly rename to session_hourly_away`.execute(t.deps.store.db);
    let res: Response;
    try {
      res = await post(t, p, body);
    } finally {
      await sql`alter table session_hourly_away rename to session_hourly`.execute(t.deps.store.db);
    }
    expect(res.status).toBe(503);
    const error = ((await res.json()) as { error: string }).error;
    expect(error).toMatch(/send again/);
    expect(res.headers.get('x-sentry-error')).toBe(error);
    expect(await rowCounts(t)).toEqual(before);

    const again = await post(t, p, body);
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ id });
    expect((await eventsOf(t, p)).map((e) => e.event_id)).toEqual([id]);
    expect((await sessionsOf(t, p)).map((s) => s.status)).toEqual(['crashed']);
  });

  it('answers 503 with CORS headers when the project lookup fails, for a key in the request and in the envelope dsn', async () => {
    const p = await makeProject(t);
    const event = () => errorEvent({ timestamp: t.clock.now() });
    const before = await rowCounts(t);
    // The projects table disappears: the key check before the body is read, and the one
    // after it (a key only in the envelope's dsn), both meet a failing database.
    await sql`alter table projects rename to projects_away`.execute(t.deps.store.db);
    const answers: Response[] = [];
    try {
      answers.push(await post(t, p, envelope({}, [{ type: 'event', payload: event() }])));
      answers.push(
        await post(t, p, envelope({ dsn: dsnOf(t, p) }, [{ type: 'event', payload: event() }]), { auth: 'none' }),
      );
      answers.push(await post(t, p, JSON.stringify(event()), { endpoint: 'store', auth: 'header' }));
    } finally {
      await sql`alter table projects_away rename to projects`.execute(t.deps.store.db);
    }
    for (const res of answers) {
      expect(res.status).toBe(503);
      const error = ((await res.json()) as { error: string }).error;
      expect(error).toMatch(/database is unavailable.*send again/);
      expect(res.headers.get('x-sentry-error')).toBe(error);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      expect(res.headers.get('access-control-expose-headers')).toMatch(/x-sentry-error/);
    }
    expect(await rowCounts(t)).toEqual(before);
    expect((await post(t, p, envelope({}, [{ type: 'event', payload: event() }]))).status).toBe(200);
  });
});
