// Alerts on the serverless edition, sent with fetch from inside workerd to a real local
// webhook receiver: the new_issue alert an ingest request records is sent right after its
// answer (the Worker keeps the pass alive with waitUntil), without the cron; the 10-minute
// cron runs the crash-spike check and one pass over the outbox and the deliveries (the
// code of `faultline alerts`). The spike's crashes are written into D1's hourly aggregate
// directly, as ten minutes of ingest would leave them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ALERTS_CRON } from '../../../src/editions/workers/crons.js';
import { Receiver, type Received } from '../../alerts/support.js';
import { envelope, errorEvent } from '../../ingest/helpers.js';
import { startTestWorker, type TestWorker } from './harness.js';
import { discordSchema, expectValid, slackSchema, teamsSchema } from '../../alerts/provider-schemas.js';

const HOUR = 3_600_000;

describe('alerts on the Workers edition', () => {
  let w: TestWorker;
  let hook: Receiver;

  beforeAll(async () => {
    hook = await Receiver.start();
    w = await startTestWorker({
      API_KEYS: 'k',
      PUBLIC_URL: 'https://errors.example.com',
      RATE_LIMIT: '0',
      WEBHOOK_ALLOW_PRIVATE: 'true',
    });
  }, 120_000);

  afterAll(async () => {
    await w?.close();
    await hook?.stop();
  });

  it('the 10-minute cron finds a crash spike and delivers it to the webhook, once', async () => {
    const created = await w.api('/api/projects', { method: 'POST', json: { name: 'Shop app', slug: 'shop-app' } });
    expect(created.status).toBe(201);
    const project = await created.json();
    const channel = await w.api('/api/projects/shop-app/alerts/channels', {
      method: 'POST',
      json: { kind: 'webhook', config: { url: hook.url + '/hook' } },
    });
    expect(channel.status).toBe(201);

    const now = Date.now();
    const bucket = now - (now % HOUR);
    const d1 = await w.d1();
    await d1
      .prepare(
        `insert into project_hourly (project_id, bucket, release, events, crashes, errors, fatal, error, warning, info, debug)
         values (?, ?, '', 12, 12, 12, 0, 12, 0, 0, 0)`,
      )
      .bind(project.id, bucket)
      .run();

    await w.runCron(ALERTS_CRON);
    expect(hook.requests).toHaveLength(1);
    expect(hook.requests[0].path).toBe('/hook');
    expect(hook.requests[0].json).toMatchObject({
      type: 'crash_spike',
      project: { slug: 'shop-app', name: 'Shop app' },
      url: 'https://errors.example.com/shop-app',
      recent: 12,
      baseline: 0,
    });
    const log = await (await w.api('/api/projects/shop-app/alerts/deliveries')).json();
    expect(log.deliveries).toHaveLength(1);
    expect(log.deliveries[0]).toMatchObject({ type: 'crash_spike', state: 'sent', attempts: 1, last_error: null });

    // The rule is in cooldown now: the next run finds nothing to send.
    await w.runCron(ALERTS_CRON);
    expect(hook.requests).toHaveLength(1);
  });

  it('sends the new_issue alert an ingest request recorded right after answering it, without the cron', async () => {
    const created = await w.api('/api/projects', { method: 'POST', json: { name: 'Checkout', slug: 'checkout' } });
    expect(created.status).toBe(201);
    const project = (await created.json()) as { id: number; dsn: string };
    const channel = await w.api('/api/projects/checkout/alerts/channels', {
      method: 'POST',
      json: { kind: 'webhook', config: { url: hook.url + '/ingest-hook' } },
    });
    expect(channel.status).toBe(201);

    const body = envelope({}, [
      {
        type: 'event',
        payload: errorEvent({
          timestamp: Date.now(),
          type: 'PaymentError',
          value: 'card declined',
          release: 'shop@2.0',
        }),
      },
    ]);
    const res = await fetch(`${w.url}/api/${project.id}/envelope/?sentry_key=${new URL(project.dsn).username}`, {
      method: 'POST',
      body: new Uint8Array(body),
    });
    expect(res.status, await res.clone().text()).toBe(200);

    const arrived = (): Received[] => hook.requests.filter((r) => r.path === '/ingest-hook');
    const deadline = Date.now() + 5_000;
    while (arrived().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(arrived()).toHaveLength(1);
    expect(arrived()[0].json).toMatchObject({
      type: 'new_issue',
      project: { slug: 'checkout' },
      title: 'PaymentError: card declined',
      release: 'shop@2.0',
      event_count: 1,
    });
    const log = await (await w.api('/api/projects/checkout/alerts/deliveries')).json();
    expect(log.deliveries).toHaveLength(1);
    expect(log.deliveries[0]).toMatchObject({ type: 'new_issue', state: 'sent', attempts: 1 });

    // A second event of the issue records no alert, and the cron finds nothing left to send.
    const again = envelope({}, [
      {
        type: 'event',
        payload: errorEvent({
          timestamp: Date.now(),
          type: 'PaymentError',
          value: 'card declined',
          release: 'shop@2.0',
        }),
      },
    ]);
    expect(
      (
        await fetch(`${w.url}/api/${project.id}/envelope/?sentry_key=${new URL(project.dsn).username}`, {
          method: 'POST',
          body: new Uint8Array(again),
        })
      ).status,
    ).toBe(200);
    await w.runCron(ALERTS_CRON);
    expect(arrived()).toHaveLength(1);
  });

  it('new issues inside the cooldown are held in D1 and the cron sends them as one digest, once', async () => {
    const created = await w.api('/api/projects', { method: 'POST', json: { name: 'Digest app', slug: 'digest-app' } });
    const project = (await created.json()) as { id: number; dsn: string };
    expect(
      (
        await w.api('/api/projects/digest-app/alerts/channels', {
          method: 'POST',
          json: { kind: 'webhook', config: { url: hook.url + '/digest' } },
        })
      ).status,
    ).toBe(201);
    const events = ['alpha', 'beta', 'gamma'].map((fn) => ({
      type: 'event',
      payload: errorEvent({ timestamp: Date.now(), fn, value: `boom in ${fn}` }),
    }));
    const res = await fetch(`${w.url}/api/${project.id}/envelope/?sentry_key=${new URL(project.dsn).username}`, {
      method: 'POST',
      body: new Uint8Array(envelope({}, events)),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const arrived = (): Received[] => hook.requests.filter((r) => r.path === '/digest');
    const deadline = Date.now() + 5_000;
    while (arrived().length === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(arrived()).toHaveLength(1);
    expect(arrived()[0].json).toMatchObject({ type: 'new_issue', title: 'TypeError: boom in alpha' });

    // Inside the cooldown the cron sends nothing; held alerts wait in D1.
    await w.runCron(ALERTS_CRON);
    expect(arrived()).toHaveLength(1);
    const d1 = await w.d1();
    // The cooldown ends: its start moves an hour and a minute into the past (the Worker's clock is the system's).
    await d1
      .prepare(`update alert_rules set last_triggered = last_triggered - ? where project_id = ? and type = 'new_issue'`)
      .bind(61 * 60_000, project.id)
      .run();
    await w.runCron(ALERTS_CRON);
    expect(arrived()).toHaveLength(2);
    expect(arrived()[1].json).toMatchObject({
      type: 'new_issue',
      digest: true,
      count: 2,
      more: 0,
      project: { slug: 'digest-app' },
    });
    expect(arrived()[1].json.issues.map((i: { title: string }) => i.title)).toEqual([
      'TypeError: boom in beta',
      'TypeError: boom in gamma',
    ]);
    const log = await (await w.api('/api/projects/digest-app/alerts/deliveries')).json();
    expect(
      log.deliveries.map((d: { digest: boolean; issues: { title: string }[] }) => [
        d.digest,
        d.issues.map((i) => i.title),
      ]),
    ).toEqual([
      [true, ['TypeError: boom in beta', 'TypeError: boom in gamma']],
      [false, ['TypeError: boom in alpha']],
    ]);

    await w.runCron(ALERTS_CRON);
    expect(arrived()).toHaveLength(2);
  });

  it('Slack, Discord and Teams hooks get their messages from the Worker; email is refused as unavailable there', async () => {
    const created = await w.api('/api/projects', { method: 'POST', json: { name: 'Team app', slug: 'team-app' } });
    const project = (await created.json()) as { id: number; dsn: string };
    const schemas = { slack: slackSchema, discord: discordSchema, teams: teamsSchema } as const;
    const ids: Record<string, number> = {};
    for (const kind of Object.keys(schemas)) {
      const res = await w.api('/api/projects/team-app/alerts/channels', {
        method: 'POST',
        json: { kind, config: { url: `${hook.url}/team/${kind}` } },
      });
      expect(res.status, await res.clone().text()).toBe(201);
      ids[kind] = (await res.json()).id;
    }
    const email = await w.api('/api/projects/team-app/alerts/channels', {
      method: 'POST',
      json: { kind: 'email', config: { to: ['oncall@shop.example'] } },
    });
    expect(email.status).toBe(400);
    expect((await email.json()).error).toMatch(/not available on the serverless edition/);

    for (const [kind, id] of Object.entries(ids)) {
      const tested = await (
        await w.api(`/api/projects/team-app/alerts/channels/${id}/test`, { method: 'POST' })
      ).json();
      expect(tested, kind).toEqual({ delivered: true, status: 200, error: null });
    }
    const body = envelope({}, [
      {
        type: 'event',
        payload: {
          ...errorEvent({ timestamp: Date.now(), type: 'PaymentError', value: 'card declined', release: 'shop@3.1' }),
          environment: 'production',
        },
      },
    ]);
    const res = await fetch(`${w.url}/api/${project.id}/envelope/?sentry_key=${new URL(project.dsn).username}`, {
      method: 'POST',
      body: new Uint8Array(body),
    });
    expect(res.status, await res.clone().text()).toBe(200);
    const of = (kind: string): Received[] => hook.requests.filter((r) => r.path === `/team/${kind}`);
    const deadline = Date.now() + 5_000;
    while (Object.keys(schemas).some((k) => of(k).length < 2) && Date.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 50));
    for (const [kind, schema] of Object.entries(schemas)) {
      expect(of(kind), kind).toHaveLength(2);
      const [test, alert] = of(kind).map((r) => expectValid(schema as typeof slackSchema, r.json));
      expect(JSON.stringify(test)).toContain('Test alert in Team app');
      const text = JSON.stringify(alert);
      for (const fact of [
        'New issue in Team app',
        'PaymentError: card declined',
        'shop@3.1',
        'production',
        'First seen',
        'https://errors.example.com/team-app/issues/',
      ])
        expect(text, kind).toContain(fact);
    }
  });
});
