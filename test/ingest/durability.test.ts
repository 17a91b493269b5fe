// An acknowledged event survives kill -9: the real `faultline serve` takes concurrent
// envelopes, is killed with SIGKILL the moment the last one is answered, and every
// answered event is then found in the database (both dialects).
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/editions/node/open-store.js';
import { createTestDatabase, dialects } from '../helpers/server.js';
import { ensureBuilt, startServe } from '../helpers/cli.js';

describe.each(dialects)('durability on %s', (dialect) => {
  it('keeps every event answered 200 when the server is killed with SIGKILL right after', async () => {
    ensureBuilt();
    const db = await createTestDatabase(dialect);
    const serve = await startServe({ env: { DATABASE_URL: db.url, RATE_LIMIT: '0' } });
    try {
      const created = await fetch(`${serve.url}/api/projects`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ slug: 'durable' }),
      });
      const project = (await created.json()) as { id: number; dsn: string };
      const key = new URL(project.dsn).username;
      const send = async (i: number) => {
        const id = randomBytes(16).toString('hex');
        const event = { event_id: id, message: `durable ${i % 7}`, level: 'error', timestamp: Date.now() / 1000 };
        const body = `{"event_id":"${id}"}\n{"type":"event"}\n${JSON.stringify(event)}\n`;
        const res = await fetch(`${serve.url}/api/${project.id}/envelope/?sentry_key=${key}`, { method: 'POST', body });
        await res.arrayBuffer();
        return res.status === 200 ? id : null;
      };
      // Several waves of concurrent requests, so answers come from many group commits.
      const acknowledged: string[] = [];
      for (let wave = 0; wave < 5; wave++) {
        const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => send(wave * 40 + i)));
        acknowledged.push(...ids.filter((id): id is string => id !== null));
      }
      serve.child.kill('SIGKILL');
      await serve.exited;
      expect(acknowledged).toHaveLength(200);

      const store = await openStore(db.url);
      try {
        const rows = await store.db.selectFrom('events').select('event_id').execute();
        const stored = new Set(rows.map((r) => r.event_id));
        expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
        const counted = await store.db
          .selectFrom('issues')
          .select((eb) => eb.fn.sum<number>('event_count').as('n'))
          .executeTakeFirstOrThrow();
        expect(Number(counted.n)).toBe(200);
      } finally {
        await store.close();
      }
    } finally {
      if (serve.child.exitCode === null && serve.child.signalCode === null) serve.child.kill('SIGKILL');
      await db.drop();
    }
  });
});
