// Email, Slack (Mattermost), Discord and Teams channels through the real server on each
// database: a real SMTP server (STARTTLS, AUTH, messages parsed by mailparser) and local
// receivers whose payloads are checked against each provider's documented schema; the
// test route for each kind; a new issue and a digest reaching all of them; failures that
// say why without the credential; bad input refused with nothing stored.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { errorEvent } from '../ingest/helpers.js';
import { discordSchema, expectValid, slackSchema, teamsSchema } from './provider-schemas.js';
import { SmtpSink } from './smtp.js';
import { smtpTransportOptions } from '../../src/editions/node/mail.js';
import { Receiver, apiProject, deliveries, pendingOutbox, sendEvents, sleep, until } from './support.js';

const MINUTE = 60_000;
const ALERT_OPTIONS = { alerts: { pollMs: 25, retryDelaysMs: [100, 200] } };
const FROM = 'Faultline <alerts@faultline.example>';
const SCHEMAS: Record<'slack' | 'discord' | 'teams', z.ZodType> = {
  slack: slackSchema,
  discord: discordSchema,
  teams: teamsSchema,
};
type ProviderKind = keyof typeof SCHEMAS;
const PROVIDERS = Object.keys(SCHEMAS) as ProviderKind[];

async function stored(t: TestServer, projectId: number) {
  const channels = await t.deps.store.db
    .selectFrom('alert_channels')
    .selectAll()
    .where('project_id', '=', projectId)
    .execute();
  return channels.length;
}

describe.each(dialects)('team channels (%s)', (dialect) => {
  let t: TestServer;
  let smtp: SmtpSink;
  let chat: Receiver;
  const clock = new ManualClock(Date.UTC(2026, 10, 21, 10, 0));

  beforeAll(async () => {
    smtp = await SmtpSink.start();
    chat = await Receiver.start();
    t = await startTestServer(dialect, {
      clock,
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        PUBLIC_URL: 'https://faultline.example',
        SMTP_URL: smtp.url(),
        SMTP_FROM: FROM,
      },
      serverOptions: ALERT_OPTIONS,
    });
  });

  afterAll(async () => {
    await t?.close();
    await smtp?.stop();
    await chat?.stop();
  });

  async function addChannel(
    slug: string,
    kind: string,
    config: unknown,
  ): Promise<{ id: number; kind: string; config: Record<string, unknown> }> {
    const res = await t.api(`/api/projects/${slug}/alerts/channels`, { method: 'POST', json: { kind, config } });
    expect(res.status, await res.clone().text()).toBe(201);
    return res.json();
  }

  /** One channel of every kind; the chat hooks are told apart by their path. */
  async function allKinds(slug: string, to = ['oncall@shop.example', 'Dev.Lead@shop.example']) {
    const email = await addChannel(slug, 'email', { to });
    const chats = {} as Record<ProviderKind, number>;
    for (const kind of PROVIDERS)
      chats[kind] = (await addChannel(slug, kind, { url: `${chat.url}/${slug}/${kind}/T0SECRET/B0SECRET` })).id;
    return { email: email.id, ...chats };
  }

  const chatPayloads = (slug: string, kind: ProviderKind) =>
    chat.requests.filter((r) => r.path === `/${slug}/${kind}/T0SECRET/B0SECRET`).map((r) => r.json);
  const mailsTo = (address: string) => smtp.messages.filter((m) => m.envelope.to.includes(address));

  it('creating channels: the chat hooks show only their host, email its recipients, folded case-insensitively', async () => {
    const p = await apiProject(t);
    const email = await addChannel(p.slug, 'email', { to: ['a@shop.example', 'A@SHOP.example', ' b@shop.example '] });
    expect(email.config).toEqual({ to: ['a@shop.example', 'b@shop.example'] });
    const slack = await addChannel(p.slug, 'slack', { url: `${chat.url}/hooks/T0SECRET/B0SECRET` });
    expect(slack.config).toEqual({ host: `127.0.0.1:${chat.port}` });
    const listed = await (await t.api(`/api/projects/${p.slug}/alerts`)).text();
    expect(listed).not.toContain('T0SECRET');
  });

  it('POST channels/{id}/test reaches each kind: an email over STARTTLS with AUTH, a valid payload for each chat', async () => {
    const p = await apiProject(t, 'Shop app');
    const ids = await allKinds(p.slug, ['test-only@shop.example']);
    for (const [kind, id] of Object.entries(ids)) {
      const res = await t.api(`/api/projects/${p.slug}/alerts/channels/${id}/test`, { method: 'POST' });
      const answer = await res.json();
      expect(answer, kind).toEqual({ delivered: true, status: kind === 'email' ? null : 200, error: null });
    }
    const [mail] = mailsTo('test-only@shop.example');
    expect(mail.secure).toBe(true);
    expect(mail.user).toBe(smtp.user);
    expect(mail.mail.from?.value).toEqual([{ name: 'Faultline', address: 'alerts@faultline.example' }]);
    expect(mail.mail.subject).toBe('[Faultline] Test alert in Shop app: Faultline can reach this channel.');
    expect(mail.mail.text).toContain(`Project: Shop app (${p.slug})`);
    expect(mail.mail.html).toContain('<h2');
    for (const kind of PROVIDERS) {
      const [payload] = chatPayloads(p.slug, kind);
      expectValid(SCHEMAS[kind], payload);
      expect(JSON.stringify(payload), kind).toContain('Test alert in Shop app');
    }
    const log = await deliveries(t, p);
    expect(log.filter((d) => d.type === 'test' && d.state === 'sent')).toHaveLength(4);
  });

  it('a new issue reaches every kind with its facts, then a digest names the issues the cooldown held back', async () => {
    const p = await apiProject(t, 'Shop app');
    await allKinds(p.slug);
    const at = clock.now();
    const event = (fn: string) =>
      errorEvent({ timestamp: at - 5000, fn, value: `boom in ${fn}`, release: 'shop@2.4.1' });
    await sendEvents(t, p, [{ ...event('alpha'), environment: 'production' }]);
    await until(
      () => mailsTo('oncall@shop.example').length === 1 && PROVIDERS.every((k) => chatPayloads(p.slug, k).length === 1),
      8000,
      'the alert on every channel',
    );

    const [mail] = mailsTo('oncall@shop.example');
    expect(mail.envelope.to).toEqual(['oncall@shop.example', 'Dev.Lead@shop.example']);
    expect(mail.secure).toBe(true);
    expect(mail.mail.subject).toMatch(/^\[Faultline\] New issue in Shop app: \w+: boom in alpha$/);
    for (const fact of ['Level: error', 'Release: shop@2.4.1', 'Environment: production', 'Events: 1'])
      expect(mail.mail.text).toContain(fact);
    expect(mail.mail.text).toMatch(/First seen: 2026-11-21 (09:59|10:00) UTC/);
    expect(mail.mail.text).toMatch(new RegExp(`https://faultline\\.example/${p.slug}/issues/[0-9a-f]+`));
    const slack = expectValid(slackSchema, chatPayloads(p.slug, 'slack')[0]);
    expect(slack.text).toContain('Release: shop@2.4.1');
    const discord = expectValid(discordSchema, chatPayloads(p.slug, 'discord')[0]);
    expect(discord.embeds![0].url).toMatch(new RegExp(`^https://faultline\\.example/${p.slug}/issues/`));
    expect(discord.embeds![0].fields).toContainEqual({ name: 'Environment', value: 'production', inline: true });
    const teams = expectValid(teamsSchema, chatPayloads(p.slug, 'teams')[0]);
    expect(JSON.stringify(teams.attachments[0].content.body)).toContain('"title":"First seen","value":"2026-11-21 ');

    // Two more inside the cooldown: held, then one digest per channel when it ends.
    await sendEvents(t, p, [event('beta'), event('gamma')]);
    await until(async () => (await pendingOutbox(t)) === 0);
    await sleep(200);
    expect(mailsTo('oncall@shop.example')).toHaveLength(1);
    clock.advance(61 * MINUTE);
    await until(
      () => mailsTo('oncall@shop.example').length === 2 && PROVIDERS.every((k) => chatPayloads(p.slug, k).length === 2),
      8000,
      'the digest on every channel',
    );
    const digestMail = mailsTo('oncall@shop.example')[1].mail;
    expect(digestMail.subject).toBe(
      "[Faultline] 2 new issues in Shop app since 2026-11-21 10:00 UTC: 2 alerts held back by the rule's cooldown",
    );
    expect(digestMail.text).toMatch(/- \w+: boom in beta \(error, 1 event, release shop@2\.4\.1/);
    const slackDigest = expectValid(slackSchema, chatPayloads(p.slug, 'slack')[1]);
    expect(slackDigest.blocks[0]).toMatchObject({
      type: 'header',
      text: { text: '2 new issues in Shop app since 2026-11-21 10:00 UTC' },
    });
    expect(JSON.stringify(expectValid(discordSchema, chatPayloads(p.slug, 'discord')[1]))).toContain('boom in gamma');
    expectValid(teamsSchema, chatPayloads(p.slug, 'teams')[1]);
    // The deliveries name their issues: the digest's both.
    const digests = (await deliveries(t, p)).filter((d) => d.digest);
    expect(digests).toHaveLength(4);
    for (const d of digests)
      expect(d.issues.map((i: { title: string }) => i.title.replace(/^\w+: /, ''))).toEqual([
        'boom in beta',
        'boom in gamma',
      ]);
  });

  it('failures say why, without the hook URL or the SMTP password', async () => {
    const p = await apiProject(t);
    const slack = await addChannel(p.slug, 'slack', { url: `${chat.url}/fail/T0SECRET/B0SECRET` });
    chat.script.push({ status: 404, body: 'no_team' });
    const tested = await (
      await t.api(`/api/projects/${p.slug}/alerts/channels/${slack.id}/test`, { method: 'POST' })
    ).json();
    expect(tested).toEqual({ delivered: false, status: 404, error: 'Slack answered HTTP 404: no_team' });
    const email = await addChannel(p.slug, 'email', { to: ['refused@shop.example'] });
    smtp.refuse = { code: 550, message: 'mailbox unavailable' };
    try {
      const refused = await (
        await t.api(`/api/projects/${p.slug}/alerts/channels/${email.id}/test`, { method: 'POST' })
      ).json();
      expect(refused.delivered).toBe(false);
      expect(refused.error).toMatch(/550/);
    } finally {
      smtp.refuse = null;
    }
    const text = JSON.stringify(await deliveries(t, p));
    expect(text).not.toContain('T0SECRET');
    expect(text).not.toContain(smtp.password);
  });

  it("Discord's 429: its retry_after sets the wait, then the alert is delivered once", async () => {
    const p = await apiProject(t);
    await addChannel(p.slug, 'discord', { url: `${chat.url}/limited/T0SECRET/B0SECRET` });
    chat.script.push({
      status: 429,
      body: JSON.stringify({ message: 'You are being rate limited.', retry_after: 0.4, global: false }),
    });
    await sendEvents(t, p, [errorEvent({ timestamp: clock.now() - 1000, fn: 'limited' })]);
    const hits = () => chat.requests.filter((r) => r.path === '/limited/T0SECRET/B0SECRET');
    await until(() => hits().length === 2, 8000, 'the retry');
    // The retry schedule of this server is 100 ms: the wait came from Discord's answer
    // (measured between the arrivals, so a slow poll on a loaded machine cannot shorten it).
    const [first, retry] = hits();
    expect(retry.arrivedAt - first.arrivedAt).toBeGreaterThanOrEqual(390);
    await until(async () => (await deliveries(t, p)).some((d) => d.state === 'sent'));
    const [d] = await deliveries(t, p);
    expect(d).toMatchObject({ state: 'sent', attempts: 2 });
    await sleep(300);
    expect(hits()).toHaveLength(2);
  });

  it('a wrong SMTP password: the answer says the login failed and never shows the password', async () => {
    const wrong = 'wrong-pass-9d3f';
    const other = await startTestServer(dialect, {
      env: { SMTP_URL: smtp.url(wrong), SMTP_FROM: FROM },
      serverOptions: { alerts: false },
    });
    try {
      const p = await apiProject(other);
      const res = await other.api(`/api/projects/${p.slug}/alerts/channels`, {
        method: 'POST',
        json: { kind: 'email', config: { to: ['x@shop.example'] } },
      });
      const { id } = await res.json();
      const answer = await (
        await other.api(`/api/projects/${p.slug}/alerts/channels/${id}/test`, { method: 'POST' })
      ).json();
      expect(answer.delivered).toBe(false);
      expect(answer.error).toMatch(/535|Invalid/);
      expect(JSON.stringify(answer)).not.toContain(wrong);
    } finally {
      await other.close();
    }
  });

  it('bad email input is 400 and stores nothing', async () => {
    const p = await apiProject(t);
    const cases: unknown[] = [
      { to: [] },
      { to: 'a@shop.example' },
      { to: Array.from({ length: 21 }, (_, i) => `u${i}@shop.example`) },
      { to: ['not-an-address'] },
      { to: ['a@'] },
      { to: ['@shop.example'] },
      { to: ['a@shop.example\r\nBcc: evil@attacker.example'] },
      { to: ['Name <a@shop.example>'] },
      { to: [42] },
      { to: ['a@shop.example'], cc: ['b@shop.example'] },
    ];
    for (const config of cases) {
      const res = await t.api(`/api/projects/${p.slug}/alerts/channels`, {
        method: 'POST',
        json: { kind: 'email', config },
      });
      expect(res.status, JSON.stringify(config)).toBe(400);
      expect((await res.json()).error, JSON.stringify(config)).toMatch(/config\.to|unknown field/);
    }
    expect(await stored(t, p.id)).toBe(0);
  });
});

describe.each(dialects)('team channels: address rules and missing SMTP (%s)', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { serverOptions: { alerts: false } });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('chat hooks must be https to a public address; email needs SMTP_URL; nothing is stored', async () => {
    const p = await apiProject(t);
    const refused: [string, unknown, RegExp][] = [];
    for (const kind of PROVIDERS) {
      refused.push(
        [kind, { url: 'http://93.184.216.34/hook' }, /https/],
        [kind, { url: 'https://127.0.0.1/hook' }, /loopback/],
        [kind, { url: 'https://localhost/hook' }, /loopback/],
        [kind, { url: 'https://10.1.2.3/hook' }, /private/],
        [kind, { url: 'https://[::ffff:192.168.0.1]/hook' }, /private/],
        [kind, { url: 'https://0x7f000001/hook' }, /loopback/],
        [kind, { url: 'https://169.254.169.254/latest/meta-data' }, /link-local/],
        [kind, { url: 'ftp://93.184.216.34/hook' }, /http or https/],
        [kind, { url: 'not a url' }, /config\.url/],
        [kind, {}, /config\.url/],
        [kind, { url: 'https://93.184.216.34/hook', secret: 'x' }, /unknown field/],
      );
    }
    refused.push(['email', { to: ['oncall@shop.example'] }, /SMTP_URL/]);
    for (const [kind, config, message] of refused) {
      const res = await t.api(`/api/projects/${p.slug}/alerts/channels`, { method: 'POST', json: { kind, config } });
      const label = `${kind} ${JSON.stringify(config)}`;
      expect(res.status, label).toBe(400);
      expect((await res.json()).error, label).toMatch(message);
    }
    expect(await stored(t, p.id)).toBe(0);
    for (const kind of PROVIDERS) {
      const ok = await t.api(`/api/projects/${p.slug}/alerts/channels`, {
        method: 'POST',
        json: { kind, config: { url: 'https://93.184.216.34/hook' } },
      });
      expect(ok.status, kind).toBe(201);
    }
    // A channel that skipped creation's checks (an import) is checked again when sent to.
    const imported = await t.deps.store.db
      .insertInto('alert_channels')
      .values({
        project_id: p.id,
        kind: 'teams',
        config: JSON.stringify({ url: 'http://93.184.216.34/hook' }),
        created_at: Date.now(),
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const tested = await (
      await t.api(`/api/projects/${p.slug}/alerts/channels/${imported.id}/test`, { method: 'POST' })
    ).json();
    expect(tested).toEqual({
      delivered: false,
      status: null,
      error: 'Teams hooks must be https URLs (WEBHOOK_ALLOW_PRIVATE=true also allows http)',
    });
  });
});

describe('SMTP_URL', () => {
  it('becomes nodemailer options: TLS by scheme, default ports, decoded login, the query options', () => {
    const from = 'a@example.com';
    expect(smtpTransportOptions({ url: 'smtp://mail.example.com', from })).toMatchObject({
      host: 'mail.example.com',
      port: 587,
      secure: false,
    });
    expect(smtpTransportOptions({ url: 'smtp://mail.example.com', from })).not.toHaveProperty('auth');
    expect(smtpTransportOptions({ url: 'smtps://alerts%40example.com:p%40ss%2Fw@[2001:db8::25]', from })).toMatchObject(
      {
        host: '2001:db8::25',
        port: 465,
        secure: true,
        auth: { user: 'alerts@example.com', pass: 'p@ss/w' },
      },
    );
    const strict = smtpTransportOptions({
      url: 'smtp://mail.example.com:2525/?requireTLS=true&tls.rejectUnauthorized=false&pool=true',
      from,
    });
    expect(strict).toMatchObject({ port: 2525, requireTLS: true, tls: { rejectUnauthorized: false } });
    expect(strict).not.toHaveProperty('pool');
  });
});
