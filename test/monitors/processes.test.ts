// The minutely check outside the test server: two `faultline alerts` processes started
// together on one database (SQLite's file or PostgreSQL) record each miss and its alert
// once, and the webhook hears of each monitor once. The check-ins are sent two hours
// before the real time (the CLI runs on the real clock), so every hourly monitor is due.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createTestDatabase, dialects, startTestServer } from '../helpers/server.js';
import { ensureBuilt, runCli } from '../helpers/cli.js';
import { Receiver, addWebhook, apiProject } from '../alerts/support.js';
import { HOURLY, checkinRows, monitorAlerts, sendCheckIns } from './support.js';

beforeAll(() => ensureBuilt());

describe.each(dialects)('faultline alerts checks cron monitors (%s)', (dialect) => {
  let hook: Receiver;
  beforeAll(async () => {
    hook = await Receiver.start();
  });
  afterAll(async () => {
    await hook?.stop();
  });

  it('two processes at once: one missed check-in and one alert per monitor', async () => {
    const database = await createTestDatabase(dialect);
    const env = { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE: 'true', LOG_LEVEL: 'warn' };
    try {
      const t = await startTestServer(dialect, {
        database,
        clock: new ManualClock(Date.now() - 2 * 3_600_000),
        env: { WEBHOOK_ALLOW_PRIVATE: 'true' },
        serverOptions: { alerts: false },
      });
      const slugs = Array.from({ length: 12 }, (_, i) => `job-${i}`);
      const p = await apiProject(t, 'Cron app');
      try {
        await addWebhook(t, p, `${hook.url}/${p.slug}`);
        expect(
          (await t.api(`/api/projects/${p.slug}/alerts/monitor`, { method: 'PATCH', json: { cooldown_minutes: 0 } }))
            .status,
        ).toBe(200);
        expect(
          await sendCheckIns(
            t,
            p,
            slugs.map((slug) => ({
              check_in_id: crypto.randomUUID(),
              monitor_slug: slug,
              status: 'ok',
              monitor_config: HOURLY,
            })),
          ),
        ).toBe(200);
      } finally {
        await t.close();
      }
      const [a, b] = await Promise.all([runCli(['alerts'], env), runCli(['alerts'], env)]);
      expect(a.code, a.stderr).toBe(0);
      expect(b.code, b.stderr).toBe(0);
      const missed = [a.stderr, b.stderr].map((s) => Number(/cron monitors: (\d+) missed check-in/.exec(s)?.[1]));
      expect(missed[0] + missed[1]).toBe(12);

      const again = await startTestServer(dialect, { database, serverOptions: { alerts: false } });
      try {
        expect((await checkinRows(again, p)).filter((c) => c.status === 'missed')).toHaveLength(12);
        expect((await monitorAlerts(again, p)).map((x) => x.monitor).sort()).toEqual([...slugs].sort());
      } finally {
        await again.close();
      }
      const heard = hook.requests.filter((r) => r.path === `/${p.slug}`).map((r) => r.json.monitor);
      expect(heard.sort()).toEqual([...slugs].sort());
    } finally {
      await database.drop();
    }
  }, 90_000);
});
