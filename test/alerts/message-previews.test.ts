// What each team channel's message looks like: a new issue (and a Slack digest) is sent
// through the real server to a real SMTP server and local receivers, and what they got is
// drawn as a simple preview of the provider's rendering (test/alerts/previews.ts) in
// Chromium. The previews must show the title linked to the issue page and every fact;
// the screenshots go to docs/screenshots/ with FAULTLINE_SCREENSHOTS=1 (else a temp folder).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';
import { errorEvent } from '../ingest/helpers.js';
import { discordPreview, emailPreview, slackPreview, teamsPreview } from './previews.js';
import { SmtpSink } from './smtp.js';
import { Receiver, pendingOutbox, sendEvents, sleep, until } from './support.js';
import { findProjectBySlug } from '../../src/store/projects.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS =
  process.env.FAULTLINE_SCREENSHOTS === '1'
    ? path.join(root, 'docs/screenshots')
    : fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-alert-shots-'));
const noChromium = lacks('chromium');

describe.skipIf(noChromium)('alert messages rendered (Chromium)', () => {
  let browser: Browser;
  let t: TestServer;
  let smtp: SmtpSink;
  let chat: Receiver;
  const clock = new ManualClock(Date.UTC(2026, 10, 21, 10, 2));

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    smtp = await SmtpSink.start();
    chat = await Receiver.start();
    t = await startTestServer('sqlite', {
      clock,
      env: {
        WEBHOOK_ALLOW_PRIVATE: 'true',
        PUBLIC_URL: 'https://errors.example.com',
        SMTP_URL: smtp.url(),
        SMTP_FROM: 'Faultline <alerts@example.com>',
      },
      serverOptions: { alerts: { pollMs: 25 } },
    });
  });

  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await smtp?.stop();
    await chat?.stop();
  });

  async function shoot(name: string, html: string, expectLink: string, texts: string[]): Promise<void> {
    const page = await browser.newPage({ viewport: { width: 760, height: 400 }, deviceScaleFactor: 1 });
    try {
      await page.setContent(html);
      const shot = page.locator('#shot');
      const frame = name === 'alert-email' ? page.frameLocator('iframe').locator('body') : shot;
      const shown = ((await frame.textContent()) ?? '') + ((await shot.textContent()) ?? '');
      for (const text of texts) expect(shown, `${name}: ${text}`).toContain(text);
      expect(
        await (name === 'alert-email' ? page.frameLocator('iframe') : page).locator(`a[href="${expectLink}"]`).count(),
        name,
      ).toBeGreaterThan(0);
      await shot.screenshot({ path: path.join(SHOTS, `${name}.png`) });
    } finally {
      await page.close();
    }
  }

  it('email, Slack, Discord and Teams show the alert a person can act on', async () => {
    expect(
      (await t.api('/api/projects', { method: 'POST', json: { slug: 'shop-app', name: 'Shop app' } })).status,
    ).toBe(201);
    const p = (await findProjectBySlug(t.deps.store.db, 'shop-app'))!;
    const add = (kind: string, config: unknown) =>
      t.api(`/api/projects/${p.slug}/alerts/channels`, { method: 'POST', json: { kind, config } });
    expect((await add('email', { to: ['oncall@example.com'] })).status).toBe(201);
    for (const kind of ['slack', 'discord', 'teams'])
      expect((await add(kind, { url: `${chat.url}/${kind}` })).status).toBe(201);
    const event = (value: string, fn: string) => ({
      ...errorEvent({ timestamp: clock.now() - 60_000, type: 'TypeError', value, fn, release: 'shop@2.4.1' }),
      environment: 'production',
    });
    await sendEvents(t, p, [event("Cannot read properties of undefined (reading 'id')", 'loadCart')]);
    const of = (kind: string) => chat.requests.filter((r) => r.path === `/${kind}`);
    await until(
      () => smtp.messages.length === 1 && ['slack', 'discord', 'teams'].every((k) => of(k).length === 1),
      8000,
      'the alert everywhere',
    );

    const issue = await t.deps.store.db
      .selectFrom('issues')
      .select('fingerprint')
      .where('project_id', '=', p.id)
      .executeTakeFirstOrThrow();
    const link = `https://errors.example.com/${p.slug}/issues/${issue.fingerprint}`;
    const facts = [
      "TypeError: Cannot read properties of undefined (reading 'id')",
      'shop@2.4.1',
      'production',
      'First seen',
      '2026-11-21 10:01 UTC',
    ];
    await shoot('alert-slack', slackPreview(of('slack')[0].json), link, ['New issue in Shop app', ...facts]);
    await shoot('alert-discord', discordPreview(of('discord')[0].json), link, ['New issue in Shop app', ...facts]);
    await shoot('alert-teams', teamsPreview(of('teams')[0].json), link, ['New issue in Shop app', ...facts]);
    await shoot('alert-email', emailPreview(smtp.messages[0].mail), link, [
      '[Faultline] New issue in Shop app',
      ...facts,
    ]);

    // A digest: what the cooldown held back, listed.
    await sendEvents(t, p, [
      event('socket hang up', 'fetchPrices'),
      event('Invalid array length', 'render'),
      event('x is not a function', 'checkout'),
    ]);
    await until(async () => (await pendingOutbox(t)) === 0);
    await sleep(100);
    clock.advance(61 * 60_000);
    await until(() => of('slack').length === 2, 8000, 'the digest');
    await shoot('alert-slack-digest', slackPreview(of('slack')[1].json), `https://errors.example.com/${p.slug}`, [
      '3 new issues in Shop app since',
      'socket hang up',
      'x is not a function',
    ]);
  });
});
