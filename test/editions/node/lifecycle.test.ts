// Issue lifecycle on ingest: the resolved -> regression flip (new release, and the
// no-release rule by event time), one change record per flip, and statuses ingest
// never touches.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { IngestWriter } from '../../../src/editions/node/writer.js';
import type { ProjectRow } from '../../../src/store/schema.js';
import { dialects } from '../../helpers/server.js';
import {
  createProject,
  fp,
  makeEvent,
  makeWork,
  newWriter,
  openTestStore,
  type TestStore,
} from '../../helpers/factory.js';

const T = Date.UTC(2026, 0, 10, 12, 0, 0);
const HOUR = 3_600_000;

describe.each(dialects)('writer issue lifecycle (%s)', (dialect) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openTestStore(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function setStatus(project: ProjectRow, fingerprint: string, status: string, resolvedAt: number | null) {
    await t.store.db
      .updateTable('issues')
      .set({ status, resolved_at: resolvedAt, resolved_release: resolvedAt === null ? null : 'app@1.0.0' })
      .where('project_id', '=', project.id)
      .where('fingerprint', '=', fingerprint)
      .execute();
  }
  async function issue(project: ProjectRow, fingerprint: string) {
    return t.store.db
      .selectFrom('issues')
      .selectAll()
      .where('project_id', '=', project.id)
      .where('fingerprint', '=', fingerprint)
      .executeTakeFirstOrThrow();
  }
  async function changes(project: ProjectRow) {
    const rows = await t.store.db
      .selectFrom('issue_changes')
      .select(['kind', 'at', 'release'])
      .where('project_id', '=', project.id)
      .orderBy('id')
      .execute();
    return rows.map((r) => [r.kind, Number(r.at), r.release]);
  }
  async function send(
    writer: IngestWriter,
    project: ProjectRow,
    receivedAt: number,
    ...events: ReturnType<typeof makeEvent>[]
  ) {
    expect(await writer.submit(makeWork(project, { events, receivedAt }))).toEqual({ kind: 'ok' });
  }

  it('turns a resolved issue into a regression on a release it was not seen on before the resolution, once', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const f = fp('regress');
    await send(
      writer,
      project,
      T,
      makeEvent({ fingerprint: f, release: 'app@1.0.0', timestamp: T - HOUR }),
      makeEvent({ fingerprint: f, release: 'app@1.1.0', timestamp: T - HOUR }),
    );
    const resolvedAt = T + HOUR;
    await setStatus(project, f, 'resolved', resolvedAt);

    // Releases seen before the resolution do not regress it, whatever the event time.
    await send(
      writer,
      project,
      T + 2 * HOUR,
      makeEvent({ fingerprint: f, release: 'app@1.0.0', timestamp: T + 2 * HOUR }),
      makeEvent({ fingerprint: f, release: 'app@1.1.0', timestamp: T + 2 * HOUR }),
    );
    expect((await issue(project, f)).status).toBe('resolved');
    expect(Number((await issue(project, f)).event_count)).toBe(4);

    // A new release does, once; later events change nothing more.
    const flipAt = T + 3 * HOUR;
    await send(
      writer,
      project,
      flipAt,
      makeEvent({ fingerprint: f, release: 'app@2.0.0', timestamp: T + 3 * HOUR }),
      makeEvent({ fingerprint: f, release: 'app@3.0.0', timestamp: T + 3 * HOUR }),
    );
    await send(
      writer,
      project,
      flipAt + HOUR,
      makeEvent({ fingerprint: f, release: 'app@4.0.0', timestamp: T + 4 * HOUR }),
    );
    await writer.close();
    const row = await issue(project, f);
    expect(row).toMatchObject({ status: 'regression', resolved_release: 'app@1.0.0' });
    expect(Number(row.regressed_at)).toBe(flipAt);
    expect(Number(row.resolved_at)).toBe(resolvedAt);
    expect(Number(row.event_count)).toBe(7);
    expect(await changes(project)).toEqual([
      ['new_issue', T, 'app@1.0.0'],
      ['regression', flipAt, 'app@2.0.0'],
    ]);
  });

  it('regresses on a release first seen only after the resolution', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const f = fp('after');
    await send(writer, project, T, makeEvent({ fingerprint: f, release: 'app@1.0.0', timestamp: T }));
    // Seen on 2.0.0 while ignored, after what will be the resolution time...
    await setStatus(project, f, 'ignored', null);
    await send(
      writer,
      project,
      T + 2 * HOUR,
      makeEvent({ fingerprint: f, release: 'app@2.0.0', timestamp: T + 2 * HOUR }),
    );
    // ...then resolved with a resolution time before that sighting.
    await setStatus(project, f, 'resolved', T + HOUR);
    await send(
      writer,
      project,
      T + 3 * HOUR,
      makeEvent({ fingerprint: f, release: 'app@2.0.0', timestamp: T + 3 * HOUR }),
    );
    await writer.close();
    expect((await issue(project, f)).status).toBe('regression');
  });

  it('regresses on an event without a release only when its time is after the resolution', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const f = fp('norelease');
    await send(writer, project, T, makeEvent({ fingerprint: f, release: '', timestamp: T }));
    const resolvedAt = T + HOUR;
    await setStatus(project, f, 'resolved', resolvedAt);
    // Received late, but happened before the resolution.
    await send(
      writer,
      project,
      T + 5 * HOUR,
      makeEvent({ fingerprint: f, release: '', timestamp: resolvedAt - 1 }),
      makeEvent({ fingerprint: f, release: '', timestamp: resolvedAt }),
    );
    expect((await issue(project, f)).status).toBe('resolved');
    await send(writer, project, T + 6 * HOUR, makeEvent({ fingerprint: f, release: '', timestamp: resolvedAt + 1 }));
    await writer.close();
    const row = await issue(project, f);
    expect(row.status).toBe('regression');
    expect(Number(row.regressed_at)).toBe(T + 6 * HOUR);
    expect((await changes(project)).map((c) => c[0])).toEqual(['new_issue', 'regression']);
  });

  it.each(['ignored', 'triaged', 'regression'])('never changes a %s issue, but its counts grow', async (status) => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const f = fp(status);
    await send(writer, project, T, makeEvent({ fingerprint: f, release: 'app@1.0.0', timestamp: T }));
    await setStatus(project, f, status, T + HOUR);
    await send(
      writer,
      project,
      T + 2 * HOUR,
      makeEvent({ fingerprint: f, release: 'app@9.0.0', timestamp: T + 2 * HOUR }),
      makeEvent({ fingerprint: f, release: '', timestamp: T + 2 * HOUR }),
    );
    await writer.close();
    const row = await issue(project, f);
    expect(row.status).toBe(status);
    expect(row.regressed_at).toBeNull();
    expect(Number(row.event_count)).toBe(3);
    expect(Number(row.last_seen)).toBe(T + 2 * HOUR);
    expect((await changes(project)).map((c) => c[0])).toEqual(['new_issue']);
  });
});
