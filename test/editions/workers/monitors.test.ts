// Cron monitors on the serverless edition's own bundle (esbuild's, as deployed) in
// workerd: a check-in whose crontab is in a time zone creates the monitor, the legacy
// route answers 202, and the every-minute cron records a miss and sends the `monitor`
// alert to a real local webhook. The Worker runs on the real clock, so the miss is made
// by moving the monitor's deadline into the past in D1.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESYMBOLICATE_CRON } from '../../../src/editions/workers/crons.js';
import { Receiver } from '../../alerts/support.js';
import { startTestWorker, type TestWorker } from './harness.js';

describe('cron monitors on the Workers edition', () => {
  let w: TestWorker;
  let hook: Receiver;

  beforeAll(async () => {
    hook = await Receiver.start();
    w = await startTestWorker({ API_KEYS: 'k', RATE_LIMIT: '0', WEBHOOK_ALLOW_PRIVATE: 'true' });
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    await hook?.stop();
  });

  it("check-in, legacy route, and the minutely cron's miss alert", async () => {
    const created = await w.api('/api/projects', { method: 'POST', json: { name: 'Cron app', slug: 'cron-app' } });
    expect(created.status).toBe(201);
    const project = await created.json();
    const key = new URL(project.dsn).username;
    expect(
      (
        await w.api('/api/projects/cron-app/alerts/channels', {
          method: 'POST',
          json: { kind: 'webhook', config: { url: `${hook.url}/hook` } },
        })
      ).status,
    ).toBe(201);

    const body = `{}\n{"type":"check_in"}\n${JSON.stringify({ check_in_id: crypto.randomUUID(), monitor_slug: 'noon', status: 'ok', monitor_config: { schedule: { type: 'crontab', value: '0 12 * * *' }, timezone: 'Asia/Tokyo' } })}\n`;
    const sent = await fetch(`${w.url}/api/${project.id}/envelope/?sentry_key=${key}`, { method: 'POST', body });
    expect(sent.status, await sent.text()).toBe(200);
    const listed = await (await w.api('/api/projects/cron-app/monitors')).json();
    expect(listed.monitors).toHaveLength(1);
    // 12:00 in Tokyo is 03:00 UTC.
    expect(listed.monitors[0]).toMatchObject({ slug: 'noon', health: 'ok', config: { timezone: 'Asia/Tokyo' } });
    expect(listed.monitors[0].next_expected).toMatch(/T03:00:00\.000Z$/);
    const legacy = await fetch(`${w.url}/api/${project.id}/cron/noon/${key}/?status=in_progress`);
    expect(legacy.status).toBe(202);

    const d1 = await w.d1();
    await d1
      .prepare('update monitors set next_expected_at = ?, deadline_at = ? where slug = ?')
      .bind(Date.now() - 120_000, Date.now() - 60_000, 'noon')
      .run();
    await w.runCron(RESYMBOLICATE_CRON);
    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0].json).toMatchObject({
      type: 'monitor',
      project: { slug: 'cron-app' },
      monitor: 'noon',
      reason: 'missed',
      title: 'Monitor noon missed a check-in',
    });
    const detail = await (await w.api('/api/projects/cron-app/monitors/noon')).json();
    expect(detail.checkins.map((c: { status: string }) => c.status)).toEqual(['missed', 'in_progress', 'ok']);
    await w.runCron(RESYMBOLICATE_CRON);
    expect(hook.requests).toHaveLength(1);
  });
});
