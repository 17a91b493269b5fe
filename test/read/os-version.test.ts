// The issue breakdown's `os_version` values carry the OS name (`iOS 17.4`, `Windows 10`):
// a bare `10` does not say which OS an issue that spans platforms ran on.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { osVersionLabel } from '../../src/read/issues.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  GROUPS,
  HOUR,
  NOW,
  createProject,
  getJson,
  newEventId,
  sendEvents,
  type EventSpec,
  type TestProject,
} from './support.js';

describe('osVersionLabel', () => {
  it.each([
    ['iOS', '17.4', 'iOS 17.4'],
    ['Windows', '10', 'Windows 10'],
    ['Android', '14', 'Android 14'],
    ['Windows', 'Windows 10 Pro', 'Windows 10 Pro'],
    ['macOS', 'macos 14.2', 'macos 14.2'],
    [null, '10', '10'],
    ['', '10', '10'],
    ['iOS', null, null],
    ['iOS', '', ''],
  ])('%s + %s gives %s', (name, version, label) => {
    expect(osVersionLabel(name, version)).toBe(label);
  });
});

describe.each(dialects)('issue breakdown os_version on %s', (dialect) => {
  let t: TestServer;
  let p: TestProject;

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    const spec = (osName: string, osVersion: string, i: number): EventSpec => ({
      eventId: newEventId(),
      group: GROUPS[0],
      timestamp: NOW - HOUR - i * 1000,
      release: 'app@1.0.0',
      environment: 'production',
      userId: 'u1',
      deviceModel: null,
      deviceId: null,
      osName,
      osVersion,
      screen: 'Main',
      tags: {},
    });
    await sendEvents(t, p, [
      spec('Windows', '10', 0),
      spec('Windows', '10', 1),
      spec('iOS', '17.4', 2),
      spec('Android', '10', 3),
    ]);
  });

  afterAll(async () => {
    await t?.close();
  });

  it('names the OS with each version, so Windows 10 and Android 10 stay apart', async () => {
    const url = (path: string) => `/api/projects/${p.slug}${path}`;
    const fp = (await getJson(t, url('/events'))).body.events[0].fingerprint;
    const { status, body } = await getJson(t, url(`/issues/${fp}`));
    expect(status).toBe(200);
    expect(body.breakdown.os_version).toEqual([
      { value: 'Windows 10', count: 2 },
      { value: 'Android 10', count: 1 },
      { value: 'iOS 17.4', count: 1 },
    ]);
  });
});
