// rotate-key with two server instances on one database (docs/api.md "POST /api/projects/{slug}/rotate-key"):
// after the rotation on one, the new key works at once on the other, which had the
// project row in its ingest cache with the old key, and the old key stops there
// within one second.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createTestDatabase,
  dialects,
  startTestServer,
  type TestDatabase,
  type TestServer,
} from '../helpers/server.js';
import { envelope, errorEvent, eventId } from '../ingest/helpers.js';

describe.each(dialects)('rotate-key across instances on %s', (dialect) => {
  let db: TestDatabase;
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    a = await startTestServer(dialect, { database: db, env: { RATE_LIMIT: '0' } });
    b = await startTestServer(dialect, { database: db, env: { RATE_LIMIT: '0' } });
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await db?.drop();
  });

  it('accepts the new key on the other instance at once and refuses the old one there within 1 s', async () => {
    const created = await a.api('/api/projects', { method: 'POST', json: { slug: 'rotating' } });
    const project = (await created.json()) as { id: number; dsn: string };
    const oldKey = new URL(project.dsn).username;
    const send = async (t: TestServer, key: string) => {
      const id = eventId();
      const res = await fetch(`${t.url}/api/${project.id}/envelope/?sentry_key=${key}`, {
        method: 'POST',
        body: envelope({}, [{ type: 'event', payload: errorEvent({ id, timestamp: t.clock.now() }) }]) as BodyInit,
      });
      await res.arrayBuffer();
      return res.status;
    };
    // B remembers the project row with the old key.
    expect(await send(b, oldKey)).toBe(200);

    const rotated = await a.api('/api/projects/rotating/rotate-key', { method: 'POST' });
    const rotatedAt = Date.now();
    const newKey = new URL(((await rotated.json()) as { dsn: string }).dsn).username;
    expect(await send(b, newKey)).toBe(200);
    expect(await send(a, oldKey)).toBe(401);

    let refusedAfter = Infinity;
    while (Date.now() - rotatedAt < 2000) {
      if ((await send(b, oldKey)) === 401) {
        refusedAfter = Date.now() - rotatedAt;
        break;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(refusedAfter).toBeLessThanOrEqual(1000);
    expect(await send(b, newKey)).toBe(200);
  });

  it('refuses the old key on the other instance at once once the new key was used there', async () => {
    const created = await a.api('/api/projects', { method: 'POST', json: { slug: 'rotating-2' } });
    const project = (await created.json()) as { id: number; dsn: string };
    const oldKey = new URL(project.dsn).username;
    const send = (t: TestServer, key: string) =>
      fetch(`${t.url}/api/${project.id}/envelope/?sentry_key=${key}`, {
        method: 'POST',
        body: envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: t.clock.now() }) }]) as BodyInit,
      }).then((r) => r.status);
    expect(await send(b, oldKey)).toBe(200);
    const rotated = await a.api('/api/projects/rotating-2/rotate-key', { method: 'POST' });
    const newKey = new URL(((await rotated.json()) as { dsn: string }).dsn).username;
    expect(await send(b, newKey)).toBe(200);
    // B read the row again for the new key, so it knows the old one is gone.
    expect(await send(b, oldKey)).toBe(401);
  });
});
