// Alerts across processes and restarts: a delivery pending when the server stops is
// sent after it starts again; two `faultline serve` processes on one PostgreSQL
// database send one alert; `faultline alerts` checks crash spikes once and sends
// what is pending (run against what `serve`, with SQLite's batch thread, recorded).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialects, startTestServer } from '../helpers/server.js';
import { ensureBuilt, runCli, startServe, type ServeProcess } from '../helpers/cli.js';
import { envelope, errorEvent, eventId } from '../ingest/helpers.js';
import { Receiver, addWebhook, apiProject, crash, deliveries, sendEvents, sleep, until } from './support.js';

beforeAll(() => ensureBuilt());

async function api(base: string, path: string, method = 'GET', json?: unknown): Promise<any> {
  const res = await fetch(base + path, {
    method,
    headers: json ? { 'content-type': 'application/json' } : {},
    body: json ? JSON.stringify(json) : undefined,
  });
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? null : res.json();
}

async function ingest(
  base: string,
  project: { id: number; dsn: string },
  events: Record<string, unknown>[],
): Promise<void> {
  const key = new URL(project.dsn).username;
  const body = envelope(
    { event_id: events[0].event_id },
    events.map((payload) => ({ type: 'event', payload })),
  );
  const res = await fetch(`${base}/api/${project.id}/envelope/?sentry_key=${key}&sentry_version=7`, {
    method: 'POST',
    body: body as unknown as BodyInit,
  });
  if (res.status !== 200) throw new Error(`ingest: ${res.status} ${await res.text()}`);
}

async function stop(serve: ServeProcess | undefined): Promise<void> {
  if (!serve) return;
  serve.signal('SIGTERM');
  await serve.exited;
}

describe.each(dialects)('alerts across restarts (%s)', (dialect) => {
  it('a receiver down across a server restart gets the alert after the restart', async () => {
    const database = await createTestDatabase(dialect);
    const probe = await Receiver.start();
    const port = probe.port;
    await probe.stop();
    const options = {
      env: { WEBHOOK_ALLOW_PRIVATE: 'true' },
      database,
      serverOptions: { alerts: { pollMs: 25, retryDelaysMs: [1000, 1000] } },
    };
    let t = await startTestServer(dialect, options);
    let hook: Receiver | undefined;
    try {
      const p = await apiProject(t);
      await addWebhook(t, p, `http://127.0.0.1:${port}/down-then-up`);
      await sendEvents(t, p, [errorEvent({ timestamp: t.clock.now() })]);
      await until(
        async () => (await deliveries(t, p))[0]?.attempts === 1 && (await deliveries(t, p))[0]?.last_error !== null,
        8000,
        'the first failed attempt',
      );
      expect((await deliveries(t, p))[0]).toMatchObject({ state: 'pending', attempts: 1 });
      expect((await deliveries(t, p))[0].last_error).toMatch(/ECONNREFUSED/);
      await t.close();

      hook = await Receiver.start(port);
      t = await startTestServer(dialect, options);
      await until(() => hook!.accepted.length === 1, 8000, 'the delivery after the restart');
      expect(hook.requests[0].json).toMatchObject({ type: 'new_issue', project: { slug: p.slug } });
      await until(async () => (await deliveries(t, p))[0]?.state === 'sent');
      expect((await deliveries(t, p))[0]).toMatchObject({ state: 'sent', attempts: 2, last_error: null });
      await sleep(300);
      expect(hook.requests).toHaveLength(1);
    } finally {
      await t.close();
      await hook?.stop();
      await database.drop();
    }
  });

  it('faultline alerts checks crash spikes once and sends what is pending (after serve recorded it)', async () => {
    const database = await createTestDatabase(dialect);
    const hook = await Receiver.start();
    const env = { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE: 'true' };
    let serve: ServeProcess | undefined;
    try {
      serve = await startServe({ env });
      const project = await api(serve.url, '/api/projects', 'POST', { slug: 'cron-app' });
      await api(serve.url, '/api/projects/cron-app/alerts/channels', 'POST', {
        kind: 'webhook',
        config: { url: hook.url },
      });
      const now = Date.now();
      await ingest(
        serve.url,
        project,
        Array.from({ length: 11 }, () => crash(now)),
      );
      // serve (on SQLite through its batch thread) recorded the new issue and sends it.
      await until(
        () => hook.requests.some((r) => r.json?.type === 'new_issue'),
        8000,
        'the new_issue alert from serve',
      );
      await stop(serve);
      serve = undefined;

      const first = await runCli(['alerts'], env);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toContain('alerts: checking cron monitors and crash spikes and sending pending alerts');
      expect(first.stdout.trim()).toBe(
        'alerts: 1 crash spike found; 1 alert sent out; 1 delivery sent, 0 failed, 0 retried',
      );
      const spike = hook.requests.find((r) => r.json?.type === 'crash_spike');
      expect(spike?.json).toMatchObject({ type: 'crash_spike', project: { slug: 'cron-app' }, baseline: 0 });
      expect(spike!.json.recent).toBeGreaterThanOrEqual(10);

      const second = await runCli(['alerts'], env);
      expect(second.code, second.stderr).toBe(0);
      expect(second.stdout.trim()).toBe(
        'alerts: 0 crash spikes found; 0 alerts sent out; 0 deliveries sent, 0 failed, 0 retried',
      );
      expect(hook.requests.filter((r) => r.json?.type === 'crash_spike')).toHaveLength(1);
    } finally {
      await stop(serve);
      await hook.stop();
      await database.drop();
    }
  });
});

describe.runIf(dialects.includes('postgres'))('two server processes on one PostgreSQL database', () => {
  let hook: Receiver;
  let database: Awaited<ReturnType<typeof createTestDatabase>>;
  let a: ServeProcess | undefined;
  let b: ServeProcess | undefined;

  beforeAll(async () => {
    hook = await Receiver.start();
    database = await createTestDatabase('postgres');
  });

  afterAll(async () => {
    await stop(a);
    await stop(b);
    await hook?.stop();
    await database?.drop();
  });

  it('send one alert', async () => {
    const env = { DATABASE_URL: database.url, WEBHOOK_ALLOW_PRIVATE: 'true' };
    [a, b] = await Promise.all([startServe({ env }), startServe({ env })]);
    const project = await api(a.url, '/api/projects', 'POST', { slug: 'shared' });
    await api(b.url, '/api/projects/shared/alerts/channels', 'POST', { kind: 'webhook', config: { url: hook.url } });
    // Two new issues at once, one through each instance, and one event sent to both.
    const same = errorEvent({ timestamp: Date.now(), fn: 'both', id: eventId() });
    await Promise.all([
      ingest(a.url, project, [errorEvent({ timestamp: Date.now(), fn: 'viaA' })]),
      ingest(b.url, project, [errorEvent({ timestamp: Date.now(), fn: 'viaB' })]),
      ingest(a.url, project, [same]),
      ingest(b.url, project, [same]),
    ]);
    await until(() => hook.requests.length >= 1, 8000, 'an alert');
    // Both dispatchers poll every second: give them time to send a second one if they would.
    await sleep(2500);
    expect(hook.requests).toHaveLength(1);
    const rules = await api(a.url, '/api/projects/shared/alerts');
    expect(rules.rules[0].last_triggered).not.toBeNull();
    const log = await api(b.url, '/api/projects/shared/alerts/deliveries');
    expect(log.deliveries).toHaveLength(1);
    expect(log.deliveries[0]).toMatchObject({ type: 'new_issue', state: 'sent', attempts: 1 });
  });

  it('hold what the cooldown holds back, and send exactly one digest of it when it ends', async () => {
    const project = await api(a!.url, '/api/projects', 'POST', { slug: 'digest-shared', name: 'Shop app' });
    await api(a!.url, '/api/projects/digest-shared/alerts/channels', 'POST', {
      kind: 'webhook',
      config: { url: `${hook.url}/digest` },
    });
    const arrived = () => hook.requests.filter((r) => r.path === '/digest');
    // Three new issues, through both instances at once: one alert, two held.
    await Promise.all([
      ingest(a!.url, project, [errorEvent({ timestamp: Date.now(), fn: 'one' })]),
      ingest(b!.url, project, [errorEvent({ timestamp: Date.now(), fn: 'two' })]),
      ingest(a!.url, project, [errorEvent({ timestamp: Date.now(), fn: 'three' })]),
    ]);
    await until(() => arrived().length >= 1, 8000, 'the first alert');
    await sleep(2500);
    expect(arrived()).toHaveLength(1);
    // The cooldown ends: its start moves 61 minutes back (the processes run on the system clock).
    const db = new pg.Client({ connectionString: database.url });
    await db.connect();
    try {
      await db.query(
        `update alert_rules set last_triggered = last_triggered - $1 where project_id = $2 and type = 'new_issue'`,
        [61 * 60_000, project.id],
      );
    } finally {
      await db.end();
    }
    await until(() => arrived().length >= 2, 8000, 'the digest');
    // Both dispatchers poll every second: give the other time to send a second digest if it would.
    await sleep(2500);
    expect(arrived()).toHaveLength(2);
    expect(arrived()[1].json).toMatchObject({ type: 'new_issue', digest: true, count: 2, more: 0 });
    const log = await api(b!.url, '/api/projects/digest-shared/alerts/deliveries');
    const digests = log.deliveries.filter((d: { digest: boolean }) => d.digest);
    expect(digests).toHaveLength(1);
    expect(digests[0].issues).toHaveLength(2);
    expect(digests[0]).toMatchObject({ state: 'sent', attempts: 1 });
  });
});
