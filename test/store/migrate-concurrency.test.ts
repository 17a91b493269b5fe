// Concurrent migrations on one fresh PostgreSQL database, in process: several stores
// migrating at once all succeed and the schema is migrated exactly once, and migrate
// waits for the advisory lock another session holds (what a second instance starting
// during a long migration meets).
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate, type Store } from '../../src/store/database.js';
import { openStore } from '../../src/editions/node/open-store.js';
import { migrations } from '../../src/store/migrations.js';
import { createTestDatabase, dialects } from '../helpers/server.js';

const MIGRATION_LOCK_KEY = 726153001;

async function migrationRows(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query('select name from kysely_migration order by name')).rows.map((r) => r.name as string);
  } finally {
    await client.end();
  }
}

describe.skipIf(!dialects.includes('postgres'))('migrate on one fresh PostgreSQL database', () => {
  it('four stores migrating at once all succeed, and each migration is applied once', async () => {
    const db = await createTestDatabase('postgres');
    const stores: Store[] = [];
    try {
      for (let i = 0; i < 4; i++) stores.push(await openStore(db.url));
      const results = await Promise.all(stores.map((s) => migrate(s)));
      const known = Object.keys(migrations('postgres'));
      // Whoever got the lock first applied everything; the rest found nothing to do.
      expect(results.flatMap((r) => r.applied).sort()).toEqual(known);
      expect(results.filter((r) => r.applied.length > 0)).toHaveLength(1);
      for (const r of results) expect(r.version).toBe(known[known.length - 1]);
      expect(await migrationRows(db.url)).toEqual(known);
      // And the schema works: every store sees the same tables.
      for (const s of stores) await s.db.selectFrom('projects').select('id').execute();
    } finally {
      for (const s of stores) await s.close();
      await db.drop();
    }
  });

  it('waits while another session holds the migration lock, then migrates', async () => {
    const db = await createTestDatabase('postgres');
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    const store = await openStore(db.url);
    try {
      await holder.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
      let settled = false;
      const running = migrate(store).finally(() => {
        settled = true;
      });
      running.catch(() => {});
      await new Promise((r) => setTimeout(r, 500));
      expect(settled).toBe(false);
      // Nothing was created while the lock was held.
      const tables = await holder.query(
        "select count(*)::int as n from information_schema.tables where table_schema = 'public'",
      );
      expect(tables.rows[0].n).toBe(0);
      await holder.query('select pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]);
      const result = await running;
      expect(result.applied).toEqual(Object.keys(migrations('postgres')));
      expect(await migrationRows(db.url)).toEqual(result.applied);
    } finally {
      await holder.end();
      await store.close();
      await db.drop();
    }
  });
});
