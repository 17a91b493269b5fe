// The page size of SQLite databases: new ones get SQLITE_PAGE_SIZE, existing ones keep theirs.
import fs from 'node:fs';
import BetterSqlite3 from 'better-sqlite3';
import { sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { migrate, type Store } from '../../src/store/database.js';
import { openStore, SQLITE_PAGE_SIZE } from '../../src/editions/node/open-store.js';
import { createTestDatabase, type TestDatabase } from '../helpers/server.js';

describe('SQLite page size', () => {
  let database: TestDatabase | undefined;
  afterEach(async () => {
    await database?.drop();
    database = undefined;
  });

  /** A fresh SQLite file path (nothing written yet). */
  async function freshFile(): Promise<string> {
    database = await createTestDatabase('sqlite');
    return database.url.slice('sqlite:'.length);
  }

  async function pageSize(store: Store): Promise<number> {
    const { rows } = await sql<{ page_size: number }>`pragma page_size`.execute(store.db);
    return Number(rows[0].page_size);
  }

  it('is 8 KB for a new database, and stays so once it holds the schema', async () => {
    expect(SQLITE_PAGE_SIZE).toBe(8192);
    const file = await freshFile();
    const store = await openStore(`sqlite:${file}`);
    try {
      await migrate(store);
      expect(await pageSize(store)).toBe(8192);
    } finally {
      await store.close();
    }
    // The file itself says so (header bytes 16-17), for any later connection.
    expect(fs.readFileSync(file).readUInt16BE(16)).toBe(8192);
  });

  it('leaves a database created with 4 KB pages as it is, and works on it', async () => {
    const file = await freshFile();
    const old = new BetterSqlite3(file);
    old.pragma('page_size = 4096');
    old.pragma('journal_mode = WAL');
    old.exec('create table older_rows (id integer primary key, note text)');
    old.prepare('insert into older_rows (note) values (?)').run('written by an older version');
    old.close();

    const store = await openStore(`sqlite:${file}`);
    try {
      expect(await pageSize(store)).toBe(4096);
      await migrate(store);
      expect(await pageSize(store)).toBe(4096);
      const { rows } = await sql<{ note: string }>`select note from older_rows`.execute(store.db);
      expect(rows.map((r) => r.note)).toEqual(['written by an older version']);
      expect(await store.ping()).toBe(true);
    } finally {
      await store.close();
    }
  });
});
