// Release-health sessions through the writer: the latest update wins, late updates
// change nothing, first-update attributes stay, and session_hourly always equals a
// count over the current session rows; `sessions` aggregates add their counts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hourBucket } from '../../../src/clock.js';
import type { ProjectRow } from '../../../src/store/schema.js';
import { dialects } from '../../helpers/server.js';
import {
  createProject,
  makeAggregate,
  makeSession,
  makeWork,
  newWriter,
  openTestStore,
  type TestStore,
} from '../../helpers/factory.js';

const T = Date.UTC(2026, 0, 10, 12, 0, 0);
const MIN = 60_000;
const HOUR = 3_600_000;

describe.each(dialects)('writer sessions (%s)', (dialect) => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openTestStore(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function hourly(project: ProjectRow) {
    const rows = await t.store.db
      .selectFrom('session_hourly')
      .selectAll()
      .where('project_id', '=', project.id)
      .orderBy('release')
      .orderBy('bucket')
      .execute();
    return rows.map((r) => [r.release, Number(r.bucket), Number(r.total), Number(r.crashed), Number(r.errored)]);
  }
  /** session_hourly by docs/ingest-normalisation.md "Release health", counted from the session rows. */
  async function countedFromRows(project: ProjectRow) {
    const rows = await t.store.db.selectFrom('sessions').selectAll().where('project_id', '=', project.id).execute();
    const m = new Map<string, [string, number, number, number, number]>();
    for (const s of rows) {
      const bucket = hourBucket(Number(s.started));
      const k = `${s.release}|${bucket}`;
      const v = m.get(k) ?? [s.release, bucket, 0, 0, 0];
      v[2] += 1;
      // `unhandled` (browser SDKs) counts as crashed.
      if (s.status === 'crashed' || s.status === 'unhandled') v[3] += 1;
      else if (['errored', 'abnormal'].includes(s.status) || Number(s.errors) > 0) v[4] += 1;
      m.set(k, v);
    }
    return [...m.values()].sort((a, b) => (a[0] === b[0] ? a[1] - b[1] : a[0] < b[0] ? -1 : 1));
  }

  it('moves a session between healthy, errored and crashed as updates arrive', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const s = makeSession({ started: T, timestamp: T, status: 'ok', did: 'device-1' });
    await writer.submit(makeWork(project, { sessions: [s] }));
    expect(await hourly(project)).toEqual([['app@1.0.0', T, 1, 0, 0]]);

    await writer.submit(makeWork(project, { sessions: [{ ...s, init: false, timestamp: T + MIN, errors: 2 }] }));
    expect(await hourly(project)).toEqual([['app@1.0.0', T, 1, 0, 1]]);

    await writer.submit(
      makeWork(project, { sessions: [{ ...s, init: false, timestamp: T + 2 * MIN, status: 'crashed', errors: 3 }] }),
    );
    expect(await hourly(project)).toEqual([['app@1.0.0', T, 1, 1, 0]]);

    // Later attributes differ: the first update's did/started/release/environment stay.
    await writer.submit(
      makeWork(project, {
        sessions: [
          {
            ...s,
            init: false,
            timestamp: T + 3 * MIN,
            status: 'crashed',
            errors: 3,
            did: 'other',
            release: 'app@2.0.0',
            started: T + HOUR,
            environment: 'dev',
          },
        ],
      }),
    );
    await writer.close();
    expect(await hourly(project)).toEqual([['app@1.0.0', T, 1, 1, 0]]);
    const row = await t.store.db
      .selectFrom('sessions')
      .selectAll()
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect({
      ...row,
      project_id: 0,
      started: Number(row.started),
      errors: Number(row.errors),
      updated_at: Number(row.updated_at),
      anr: Number(row.anr),
    }).toEqual({
      project_id: 0,
      sid: s.sid,
      did: 'device-1',
      release: 'app@1.0.0',
      environment: 'production',
      started: T,
      status: 'crashed',
      errors: 3,
      updated_at: T + 3 * MIN,
      anr: 0,
    });
  });

  it('ignores an update older than the stored one, in the same batch or a later one', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const s = makeSession({ started: T, timestamp: T + 10 * MIN, status: 'crashed' });
    await Promise.all([
      writer.submit(makeWork(project, { sessions: [s] })),
      writer.submit(makeWork(project, { sessions: [{ ...s, timestamp: T + MIN, status: 'ok' }] })),
    ]);
    await writer.submit(makeWork(project, { sessions: [{ ...s, timestamp: T + 5 * MIN, status: 'exited' }] }));
    await writer.close();
    const row = await t.store.db
      .selectFrom('sessions')
      .select(['status', 'updated_at'])
      .where('project_id', '=', project.id)
      .executeTakeFirstOrThrow();
    expect([row.status, Number(row.updated_at)]).toEqual(['crashed', T + 10 * MIN]);
    expect(await hourly(project)).toEqual([['app@1.0.0', T, 1, 1, 0]]);
  });

  it('keeps session_hourly equal to a count over the session rows through many updates', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const statuses = ['ok', 'exited', 'crashed', 'abnormal', 'errored', 'unhandled'] as const;
    let seed = 3;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const sessions = Array.from({ length: 25 }, (_, i) =>
      makeSession({
        started: T + Math.floor(rnd() * 5) * HOUR + i * MIN,
        timestamp: T,
        release: rnd() < 0.5 ? 'app@1.0.0' : '',
      }),
    );
    for (let round = 0; round < 6; round++) {
      const updates = sessions
        .filter(() => rnd() < 0.7)
        .map((s) => ({
          ...s,
          timestamp: T + Math.floor(rnd() * 10) * MIN,
          status: statuses[Math.floor(rnd() * statuses.length)],
          errors: rnd() < 0.3 ? 1 : 0,
        }));
      const half = Math.floor(updates.length / 2);
      await Promise.all([
        writer.submit(makeWork(project, { sessions: updates.slice(0, half) })),
        writer.submit(makeWork(project, { sessions: updates.slice(half) })),
      ]);
      expect(await hourly(project)).toEqual(await countedFromRows(project));
    }
    await writer.close();
    const total = (await hourly(project)).reduce((n, r) => n + (r[2] as number), 0);
    expect(total).toBe(25);
  });

  it('keeps session_users to the users of the session rows, a user crashed once staying crashed', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    const statuses = ['ok', 'exited', 'crashed', 'abnormal', 'errored', 'unhandled'] as const;
    let seed = 11;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    // 30 sessions of 6 users (a third without a did), over three hours and two releases.
    const sessions = Array.from({ length: 30 }, (_, i) =>
      makeSession({
        started: T + Math.floor(rnd() * 3) * HOUR + i * MIN,
        timestamp: T,
        release: rnd() < 0.5 ? 'app@1.0.0' : 'app@2.0.0',
        did: i % 3 === 0 ? null : `user-${i % 6}`,
      }),
    );
    const everCrashed = new Set<string>();
    for (let round = 0; round < 5; round++) {
      const updates = sessions
        .filter(() => rnd() < 0.7)
        .map((s) => ({
          ...s,
          init: round === 0,
          timestamp: T + (round + 1) * MIN,
          status: statuses[Math.floor(rnd() * statuses.length)],
        }));
      const half = Math.floor(updates.length / 2);
      await Promise.all([
        writer.submit(makeWork(project, { sessions: updates.slice(0, half) })),
        writer.submit(makeWork(project, { sessions: updates.slice(half) })),
      ]);
      for (const s of await t.store.db
        .selectFrom('sessions')
        .selectAll()
        .where('project_id', '=', project.id)
        .execute()) {
        if (s.did !== null && (s.status === 'crashed' || s.status === 'unhandled'))
          everCrashed.add(`${s.release}|${hourBucket(Number(s.started))}|${s.did}`);
      }
      const fromRows = new Set(
        (await t.store.db.selectFrom('sessions').selectAll().where('project_id', '=', project.id).execute())
          .filter((s) => s.did !== null)
          .map((s) => `${s.release}|${hourBucket(Number(s.started))}|${s.did}`),
      );
      const users = await t.store.db
        .selectFrom('session_users')
        .selectAll()
        .where('project_id', '=', project.id)
        .execute();
      expect(new Set(users.map((u) => `${u.release}|${Number(u.bucket)}|${u.did}`))).toEqual(fromRows);
      expect(
        new Set(users.filter((u) => Number(u.crashed) === 1).map((u) => `${u.release}|${Number(u.bucket)}|${u.did}`)),
      ).toEqual(everCrashed);
    }
    expect(everCrashed.size).toBeGreaterThan(0);
    await writer.close();
  });

  it('adds aggregate buckets to total, crashed and errored in the hour they started', async () => {
    const project = await createProject(t.store);
    const writer = newWriter(t.store);
    await writer.submit(
      makeWork(project, {
        aggregates: [
          makeAggregate({ started: T + 5 * MIN, exited: 10, errored: 2, abnormal: 1, crashed: 3, unhandled: 1 }),
          makeAggregate({ started: T + 6 * MIN, exited: 1 }),
          makeAggregate({ started: T + HOUR, release: '', exited: 4, crashed: 1 }),
          makeAggregate({ started: T + 2 * HOUR }), // all zero: no row
        ],
        sessions: [makeSession({ started: T + 7 * MIN, status: 'errored' })],
      }),
    );
    await writer.submit(makeWork(project, { aggregates: [makeAggregate({ started: T, errored: 1 })] }));
    await writer.close();
    expect(await hourly(project)).toEqual([
      ['', T + HOUR, 5, 1, 0],
      // The bucket's one `unhandled` session is counted as crashed.
      ['app@1.0.0', T, 20, 4, 5],
    ]);
  });
});
