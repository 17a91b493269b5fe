// GET /health for real on each database: 200 while the database answers, 503
// when it is gone (SQLite file removed, PostgreSQL database dropped) or hangs
// (a proxy in front of PostgreSQL that stops passing bytes).
import fs from 'node:fs';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialects, startTestServer, type TestServer } from '../helpers/server.js';

describe.each(dialects)('health on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: 'secret' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('answers 200 {"status":"ok"} without an API key', async () => {
    const res = await fetch(t.url + '/health');
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'ok' });
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('answers 503 {"status":"db unavailable"} once the database is gone', async () => {
    if (dialect === 'sqlite') {
      const file = t.database.url.replace(/^sqlite:/, '');
      fs.renameSync(file, `${file}.moved`);
      try {
        const res = await fetch(t.url + '/health');
        expect(res.status).toBe(503);
        expect(await res.json()).toEqual({ status: 'db unavailable' });
      } finally {
        fs.renameSync(`${file}.moved`, file);
      }
      // Back in place, the same server is healthy again.
      expect((await fetch(t.url + '/health')).status).toBe(200);
    } else {
      await t.database.drop();
      const res = await fetch(t.url + '/health');
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'db unavailable' });
    }
  });
});

/** A TCP proxy to PostgreSQL that can be frozen: connections stay open, bytes stop flowing. */
async function freezableProxy(target: URL) {
  let frozen = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => {});
    if (frozen) return; // accept and never answer
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(upstream);
    upstream.on('error', () => client.destroy());
    client.on('error', () => upstream.destroy());
    client.on('data', (d) => {
      if (!frozen) upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (!frozen) client.write(d);
    });
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    freeze() {
      frozen = true;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe.skipIf(!dialects.includes('postgres'))('health on postgres that hangs', () => {
  it('answers 503 after the 2 s deadline instead of waiting for the database', async () => {
    const database = await createTestDatabase('postgres');
    const real = new URL(database.url);
    const proxy = await freezableProxy(real);
    const viaProxy = new URL(database.url);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    const t = await startTestServer('postgres', { database: { url: viaProxy.toString(), drop: async () => {} } });
    try {
      expect((await fetch(t.url + '/health')).status).toBe(200);
      proxy.freeze();
      const res = await fetch(t.url + '/health');
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ status: 'db unavailable' });
    } finally {
      await proxy.close();
      await t.close();
      await database.drop();
    }
  });
});
