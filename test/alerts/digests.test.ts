// Digests and rule filters through the real server on each database: alerts a cooldown
// holds back are queued in the outbox and sent as one digest when the cooldown ends
// (across a restart, by exactly one of two instances on one database), deliveries name
// their issues, and a rule's environments, min_level and channels decide what fires
// where. Time is the injected clock's: no test waits for a cooldown.
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { runRetention } from '../../src/store/retention.js';
import { createTestDatabase, dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { errorEvent } from '../ingest/helpers.js';
import {
  FakeBotApi,
  Receiver,
  addWebhook,
  apiProject,
  deliveries,
  pendingOutbox,
  sendEvents,
  sleep,
  until,
} from './support.js';

const MINUTE = 60_000;
const ALERT_OPTIONS = { alerts: { pollMs: 25, retryDelaysMs: [150, 300] } };
const TOKEN = '123456:digest-token';

async function settled(t: TestServer): Promise<void> {
  await until(async () => (await pendingOutbox(t)) === 0, 8000, 'the outbox to empty');
  await sleep(150);
}

async function outboxStates(t: TestServer, projectId: number): Promise<string[]> {
  const rows = await t.deps.store.db
    .selectFrom('alert_outbox')
    .select('state')
    .where('project_id', '=', projectId)
    .orderBy('id')
    .execute();
  return rows.map((r) => r.state);
}

const threeIssues = (ts: number) =>
  ['alpha', 'beta', 'gamma'].map((fn) => errorEvent({ timestamp: ts, fn, value: `boom in ${fn}` }));

describe.each(dialects)('alert digests and rule filters (%s)', (dialect) => {
  it('three new issues within the cooldown: one alert at once, one digest naming the other two when the cooldown ends', async () => {
    const bot = await FakeBotApi.start();
    const t = await startTestServer(dialect, {
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        PUBLIC_URL: 'https://faultline.example',
        TELEGRAM_BOT_TOKEN: TOKEN,
        TELEGRAM_API_URL: bot.url,
      },
      serverOptions: ALERT_OPTIONS,
    });
    const hook = await Receiver.start();
    try {
      const p = await apiProject(t, 'Shop app');
      await addWebhook(t, p, hook.url);
      expect(
        (
          await t.api(`/api/projects/${p.slug}/alerts/channels`, {
            method: 'POST',
            json: { kind: 'telegram', config: { chat_id: -42 } },
          })
        ).status,
      ).toBe(201);
      const ts = t.clock.now() - 5000;
      await sendEvents(t, p, threeIssues(ts));
      await until(() => hook.requests.length === 1 && bot.messages.length === 1);
      await settled(t);
      expect(hook.requests).toHaveLength(1);
      const first = hook.requests[0].json;
      expect(first).toMatchObject({ type: 'new_issue', title: 'TypeError: boom in alpha', environment: 'test' });
      expect(first.digest).toBeUndefined();
      expect(await outboxStates(t, p.id)).toEqual(['sent', 'held', 'held']);

      (t.clock as ManualClock).advance(30 * MINUTE);
      await sleep(200);
      expect(hook.requests).toHaveLength(1); // still inside the cooldown

      (t.clock as ManualClock).advance(31 * MINUTE);
      await until(() => hook.requests.length === 2 && bot.messages.length === 2, 8000, 'the digest');
      const digest = hook.requests[1].json;
      expect(digest).toMatchObject({
        type: 'new_issue',
        digest: true,
        project: { slug: p.slug, name: 'Shop app' },
        count: 2,
        more: 0,
        url: `https://faultline.example/${p.slug}`,
      });
      expect(digest.issues.map((i: any) => i.title)).toEqual(['TypeError: boom in beta', 'TypeError: boom in gamma']);
      expect(digest.issues[0]).toMatchObject({
        level: 'error',
        event_count: 1,
        release: 'app@1.0.0',
        environment: 'test',
      });
      expect(digest.issues[0].url).toBe(`https://faultline.example/${p.slug}/issues/${digest.issues[0].fingerprint}`);
      expect(Date.parse(digest.since)).toBe(Date.parse(first.triggered_at));
      const text: string = bot.messages[1].json.text;
      expect(text.split('\n')[0]).toMatch(/^2 new issues in Shop app \(.+\) since \d{4}-\d\d-\d\d \d\d:\d\d UTC$/);
      expect(text).toContain('- TypeError: boom in beta (error, 1 event, release app@1.0.0)');
      expect(text).toContain('- TypeError: boom in gamma');

      // Deliveries name their issues: the single alert its one, the digest both.
      const list = await deliveries(t, p);
      const webhookOnes = list.filter((d) => d.channel_id === list.at(-1).channel_id);
      expect(
        webhookOnes.map((d) => ({
          digest: d.digest,
          issue_count: d.issue_count,
          titles: d.issues.map((i: any) => i.title),
        })),
      ).toEqual([
        { digest: true, issue_count: 2, titles: ['TypeError: boom in beta', 'TypeError: boom in gamma'] },
        { digest: false, issue_count: 1, titles: ['TypeError: boom in alpha'] },
      ]);
      expect(webhookOnes[1].issues[0].fingerprint).toBe(first.fingerprint);
      expect(await outboxStates(t, p.id)).toEqual(['sent', 'digested', 'digested', 'sent']);

      // Nothing else is owed: no second digest later.
      (t.clock as ManualClock).advance(61 * MINUTE);
      await sleep(200);
      expect(hook.requests).toHaveLength(2);
    } finally {
      await t.close();
      await hook.stop();
      await bot.stop();
    }
  });

  it('held alerts survive a restart, and of two instances on the database exactly one sends the digest', async () => {
    const database = await createTestDatabase(dialect);
    const clock = new ManualClock(Date.now());
    const options = { env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, database, clock, serverOptions: ALERT_OPTIONS };
    const hook = await Receiver.start();
    let a = await startTestServer(dialect, options);
    let b: TestServer | undefined;
    try {
      const p = await apiProject(a);
      await addWebhook(a, p, hook.url);
      await sendEvents(a, p, threeIssues(clock.now() - 5000));
      await until(() => hook.requests.length === 1);
      await settled(a);
      expect(await outboxStates(a, p.id)).toEqual(['sent', 'held', 'held']);
      // Retention takes the alerts that are done with, never the held ones.
      await runRetention(a.deps.store, { now: clock.now() + 10 * 24 * 60 * MINUTE, retentionDays: 1 });
      expect(await outboxStates(a, p.id)).toEqual(['held', 'held']);
      await a.close();

      clock.advance(61 * MINUTE);
      [a, b] = await Promise.all([startTestServer(dialect, options), startTestServer(dialect, options)]);
      await until(() => hook.requests.length === 2, 8000, 'the digest after the restart');
      await sleep(500);
      expect(hook.requests).toHaveLength(2);
      expect(hook.requests[1].json).toMatchObject({ digest: true, count: 2 });
      expect((await deliveries(a, p)).filter((d) => d.digest)).toHaveLength(1);
    } finally {
      await a.close();
      await b?.close();
      await hook.stop();
      await database.drop();
    }
  });

  it('filters: environments, min_level and channels decide what fires where', async () => {
    const t = await startTestServer(dialect, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' }, serverOptions: ALERT_OPTIONS });
    const one = await Receiver.start();
    const two = await Receiver.start();
    try {
      const p = await apiProject(t);
      const oneId = await addWebhook(t, p, one.url);
      await addWebhook(t, p, two.url);
      const patch = await t.api(`/api/projects/${p.slug}/alerts/new_issue`, {
        method: 'PATCH',
        json: { cooldown_minutes: 0, environments: ['production'], min_level: 'error', channels: [oneId] },
      });
      expect(patch.status).toBe(200);
      expect(await patch.json()).toMatchObject({
        type: 'new_issue',
        environments: ['production'],
        min_level: 'error',
        channels: [oneId],
      });
      const listed = await (await t.api(`/api/projects/${p.slug}/alerts`)).json();
      expect(listed.rules.find((r: any) => r.type === 'new_issue')).toMatchObject({
        environments: ['production'],
        min_level: 'error',
        channels: [oneId],
      });
      expect(listed.rules.find((r: any) => r.type === 'regression')).toMatchObject({
        environments: [],
        min_level: null,
        channels: [],
      });

      const ts = t.clock.now() - 5000;
      await sendEvents(t, p, [{ ...errorEvent({ timestamp: ts, fn: 'staging_only' }), environment: 'staging' }]);
      await sendEvents(t, p, [
        { ...errorEvent({ timestamp: ts, fn: 'just_a_warning', level: 'warning' }), environment: 'production' },
      ]);
      await sendEvents(t, p, [
        { ...errorEvent({ timestamp: ts, fn: 'real_one', value: 'production error' }), environment: 'production' },
      ]);
      await until(() => one.requests.length === 1);
      await settled(t);
      expect(one.requests).toHaveLength(1);
      expect(one.requests[0].json).toMatchObject({
        title: 'TypeError: production error',
        environment: 'production',
        level: 'error',
      });
      expect(two.requests).toHaveLength(0);
      expect(await outboxStates(t, p.id)).toEqual(['filtered', 'filtered', 'sent']);

      // A fatal passes min_level error; empty lists mean every environment and channel again.
      expect(
        (
          await t.api(`/api/projects/${p.slug}/alerts/new_issue`, {
            method: 'PATCH',
            json: { environments: [], channels: [] },
          })
        ).status,
      ).toBe(200);
      await sendEvents(t, p, [
        { ...errorEvent({ timestamp: ts, fn: 'fatal_one', level: 'fatal' }), environment: 'staging' },
      ]);
      await until(() => one.requests.length === 2 && two.requests.length === 1);

      // A deleted channel leaves the rules limited to it.
      const twoId = (await (await t.api(`/api/projects/${p.slug}/alerts`)).json()).channels[1].id;
      expect(
        (
          await t.api(`/api/projects/${p.slug}/alerts/regression`, {
            method: 'PATCH',
            json: { channels: [oneId, twoId] },
          })
        ).status,
      ).toBe(200);
      expect((await t.api(`/api/projects/${p.slug}/alerts/channels/${oneId}`, { method: 'DELETE' })).status).toBe(204);
      const after = await (await t.api(`/api/projects/${p.slug}/alerts`)).json();
      expect(after.rules.find((r: any) => r.type === 'regression').channels).toEqual([twoId]);
    } finally {
      await t.close();
      await one.stop();
      await two.stop();
    }
  });

  it('bad filter input is 400 with a message naming the field, and changes nothing', async () => {
    const t = await startTestServer(dialect, { env: { WEBHOOK_ALLOW_PRIVATE: 'true' } });
    try {
      const p = await apiProject(t);
      const other = await apiProject(t);
      const foreign = await addWebhook(t, other, 'http://127.0.0.1:9/hook');
      const own = await addWebhook(t, p, 'http://127.0.0.1:9/hook');
      const base = `/api/projects/${p.slug}/alerts/new_issue`;
      const cases: [unknown, RegExp][] = [
        [{ min_level: 'loud' }, /min_level must be one of debug, info, warning, error, fatal/],
        [{ min_level: 3 }, /min_level/],
        [{ environments: 'production' }, /environments must be a list/],
        [{ environments: [''] }, /environments/],
        [{ environments: ['x'.repeat(65)] }, /environments/],
        [{ environments: Array.from({ length: 51 }, (_, i) => `e${i}`) }, /environments/],
        [{ channels: [999_999] }, /channels: 999999 is not a channel of this project/],
        [{ channels: [foreign] }, new RegExp(`channels: ${foreign} is not a channel of this project`)],
        [{ channels: ['1'] }, /channels must be a list/],
        [{ channels: [0] }, /channels/],
        [{ channels: [own], min_level: 'nope' }, /min_level/],
      ];
      for (const [body, message] of cases) {
        const res = await t.api(base, { method: 'PATCH', json: body });
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect((await res.json()).error ?? '').toMatch(message);
      }
      const rule = (await (await t.api(`/api/projects/${p.slug}/alerts`)).json()).rules[0];
      expect(rule).toMatchObject({ environments: [], min_level: null, channels: [] });
    } finally {
      await t.close();
    }
  });
});
