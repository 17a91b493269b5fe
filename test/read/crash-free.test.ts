// The overview's crash_free: the release whose latest session is newest in the
// window, also when several releases have sessions in the same hour (the exact
// start times decide), with session aggregates only (the newest release by
// first_seen decides), and null without sessions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  DAY,
  GROUPS,
  HOUR,
  NOW,
  createProject,
  getJson,
  hourOf,
  newEventId,
  sendAggregates,
  sendEvents,
  sendSessions,
  type SessionSpec,
  type TestProject,
} from './support.js';

describe.each(dialects)('overview crash_free on %s', (dialect) => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
  });

  afterAll(async () => {
    await t?.close();
  });

  const session = (release: string, started: number, status: SessionSpec['status']): SessionSpec => ({
    sid: newEventId(),
    did: 'd',
    started,
    release,
    environment: 'production',
    status,
    errors: 0,
  });

  it('is null without sessions', async () => {
    const p = await createProject(t);
    expect((await getJson(t, `/api/projects/${p.slug}/overview`)).body.crash_free).toBeNull();
  });

  it('picks the release with the newest session start, also within one hour', async () => {
    const p: TestProject = await createProject(t);
    const hour = hourOf(NOW) - 3 * HOUR;
    // 2.0 has the newest hour overall until 1.9's later session in the same hour is compared.
    await sendSessions(t, p, [
      session('app@1.9', hour - 2 * DAY, 'crashed'),
      session('app@1.9', hour + 50 * 60_000, 'exited'),
      session('app@2.0', hour + 10 * 60_000, 'crashed'),
      session('app@2.0', hour + 5 * 60_000, 'exited'),
      session('app@2.0', hour + 6 * 60_000, 'exited'),
    ]);
    const body = (await getJson(t, `/api/projects/${p.slug}/overview`)).body;
    expect(body.crash_free).toEqual({ release: 'app@1.9', rate: 0.5, sessions: 2 });
    // A window that ends before that hour sees only the older session.
    const earlier = (await getJson(t, `/api/projects/${p.slug}/overview?to=${new Date(hour).toISOString()}`)).body;
    expect(earlier.crash_free).toEqual({ release: 'app@1.9', rate: 0, sessions: 1 });
    // One more session of 2.0 later in the hour makes it the newest.
    await sendSessions(t, p, [session('app@2.0', hour + 55 * 60_000, 'exited')]);
    const after = (await getJson(t, `/api/projects/${p.slug}/overview`)).body;
    expect(after.crash_free).toEqual({ release: 'app@2.0', rate: 0.75, sessions: 4 });
  });

  it('falls back to the newest release by first_seen when only aggregates share the newest hour', async () => {
    const p = await createProject(t);
    const hour = hourOf(NOW) - 2 * HOUR;
    const event = (release: string, timestamp: number) => ({
      eventId: newEventId(),
      group: GROUPS[0],
      timestamp,
      release,
      environment: 'production',
      userId: null,
      deviceModel: null,
      deviceId: null,
      osName: 'Linux',
      osVersion: '6',
      screen: 'GET /',
      tags: {},
    });
    await sendEvents(t, p, [event('srv@7', NOW - 5 * DAY), event('srv@8', NOW - 2 * DAY), event('srv@7', NOW - HOUR)]);
    await sendAggregates(t, p, [
      { started: hour + 60_000, release: 'srv@8', exited: 9, errored: 0, abnormal: 0, crashed: 1 },
      { started: hour + 120_000, release: 'srv@7', exited: 3, errored: 1, abnormal: 0, crashed: 0 },
    ]);
    const body = (await getJson(t, `/api/projects/${p.slug}/overview`)).body;
    expect(body.crash_free).toEqual({ release: 'srv@8', rate: 0.9, sessions: 10 });
  });
});
