// The ANR rate through the real server on each database: sentry-java's sessions (an
// init update, then the final one; an ANR ends `abnormal` with `abnormal_mechanism`
// `anr_foreground` or `anr_background`) give each release its `anr_rate` (ANR sessions ÷
// sessions, null without sessions), over the window and per day, from session_hourly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject, post } from '../ingest/helpers.js';
import { buildEnvelope, newEventId } from '../attachments/mobile-envelopes.js';

const DAY = 86_400_000;
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

/** A session update as sentry-java's Android SDK writes it. */
function session(
  sid: string,
  started: number,
  update: Record<string, unknown>,
  release = 'com.example.shop@4.2.0+420',
) {
  return {
    sid,
    did: 'u-1842',
    init: update.init ?? false,
    started: new Date(started).toISOString(),
    timestamp: new Date(started + 60_000).toISOString(),
    status: 'ok',
    errors: 0,
    attrs: { release, environment: 'production' },
    ...update,
  };
}

describe.each(dialects)('ANR rate on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW) });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('counts sessions that end in an ANR per release and per day', async () => {
    const p = await makeProject(t);
    const send = async (items: Record<string, unknown>[]) => {
      const res = await post(
        t,
        p,
        buildEnvelope(
          { sent_at: new Date(NOW).toISOString() },
          items.map((payload) => ({ headers: { type: 'session' }, payload })),
        ),
      );
      expect(res.status).toBe(200);
    };
    const yesterday = NOW - DAY - 3_600_000;
    const today = NOW - 3_600_000;
    // Yesterday: 4 sessions, 1 foreground ANR. Today: 2 sessions, 1 background ANR, 1 crash.
    const ids = Array.from({ length: 6 }, () => newEventId());
    await send(ids.slice(0, 4).map((sid) => session(sid, yesterday, { init: true })));
    await send(ids.slice(4).map((sid) => session(sid, today, { init: true })));
    await send([
      session(ids[0], yesterday, {
        status: 'abnormal',
        abnormal_mechanism: 'anr_foreground',
        timestamp: new Date(yesterday + 120_000).toISOString(),
      }),
      session(ids[1], yesterday, { status: 'exited', timestamp: new Date(yesterday + 120_000).toISOString() }),
      session(ids[4], today, {
        status: 'abnormal',
        abnormal_mechanism: 'anr_background',
        timestamp: new Date(today + 120_000).toISOString(),
      }),
      session(ids[5], today, { status: 'crashed', timestamp: new Date(today + 120_000).toISOString() }),
    ]);
    // The same final update again (a resend) changes nothing.
    await send([
      session(ids[0], yesterday, {
        status: 'abnormal',
        abnormal_mechanism: 'anr_foreground',
        timestamp: new Date(yesterday + 120_000).toISOString(),
      }),
    ]);
    // A release without sessions has no rate.
    const eventId = newEventId();
    expect(
      (
        await post(
          t,
          p,
          buildEnvelope({ event_id: eventId }, [
            {
              headers: { type: 'event' },
              payload: { event_id: eventId, release: 'other@1', message: 'x', timestamp: (NOW - 1000) / 1000 },
            },
          ]),
        )
      ).status,
    ).toBe(200);

    const list = (await (await t.api(`/api/projects/${p.slug}/releases?days=7`)).json()) as {
      releases: {
        release: string;
        anr_rate: number | null;
        crash_free_rate: number | null;
        sessions: { total: number; anr: number };
      }[];
    };
    const shop = list.releases.find((r) => r.release === 'com.example.shop@4.2.0+420')!;
    expect(shop.sessions).toMatchObject({ total: 6, anr: 2 });
    expect(shop.anr_rate).toBeCloseTo(2 / 6, 12);
    expect(shop.crash_free_rate).toBeCloseTo(5 / 6, 12);
    expect(list.releases.find((r) => r.release === 'other@1')?.anr_rate).toBeNull();

    const detail = (await (
      await t.api(`/api/projects/${p.slug}/releases/${encodeURIComponent('com.example.shop@4.2.0+420')}?days=2`)
    ).json()) as {
      release: { anr_rate: number };
      daily_health: { day: string; total: number; anr: number; anr_rate: number | null }[];
    };
    const byDay = new Map(detail.daily_health.map((d) => [d.day, d]));
    const dayOf = (ms: number) => new Date(Math.floor(ms / DAY) * DAY).toISOString();
    expect(byDay.get(dayOf(yesterday))).toMatchObject({ total: 4, anr: 1, anr_rate: 0.25 });
    expect(byDay.get(dayOf(today))).toMatchObject({ total: 2, anr: 1, anr_rate: 0.5 });
  });
});
