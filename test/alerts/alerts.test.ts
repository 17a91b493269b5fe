// Alerts end to end through the real server on each database: rules and channels API,
// new_issue / regression / crash_spike alerts reaching a real local webhook receiver and
// a fake Telegram Bot API, cooldown (claimed, and given back when nothing accepted the
// alert), retries, slow channels, Telegram's retry_after, the bot token kept out of
// answers and logs, and the SSRF guard at creation and at delivery.
import os from 'node:os';
import dns from 'node:dns';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { nodeHttpPost } from '../../src/editions/node/alerts.js';
import { forbiddenAddressReason } from '../../src/alerts/addresses.js';
import { ALERT_TYPES } from '../../src/alerts/rules.js';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { errorEvent, eventId } from '../ingest/helpers.js';
import {
  FakeBotApi,
  Receiver,
  addWebhook,
  apiProject,
  crash,
  deliveries,
  pendingOutbox,
  sendEvents,
  sleep,
  until,
  verifySignature,
} from './support.js';

const HOUR = 3_600_000;
const TOKEN = '123456:SECRET-token-abc';
const ALERT_OPTIONS = { alerts: { pollMs: 25, retryDelaysMs: [150, 300] } };

describe.each(dialects)('alerts (%s)', (dialect) => {
  let t: TestServer;
  let bot: FakeBotApi;
  const logLines: string[] = [];
  let chatIds = -1000;

  beforeAll(async () => {
    bot = await FakeBotApi.start();
    const logger = pino(
      { level: 'debug' },
      new Writable({
        write(chunk, _enc, done) {
          logLines.push(String(chunk));
          done();
        },
      }),
    );
    t = await startTestServer(dialect, {
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_URL: bot.url,
        PUBLIC_URL: 'https://faultline.example',
      },
      logger,
      serverOptions: ALERT_OPTIONS,
    });
  });

  afterAll(async () => {
    await t?.close();
    await bot?.stop();
  });

  async function addTelegram(slug: string): Promise<number> {
    chatIds -= 1;
    const res = await t.api(`/api/projects/${slug}/alerts/channels`, {
      method: 'POST',
      json: { kind: 'telegram', config: { chat_id: chatIds } },
    });
    expect(res.status).toBe(201);
    expect((await res.json()).config).toEqual({ chat_id: chatIds });
    return chatIds;
  }

  /** Waits until every recorded alert was taken and nothing is under way, then a little more. */
  async function settled(): Promise<void> {
    await until(async () => (await pendingOutbox(t)) === 0, 8000, 'the outbox to empty');
    await sleep(150);
  }

  it("a project created through the API starts with every rule's row (alerts' project-created hook); the store alone adds none", async () => {
    const db = t.deps.store.db;
    const rulesOf = async (projectId: number) =>
      (await db.selectFrom('alert_rules').select('type').where('project_id', '=', projectId).execute())
        .map((r) => r.type)
        .sort();
    const p = await apiProject(t, 'Hooked app');
    expect(await rulesOf(p.id)).toEqual([...ALERT_TYPES].sort());
    const bare = await createProject(db, { ...PROJECT_DEFAULTS, slug: `bare-${dialect}`, name: 'Bare' }, 0);
    expect(await rulesOf(bare.id)).toEqual([]);
  });

  it('new_issue reaches every channel once, with the documented fields and a valid signature', async () => {
    const p = await apiProject(t, 'Shop app');
    const hook = await Receiver.start();
    const secret = 'shh-its-a-secret';
    await addWebhook(t, p, `${hook.url}/hook`, secret);
    const chat = await addTelegram(p.slug);

    const listed = await (await t.api(`/api/projects/${p.slug}/alerts`)).json();
    expect(listed.rules).toEqual(
      ['new_issue', 'regression', 'crash_spike', 'monitor'].map((type) => ({
        project_id: p.id,
        type,
        enabled: true,
        cooldown_minutes: 60,
        last_triggered: null,
        environments: [],
        min_level: null,
        channels: [],
      })),
    );
    expect(listed.channels[0]).toMatchObject({
      kind: 'webhook',
      config: { url: `${hook.url}/hook`, has_secret: true },
    });
    expect(listed.channels[0].created_at).toMatch(/Z$/);
    expect(JSON.stringify(listed)).not.toContain(secret);

    const ts = t.clock.now() - 1000;
    await sendEvents(t, p, [errorEvent({ timestamp: ts, release: 'app@1.0.0' })]);
    await until(
      () => hook.requests.length === 1 && bot.messages.some((m) => m.json?.chat_id === chat),
      8000,
      'both channels',
    );

    const got = hook.requests[0];
    expect(got.headers['user-agent']).toBe('faultline');
    expect(got.headers['content-type']).toBe('application/json');
    expect(verifySignature(secret, got.body, got.headers['x-faultline-signature'])).toBe(true);
    expect(verifySignature('another secret', got.body, got.headers['x-faultline-signature'])).toBe(false);
    const issue = (await (await t.api(`/api/projects/${p.slug}/issues`)).json()).issues[0];
    expect(got.json).toEqual({
      type: 'new_issue',
      project: { slug: p.slug, name: 'Shop app' },
      title: 'TypeError: boom',
      fingerprint: issue.fingerprint,
      level: 'error',
      event_count: 1,
      release: 'app@1.0.0',
      environment: 'test',
      url: `https://faultline.example/${p.slug}/issues/${issue.fingerprint}`,
      triggered_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
    });
    const message = bot.messages.find((m) => m.json?.chat_id === chat)!;
    expect(message.path).toBe(`/bot${TOKEN}/sendMessage`);
    expect(message.json.text).toContain('New issue in Shop app');
    expect(message.json.text).toContain('TypeError: boom');
    expect(message.json.text).toContain('1 event');

    // More events of the same issue are no new issue.
    await sendEvents(t, p, [errorEvent({ timestamp: ts + 1 }), errorEvent({ timestamp: ts + 2 })]);
    await settled();
    expect(hook.requests).toHaveLength(1);
    expect(bot.messages.filter((m) => m.json?.chat_id === chat)).toHaveLength(1);

    const log = await deliveries(t, p);
    expect(log).toHaveLength(2);
    for (const d of log) expect(d).toMatchObject({ type: 'new_issue', state: 'sent', attempts: 1, last_error: null });
    expect(log[0].id).toBeGreaterThan(log[1].id);
    const rules = (await (await t.api(`/api/projects/${p.slug}/alerts`)).json()).rules;
    expect(rules[0].last_triggered).not.toBeNull();
    await hook.stop();
  });

  it('regression fires once per flip', async () => {
    const p = await apiProject(t);
    const hook = await Receiver.start();
    await addWebhook(t, p, hook.url);
    expect(
      (await t.api(`/api/projects/${p.slug}/alerts/regression`, { method: 'PATCH', json: { cooldown_minutes: 0 } }))
        .status,
    ).toBe(200);
    const ts = Date.now() - 10_000;
    await sendEvents(t, p, [errorEvent({ timestamp: ts, release: 'app@1.0.0' })]);
    await until(() => hook.requests.length === 1);
    const fingerprint = hook.requests[0].json.fingerprint;

    const resolve = () =>
      t.api(`/api/projects/${p.slug}/issues/${fingerprint}`, { method: 'PATCH', json: { status: 'resolved' } });
    expect((await resolve()).status).toBe(200);
    await sendEvents(t, p, [errorEvent({ timestamp: ts + 1, release: 'app@2.0.0' })]);
    await until(() => hook.requests.length === 2);
    expect(hook.requests[1].json).toMatchObject({
      type: 'regression',
      fingerprint,
      release: 'app@2.0.0',
      event_count: 2,
      title: 'TypeError: boom',
    });

    // Still a regression: more events change nothing.
    await sendEvents(t, p, [errorEvent({ timestamp: ts + 2, release: 'app@2.0.0' })]);
    await settled();
    expect(hook.requests).toHaveLength(2);

    // Resolved again and back again: the second flip is a second alert.
    expect((await resolve()).status).toBe(200);
    await sendEvents(t, p, [errorEvent({ timestamp: ts + 3, release: 'app@3.0.0' })]);
    await until(() => hook.requests.length === 3);
    expect(hook.requests[2].json).toMatchObject({ type: 'regression', release: 'app@3.0.0' });
    await settled();
    expect(hook.requests).toHaveLength(3);
    await hook.stop();
  });

  it('cooldown holds per project and type; what it holds back goes out as a digest when it ends', async () => {
    const p = await apiProject(t);
    const hook = await Receiver.start();
    await addWebhook(t, p, hook.url);
    const ts = Date.now() - 5000;
    await sendEvents(t, p, [errorEvent({ timestamp: ts, fn: 'first' })]);
    await until(() => hook.requests.length === 1);
    await sendEvents(t, p, [errorEvent({ timestamp: ts, fn: 'second' })]);
    await settled();
    expect(hook.requests).toHaveLength(1);
    const states = await t.deps.store.db
      .selectFrom('alert_outbox')
      .select('state')
      .where('project_id', '=', p.id)
      .orderBy('id')
      .execute();
    expect(states.map((s) => s.state)).toEqual(['sent', 'held']);

    (t.clock as ManualClock).advance(61 * 60_000);
    try {
      await until(() => hook.requests.length === 2);
      await sendEvents(t, p, [errorEvent({ timestamp: ts, fn: 'third' })]);
      await settled();
    } finally {
      (t.clock as ManualClock).advance(-61 * 60_000);
    }
    expect(hook.requests).toHaveLength(2);
    expect(hook.requests[1].json).toMatchObject({ digest: true, count: 1, issues: [{ title: 'TypeError: boom' }] });
    await hook.stop();
  });

  it('a channel that fails twice then succeeds gets the alert exactly once', async () => {
    const p = await apiProject(t);
    const hook = await Receiver.start();
    hook.script = [{ status: 500 }, { status: 503 }];
    await addWebhook(t, p, hook.url);
    await sendEvents(t, p, [errorEvent({ timestamp: Date.now() })]);
    await until(() => hook.accepted.length === 1);
    await settled();
    expect(hook.requests.map((r) => r.answered)).toEqual([500, 503, 200]);
    expect(new Set(hook.requests.map((r) => r.headers['x-faultline-delivery'])).size).toBe(1);
    const [d] = await deliveries(t, p);
    expect(d).toMatchObject({ type: 'new_issue', state: 'sent', attempts: 3, last_error: null });
    expect(d.sent_at).not.toBeNull();
    await hook.stop();
  });

  it('gives the cooldown back when no channel accepted the alert', async () => {
    const p = await apiProject(t);
    const hook = await Receiver.start();
    hook.fallback = { status: 500 };
    await addWebhook(t, p, hook.url);
    await sendEvents(t, p, [errorEvent({ timestamp: Date.now(), fn: 'one' })]);
    await until(async () => (await deliveries(t, p))[0]?.state === 'failed');
    const [d] = await deliveries(t, p);
    expect(d).toMatchObject({ state: 'failed', attempts: 3, last_error: 'HTTP 500', sent_at: null });
    expect(hook.requests).toHaveLength(3);
    const rules = (await (await t.api(`/api/projects/${p.slug}/alerts`)).json()).rules;
    expect(rules[0]).toMatchObject({ type: 'new_issue', last_triggered: null });

    hook.fallback = { status: 200 };
    await sendEvents(t, p, [errorEvent({ timestamp: Date.now(), fn: 'two' })]);
    await until(() => hook.accepted.length === 1);
    await hook.stop();
  });

  it('a channel deleted while its delivery waits for a retry: the delivery fails and the cooldown is given back', async () => {
    const p = await apiProject(t);
    const hook = await Receiver.start();
    hook.fallback = { status: 500, delayMs: 100 };
    const id = await addWebhook(t, p, hook.url);
    await sendEvents(t, p, [errorEvent({ timestamp: Date.now(), fn: 'orphaned' })]);
    await until(() => hook.requests.length === 1);
    expect((await t.api(`/api/projects/${p.slug}/alerts/channels/${id}`, { method: 'DELETE' })).status).toBe(204);
    await until(async () => (await deliveries(t, p))[0]?.state === 'failed');
    expect((await deliveries(t, p))[0]).toMatchObject({ channel_id: id, last_error: 'the channel was deleted' });
    expect(hook.requests).toHaveLength(1);
    const rules = (await (await t.api(`/api/projects/${p.slug}/alerts`)).json()).rules;
    expect(rules[0].last_triggered).toBeNull();
    await hook.stop();
  });

  it('a slow channel delays nothing else; disabled rules send nothing', async () => {
    const p = await apiProject(t);
    const slow = await Receiver.start();
    slow.fallback = { status: 200, delayMs: 1500 };
    const fast = await Receiver.start();
    await addWebhook(t, p, slow.url);
    await addWebhook(t, p, fast.url);
    // Four alerts at once (no cooldown): the fast channel gets all four while the slow one
    // holds at most two of the dispatcher's slots.
    expect(
      (await t.api(`/api/projects/${p.slug}/alerts/new_issue`, { method: 'PATCH', json: { cooldown_minutes: 0 } }))
        .status,
    ).toBe(200);
    const started = Date.now();
    await sendEvents(
      t,
      p,
      ['a', 'b', 'c', 'd'].map((fn) => errorEvent({ timestamp: Date.now(), fn: `slowpoke_${fn}` })),
    );
    await until(() => fast.requests.length === 4, 1400, 'the fast channel');
    expect(slow.requests).toHaveLength(0);
    expect(Date.now() - started).toBeLessThan(1400);
    await until(() => slow.requests.length === 4, 8000, 'the slow channel');

    const patched = await t.api(`/api/projects/${p.slug}/alerts/new_issue`, {
      method: 'PATCH',
      json: { enabled: false },
    });
    expect(await patched.json()).toMatchObject({ type: 'new_issue', enabled: false, cooldown_minutes: 0 });
    await sendEvents(t, p, [errorEvent({ timestamp: Date.now(), fn: 'unheard' })]);
    await settled();
    expect(fast.requests).toHaveLength(4);
    await slow.stop();
    await fast.stop();
  });

  it('Telegram: retry_after is honoured and the token appears in no answer and no log line', async () => {
    const p = await apiProject(t);
    const chat = await addTelegram(p.slug);
    bot.tooManyRequests(1);
    await sendEvents(t, p, [errorEvent({ timestamp: Date.now() })]);
    await until(() => bot.messages.filter((m) => m.json?.chat_id === chat).length === 1);
    const firstAt = Date.now();
    const afterFirst = await deliveries(t, p);
    expect(afterFirst[0]).toMatchObject({ state: 'pending', attempts: 1 });
    expect(afterFirst[0].last_error).toContain('429');
    await until(() => bot.messages.filter((m) => m.json?.chat_id === chat).length === 2, 5000);
    expect(Date.now() - firstAt).toBeGreaterThan(800); // not the 150 ms retry delay
    await until(async () => (await deliveries(t, p))[0].state === 'sent');

    // An error answer naming the token, and an unreachable API: the token is cut out.
    const channelId = (await (await t.api(`/api/projects/${p.slug}/alerts`)).json()).channels[0].id;
    bot.receiver.script.push({
      status: 401,
      body: JSON.stringify({ ok: false, description: `Unauthorized: bot${TOKEN} is not valid` }),
    });
    const tested = await t.api(`/api/projects/${p.slug}/alerts/channels/${channelId}/test`, { method: 'POST' });
    const answer = await tested.json();
    expect(answer).toMatchObject({ delivered: false, status: 401 });
    expect(answer.error).toContain('Unauthorized');
    const all =
      JSON.stringify(await deliveries(t, p)) +
      JSON.stringify(answer) +
      JSON.stringify(await (await t.api(`/api/projects/${p.slug}/alerts`)).json());
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain('SECRET-token');
    expect(logLines.join('')).not.toContain('SECRET-token');
    expect(logLines.some((l) => l.includes('alert delivered'))).toBe(true);
  });

  it('POST channels/{id}/test sends at once and says how it went', async () => {
    const p = await apiProject(t);
    const hook = await Receiver.start();
    const id = await addWebhook(t, p, `${hook.url}/t`, 'k');
    const ok = await t.api(`/api/projects/${p.slug}/alerts/channels/${id}/test`, { method: 'POST' });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ delivered: true, status: 200, error: null });
    expect(hook.requests[0].json).toMatchObject({
      type: 'test',
      project: { slug: p.slug },
      url: `https://faultline.example/${p.slug}`,
    });
    expect(verifySignature('k', hook.requests[0].body, hook.requests[0].headers['x-faultline-signature'])).toBe(true);

    hook.script = [{ status: 302 }];
    const redirected = await (
      await t.api(`/api/projects/${p.slug}/alerts/channels/${id}/test`, { method: 'POST' })
    ).json();
    expect(redirected).toEqual({ delivered: false, status: 302, error: 'HTTP 302: redirects are not followed' });
    await hook.stop();
    const down = await (await t.api(`/api/projects/${p.slug}/alerts/channels/${id}/test`, { method: 'POST' })).json();
    expect(down).toMatchObject({ delivered: false, status: null });
    expect(down.error).toMatch(/ECONNREFUSED/);
    const log = await deliveries(t, p);
    expect(log.map((d) => [d.type, d.state])).toEqual([
      ['test', 'failed'],
      ['test', 'failed'],
      ['test', 'sent'],
    ]);

    const del = await t.api(`/api/projects/${p.slug}/alerts/channels/${id}`, { method: 'DELETE' });
    expect(del.status).toBe(204);
    expect(await del.text()).toBe('');
    expect((await t.api(`/api/projects/${p.slug}/alerts/channels/${id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await t.api(`/api/projects/${p.slug}/alerts/channels/${id}/test`, { method: 'POST' })).status).toBe(404);
  });

  it('crash_spike: fires at 10 crashes and 3 × the baseline, not below (injected clock)', async () => {
    const clock = t.clock as ManualClock;
    const saved = clock.now();
    const H = Math.floor(Date.now() / HOUR) * HOUR - 2 * HOUR;
    clock.set(H);
    try {
      const quiet = await apiProject(t);
      const busy = await apiProject(t);
      const quietHook = await Receiver.start();
      const busyHook = await Receiver.start();
      await addWebhook(t, quiet, quietHook.url);
      await addWebhook(t, busy, busyHook.url);
      const spikes = (hook: Receiver) => hook.requests.filter((r) => r.json?.type === 'crash_spike');
      const check = async () => (await t.server.alerts!.checkSpikes()).spikes.map((s) => s.project_id);

      // No baseline: 9 crashes in the last hour is below the floor of 10, 10 is a spike.
      await sendEvents(
        t,
        quiet,
        Array.from({ length: 9 }, (_, i) => crash(H - 30 * 60_000 + i)),
      );
      expect(await check()).not.toContain(quiet.id);
      await sendEvents(t, quiet, [crash(H - 10 * 60_000)]);
      expect(await check()).toContain(quiet.id);
      await until(() => spikes(quietHook).length === 1);
      expect(spikes(quietHook)[0].json).toEqual({
        type: 'crash_spike',
        project: { slug: quiet.slug, name: 'Alerting app' },
        url: `https://faultline.example/${quiet.slug}`,
        recent: 10,
        baseline: 0,
        triggered_at: new Date(H).toISOString(),
      });
      // In cooldown now: the next check does not even consider it.
      expect(await check()).not.toContain(quiet.id);

      // 4 crashes an hour over the 24 hours before: 12 in the last hour are needed.
      const baseline = [];
      for (let h = 2; h <= 25; h++) for (let i = 0; i < 4; i++) baseline.push(crash(H - h * HOUR + i * 60_000));
      await sendEvents(t, busy, baseline);
      await sendEvents(
        t,
        busy,
        Array.from({ length: 11 }, (_, i) => crash(H - 50 * 60_000 + i)),
      );
      expect(await check()).not.toContain(busy.id);
      await sendEvents(t, busy, [crash(H - 5 * 60_000)]);
      expect(await check()).toContain(busy.id);
      await until(() => spikes(busyHook).length === 1);
      expect(spikes(busyHook)[0].json).toMatchObject({ type: 'crash_spike', recent: 12, baseline: 4 });
      await settled();
      expect(spikes(quietHook)).toHaveLength(1);
      expect(spikes(busyHook)).toHaveLength(1);
      await quietHook.stop();
      await busyHook.stop();
    } finally {
      clock.set(saved);
    }
  });
});

describe.each(dialects)('alerts input and the SSRF guard (%s)', (dialect) => {
  let t: TestServer;
  let hook: Receiver;

  beforeAll(async () => {
    hook = await Receiver.start();
    // No WEBHOOK_ALLOW_PRIVATE, no TELEGRAM_BOT_TOKEN.
    t = await startTestServer(dialect, { serverOptions: ALERT_OPTIONS });
  });

  afterAll(async () => {
    await t?.close();
    await hook?.stop();
  });

  async function stored(projectId: number) {
    const db = t.deps.store.db;
    const [channels, rules] = await Promise.all([
      db.selectFrom('alert_channels').selectAll().where('project_id', '=', projectId).execute(),
      db.selectFrom('alert_rules').selectAll().where('project_id', '=', projectId).orderBy('type').execute(),
    ]);
    return { channels, rules };
  }

  const SSRF_URLS = [
    'http://127.0.0.1/hook',
    'http://127.1:8080/',
    'http://2130706433/',
    'http://017700000001/',
    'http://0x7f000001/',
    'http://0x7f.0.0.1/',
    'http://localhost:9000/',
    'http://api.localhost/',
    'http://10.0.0.8/',
    'http://172.16.5.4/',
    'http://192.168.0.1/',
    'http://169.254.169.254/latest/meta-data',
    'http://0.0.0.0/',
    'http://0/',
    'http://[::1]/',
    'http://[::]/',
    'http://[fe80::1]/',
    'http://[fd00::1]/',
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:a9fe:a9fe]/',
    'https://[::ffff:10.0.0.1]:8443/x',
  ];

  it('refuses webhooks to non-public addresses in every spelling, and accepts a public one', async () => {
    const p = await apiProject(t);
    const before = await stored(p.id);
    for (const url of SSRF_URLS) {
      const res = await t.api(`/api/projects/${p.slug}/alerts/channels`, {
        method: 'POST',
        json: { kind: 'webhook', config: { url } },
      });
      expect(res.status, url).toBe(400);
      expect((await res.json()).error, url).toMatch(/WEBHOOK_ALLOW_PRIVATE/);
    }
    // A local receiver, the tests' own, is refused too.
    const local = await t.api(`/api/projects/${p.slug}/alerts/channels`, {
      method: 'POST',
      json: { kind: 'webhook', config: { url: hook.url } },
    });
    expect(local.status).toBe(400);
    expect(await stored(p.id)).toEqual(before);
    const ok = await t.api(`/api/projects/${p.slug}/alerts/channels`, {
      method: 'POST',
      json: { kind: 'webhook', config: { url: 'http://93.184.216.34/hook' } },
    });
    expect(ok.status).toBe(201);
  });

  it('checks again at delivery, after resolving the name', async () => {
    const p = await apiProject(t);
    // A channel that passed creation (made while allowed, or its name resolved elsewhere then).
    const channel = await t.deps.store.db
      .insertInto('alert_channels')
      .values({
        project_id: p.id,
        kind: 'webhook',
        config: JSON.stringify({ url: `http://localhost:${hook.port}/` }),
        created_at: Date.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const tested = await (
      await t.api(`/api/projects/${p.slug}/alerts/channels/${channel.id}/test`, { method: 'POST' })
    ).json();
    expect(tested).toMatchObject({ delivered: false, status: null });
    expect(tested.error).toMatch(/loopback/);
    await sendEvents(t, p, [errorEvent({ timestamp: Date.now() })]);
    // The test alert's delivery is listed too: wait for the new_issue one.
    const alertDelivery = async () => (await deliveries(t, p)).find((d: { type: string }) => d.type === 'new_issue');
    await until(async () => (await alertDelivery())?.state === 'failed');
    expect((await alertDelivery()).last_error).toMatch(/loopback/);
    expect(hook.requests).toHaveLength(0);
  });

  it('the Node transport refuses a name whose resolved address is not public', async () => {
    // A name the SSRF guard cannot judge without DNS: this machine's host name.
    const host = os.hostname();
    const addresses = await dns.promises.lookup(host, { all: true }).catch(() => []);
    const request = { headers: {}, body: '{}', timeoutMs: 2000, guardAddresses: true };
    if (addresses.some((a) => forbiddenAddressReason(a.address) !== null)) {
      await expect(nodeHttpPost({ ...request, url: `http://${host}:${hook.port}/` })).rejects.toThrow(/resolves to/);
    }
    await expect(nodeHttpPost({ ...request, url: `http://localhost.:${hook.port}/` })).rejects.toThrow(/loopback/);
    // Without the guard, the same transport reaches it.
    await expect(
      nodeHttpPost({ ...request, guardAddresses: false, url: `http://localhost:${hook.port}/` }),
    ).resolves.toMatchObject({ status: 200 });
    expect(hook.requests).toHaveLength(1);
    hook.requests.length = 0;
  });

  it('bad input is 400 or 404 and stores nothing', async () => {
    const p = await apiProject(t);
    const before = await stored(p.id);
    const base = `/api/projects/${p.slug}/alerts`;
    const cases: [string, string, unknown, number][] = [
      ['PATCH', `${base}/new_issues`, { enabled: true }, 404],
      ['PATCH', `${base}/NEW_ISSUE`, { enabled: true }, 404],
      ['PATCH', `/api/projects/nope-missing/alerts/new_issue`, { enabled: true }, 404],
      ['PATCH', `${base}/new_issue`, {}, 400],
      ['PATCH', `${base}/new_issue`, undefined, 400],
      ['PATCH', `${base}/new_issue`, [], 400],
      ['PATCH', `${base}/new_issue`, { enabled: 'yes' }, 400],
      ['PATCH', `${base}/new_issue`, { enabled: 1 }, 400],
      ['PATCH', `${base}/new_issue`, { cooldown_minutes: -1 }, 400],
      ['PATCH', `${base}/new_issue`, { cooldown_minutes: 43_201 }, 400],
      ['PATCH', `${base}/new_issue`, { cooldown_minutes: 1.5 }, 400],
      ['PATCH', `${base}/new_issue`, { cooldown_minutes: '5' }, 400],
      ['PATCH', `${base}/new_issue`, { cooldown_minutes: null }, 400],
      ['PATCH', `${base}/crash_spike`, { enabled: true, cooldown_minutes: 5, extra: 1 }, 400],
      ['PATCH', `${base}/regression`, '{"enabled": tru', 400],
      ['POST', `${base}/channels`, undefined, 400],
      ['POST', `${base}/channels`, { kind: 'email', config: { to: 'a@b.c' } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook' }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: 'http://93.184.216.34/' }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: {} }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 42 } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'not a url' } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: '/relative/path' } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'ftp://93.184.216.34/x' } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'javascript:alert(1)' } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'file:///etc/passwd' } }, 400],
      [
        'POST',
        `${base}/channels`,
        { kind: 'webhook', config: { url: `http://93.184.216.34/${'a'.repeat(2048)}` } },
        400,
      ],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'http://93.184.216.34/', secret: '' } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'http://93.184.216.34/', secret: 7 } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'http://93.184.216.34/', headers: {} } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'http://93.184.216.34/\u0000' } }, 400],
      ['POST', `${base}/channels`, { kind: 'webhook', config: { url: 'http://93.184.216.34/' }, name: 'x' }, 400],
      ['POST', `${base}/channels`, { kind: 'telegram', config: { chat_id: 42 } }, 400], // no TELEGRAM_BOT_TOKEN on this server
      [
        'POST',
        `/api/projects/nope-missing/alerts/channels`,
        { kind: 'webhook', config: { url: 'http://93.184.216.34/' } },
        404,
      ],
      ['DELETE', `${base}/channels/999999`, undefined, 404],
      ['DELETE', `${base}/channels/abc`, undefined, 404],
      ['DELETE', `${base}/channels/-1`, undefined, 404],
      ['POST', `${base}/channels/999999/test`, undefined, 404],
      ['GET', `/api/projects/nope-missing/alerts`, undefined, 404],
      ['GET', `/api/projects/nope-missing/alerts/deliveries`, undefined, 404],
    ];
    for (const [method, path, body, status] of cases) {
      const init: RequestInit & { json?: unknown } = { method };
      if (typeof body === 'string') init.body = body;
      else if (body !== undefined) init.json = body;
      const res = await t.api(path, init);
      const label = `${method} ${path} ${JSON.stringify(body)?.slice(0, 80)}`;
      expect(res.status, label).toBe(status);
      const answer = await res.json();
      expect(Object.keys(answer), label).toEqual(['error']);
      expect(answer.error.length, label).toBeGreaterThan(5);
    }
    // PATCH on the paths beside the rule types is a wrong method, not an unknown type.
    for (const [path, allow] of [
      ['channels', 'POST'],
      ['deliveries', 'GET, HEAD'],
    ]) {
      const res = await t.api(`${base}/${path}`, { method: 'PATCH', json: { enabled: true } });
      expect(res.status, path).toBe(405);
      expect(res.headers.get('allow'), path).toBe(allow);
      expect((await res.json()).error).toContain('method PATCH is not allowed');
    }
    const telegram = await t.api(`${base}/channels`, {
      method: 'POST',
      json: { kind: 'telegram', config: { chat_id: 42 } },
    });
    expect((await telegram.json()).error).toMatch(/TELEGRAM_BOT_TOKEN/);
    expect(await stored(p.id)).toEqual(before);
    // A channel of another project is unknown here.
    const other = await apiProject(t);
    const foreign = await addWebhook(t, other, 'http://93.184.216.34/other');
    expect((await t.api(`${base}/channels/${foreign}`, { method: 'DELETE' })).status).toBe(404);
    expect((await t.api(`${base}/channels/${foreign}/test`, { method: 'POST' })).status).toBe(404);
    expect((await stored(other.id)).channels).toHaveLength(1);
  });

  it('PATCH changes only the fields sent', async () => {
    const p = await apiProject(t);
    const res = await t.api(`/api/projects/${p.slug}/alerts/crash_spike`, {
      method: 'PATCH',
      json: { cooldown_minutes: 43_200 },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      project_id: p.id,
      type: 'crash_spike',
      enabled: true,
      cooldown_minutes: 43_200,
      last_triggered: null,
      environments: [],
      min_level: null,
      channels: [],
    });
    const off = await t.api(`/api/projects/${p.slug}/alerts/crash_spike`, {
      method: 'PATCH',
      json: { enabled: false },
    });
    expect(await off.json()).toMatchObject({ enabled: false, cooldown_minutes: 43_200 });
    const rules = (await (await t.api(`/api/projects/${p.slug}/alerts`)).json()).rules;
    expect(rules.map((r: any) => [r.type, r.enabled, r.cooldown_minutes])).toEqual([
      ['new_issue', true, 60],
      ['regression', true, 60],
      ['crash_spike', false, 43_200],
      ['monitor', true, 60],
    ]);
    void eventId;
  });
});
