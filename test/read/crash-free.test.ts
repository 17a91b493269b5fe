// The overview's crash_free: the newest release with sessions in the window, the one
// first seen last (at its first event or its first session, whichever came first),
// ties to the greater version string; an older release whose clients are still
// running never hides it, with session updates or aggregates alike; null without
// sessions.
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

  it('describes the release first seen last, even when an older one has the newest session', async () => {
    const p: TestProject = await createProject(t);
    const hour = hourOf(NOW) - 3 * HOUR;
    await sendEvents(t, p, [event('app@1.9', NOW - 5 * DAY), event('app@2.0', NOW - 2 * DAY)]);
    // 1.9's clients are still running: its sessions are the newest, and all are fine.
    await sendSessions(t, p, [
      session('app@1.9', hour + 50 * 60_000, 'exited'),
      session('app@1.9', hour + 55 * 60_000, 'exited'),
      session('app@2.0', hour - 2 * DAY, 'crashed'),
      session('app@2.0', hour - DAY, 'exited'),
    ]);
    const body = (await getJson(t, `/api/projects/${p.slug}/overview`)).body;
    expect(body.crash_free).toEqual({ release: 'app@2.0', rate: 0.5, sessions: 2 });
    // A window without 2.0's sessions describes 1.9.
    const late = (
      await getJson(
        t,
        `/api/projects/${p.slug}/overview?from=${new Date(hour).toISOString()}&to=${new Date(NOW).toISOString()}`,
      )
    ).body;
    expect(late.crash_free).toEqual({ release: 'app@1.9', rate: 1, sessions: 2 });
  });

  it('counts a release as seen at its first session when that came before its first event', async () => {
    const p = await createProject(t);
    const hour = hourOf(NOW) - HOUR;
    // 3.0's first event is the newest, but its sessions began before 3.1 was seen at all.
    await sendEvents(t, p, [event('app@3.1', NOW - 3 * DAY), event('app@3.0', NOW - DAY)]);
    await sendSessions(t, p, [
      session('app@3.0', hour - 4 * DAY, 'exited'),
      session('app@3.0', hour, 'exited'),
      session('app@3.1', hour, 'crashed'),
    ]);
    expect((await getJson(t, `/api/projects/${p.slug}/overview?days=7`)).body.crash_free).toEqual({
      release: 'app@3.1',
      rate: 0,
      sessions: 1,
    });
  });

  it('picks a release known only from sessions, and between two first seen in the same hour the greater version string', async () => {
    const p = await createProject(t);
    const hour = hourOf(NOW) - 2 * HOUR;
    await sendEvents(t, p, [event('srv@7', NOW - 5 * DAY)]);
    await sendAggregates(t, p, [
      { started: hour + 60_000, release: 'srv@8', exited: 9, errored: 0, abnormal: 0, crashed: 1 },
      { started: hour + 120_000, release: 'srv@7', exited: 3, errored: 1, abnormal: 0, crashed: 0 },
    ]);
    expect((await getJson(t, `/api/projects/${p.slug}/overview`)).body.crash_free).toEqual({
      release: 'srv@8',
      rate: 0.9,
      sessions: 10,
    });
    await sendAggregates(t, p, [
      { started: hour + 30 * 60_000, release: 'srv@9', exited: 4, errored: 0, abnormal: 0, crashed: 0 },
    ]);
    expect((await getJson(t, `/api/projects/${p.slug}/overview`)).body.crash_free).toEqual({
      release: 'srv@9',
      rate: 1,
      sessions: 4,
    });
  });
});
