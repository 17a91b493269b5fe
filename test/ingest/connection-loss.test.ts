// PostgreSQL dropping the server's connections under ingest load: the real
// `faultline serve` takes concurrent envelopes while its backends are terminated
// again and again, then while its database refuses connections. The process stays
// up, answers 503 while the database is away, recovers without a restart, and every
// event it answered 200 is stored. The shared rate limiter is on, so its claims
// meet the lost connections too.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/editions/node/open-store.js';
import { createTestDatabase } from '../helpers/server.js';
import { ensureBuilt, startServe } from '../helpers/cli.js';

const admin = async <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => {
  const c = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(!process.env.TEST_DATABASE_URL)('PostgreSQL connection loss', () => {
  it('keeps serving while its connections are terminated, answers 503 while the database is away, and stores every event answered 200', async () => {
    ensureBuilt();
    const db = await createTestDatabase('postgres');
    const dbName = new URL(db.url).pathname.slice(1);
    const serve = await startServe({ env: { DATABASE_URL: db.url, RATE_LIMIT: '1000000' } });
    const terminate = () =>
      admin((c) =>
        c.query(
          'select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()',
          [dbName],
        ),
      );
    try {
      const created = await fetch(`${serve.url}/api/projects`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ slug: 'droppy' }),
      });
      const project = (await created.json()) as { id: number; dsn: string };
      const key = new URL(project.dsn).username;
      const statuses = new Map<number, number>();
      let stop = false;
      const acknowledged: string[] = [];
      const send = async (i: number) => {
        const id = randomBytes(16).toString('hex');
        const event = { event_id: id, message: `drop ${i % 5}`, level: 'error', timestamp: Date.now() / 1000 };
        const body = `{"event_id":"${id}"}\n{"type":"event"}\n${JSON.stringify(event)}\n`;
        let res: Response;
        try {
          res = await fetch(`${serve.url}/api/${project.id}/envelope/?sentry_key=${key}`, { method: 'POST', body });
          await res.arrayBuffer();
        } catch {
          // The server is gone (the defect this test is about).
          stop = true;
          statuses.set(-1, (statuses.get(-1) ?? 0) + 1);
          return -1;
        }
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 200) acknowledged.push(id);
        return res.status;
      };
      // Concurrent ingest while the backends are terminated several times.
      let n = 0;
      const load = Promise.all(
        Array.from({ length: 16 }, async () => {
          while (!stop) await send(n++);
        }),
      );
      // The load is flowing before the first termination (on a busy machine the first
      // acknowledgements take a while): terminations then hit requests in flight.
      for (let i = 0; i < 400 && acknowledged.length < 50 && !stop; i++) await sleep(50);
      expect(acknowledged.length, 'acknowledged before the first termination').toBeGreaterThanOrEqual(50);
      for (let round = 0; round < 6; round++) {
        await sleep(150);
        await terminate();
      }
      // The database refuses connections: ingest answers 503, the process stays up.
      await admin((c) => c.query(`alter database ${dbName} allow_connections false`));
      // Terminating is a signal: wait until the server's backends are gone.
      for (let i = 0; i < 100; i++) {
        await terminate();
        const { rows } = await admin((c) =>
          c.query('select count(*)::int as n from pg_stat_activity where datname = $1', [dbName]),
        );
        if (rows[0].n === 0) break;
        await sleep(50);
      }
      const during = await Promise.all(Array.from({ length: 8 }, (_, i) => send(100_000 + i)));
      stop = true;
      await load;
      expect({ exit: serve.child.exitCode, signal: serve.child.signalCode }, serve.stderr().slice(0, 2000)).toEqual({
        exit: null,
        signal: null,
      });
      expect(during.every((s) => s === 503)).toBe(true);
      await admin((c) => c.query(`alter database ${dbName} allow_connections true`));
      // Recovered without a restart.
      let recovered = 0;
      for (let i = 0; i < 150 && recovered !== 200; i++) {
        recovered = await send(200_000 + i);
        if (recovered !== 200) await sleep(100);
      }
      expect(recovered).toBe(200);
      expect(serve.child.exitCode).toBeNull();
      expect(serve.child.signalCode).toBeNull();
      expect([...statuses.keys()].filter((s) => s !== 200 && s !== 503)).toEqual([]);

      const store = await openStore(db.url);
      try {
        const rows = await store.db.selectFrom('events').select('event_id').execute();
        const stored = new Set(rows.map((r) => r.event_id));
        expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
      } finally {
        await store.close();
      }
      expect(serve.stderr()).not.toMatch(/unhandled|ECONNRESET|EPIPE|triggerUncaughtException/i);
    } finally {
      await admin((c) => c.query(`alter database ${dbName} allow_connections true`)).catch(() => {});
      if (serve.child.exitCode === null && serve.child.signalCode === null) serve.child.kill('SIGKILL');
      await db.drop();
    }
  }, 60_000);
});
