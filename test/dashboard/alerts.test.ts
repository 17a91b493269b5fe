// The dashboard's alerts page on both databases: in Chromium, add a webhook
// channel, send a test alert that reaches a local receiver, see the delivery,
// delete the channel; through fetch, the rule form and the API's validation
// messages, and that every alerts action needs the session and its CSRF token.
import http from 'node:http';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, type TestServer } from '../helpers/server.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';
import { API_KEY, Client, seedDemo, startDashboardServer } from './fixture.js';

const noChromium = lacks('chromium');
let browser: Browser;
let receiver: http.Server;
let receiverUrl: string;
const received: { headers: http.IncomingHttpHeaders; body: string }[] = [];

beforeAll(async () => {
  if (!noChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      received.push({ headers: req.headers, body });
      res.end('ok');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
});
afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => receiver?.close(resolve));
});

describe.each(dialects)('dashboard alerts page on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startDashboardServer(dialect, { API_KEYS: API_KEY, WEBHOOK_ALLOW_PRIVATE: 'true' });
    await seedDemo(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it.skipIf(noChromium)(
    'adds a webhook channel, sends a test alert to it, shows the delivery and deletes the channel (Chromium)',
    async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      page.on('dialog', (d) => d.accept());
      await page.goto(`${t.url}/login?next=/demo/alerts`);
      await page.getByLabel('API key').fill(API_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${t.url}/demo/alerts`);
      await page.getByLabel('Webhook URL').fill(receiverUrl);
      await page.getByLabel('Webhook secret (optional)').fill('s3cret-value');
      await page.getByRole('button', { name: 'Add channel' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('Channel added');
      expect(await page.locator('#channels-h ~ div table').textContent()).toContain(
        `${receiverUrl} (signed with a secret)`,
      );
      expect(await page.content()).not.toContain('s3cret-value');

      const before = received.length;
      await page.getByRole('button', { name: 'Send test' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('was delivered (HTTP 200)');
      expect(received.length).toBe(before + 1);
      expect(received.at(-1)!.body).toContain('Test alert from Faultline');
      expect(await page.locator('#deliveries-h ~ div table').textContent()).toContain('test');

      const api = await (await t.api('/api/projects/demo/alerts')).json();
      expect(api.channels).toHaveLength(1);
      await page.getByRole('button', { name: 'Delete' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('Channel deleted');
      expect((await (await t.api('/api/projects/demo/alerts')).json()).channels).toHaveLength(0);
      await context.close();
    },
  );

  it('saves rules and shows the alerts API’s validation messages', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const csrf = await c.csrf('/demo/alerts');
    expect((await c.post('/demo/alerts/rules/regression', { _csrf: csrf, cooldown_minutes: '15' })).status).toBe(303);
    const rules = (await (await t.api('/api/projects/demo/alerts')).json()).rules;
    expect(rules.find((r: { type: string }) => r.type === 'regression')).toMatchObject({
      enabled: false,
      cooldown_minutes: 15,
    });
    const tooLong = await c.post('/demo/alerts/rules/new_issue', {
      _csrf: csrf,
      enabled: 'true',
      cooldown_minutes: '99999',
    });
    expect(tooLong.status).toBe(400);
    expect(await tooLong.text()).toContain('cooldown_minutes must be an integer between 0 and 43200');
    expect((await c.post('/demo/alerts/rules/nope', { _csrf: csrf, enabled: 'true' })).status).toBe(404);
    const badUrl = await c.post('/demo/alerts/channels', { _csrf: csrf, kind: 'webhook', url: 'ftp://example.com/x' });
    expect(badUrl.status).toBe(400);
    expect(await badUrl.text()).toContain('config.url must be an absolute http or https URL');
    const telegram = await c.post('/demo/alerts/channels', { _csrf: csrf, kind: 'telegram', chat_id: '-100123' });
    expect(telegram.status).toBe(400);
    expect(await telegram.text()).toContain('TELEGRAM_BOT_TOKEN');
    const email = await c.post('/demo/alerts/channels', {
      _csrf: csrf,
      kind: 'email',
      to: 'oncall@example.com, lead@example.com',
    });
    expect(email.status).toBe(400);
    expect(await email.text()).toContain('SMTP_URL');
    const slackFtp = await c.post('/demo/alerts/channels', {
      _csrf: csrf,
      kind: 'slack',
      url: 'ftp://93.184.216.34/services/T0/B0/SECRETPART',
    });
    expect(slackFtp.status).toBe(400);
    expect(await slackFtp.text()).toContain('config.url must be an absolute http or https URL');
    const slack = await c.post('/demo/alerts/channels', {
      _csrf: csrf,
      kind: 'slack',
      url: 'https://93.184.216.34/services/T0/B0/SECRETPART',
    });
    expect(slack.status).toBe(303);
    const listed = await (await c.request('/demo/alerts')).text();
    expect(listed).toContain('hook at 93.184.216.34');
    expect(listed).not.toContain('SECRETPART');
    const [made] = (await (await t.api('/api/projects/demo/alerts')).json()).channels;
    expect((await t.api(`/api/projects/demo/alerts/channels/${made.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await c.post('/demo/alerts/channels/999/test', { _csrf: csrf })).status).toBe(404);
  });

  it('shows and saves a rule’s filters: environments, lowest level and channels', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const made = await t.api('/api/projects/demo/alerts/channels', {
      method: 'POST',
      json: { kind: 'webhook', config: { url: receiverUrl } },
    });
    const other = await t.api('/api/projects/demo/alerts/channels', {
      method: 'POST',
      json: { kind: 'webhook', config: { url: `${receiverUrl}/2` } },
    });
    const [one, two] = [(await made.json()).id, (await other.json()).id];
    const csrf = await c.csrf('/demo/alerts');
    const fields = {
      _csrf: csrf,
      enabled: 'true',
      cooldown_minutes: '30',
      environments: ' production, eu-prod ,',
      min_level: 'error',
      channels: [String(two)],
      channels_shown: '1',
    };
    expect((await c.post('/demo/alerts/rules/new_issue', fields)).status).toBe(303);
    const rule = (await (await t.api('/api/projects/demo/alerts')).json()).rules.find(
      (r: { type: string }) => r.type === 'new_issue',
    );
    expect(rule).toMatchObject({ environments: ['production', 'eu-prod'], min_level: 'error', channels: [two] });
    const shown = await (await c.request('/demo/alerts')).text();
    expect(shown).toContain('value="production, eu-prod"');
    expect(shown).toMatch(/<option value="error" selected>/);
    expect(shown).toMatch(new RegExp(`name="channels" value="${two}" checked`));
    expect(shown).not.toMatch(new RegExp(`name="channels" value="${one}" checked`));

    const badLevel = await c.post('/demo/alerts/rules/new_issue', { ...fields, min_level: 'loud' });
    expect(badLevel.status).toBe(400);
    expect(await badLevel.text()).toContain('min_level must be one of debug, info, warning, error, fatal');
    const badChannel = await c.post('/demo/alerts/rules/new_issue', { ...fields, channels: ['99999'] });
    expect(badChannel.status).toBe(400);
    expect(await badChannel.text()).toContain('99999 is not a channel of this project');

    // No channel ticked: all channels again.
    expect((await c.post('/demo/alerts/rules/new_issue', { ...fields, channels: [] })).status).toBe(303);
    expect(
      (await (await t.api('/api/projects/demo/alerts')).json()).rules.find(
        (r: { type: string }) => r.type === 'new_issue',
      ).channels,
    ).toEqual([]);
    for (const id of [one, two]) await t.api(`/api/projects/demo/alerts/channels/${id}`, { method: 'DELETE' });
  });

  it('refuses alerts actions without a session or without the CSRF token', async () => {
    const anonymous = new Client(t.url);
    expect((await anonymous.request('/demo/alerts')).status).toBe(303);
    expect((await anonymous.post('/demo/alerts/channels', { kind: 'webhook', url: receiverUrl })).status).toBe(401);
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    expect((await c.post('/demo/alerts/channels', { kind: 'webhook', url: receiverUrl })).status).toBe(403);
    expect((await (await t.api('/api/projects/demo/alerts')).json()).channels).toHaveLength(0);
  });
});
