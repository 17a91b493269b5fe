// Devices whose clock runs ahead: ingest keeps an event's own timestamp up to an hour past
// its arrival, so the issues list's default window, which ends "now", reaches that far
// ahead too. Otherwise a new issue from such a device is missing from the list (and the
// dashboard) until the device's time has come, while its alert has already gone out.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, makeProject, post } from '../ingest/helpers.js';

const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const MINUTE = 60_000;

describe.each(dialects)('issues from clocks that run ahead on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lists an issue last seen up to an hour ahead by default, and not past an explicit `to`', async () => {
    const p = await makeProject(t);
    const ahead = errorEvent({ timestamp: NOW + 10 * MINUTE, type: 'AheadError' });
    // Two hours ahead is past what ingest keeps: stored at its arrival time.
    const tooFar = errorEvent({ timestamp: NOW + 120 * MINUTE, type: 'FarAheadError' });
    for (const event of [ahead, tooFar])
      expect((await post(t, p, envelope({}, [{ type: 'event', payload: event }]))).status).toBe(200);

    const list = async (query: string) =>
      (await (await t.api(`/api/projects/${p.slug}/issues${query}`)).json()).issues as {
        error_type: string;
        last_seen: string;
      }[];
    const listed = await list('');
    expect(listed.map((i) => [i.error_type, i.last_seen])).toEqual([
      ['AheadError', new Date(NOW + 10 * MINUTE).toISOString()],
      ['FarAheadError', new Date(NOW).toISOString()],
    ]);
    expect((await list('?days=1')).map((i) => i.error_type)).toEqual(['AheadError', 'FarAheadError']);
    // An explicit window ends where it says.
    expect(
      (await list(`?to=${encodeURIComponent(new Date(NOW + MINUTE).toISOString())}`)).map((i) => i.error_type),
    ).toEqual(['FarAheadError']);
  });
});
