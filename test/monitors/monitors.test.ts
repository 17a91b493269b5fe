// Cron monitors end to end through the real server on each database, with an injected
// clock: check-ins as envelope items and on the legacy cron route, monitors upserted
// from monitor_config, what Sentry answers for a wrong key, an unknown monitor or a
// malformed config (nothing stored), missed / failed / timed-out check-ins raising the
// `monitor` alert at a real webhook receiver and recovery closing it, one alert per
// miss with two processes checking one database, and the monitors API.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { openStore } from '../../src/editions/node/open-store.js';
import { runMonitorCheck } from '../../src/monitors/store.js';
import { startMonitorJob } from '../../src/monitors/job.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { Receiver, addWebhook, apiProject, until } from '../alerts/support.js';
import { HOURLY, checkinRows, legacyUrl, monitorAlerts, monitorRows, sendCheckIns } from './support.js';

const MIN = 60_000;
// A fixed Monday, half a minute before the hour: nothing here depends on today's date.
const T0 = Date.parse('2030-06-03T09:59:30Z');
const id = () => crypto.randomUUID().replace(/-/g, '');

describe.each(dialects)('cron monitors (%s)', (dialect) => {
  let t: TestServer;
  let clock: ManualClock;
  let hook: Receiver;

  beforeAll(async () => {
    hook = await Receiver.start();
    clock = new ManualClock(T0);
    t = await startTestServer(dialect, {
      clock,
      env: { WEBHOOK_ALLOW_PRIVATE: 'true', PUBLIC_URL: 'https://faultline.example' },
      serverOptions: { alerts: { pollMs: 25 } },
    });
  });
  afterAll(async () => {
    await t?.close();
    await hook?.stop();
  });
  // The check looks at every project's monitors: each test starts with none.
  afterEach(async () => {
    await t.deps.store.db.deleteFrom('monitor_checkins').execute();
    await t.deps.store.db.deleteFrom('monitors').execute();
  });

  /** A project whose monitor alerts reach the receiver at once (no cooldown). */
  async function alertingProject() {
    const p = await apiProject(t, 'Cron app');
    await addWebhook(t, p, `${hook.url}/${p.slug}`);
    const res = await t.api(`/api/projects/${p.slug}/alerts/monitor`, {
      method: 'PATCH',
      json: { cooldown_minutes: 0 },
    });
    expect(res.status).toBe(200);
    return p;
  }
  const received = (slug: string) => hook.requests.filter((r) => r.path === `/${slug}`).map((r) => r.json);

  it('envelope check-ins: the config creates the monitor, in_progress then ok closes the run', async () => {
    clock.set(T0);
    const p = await alertingProject();
    const run = id();
    expect(
      await sendCheckIns(t, p, [
        {
          check_in_id: run,
          monitor_slug: 'Nightly Job',
          status: 'in_progress',
          environment: 'production',
          monitor_config: { ...HOURLY, timezone: 'Europe/Vienna' },
        },
      ]),
    ).toBe(200);
    clock.advance(42_000);
    expect(
      await sendCheckIns(t, p, [{ check_in_id: run, monitor_slug: 'Nightly Job', status: 'ok', duration: 41.5 }]),
    ).toBe(200);

    const res = await t.api(`/api/projects/${p.slug}/monitors`);
    expect(res.status).toBe(200);
    const { monitors } = await res.json();
    expect(monitors).toEqual([
      {
        slug: 'nightly-job',
        status: 'active',
        health: 'ok',
        failures: 0,
        last_status: 'ok',
        last_checkin: new Date(T0 + 42_000).toISOString(),
        next_expected: '2030-06-03T10:00:00.000Z',
        config: {
          schedule: { type: 'crontab', value: '0 * * * *' },
          timezone: 'Europe/Vienna',
          checkin_margin: 5,
          max_runtime: 10,
          failure_issue_threshold: 1,
          recovery_threshold: 1,
        },
        created_at: new Date(T0).toISOString(),
        updated_at: new Date(T0 + 42_000).toISOString(),
      },
    ]);
    const detail = await (await t.api(`/api/projects/${p.slug}/monitors/nightly-job`)).json();
    expect(detail.checkins).toEqual([
      {
        id: run,
        status: 'ok',
        environment: 'production',
        release: null,
        duration: 41.5,
        date_created: new Date(T0).toISOString(),
        date_updated: new Date(T0 + 42_000).toISOString(),
      },
    ]);
    // A resend of the closing check-in changes nothing.
    expect(await sendCheckIns(t, p, [{ check_in_id: run, monitor_slug: 'Nightly Job', status: 'error' }])).toBe(200);
    expect((await checkinRows(t, p)).map((c) => c.status)).toEqual(['ok']);
    expect(await monitorAlerts(t, p)).toEqual([]);
  });

  it("a run's closing check-in that arrives before its first in-progress one still closes it", async () => {
    clock.set(T0);
    const p = await alertingProject();
    const run = id();
    // SDKs send both at once; only the in-progress one carries the config that creates the monitor.
    const closing = sendCheckIns(t, p, [{ check_in_id: run, monitor_slug: 'racy', status: 'ok', duration: 1 }]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(
      await sendCheckIns(t, p, [
        { check_in_id: run, monitor_slug: 'racy', status: 'in_progress', monitor_config: HOURLY },
      ]),
    ).toBe(200);
    expect(await closing).toBe(200);
    expect((await checkinRows(t, p)).map((c) => [c.check_in_id, c.status, Number(c.duration_ms)])).toEqual([
      [run, 'ok', 1000],
    ]);
  });

  it('what Sentry answers for a wrong key, an unknown monitor without config, a malformed config: nothing stored', async () => {
    clock.set(T0);
    const p = await alertingProject();
    const wrongKey = 'f'.repeat(32);
    // Wrong key: 401 on both routes.
    expect(
      await sendCheckIns(
        t,
        p,
        [{ check_in_id: id(), monitor_slug: 'a', status: 'ok', monitor_config: HOURLY }],
        wrongKey,
      ),
    ).toBe(401);
    const legacyWrong = await fetch(legacyUrl(t, p, 'a', { status: 'ok' }, wrongKey));
    expect(legacyWrong.status).toBe(401);
    expect((await legacyWrong.json()).error).toMatch(/DSN key/);
    // Unknown monitor, no config: accepted and dropped (envelope 200, legacy 202).
    expect(await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'unknown', status: 'ok' }])).toBe(200);
    const legacyUnknown = await fetch(legacyUrl(t, p, 'unknown', { status: 'ok' }));
    expect(legacyUnknown.status).toBe(202);
    expect(await legacyUnknown.text()).toBe('');
    // Malformed config: 400 with the reason, on both routes.
    const bad = await fetch(`${t.url}/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
      method: 'POST',
      body: `{}\n{"type":"check_in"}\n${JSON.stringify({ check_in_id: id(), monitor_slug: 'b', status: 'ok', monitor_config: { schedule: { type: 'crontab', value: '61 * * * *' } } })}\n`,
    });
    expect(bad.status).toBe(400);
    expect((await bad.json()).error).toMatch(/schedule.value: "61 \* \* \* \*" is not a crontab/);
    const negative = await fetch(legacyUrl(t, p, 'b'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'ok', monitor_config: { ...HOURLY, checkin_margin: -5 } }),
    });
    expect(negative.status).toBe(400);
    expect((await negative.json()).error).toMatch(/checkin_margin must be between 1 and 40320/);
    const noStatus = await fetch(legacyUrl(t, p, 'b'));
    expect(noStatus.status).toBe(400);
    expect(await monitorRows(t, p)).toEqual([]);
    expect(await checkinRows(t, p)).toEqual([]);
  });

  it('legacy route: JSON body with a config, then GET with the query, key in a header too', async () => {
    clock.set(T0);
    const p = await alertingProject();
    const created = await fetch(legacyUrl(t, p, 'backup'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        status: 'in_progress',
        monitor_config: { schedule: { type: 'interval', value: 2, unit: 'hour' }, max_runtime: 60 },
      }),
    });
    expect(created.status).toBe(202);
    clock.advance(5 * MIN);
    // The nil check_in_id (none sent) closes the latest in-progress run.
    const closed = await fetch(`${t.url}/api/${p.id}/cron/backup/?status=ok&duration=300`, {
      headers: { 'X-Sentry-Auth': `Sentry sentry_key=${p.dsn_key}, sentry_version=7` },
    });
    expect(closed.status).toBe(202);
    const [m] = await monitorRows(t, p);
    expect(m).toMatchObject({
      slug: 'backup',
      schedule_type: 'interval',
      schedule: '2',
      schedule_unit: 'hour',
      last_status: 'ok',
      next_expected_at: T0 + 120 * MIN,
    });
    expect((await checkinRows(t, p)).map((c) => [c.status, Number(c.duration_ms)])).toEqual([['ok', 300_000]]);
    // A later check-in's config updates the monitor (upsert), and the schedule is recomputed.
    clock.advance(MIN);
    const updated = await fetch(legacyUrl(t, p, 'backup'), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        status: 'ok',
        monitor_config: {
          schedule: { type: 'crontab', value: '30 4 * * *' },
          timezone: 'Asia/Tokyo',
          failure_issue_threshold: 3,
        },
      }),
    });
    expect(updated.status).toBe(202);
    expect((await monitorRows(t, p))[0]).toMatchObject({
      schedule_type: 'crontab',
      schedule: '30 4 * * *',
      schedule_unit: null,
      timezone: 'Asia/Tokyo',
      failure_issue_threshold: 3,
      max_runtime: 30,
      next_expected_at: Date.parse('2030-06-03T19:30:00Z'),
    });
  });

  it('missed: one missed check-in and one alert per miss, then recovery on the next ok', async () => {
    clock.set(T0);
    const p = await alertingProject();
    expect(
      await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'hourly', status: 'ok', monitor_config: HOURLY }]),
    ).toBe(200);
    // Expected 10:00, margin 5 minutes: not missed at 10:04:59.
    clock.set(Date.parse('2030-06-03T10:04:59Z'));
    expect(await runMonitorCheck(t.deps.store, clock.now())).toMatchObject({ missed: 0, incidents: 0 });
    clock.set(Date.parse('2030-06-03T10:05:00Z'));
    expect(await runMonitorCheck(t.deps.store, clock.now())).toMatchObject({ missed: 1, incidents: 1 });
    expect(await runMonitorCheck(t.deps.store, clock.now())).toMatchObject({ missed: 0, incidents: 0 });
    await until(() => received(p.slug).length === 1, 8000, 'the monitor alert');
    expect(received(p.slug)[0]).toMatchObject({
      type: 'monitor',
      project: { slug: p.slug },
      title: 'Monitor hourly missed a check-in',
      monitor: 'hourly',
      reason: 'missed',
      url: `https://faultline.example/${p.slug}/monitors/hourly`,
    });
    let [m] = await monitorRows(t, p);
    expect(m).toMatchObject({
      health: 'failing',
      failures: 1,
      last_status: 'missed',
      next_expected_at: Date.parse('2030-06-03T11:00:00Z'),
    });
    // The next miss is counted, not alerted again (the incident is open).
    clock.set(Date.parse('2030-06-03T11:05:00Z'));
    expect(await runMonitorCheck(t.deps.store, clock.now())).toMatchObject({ missed: 1, incidents: 0 });
    clock.set(Date.parse('2030-06-03T11:30:00Z'));
    expect(await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'hourly', status: 'ok' }])).toBe(200);
    await until(() => received(p.slug).length === 2, 8000, 'the recovery alert');
    expect(received(p.slug)[1]).toMatchObject({
      type: 'monitor',
      title: 'Monitor hourly recovered',
      reason: 'recovered',
    });
    [m] = await monitorRows(t, p);
    expect(m).toMatchObject({ health: 'ok', failures: 0 });
    expect((await checkinRows(t, p)).map((c) => [c.status, new Date(Number(c.created_at)).toISOString()])).toEqual([
      ['ok', '2030-06-03T09:59:30.000Z'],
      ['missed', '2030-06-03T10:00:00.000Z'],
      ['missed', '2030-06-03T11:00:00.000Z'],
      ['ok', '2030-06-03T11:30:00.000Z'],
    ]);
  });

  it('failed and timed out, with failure_issue_threshold 2', async () => {
    clock.set(T0);
    const p = await alertingProject();
    const config = { ...HOURLY, failure_issue_threshold: 2 };
    expect(
      await sendCheckIns(t, p, [
        { check_in_id: id(), monitor_slug: 'etl', status: 'error', environment: 'production', monitor_config: config },
      ]),
    ).toBe(200);
    expect(await monitorAlerts(t, p)).toEqual([]);
    clock.set(Date.parse('2030-06-03T10:00:10Z'));
    const run = id();
    expect(
      await sendCheckIns(t, p, [
        { check_in_id: run, monitor_slug: 'etl', status: 'in_progress', environment: 'production' },
      ]),
    ).toBe(200);
    // max_runtime 10 minutes: still running at 10:10:09, timed out at 10:10:10.
    clock.set(Date.parse('2030-06-03T10:10:09Z'));
    expect(await runMonitorCheck(t.deps.store, clock.now())).toMatchObject({ timed_out: 0 });
    clock.set(Date.parse('2030-06-03T10:10:10Z'));
    expect(await runMonitorCheck(t.deps.store, clock.now())).toMatchObject({ timed_out: 1, incidents: 1 });
    await until(() => received(p.slug).length === 1, 8000, 'the timeout alert');
    expect(received(p.slug)[0]).toMatchObject({
      type: 'monitor',
      reason: 'timeout',
      environment: 'production',
      title: 'Monitor etl timed out (running longer than 10 minutes) (2 failures in a row)',
    });
    // The run reporting late stays a time-out and is not counted twice.
    clock.set(Date.parse('2030-06-03T10:12:00Z'));
    expect(await sendCheckIns(t, p, [{ check_in_id: run, monitor_slug: 'etl', status: 'ok' }])).toBe(200);
    const rows = await checkinRows(t, p);
    expect(rows.map((c) => [c.status, c.duration_ms === null ? null : Number(c.duration_ms)])).toEqual([
      ['error', null],
      ['timeout', 710_000],
    ]);
    expect((await monitorRows(t, p))[0]).toMatchObject({ health: 'failing', failures: 2 });
  });

  // Two connections in one process: on SQLite each would block the other's thread, so the
  // SQLite case runs as two `faultline alerts` processes (processes.test.ts).
  it.runIf(dialect === 'postgres')(
    'two stores checking one database at once record one miss and one alert',
    async () => {
      clock.set(T0);
      const p = await alertingProject();
      const slugs = Array.from({ length: 20 }, (_, i) => `job-${i}`);
      expect(
        await sendCheckIns(
          t,
          p,
          slugs.map((slug) => ({ check_in_id: id(), monitor_slug: slug, status: 'ok', monitor_config: HOURLY })),
        ),
      ).toBe(200);
      const other = await openStore(t.database.url);
      try {
        const at = Date.parse('2030-06-03T10:06:00Z');
        const [a, b] = await Promise.all([runMonitorCheck(t.deps.store, at), runMonitorCheck(other, at)]);
        expect(a.missed + b.missed).toBe(20);
        expect(a.incidents + b.incidents).toBe(20);
      } finally {
        await other.close();
      }
      expect((await checkinRows(t, p)).filter((c) => c.status === 'missed')).toHaveLength(20);
      const alerts = await monitorAlerts(t, p);
      expect(alerts.map((a) => a.monitor).sort()).toEqual([...slugs].sort());
    },
  );

  it('the API: PATCH status and config, bad input, DELETE', async () => {
    clock.set(T0);
    const p = await alertingProject();
    expect(
      await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'm', status: 'ok', monitor_config: HOURLY }]),
    ).toBe(200);
    const base = `/api/projects/${p.slug}/monitors/m`;
    for (const [body, message] of [
      [{}, /nothing to change/],
      [{ status: 'paused' }, /status must be "active" or "disabled"/],
      [{ config: { schedule: { type: 'crontab', value: 'every day' } } }, /is not a crontab/],
      [{ config: { max_runtime: -1 } }, /max_runtime must be between/],
      [{ name: 'x' }, /unknown field "name"/],
    ] as const) {
      const res = await t.api(base, { method: 'PATCH', json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect((await res.json()).error).toMatch(message);
    }
    expect((await t.api(`/api/projects/${p.slug}/monitors/nope`)).status).toBe(404);
    expect((await t.api(`/api/projects/nope-${p.slug}/monitors`)).status).toBe(404);

    expect(await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'm', status: 'in_progress' }])).toBe(200);
    const disabled = await t.api(base, { method: 'PATCH', json: { status: 'disabled' } });
    expect(disabled.status).toBe(200);
    expect(await disabled.json()).toMatchObject({ status: 'disabled' });
    // A disabled monitor is never missed nor timed out, and its check-ins are dropped.
    expect(await runMonitorCheck(t.deps.store, Date.parse('2030-06-03T12:00:00Z'))).toMatchObject({
      missed: 0,
      timed_out: 0,
    });
    expect(await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'm', status: 'ok' }])).toBe(200);
    expect((await checkinRows(t, p)).map((c) => c.status)).toEqual(['ok', 'in_progress']);

    clock.set(Date.parse('2030-06-03T12:10:00Z'));
    const changed = await t.api(base, {
      method: 'PATCH',
      json: {
        status: 'active',
        config: { schedule: { type: 'interval', value: 30, unit: 'minute' }, checkin_margin: 2 },
      },
    });
    expect(changed.status).toBe(200);
    expect(await changed.json()).toMatchObject({
      status: 'active',
      next_expected: '2030-06-03T12:40:00.000Z',
      config: { schedule: { type: 'interval', value: 30, unit: 'minute' }, checkin_margin: 2, max_runtime: 10 },
    });

    expect((await t.api(base, { method: 'DELETE' })).status).toBe(204);
    expect((await t.api(base)).status).toBe(404);
    expect(await checkinRows(t, p)).toEqual([]);
  });

  it("serve's minutely job records the miss at the app's clock and wakes the dispatcher", async () => {
    clock.set(T0);
    const p = await alertingProject();
    expect(
      await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'job', status: 'ok', monitor_config: HOURLY }]),
    ).toBe(200);
    clock.set(Date.parse('2030-06-03T10:05:00Z'));
    let woken = 0;
    const job = startMonitorJob(
      { store: t.deps.store, clock, logger: t.deps.logger, onAlerts: () => woken++ },
      { intervalMs: 20 },
    );
    try {
      await until(() => woken > 0, 8000, "the job's first check");
    } finally {
      await job.stop();
    }
    expect((await checkinRows(t, p)).map((c) => c.status)).toEqual(['ok', 'missed']);
    expect(woken).toBe(1);
  });

  it("the dashboard lists each monitor with a status strip, and shows one monitor's check-ins", async () => {
    clock.set(T0);
    const p = await alertingProject();
    expect(
      await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'shown', status: 'error', monitor_config: HOURLY }]),
    ).toBe(200);
    clock.set(Date.parse('2030-06-03T10:30:00Z'));
    await runMonitorCheck(t.deps.store, clock.now());
    expect(await sendCheckIns(t, p, [{ check_in_id: id(), monitor_slug: 'shown', status: 'ok' }])).toBe(200);
    const list = await fetch(`${t.url}/${p.slug}/monitors`);
    expect(list.status).toBe(200);
    const page = await list.text();
    expect(page).toContain(`href="/${p.slug}/monitors/shown"`);
    // Oldest first: failed, missed, ok.
    expect([...page.matchAll(/<li class="c-([a-z_]+)"/g)].map((m) => m[1])).toEqual(['error', 'missed', 'ok']);
    expect(page).toContain('0 * * * * (UTC)');
    const one = await fetch(`${t.url}/${p.slug}/monitors/shown`);
    expect(one.status).toBe(200);
    const detail = await one.text();
    expect(detail).toContain('>missed</td>');
    expect(detail).toMatch(/<td class="l-error">failed<\/td><td>2030-06-03 09:59/);
    expect((await fetch(`${t.url}/${p.slug}/monitors/nope`)).status).toBe(404);
  });
});
