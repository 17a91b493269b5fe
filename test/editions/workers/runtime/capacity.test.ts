// The D1 capacity guard inside workerd: /health reports the database's size from D1's own
// answer (meta.size_after) against D1_MAX_SIZE_MB, and from 80 % of it /health and every
// dashboard page carry the warning.
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { createApp } from '../../../../src/editions/app.js';
import { migrate } from '../../../../src/store/migrate.js';
import { withoutQueue } from './direct-path.js';

const base = () => ({ ...withoutQueue(env as unknown as WorkerEnv), LOG_LEVEL: 'silent', RATE_LIMIT: '0' });

beforeAll(async () => {
  await migrate(buildWorkerDeps(base()).store);
});

async function health(settings: Record<string, string>) {
  const app = createApp(buildWorkerDeps({ ...base(), ...settings }));
  const res = await app.fetch(new Request('http://worker/health'));
  return {
    status: res.status,
    body: (await res.json()) as {
      status: string;
      storage?: { database_bytes: number; limit_bytes: number; used: number; warning: string | null };
    },
  };
}

describe('D1 capacity', () => {
  it('reports the size without a warning well under the limit', async () => {
    const { status, body } = await health({});
    expect(status).toBe(200);
    expect(body.status).toBe('ok');
    expect(body.storage?.database_bytes).toBeGreaterThan(4096);
    expect(body.storage?.limit_bytes).toBe(10_240 * 1024 * 1024);
    expect(body.storage?.warning).toBeNull();
  });

  it('warns in /health and on dashboard pages past 80 % of D1_MAX_SIZE_MB', async () => {
    // Fill the database past 80 % of a 1 MB limit with a throwaway table of blobs.
    const d1 = (env as unknown as { DB: { exec(sql: string): Promise<unknown> } }).DB;
    await d1.exec('CREATE TABLE IF NOT EXISTS capacity_fill (b BLOB)');
    await d1.exec('INSERT INTO capacity_fill VALUES (zeroblob(900000))');
    const limitMb = 1;
    const { body: first } = await health({});
    expect(first.storage!.database_bytes).toBeGreaterThan(0.8 * limitMb * 1024 * 1024);
    const { status, body } = await health({ D1_MAX_SIZE_MB: String(limitMb) });
    expect(status).toBe(200);
    expect(body.storage?.warning).toMatch(
      /^the database holds [\d.]+ MB of its 1\.0 MB limit \(\d+ %\): lower RETENTION_DAYS/,
    );
    const app = createApp(buildWorkerDeps({ ...base(), D1_MAX_SIZE_MB: String(limitMb) }));
    const page = await app.fetch(new Request('http://worker/'));
    expect(await page.text()).toContain('data-capacity');
  });
});
