// The ingest path's project-row cache (findProjectForIngest): served from memory,
// forgotten at once by project writes made through the store module, and expiring
// after INGEST_PROJECT_TTL_MS for writes it cannot see (another server instance).
import { sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { migrate, type Store } from '../../src/store/database.js';
import { openStore } from '../../src/editions/node/open-store.js';
import {
  createProject,
  deleteProject,
  findProjectForIngest,
  INGEST_PROJECT_TTL_MS,
  PROJECT_DEFAULTS,
  rotateProjectKey,
  updateProject,
} from '../../src/store/projects.js';
import { createTestDatabase, dialects, type TestDatabase } from '../helpers/server.js';

describe.each(dialects)('ingest project cache on %s', (dialect) => {
  let database: TestDatabase;
  let store: Store;
  let id: number;
  let key: string;

  beforeEach(async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrate(store);
    const row = await createProject(store.db, { slug: 'cached', name: 'cached', ...PROJECT_DEFAULTS }, Date.now());
    id = row.id;
    key = row.dsn_key;
  });
  afterEach(async () => {
    await store.close();
    await database.drop();
  });

  /** A write this process's store module does not see, as another server instance would make it. */
  async function changeKeyBehindTheCache(newKey: string): Promise<void> {
    await sql`update projects set dsn_key = ${newKey} where id = ${id}`.execute(store.db);
  }

  it('answers from memory until the TTL runs out, then reads the database again', async () => {
    expect((await findProjectForIngest(store.db, id))?.dsn_key).toBe(key);
    await changeKeyBehindTheCache('0'.repeat(32));
    expect((await findProjectForIngest(store.db, id))?.dsn_key).toBe(key);
    await new Promise((r) => setTimeout(r, INGEST_PROJECT_TTL_MS + 100));
    expect((await findProjectForIngest(store.db, id))?.dsn_key).toBe('0'.repeat(32));
  });

  it('forgets at once what rotate-key, patch and delete change', async () => {
    expect((await findProjectForIngest(store.db, id))?.dsn_key).toBe(key);
    const rotated = await rotateProjectKey(store.db, id);
    expect((await findProjectForIngest(store.db, id))?.dsn_key).toBe(rotated!.dsn_key);

    expect((await findProjectForIngest(store.db, id))?.sample_rate).toBe(1);
    await updateProject(store.db, id, { sample_rate: 0.5 });
    expect((await findProjectForIngest(store.db, id))?.sample_rate).toBe(0.5);

    await deleteProject(store.db, id);
    expect(await findProjectForIngest(store.db, id)).toBeUndefined();
  });

  it('does not keep a row it read before a rotation that finished first', async () => {
    // Hold the lookup between reading its row and caching it until the rotation is done.
    // Every query of this Kysely instance, builder or raw, runs through its one executor.
    const db = store.db.getExecutor() as unknown as {
      executeQuery: (q: { sql: string }, ...rest: unknown[]) => Promise<unknown>;
    };
    const original = db.executeQuery.bind(db);
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let read!: () => void;
    const readDone = new Promise<void>((resolve) => (read = resolve));
    db.executeQuery = async (query, ...rest) => {
      const result = await original(query, ...rest);
      if (/from "projects" where "id"/.test(query.sql)) {
        read();
        await gate;
      }
      return result;
    };
    const lookup = findProjectForIngest(store.db, id);
    await readDone;
    db.executeQuery = original;
    const rotated = await rotateProjectKey(store.db, id);
    release();
    expect((await lookup)?.dsn_key).toBe(key);
    expect((await findProjectForIngest(store.db, id))?.dsn_key).toBe(rotated!.dsn_key);
  });

  it('does not remember unknown projects', async () => {
    expect(await findProjectForIngest(store.db, id + 1)).toBeUndefined();
    const second = await createProject(store.db, { slug: 'second', name: 'second', ...PROJECT_DEFAULTS }, Date.now());
    expect(second.id).toBe(id + 1);
    expect((await findProjectForIngest(store.db, second.id))?.dsn_key).toBe(second.dsn_key);
  });
});
