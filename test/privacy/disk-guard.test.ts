// The disk guard on a real file system: a 1 GB file is allocated beside the SQLite
// database and MIN_FREE_DISK_MB is set between the free space with it and without it.
// While the file is there, ingest answers 503 with Retry-After (nothing stored) and
// /health says why; once it is deleted (and the guard's short memory has passed), the
// real @sentry/node SDK's events are stored again.
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { statfs } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDiskGuard, DISK_CHECK_MS } from '../../src/privacy/disk.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { createTestDatabase, startTestServer, type TestDatabase, type TestServer } from '../helpers/server.js';
import { dsnOf, envelope, errorEvent, eventsOf, makeProject, post } from '../ingest/helpers.js';

const CLIENT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'ingest', 'clients', 'node-sdk.mjs');
const MB = 1024 * 1024;

describe('createDiskGuard', () => {
  it('compares with the threshold, remembers a reading for a moment, and never refuses when it cannot look', async () => {
    let free = 500 * MB;
    let reads = 0;
    let t = 0;
    const guard = createDiskGuard(
      async () => {
        reads++;
        return free;
      },
      100,
      () => t,
    );
    expect(await guard()).toEqual({ freeMb: 500, minFreeMb: 100, low: false });
    free = 50 * MB;
    expect((await guard()).low).toBe(false);
    expect(reads).toBe(1);
    t += DISK_CHECK_MS + 1;
    expect(await guard()).toEqual({ freeMb: 50, minFreeMb: 100, low: true });
    const broken = createDiskGuard(async () => {
      throw new Error('statfs failed');
    }, 100);
    expect((await broken()).low).toBe(false);
  });
});

const hasFallocate = (() => {
  try {
    execFileSync('fallocate', ['--help'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe.skipIf(!hasFallocate)('MIN_FREE_DISK_MB on a real file system (SQLite)', () => {
  let database: TestDatabase;
  let t: TestServer;
  let p: ProjectRow;
  let ballast: string;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    const dir = path.dirname(database.url.slice('sqlite:'.length));
    ballast = path.join(dir, 'ballast');
    execFileSync('fallocate', ['-l', `${1024 * MB}`, ballast]);
    const s = await statfs(dir);
    const freeMb = Math.floor((Number(s.bavail) * Number(s.bsize)) / MB);
    // Low with the ballast, clear by 500 MB without it.
    t = await startTestServer('sqlite', {
      database,
      env: { MIN_FREE_DISK_MB: String(freeMb + 500) },
      clock: { now: () => Date.now() },
    });
    p = await makeProject(t);
  }, 60_000);
  afterAll(async () => {
    fs.rmSync(ballast, { force: true });
    await t?.close();
    await database?.drop();
  });

  it('refuses ingest with 503 and Retry-After, says why on /health, and takes events again once space is back', async () => {
    const refused = await post(t, p, envelope({}, [{ type: 'event', payload: errorEvent({ timestamp: Date.now() }) }]));
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('60');
    expect((await refused.json()).error).toContain('low on disk space');
    expect(await eventsOf(t, p)).toHaveLength(0);
    const health = await fetch(`${t.url}/health`);
    expect(health.status).toBe(503);
    const body = await health.json();
    expect(body.status).toBe('low disk');
    expect(body.detail).toMatch(/MB free, below MIN_FREE_DISK_MB=\d+: ingest is refused/);

    fs.rmSync(ballast);
    await new Promise((r) => setTimeout(r, DISK_CHECK_MS + 200));
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
    const code = await new Promise<number>((resolve) => {
      execFile(
        process.execPath,
        [CLIENT, 'handled'],
        { env: { ...process.env, FAULTLINE_DSN: dsnOf(t, p) }, timeout: 30_000 },
        (err) => resolve(err ? Number(err.code ?? -1) : 0),
      );
    });
    expect(code).toBe(0);
    expect(await eventsOf(t, p)).toHaveLength(2);
  }, 60_000);
});
