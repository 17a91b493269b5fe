// Background WAL checkpoints (SQLite): with `backgroundCheckpoints`, the connection
// that commits no longer copies the WAL into the database file inside its COMMIT;
// a worker thread does it shortly after.
import fs from 'node:fs';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { openStore, type Store } from '../../src/store/database.js';
import { startWalCheckpointer, type WalCheckpointer } from '../../src/store/wal-checkpointer.js';
import { createTestDatabase, type TestDatabase } from '../helpers/server.js';

const PAGE = 4096;

describe('background WAL checkpoints on sqlite', () => {
  let database: TestDatabase;
  let store: Store;
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

  it('without the option the committing connection checkpoints as before', async () => {
    const file = await open(false);
    const before = fs.statSync(file).size;
    await writeMegabytes();
    expect(fs.statSync(file).size - before).toBeGreaterThan(3000 * PAGE);
  });
});

// SQLite syncs the database file after a checkpoint only when nothing was appended to
// the WAL meanwhile; under steady ingest that left the sync to the writer's own
// checkpoint, inside a commit. The worker flushes the file after each checkpoint that
// copied frames.
describe('the background checkpointer flushes the database file', () => {
  let database: TestDatabase;
  let writer: Database.Database | undefined;
  let checkpointer: WalCheckpointer | undefined;
  afterEach(async () => {
    await checkpointer?.stop();
    writer?.close();
    await database?.drop();
  });

  async function start(): Promise<string> {
    database = await createTestDatabase('sqlite');
    const file = database.url.slice('sqlite:'.length);
    writer = new Database(file);
    writer.pragma('journal_mode = WAL');
    writer.pragma('wal_autocheckpoint = 0');
    writer.exec('create table blobs (b blob)');
    checkpointer = startWalCheckpointer(file);
    return file;
  }

  async function until(check: () => Promise<boolean> | boolean, ms = 5000): Promise<boolean> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
      if (await check()) return true;
      await new Promise((r) => setTimeout(r, 20));
    }
    return check();
  }

  it('after a checkpoint that copied frames', async () => {
    const file = await start();
    // The schema's frames are copied first; count from once that is done.
    expect(await until(() => fs.statSync(file).size > 0)).toBe(true);
    await until(async () => (await checkpointer!.flushes()) > 0, 500);
    const before = await checkpointer!.flushes();
    const size = fs.statSync(file).size;
    writer!.prepare('insert into blobs values (randomblob(100000))').run();
    expect(await until(() => fs.statSync(file).size > size + 90_000)).toBe(true);
    expect(await until(async () => (await checkpointer!.flushes()) > before, 1000)).toBe(true);
  });

  it('not while there is nothing to copy', async () => {
    await start();
    await until(async () => (await checkpointer!.flushes()) > 0, 500);
    const before = await checkpointer!.flushes();
    await new Promise((r) => setTimeout(r, 300));
    expect(await checkpointer!.flushes()).toBe(before);
  });
});
