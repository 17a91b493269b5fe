// Crash-free users per release: distinct session `did`s started in the window, a user
// crashed when any of their sessions crashed (also by a later update of the session, and
// `unhandled`), sessions without a `did` and session aggregates counted in sessions but
// not in users, null without users; in the releases list, the release detail and the
// release pages, on both databases; read from the session_users aggregate, which
// outlives the sessions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { Client } from '../dashboard/fixture.js';
import { userCountsQuery } from '../../src/read/releases.js';
import { recordingDb } from './plan.js';
import {
  DAY,
  HOUR,
  NOW,
  createProject,
  envelopeBody,
  getJson,
  hourOf,
  newEventId,
  postEnvelope,
  sendAggregates,
  sendSessions,
  type SessionSpec,
  type TestProject,
} from './support.js';

describe.each(dialects)('crash-free users on %s', (dialect) => {
  let t: TestServer;
  let p: TestProject;

  const session = (
    release: string,
    did: string | null,
    started: number,
    status: SessionSpec['status'],
    errors = 0,
  ): SessionSpec => ({
    sid: newEventId(),
    did: did as string,
    started,
    release,
    environment: 'production',
    status,
    errors,
  });

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    const hour = hourOf(NOW) - 5 * HOUR;
    await sendSessions(t, p, [
      // app@1: four users; u1 crashed once in three sessions, u4 through `unhandled`.
      session('app@1', 'u1', hour, 'exited'),
      session('app@1', 'u1', hour + 10 * 60_000, 'crashed'),
      session('app@1', 'u1', hour - DAY, 'exited'),
      session('app@1', 'u2', hour, 'exited'),
      session('app@1', 'u3', hour, 'errored', 2),
      session('app@1', 'u4', hour - 2 * DAY, 'abnormal'),
      session('app@1', null, hour, 'crashed'),
      // Outside a 3-day window: u5's crash counts only in longer ones.
      session('app@1', 'u5', hour - 4 * DAY, 'crashed'),
      // app@2: sessions without a did only.
      session('app@2', null, hour, 'exited'),
    ]);
    // u4's later session ends unhandled: the browser SDKs' crash.
    const unhandled = session('app@1', 'u4', hour + HOUR, 'ok');
    await sendSessions(t, p, [unhandled]);
    await postEnvelope(
      t,
      p,
      envelopeBody({}, [
        {
          type: 'session',
          payload: {
            sid: unhandled.sid,
            did: 'u4',
            init: false,
            started: new Date(unhandled.started).toISOString(),
            timestamp: new Date(unhandled.started + 5000).toISOString(),
            status: 'unhandled',
            errors: 1,
            attrs: { release: 'app@1', environment: 'production' },
          },
        },
      ]),
    );
    // srv@1: server-mode aggregates only.
    await sendAggregates(t, p, [{ started: hour, release: 'srv@1', exited: 5, errored: 0, abnormal: 0, crashed: 1 }]);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('counts distinct users and crashed users in the releases list and the release detail', async () => {
    const list = (await getJson(t, `/api/projects/${p.slug}/releases?days=3`)).body.releases;
    const by = new Map(list.map((r: { release: string }) => [r.release, r]));
    expect(by.get('app@1')).toMatchObject({ users: { total: 4, crashed: 2 }, crash_free_users_rate: 0.5 });
    expect(by.get('app@1')).toMatchObject({ sessions: { total: 8 } });
    expect(by.get('app@2')).toMatchObject({
      users: { total: 0, crashed: 0 },
      crash_free_users_rate: null,
      sessions: { total: 1 },
    });
    expect(by.get('srv@1')).toMatchObject({
      users: { total: 0, crashed: 0 },
      crash_free_users_rate: null,
      sessions: { total: 6 },
    });

    const week = (await getJson(t, `/api/projects/${p.slug}/releases/app@1?days=7`)).body.release;
    expect(week).toMatchObject({ users: { total: 5, crashed: 3 }, crash_free_users_rate: 0.4 });
    const oneHour = (
      await getJson(
        t,
        `/api/projects/${p.slug}/releases/app@1?from=${new Date(hourOf(NOW) - 5 * HOUR).toISOString()}&to=${new Date(hourOf(NOW) - 4 * HOUR).toISOString()}`,
      )
    ).body.release;
    // u1 (crashed), u2, u3 started sessions in that hour; u4's session began an hour later.
    expect(oneHour).toMatchObject({ users: { total: 3, crashed: 1 } });
    expect(oneHour.crash_free_users_rate).toBeCloseTo(2 / 3, 12);
  });

  it('reads the users from session_users by its key: the window’s rows of the asked releases only', async () => {
    const rec = recordingDb(t);
    try {
      const query = userCountsQuery(rec.db, p.id, hourOf(NOW) - 3 * DAY, hourOf(NOW), ['app@1', 'app@2']).compile();
      if (dialect === 'sqlite') {
        expect(rec.sqlitePlan(query).join('\n')).toMatch(
          /SEARCH session_users USING INDEX sqlite_autoindex_session_users_1 \(project_id=\? AND release=\? AND bucket>\? AND bucket<\?\)/,
        );
      } else {
        // app@1's six user-hours in the window (u1 twice, u2, u3, u4 twice): nothing older, no other release.
        expect(await rec.rowsRead(query, 'session_users')).toBeLessThanOrEqual(6);
      }
    } finally {
      await rec.close();
    }
  });

  it('keeps the users when retention deletes the sessions, as it keeps session_hourly', async () => {
    const before = (await getJson(t, `/api/projects/${p.slug}/releases/app@1?days=7`)).body.release;
    await t.deps.store.db.deleteFrom('sessions').where('project_id', '=', p.id).execute();
    const after = (await getJson(t, `/api/projects/${p.slug}/releases/app@1?days=7`)).body.release;
    expect(after.users).toEqual(before.users);
    expect(after.crash_free_users_rate).toBe(before.crash_free_users_rate);
  });

  it('shows crash-free users on the release list and the release page', async () => {
    const browser = new Client(t.url);
    const listPage = await (await browser.request(`/${p.slug}/releases?days=3`)).text();
    expect(listPage).toContain('Crash-free users');
    expect(listPage).toMatch(/50\.00 %<\/td>/);
    const page = await (await browser.request(`/${p.slug}/releases/app@1?days=3`)).text();
    expect(page).toMatch(/<b>50\.00 %<\/b><span>crash-free users \(4 users\)<\/span>/);
    const none = await (await browser.request(`/${p.slug}/releases/app@2?days=3`)).text();
    expect(none).toMatch(/<b>–<\/b><span>crash-free users \(no user ids in sessions\)<\/span>/);
  });

  it('goes with its project', async () => {
    const gone = await createProject(t);
    await sendSessions(t, gone, [session('app@1', 'u1', hourOf(NOW) - HOUR, 'crashed')]);
    const rows = () =>
      t.deps.store.db.selectFrom('session_users').select('did').where('project_id', '=', gone.id).execute();
    expect((await rows()).length).toBe(1);
    expect((await t.api(`/api/projects/${gone.slug}`, { method: 'DELETE' })).status).toBe(204);
    expect(await rows()).toEqual([]);
  });
});
