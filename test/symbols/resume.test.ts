// Re-symbolication survives a restart: a run left pending with its cursor (a process
// that stopped after its first batch) is taken up by the next server start on the same
// database and goes on from the cursor; events below it are not touched again. Bounded
// steps (as the serverless edition runs them) go over at most their events and give
// the run's lease back, so the next step goes on at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { saveSymbolFile } from '../../src/symbols/storage.js';
import { RESYMBOLICATE_WINDOW_MS, scheduleResymbolication } from '../../src/symbols/resymbolicate.js';
import { defaultSymbolKinds } from '../../src/symbols/default-kinds.js';
import { SymbolService } from '../../src/symbols/service.js';
import { storedPayloads } from '../../src/editions/node/payloads.js';
import { nodeIngestRuntime } from '../../src/editions/node/runtime.js';
import { createTestDatabase, dialects, startTestServer, type TestDatabase } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { captureLogger } from '../helpers/log-capture.js';
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
    const rows = await first.deps.store.db
      .selectFrom('events')
      .select(['id', 'event_id'])
      .where('project_id', '=', project.id)
      .orderBy('id')
      .execute();
    // What a stopped process leaves: the file stored, the run pending after its first event.
    const now = first.clock.now();
    await saveSymbolFile(
      first.deps.store.db,
      { projectId: project.id, kind: 'proguard', release: 'r-resume', filename: 'mapping.txt' },
      [fx.mapping],
      now,
    );
    await first.deps.store.db
      .insertInto('symbol_jobs')
      .values({
        project_id: project.id,
        release: 'r-resume',
        since: now - RESYMBOLICATE_WINDOW_MS,
        cursor: Number(rows[0].id),
        state: 'pending',
        done: 1,
        lease_until: 0,
        created_at: now,
      })
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

  it('goes over a run in bounded steps, each giving the lease back', async () => {
    const t = await startTestServer(dialect, { database });
    try {
      const project = await makeProject(t);
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) ids.push(await sendEvent(t, project, javaEvent(fx, { release: 'r-steps' })));
      const now = t.clock.now();
      await saveSymbolFile(
        t.deps.store.db,
        { projectId: project.id, kind: 'proguard', release: 'r-steps', filename: 'mapping.txt' },
        [fx.mapping],
        now,
      );
      // Recorded directly: the server's own service would work through it in its loop.
      const jobId = await scheduleResymbolication(t.deps.store, project.id, 'r-steps', now);
      const log = captureLogger('info');
      const service = new SymbolService({
        store: t.deps.store,
        kinds: defaultSymbolKinds(),
        clock: t.clock,
        logger: log.logger,
        md5Hex: nodeIngestRuntime.md5Hex,
        readPayloads: storedPayloads,
        steps: { batchEvents: 2, scheduled: () => undefined },
      });
      const job = () =>
        t.deps.store.db
          .selectFrom('symbol_jobs')
          .select(['state', 'done', 'lease_until'])
          .where('id', '=', jobId)
          .executeTakeFirstOrThrow();

      expect(await service.resymbolicationStep(2)).toEqual({ ran: true, events: 2, pending: true });
      expect(await job()).toMatchObject({ state: 'pending' });
      expect(Number((await job()).done)).toBe(2);
      expect(Number((await job()).lease_until)).toBe(0);
      let details = await Promise.all(ids.map((id) => eventDetail(t, project, id)));
      expect(details.map((d) => d.symbolicated)).toEqual([true, true, false]);

      expect(await service.resymbolicationStep(2)).toEqual({ ran: true, events: 1, pending: false });
      expect((await job()).state).toBe('done');
      details = await Promise.all(ids.map((id) => eventDetail(t, project, id)));
      expect(details.map((d) => d.symbolicated)).toEqual([true, true, true]);
      expect(await service.resymbolicationStep(2)).toEqual({ ran: false, events: 0, pending: false });
      // The run's start is one info line; the step that took it up again logs at debug.
      expect(
        log.lines.filter((l) => l.msg === 're-symbolicating the events of the last 48 hours').map((l) => l.resumedAt),
      ).toEqual([0]);
    } finally {
      await t.close();
    }
  });
});
