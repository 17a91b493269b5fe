// Background WAL checkpoints (SQLite): with `backgroundCheckpoints`, the connection
// that commits no longer copies the WAL into the database file inside its COMMIT;
// a worker thread does it shortly after.
import fs from 'node:fs';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type NodeStore } from '../../src/editions/node/open-store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/server.js';

const PAGE = 4096;

describe('background WAL checkpoints on sqlite', () => {
  let database: TestDatabase;
  let store: NodeStore;
  afterEach(async () => {
    await store?.close();
    await database?.drop();
  });

  async function open(backgroundCheckpoints: boolean): Promise<string> {
    database = await createTestDatabase('sqlite');
    store = await openStore(database.url, { backgroundCheckpoints });
    await sql`create table blobs (b blob)`.execute(store.db);
    return database.url.slice('sqlite:'.length);
  }

  /** About 3 000 pages in one transaction: past SQLite's default autocheckpoint of 1 000. */
  async function writeMegabytes(): Promise<void> {
    await sql`with recursive n(i) as (select 1 union all select i + 1 from n where i < 3000) insert into blobs select randomblob(${PAGE}) from n`.execute(
      store.db,
    );
  }

  async function waitFor(check: () => boolean, ms = 5000): Promise<boolean> {
    const until = Date.now() + ms;
    while (Date.now() < until) {
      if (check()) return true;
      await new Promise((r) => setTimeout(r, 20));
    }
    return check();
  }

  it('commits without checkpointing; the worker copies the WAL into the file soon after', async () => {
    const file = await open(true);
    const before = fs.statSync(file).size;
    await writeMegabytes();
    // The commit itself left the pages in the WAL (the default would have checkpointed them).
    expect(fs.statSync(file).size - before).toBeLessThan(100 * PAGE);
    expect(await waitFor(() => fs.statSync(file).size - before > 3000 * PAGE)).toBe(true);
    await sql`insert into blobs values (randomblob(10))`.execute(store.db);
    const rows = await sql<{ n: number }>`select count(*) as n from blobs`.execute(store.db);
    expect(Number(rows.rows[0].n)).toBe(3001);
  });

  it('checkpoints about every 500 ms while transactions carry one request each, every 40 ms under load, every 200 ms at saturation', async () => {
    const file = await open(true);
    const tally = store.commitTally!;
    expect(tally).toBeDefined();
    /**
     * Commits a page-sized row every 10 ms for `ms`, each recorded as a transaction of
     * `works` requests, and counts the checkpoints that copied something: each one grows
     * the database file by the pages committed since the one before.
     */
    async function checkpointsWhileCommitting(works: number, ms: number): Promise<number> {
      const sizes = new Set<number>([fs.statSync(file).size]);
      const until = Date.now() + ms;
      let nextCommit = 0;
      while (Date.now() < until) {
        if (Date.now() >= nextCommit) {
          await sql`insert into blobs values (randomblob(${PAGE}))`.execute(store.db);
          tally.record(works);
          nextCommit = Date.now() + 10;
        }
        sizes.add(fs.statSync(file).size);
        await new Promise((r) => setTimeout(r, 2));
      }
      return sizes.size - 1;
    }
    // The table's own commit checkpointed first (nothing counted yet: every tick checkpoints).
    await new Promise((r) => setTimeout(r, 100));
    // One request per transaction: a low rate. The first small transactions are let wait
    // (12 ticks of 40 ms), so 400 ms see one checkpoint at most.
    expect(await checkpointsWhileCommitting(1, 400)).toBeLessThanOrEqual(1);
    // Transactions of 4 requests: load. A checkpoint every tick (40 ms), about 15 in
    // 600 ms; a slow machine may delay ticks, not skip them all.
    expect(await checkpointsWhileCommitting(4, 600)).toBeGreaterThanOrEqual(4);
    // Transactions of 30 requests: saturation. Every fifth tick (200 ms): about 3 in 600 ms.
    const atSaturation = await checkpointsWhileCommitting(30, 600);
    expect(atSaturation).toBeGreaterThanOrEqual(1);
    expect(atSaturation).toBeLessThanOrEqual(4);
  });

  it('without the option the committing connection checkpoints as before', async () => {
    const file = await open(false);
    const before = fs.statSync(file).size;
    await writeMegabytes();
    expect(fs.statSync(file).size - before).toBeGreaterThan(3000 * PAGE);
  });
});
