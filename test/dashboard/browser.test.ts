// The dashboard end to end in real Chromium (Debian's /usr/bin/chromium through
// playwright-core), against the real server filled by `faultline seed`: sign in,
// see the seeded data, filter and search issues (filters in the URL), resolve and
// bulk-ignore, an issue with symbolicated frames beside the original ones, the
// XSS corpus rendering as text, a cross-site form post refused, rotating the key,
// keyboard use, phone and 200 % zoom widths, sign-out; and the screenshots of the
// main pages (docs/screenshots/ with FAULTLINE_SCREENSHOTS=1, else a temp folder).
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { createProject, findProjectBySlug, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, type TestServer } from '../helpers/server.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';
import { API_KEY, XSS, seedDemo, sendXssEvent, startDashboardServer, symbolicateLatest } from './fixture.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const SHOTS =
  process.env.FAULTLINE_SCREENSHOTS === '1'
    ? path.join(root, 'docs/screenshots')
    : fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-shots-'));

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
});

/** An attacker's page on another origin that posts a form to the dashboard as soon as it loads. */
async function attackerSite(target: string): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end(
      `<form id="f" method="post" action="${target}"><input name="confirm" value="demo"></form><script>document.getElementById('f').submit()</script>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}/`, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** Whether the page is wider than its viewport (horizontal scrolling of the whole page). */
async function overflows(page: Page): Promise<boolean> {
  return page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth + 1);
}

describe.skipIf(lacks('chromium')).each(dialects)('dashboard in Chromium on %s', (dialect) => {
  let t: TestServer;
  let demo: ProjectRow;
  let context: BrowserContext;
  let page: Page;
  let symbolicatedIssue: string;
  let symbolicatedNames: string[];
  let xssEventId: string;

  beforeAll(async () => {
    t = await startDashboardServer(dialect);
    demo = await seedDemo(t);
    const issues = await (await t.api('/api/projects/demo/issues?q=NullPointerException')).json();
    symbolicatedIssue = issues.issues[0].fingerprint;
    symbolicatedNames = await symbolicateLatest(t, demo, symbolicatedIssue);
    const xss = await createProject(
      t.deps.store.db,
      { ...PROJECT_DEFAULTS, slug: 'xss', name: 'XSS corpus' },
      Date.now(),
    );
    xssEventId = await sendXssEvent(t, xss);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('dialog', (d) => d.accept());
  });
  afterAll(async () => {
    await context?.close();
    await t?.close();
  });

  it('asks for an API key once, then shows the seeded data', async () => {
    await page.goto(`${t.url}/demo`);
    expect(new URL(page.url()).pathname).toBe('/login');
    await page.getByLabel('API key').fill('wrong-key');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('not one of this server');
    await page.getByLabel('API key').fill(API_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${t.url}/demo`);
    const overview = await (await t.api('/api/projects/demo/overview')).json();
    const stats = await page.locator('.stat').allTextContents();
    expect(stats.some((s) => s.replace(/,/g, '').includes(`${overview.totals.events}events`))).toBe(true);
    expect(await page.locator('.legend li').allTextContents()).toEqual(
      expect.arrayContaining([expect.stringContaining('com.example.shop@1.2.0+120')]),
    );
    // A new tab of the same browser needs no second sign-in.
    const other = await context.newPage();
    await other.goto(`${t.url}/demo/releases`);
    expect(new URL(other.url()).pathname).toBe('/demo/releases');
    expect(await other.locator('table').textContent()).toContain('com.example.shop@1.2.0+120');
    await other.close();
  });

  it('filters and searches issues with the filters in the URL', async () => {
    await page.goto(`${t.url}/demo/issues`);
    await page.locator('select[name="level"]').selectOption('fatal');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/level=fatal/);
    const fatal = await (await t.api('/api/projects/demo/issues?level=fatal')).json();
    const rows = page.locator('tbody tr');
    expect(await rows.count()).toBe(fatal.issues.length);
    for (const level of await page.locator('tbody tr .sub > span:first-child').allTextContents())
      expect(level).toBe('fatal');
    await page.locator('input[name="q"]').fill('nullpointer');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/q=nullpointer/);
    expect(await rows.count()).toBe(1);
    expect(await rows.first().textContent()).toContain('NullPointerException');
    // The URL alone reproduces the list.
    const shared = await context.newPage();
    await shared.goto(page.url());
    expect(await shared.locator('tbody tr').count()).toBe(1);
    expect(await shared.locator('select[name="level"]').inputValue()).toBe('fatal');
    await shared.close();
  });

  it('resolves an issue from its page and ignores two at once from the list', async () => {
    await page.goto(`${t.url}/demo/issues?sort=events`);
    const title = (await page.locator('tbody tr a.title').first().textContent())!;
    await page.locator('tbody tr a.title').first().click();
    await page.getByRole('button', { name: 'Resolve' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Status set to resolved');
    const fingerprint = decodeURIComponent(new URL(page.url()).pathname.split('/')[3]);
    expect((await (await t.api(`/api/projects/demo/issues/${fingerprint}`)).json()).status).toBe('resolved');
    expect(await page.locator('h1').textContent()).toBe(title);

    await page.goto(`${t.url}/demo/issues?status=unresolved`);
    const boxes = page.locator('input[name="fingerprints"]');
    const chosen = [await boxes.nth(0).getAttribute('value'), await boxes.nth(1).getAttribute('value')];
    await boxes.nth(0).check();
    await boxes.nth(1).check();
    await page.getByRole('button', { name: 'Ignore' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('2 issues set to ignored');
    expect(new URL(page.url()).searchParams.get('status')).toBe('unresolved');
    for (const fp of chosen)
      expect((await (await t.api(`/api/projects/demo/issues/${fp}`)).json()).status).toBe('ignored');
  });

  it('shows an issue’s stack symbolicated beside the frames as received', async () => {
    await page.goto(`${t.url}/demo/issues/${symbolicatedIssue}`);
    const pair = page.locator('.frames.pair').first();
    expect(await pair.locator('h4').allTextContents()).toEqual(['Symbolicated', 'As received']);
    const symbolicated = await pair.locator('ol.stack').nth(0).textContent();
    const original = await pair.locator('ol.stack').nth(1).textContent();
    for (const name of symbolicatedNames) expect(symbolicated).toContain(name);
    expect(original).toContain('bindQuantity');
    expect(original).not.toContain('symbolicated_fn');
    // Paging to an older event of the issue and back to the latest.
    await page.getByRole('link', { name: 'Older event →' }).click();
    await page.waitForURL(/event=/);
    expect(await page.locator('.frames.pair').count()).toBe(0);
    const olderId = new URL(page.url()).searchParams.get('event');
    await page.getByRole('link', { name: 'Older event →' }).click();
    await page.waitForURL((u) => u.searchParams.get('event') !== olderId);
    await page.getByRole('link', { name: '← Newer event' }).click();
    await page.waitForURL((u) => u.searchParams.get('event') === olderId);
    await page.getByRole('link', { name: 'Latest event' }).click();
    expect(await page.locator('.frames.pair').count()).toBe(1);
  });

  it('renders the XSS corpus in event fields as text', async () => {
    let dialogs = 0;
    const xssPage = await context.newPage();
    xssPage.on('dialog', (d) => {
      dialogs += 1;
      void d.dismiss();
    });
    for (const p of [`/xss/events/${xssEventId}`, '/xss/issues', '/xss/events', '/xss']) {
      await xssPage.goto(t.url + p);
      expect(await xssPage.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
      expect(await xssPage.locator('iframe, img[src="x"], main script').count()).toBe(0);
    }
    await xssPage.goto(`${t.url}/xss/events/${xssEventId}`);
    const text = (await xssPage.locator('main').textContent())!;
    for (const payload of XSS) expect(text, payload).toContain(payload);
    expect(dialogs).toBe(0);
    await xssPage.close();
  });

  it('refuses a form posted from another site and keeps the project', async () => {
    const attacker = await attackerSite(`${t.url}/demo/delete`);
    try {
      const victim = await context.newPage();
      const answer = victim.waitForResponse((r) => r.url() === `${t.url}/demo/delete`);
      await victim.goto(attacker.url);
      const res = await answer;
      expect(res.status()).toBe(403);
      expect(await findProjectBySlug(t.deps.store.db, 'demo')).toBeDefined();
      await victim.close();
    } finally {
      await attacker.close();
    }
  });

  it('rotates the key from settings after a confirmation, and the old DSN stops working', async () => {
    await page.goto(`${t.url}/demo/settings`);
    const before = await page.locator('#dsn').inputValue();
    await page.getByRole('button', { name: 'Rotate key' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('old DSN no longer works');
    const after = await page.locator('#dsn').inputValue();
    expect(after).not.toBe(before);
    expect((await (await t.api('/api/projects/demo')).json()).dsn).toBe(after);
    const oldKey = new URL(before).username;
    const refused = await fetch(`${t.url}/api/${demo.id}/store/?sentry_key=${oldKey}`, {
      method: 'POST',
      body: '{"message":"x"}',
    });
    expect(refused.status).toBe(401);
  });

  it('works with the keyboard, on a phone and at 200 % zoom', async () => {
    await page.goto(`${t.url}/demo/issues`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    // The fragment navigation lands a moment after the key press (seen on a loaded machine).
    await expect.poll(() => new URL(page.url()).hash, { timeout: 5000 }).toBe('#main');
    const storage = await context.storageState();
    for (const viewport of [
      { width: 390, height: 844 },
      { width: 640, height: 450 },
    ]) {
      const small = await browser.newContext({
        viewport,
        storageState: storage,
        isMobile: viewport.width < 500,
        hasTouch: viewport.width < 500,
      });
      const p = await small.newPage();
      for (const path of [
        '/',
        '/demo',
        '/demo/issues',
        `/demo/issues/${symbolicatedIssue}`,
        '/demo/events',
        '/demo/releases',
        '/demo/alerts',
        '/demo/monitors',
        '/demo/monitors/invoice-sync',
        '/demo/symbols',
        '/demo/settings',
      ]) {
        await p.goto(t.url + path);
        expect(await overflows(p), `${path} at ${viewport.width}px`).toBe(false);
      }
      if (dialect === 'sqlite' && viewport.width < 500) {
        await p.goto(`${t.url}/demo/issues`);
        await p.screenshot({ path: path.join(SHOTS, 'phone-issues.png') });
        await p.goto(`${t.url}/demo/issues/${symbolicatedIssue}`);
        await p.screenshot({ path: path.join(SHOTS, 'phone-issue.png') });
      }
      await small.close();
    }
  });

  it('takes the screenshots of the main pages', async () => {
    if (dialect !== 'sqlite') return;
    const release = encodeURIComponent('com.example.shop@1.2.0+120');
    const shots: [string, string][] = [
      ['projects', '/'],
      ['overview', '/demo'],
      ['issues', '/demo/issues'],
      ['issue', `/demo/issues/${symbolicatedIssue}`],
      ['events', '/demo/events'],
      ['releases', '/demo/releases'],
      ['release', `/demo/releases/${release}`],
      ['alerts', '/demo/alerts'],
      ['monitors', '/demo/monitors'],
      ['symbols', '/demo/symbols'],
      ['settings', '/demo/settings'],
    ];
    for (const [name, p] of shots) {
      const res = await page.goto(t.url + p);
      expect(res?.status(), p).toBe(200);
      await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
    }
    await page.goto(`${t.url}/demo/issues/${symbolicatedIssue}`);
    await page
      .locator('.exception')
      .first()
      .evaluate((el) => el.scrollIntoView());
    await page.screenshot({ path: path.join(SHOTS, 'issue-stack.png') });
    expect(fs.readdirSync(SHOTS).filter((f) => f.endsWith('.png')).length).toBeGreaterThanOrEqual(shots.length);
  });

  it('signs out, after which pages ask for the key again', async () => {
    await page.goto(`${t.url}/demo`);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${t.url}/login`);
    await page.goto(`${t.url}/demo/issues`);
    expect(new URL(page.url()).pathname).toBe('/login');
    expect((await context.cookies()).some((c) => c.name === 'faultline_session')).toBe(false);
  });
});
