// PostgreSQL: the statement that writes an ingest batch goes out as a named (prepared)
// statement once its shape recurs, prepared once per connection and reused by every
// batch of the same shape, including after a batch whose write failed. The batches run
// on one pinned connection, so the test can read that connection's pg_prepared_statements.
import { sql, type Kysely } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prepareWork } from '../../../src/ingest/prepare.js';
import { compress } from '../../../src/editions/node/codec.js';
import { ingestPlanner } from '../../../src/ingest/plan.js';
import { commitIngestBatch } from '../../../src/store/ingest-batch.js';
import { NAME_AFTER_USES } from '../../../src/store/pg-statements.js';
import type { Database } from '../../../src/store/schema.js';
import { dialects } from '../../helpers/server.js';
import {
  createProject,
  fp,
  makeEvent,
  makeSession,
  makeWork,
  openTestStore,
  type TestStore,
} from '../../helpers/factory.js';

describe.runIf(dialects.includes('postgres'))('ingest batch write as a named statement on PostgreSQL', () => {
  let t: TestStore;
  let project: Awaited<ReturnType<typeof createProject>>;

  beforeAll(async () => {
    t = await openTestStore('postgres');
    project = await createProject(t.store);
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  const batch = (db: Kysely<Database>, n: number) =>
    commitIngestBatch(
      { ...t.store, db },
      [
        makeWork(project, {
          events: Array.from({ length: n }, (_, i) => makeEvent({ fingerprint: fp(`f${i % 3}`) })),
          sessions: [makeSession()],
        }),
      ].map(prepareWork),
      { planner: ingestPlanner, random: () => 0, compress },
    );

  const namedWrites = async (db: Kysely<Database>) =>
    (
      await sql<{
        name: string;
        statement: string;
      }>`select name, statement from pg_prepared_statements where name like 'faultline_write_%'`.execute(db)
    ).rows;

  it('names the write of a recurring shape, prepares it once per connection and reuses it', async () => {
    await t.store.db.connection().execute(async (db) => {
      // The first batch creates the issues (it also writes issue_changes: a shape of its
      // own, used once, so never named); the others share one shape.
      await batch(db, 5);
      for (let i = 1; i < NAME_AFTER_USES; i++) await batch(db, 2);
      expect(await namedWrites(db)).toEqual([]);

      await batch(db, 3);
      const named = await namedWrites(db);
      expect(named).toHaveLength(1);
      expect(named[0].statement).toMatch(/^with /);
      expect(named[0].statement).toContain('insert into "events"');

      await batch(db, 4);
      expect(await namedWrites(db)).toEqual(named);
    });
    const { n } = await t.store.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(Number(n)).toBe(5 + 2 * (NAME_AFTER_USES - 1) + 3 + 4);
  });

  it('keeps using the prepared write after a batch whose write failed', async () => {
    await t.store.db.connection().execute(async (db) => {
      await batch(db, 2);
      const before = await namedWrites(db);
      expect(before).toHaveLength(1);
      // The next event ids collide with stored events: the write fails, the batch rolls back.
      const { max } = await db
        .selectFrom('events')
        .select((eb) => eb.fn.max<number>('id').as('max'))
        .executeTakeFirstOrThrow();
      await sql`select setval('events_id_seq', ${Number(max) - 1})`.execute(db);
      await expect(batch(db, 2)).rejects.toThrow(/duplicate key/);
      await sql`select setval('events_id_seq', ${Number(max) + 10})`.execute(db);

      await batch(db, 2);
      expect(await namedWrites(db)).toEqual(before);
    });
    const { n } = await t.store.db
      .selectFrom('events')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect(Number(n)).toBe(5 + 2 * (NAME_AFTER_USES - 1) + 3 + 4 + 4);
  });
});
