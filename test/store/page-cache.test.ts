// The SQLite page cache each connection asks for (openStore's pageCacheMb).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/editions/node/open-store.js';

describe('SQLite page cache', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-cache-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  async function cacheSize(options?: { pageCacheMb?: number }): Promise<number> {
    const store = await openStore(`sqlite:${path.join(dir, 'cache.db')}`, options);
    try {
      const { rows } = await sql<{ cache_size: number }>`pragma cache_size`.execute(store.db);
      return Number(rows[0].cache_size);
    } finally {
      await store.close();
    }
  }

  it('is 16 MB unless the connection asks for another size (negative: KiB)', async () => {
    expect(await cacheSize()).toBe(-16 * 1024);
    expect(await cacheSize({ pageCacheMb: 4 })).toBe(-4 * 1024);
  });
});
