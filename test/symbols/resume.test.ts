// Re-symbolication survives a restart: a run left pending with its cursor (a process
// that stopped after its first batch) is taken up by the next server start on the same
// database and goes on from the cursor; events below it are not touched again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveSymbolFile } from '../../src/symbols/storage.js';
import { RESYMBOLICATE_WINDOW_MS } from '../../src/symbols/resymbolicate.js';
import { createTestDatabase, dialects, startTestServer, type TestDatabase } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { buildJavaFixture, javaEvent, type JavaFixture } from './java-fixture.js';
import { eventDetail, eventually, sendEvent } from './helpers.js';

let fx: JavaFixture;
beforeAll(() => {
  fx = buildJavaFixture();
}, 60_000);

describe.each(dialects)('re-symbolication after a restart on %s', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('resumes a pending run from its cursor', async () => {
    const first = await startTestServer(dialect, { database });
    const project = await makeProject(first);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push(await sendEvent(first, project, javaEvent(fx, { release: 'r-resume' })));
    const rows = await first.deps.store.db.selectFrom('events').select(['id', 'event_id']).where('project_id', '=', project.id).orderBy('id').execute();
    // What a stopped process leaves: the file stored, the run pending after its first event.
    const now = first.clock.now();
    await saveSymbolFile(first.deps.store.db, { projectId: project.id, kind: 'proguard', release: 'r-resume', filename: 'mapping.txt' }, [fx.mapping], now);
    await first.deps.store.db
      .insertInto('symbol_jobs')
      .values({ project_id: project.id, release: 'r-resume', since: now - RESYMBOLICATE_WINDOW_MS, cursor: Number(rows[0].id), state: 'pending', done: 1, lease_until: 0, created_at: now })
      .execute();
    await first.close();

    const second = await startTestServer(dialect, { database });
    try {
      const job = await eventually(async () => {
        const j = await second.deps.store.db.selectFrom('symbol_jobs').selectAll().executeTakeFirst();
        return j?.state === 'done' ? j : null;
      });
      expect(Number(job.done)).toBe(3);
      expect(Number(job.cursor)).toBe(Number(rows[2].id));
      const details = await Promise.all(ids.map((id) => eventDetail(second, project, id)));
      expect(details.map((d) => d.symbolicated)).toEqual([false, true, true]);
    } finally {
      await second.close();
    }
  });
});
