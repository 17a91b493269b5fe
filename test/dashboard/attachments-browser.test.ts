// Attachments on the event page in real Chromium: an Android crash's screenshot shown
// inline and its view hierarchy as a tree, and hostile files (HTML, SVG and script
// posing as images, with lying content types, and markup inside a view hierarchy) that
// never run script: not on the event page, not at their image route, not when opened.
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, type TestServer } from '../helpers/server.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';
import { dsnOf, post } from '../ingest/helpers.js';
import { androidCrashEnvelope, newEventId, viewHierarchyItem } from '../attachments/mobile-envelopes.js';
import { API_KEY, startDashboardServer } from './fixture.js';

const HOSTILE = [
  {
    headers: { type: 'attachment', filename: 'evil.png', content_type: 'image/png' },
    payload: '<html><body><script>alert("html-as-png");window.top.__xss=1</script></body></html>',
  },
  {
    headers: { type: 'attachment', filename: 'evil.svg', content_type: 'image/svg+xml' },
    payload:
      '<svg xmlns="http://www.w3.org/2000/svg" onload="alert(\'svg\')"><script>alert("svg-script")</script></svg>',
  },
  {
    headers: { type: 'attachment', filename: 'evil.jpg', content_type: 'image/jpeg' },
    payload: 'alert("js-as-jpeg");window.__xss=3',
  },
  {
    headers: { type: 'attachment', filename: 'page.html', content_type: 'text/html' },
    payload: '<script>alert("html")</script>',
  },
];

const HOSTILE_HIERARCHY = JSON.stringify({
  rendering_system: '<img src=x onerror=alert("vh-rs")>',
  windows: [
    {
      type: '<script>alert("vh")</script>',
      identifier: '"><svg onload=alert("vh-id")>',
      width: 10,
      height: 10,
      children: [{ type: 'Leaf', text: '<iframe src="javascript:alert(1)">' }],
    },
  ],
});

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
});
afterAll(async () => {
  await browser?.close();
});

describe.skipIf(lacks('chromium')).each(dialects)('attachments in Chromium on %s', (dialect) => {
  let t: TestServer;
  let project: ProjectRow;
  let context: BrowserContext;
  let page: Page;
  let dialogs: string[];
  const good = newEventId();
  const evil = newEventId();

  beforeAll(async () => {
    t = await startDashboardServer(dialect);
    project = await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug: 'mobile', name: 'Mobile' }, Date.now());
    expect((await post(t, project, androidCrashEnvelope(good, Date.now() - 5_000, dsnOf(t, project)))).status).toBe(
      200,
    );
    const hostile = androidCrashEnvelope(evil, Date.now(), dsnOf(t, project), [
      ...HOSTILE,
      viewHierarchyItem(Buffer.from(HOSTILE_HIERARCHY)),
    ]);
    expect((await post(t, project, hostile)).status).toBe(200);
    context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    dialogs = [];
    context.on('page', (p) => p.on('dialog', (d) => (dialogs.push(d.message()), void d.dismiss())));
    page = await context.newPage();
    await page.goto(`${t.url}/login`);
    await page.getByLabel('API key').fill(API_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${t.url}/`);
  });
  afterAll(async () => {
    await context?.close();
    await t?.close();
  });

  it('shows the screenshot inline and the view hierarchy as a collapsible tree', async () => {
    await page.goto(`${t.url}/mobile/events/${good}`);
    const img = page.locator('.screenshots img');
    expect(await img.count()).toBe(1);
    await expect.poll(() => img.evaluate((el) => (el as HTMLImageElement).naturalWidth)).toBe(64);
    expect(await page.locator('ul.vh details').count()).toBeGreaterThanOrEqual(2);
    const tree = (await page.locator('.view-hierarchy').textContent())!;
    expect(tree).toContain('com.google.android.material.button.MaterialButton');
    expect(tree).toContain('#checkout_button');
    expect(tree).toContain('android_view_system');
    // Markup in a node's identifier is text.
    expect(tree).toContain('#<script>alert(1)</script>');
    // A closed node opens on a click.
    const closed = page.locator('ul.vh details:not([open])').first();
    if ((await closed.count()) > 0) {
      await closed.locator('summary').first().click();
      expect(await closed.getAttribute('open')).not.toBeNull();
    }
  });

  it('never runs a hostile attachment: no inline image for it, no script at its routes', async () => {
    await page.goto(`${t.url}/mobile/events/${evil}`);
    // Only the real PNG is an image; the files that merely claim to be are downloads.
    expect(await page.locator('.screenshots img').count()).toBe(1);
    expect((await page.locator('main').textContent())!).toContain('<script>alert("vh")</script>');
    expect(await page.locator('main script, main iframe, main svg').count()).toBe(0);

    const list = (await (
      await t.api(`/api/projects/mobile/events/${evil}/attachments`, {
        headers: { authorization: `Bearer ${API_KEY}` },
      })
    ).json()) as {
      attachments: { id: string; name: string }[];
    };
    for (const file of list.attachments.filter((f) => f.name.startsWith('evil') || f.name === 'page.html')) {
      // The image route refuses what is not a raster image.
      const image = await page.goto(`${t.url}/mobile/attachments/${file.id}/image`);
      expect(image!.status(), file.name).toBe(415);
      expect(image!.headers()['content-type']).toMatch(/^application\/json/);
      // Opening the download (and the API's) never renders it as a page of this origin.
      for (const url of [`${t.url}/mobile/attachments/${file.id}`]) {
        const download = page.waitForEvent('download');
        await page.goto(url).catch(() => undefined);
        expect((await download).suggestedFilename()).toBe(file.name);
      }
      // Fetched directly, it is a sandboxed download whatever it claims to be.
      const res = await context.request.get(`${t.url}/mobile/attachments/${file.id}`);
      expect(res.headers()['content-type']).toBe('application/octet-stream');
      expect(res.headers()['content-security-policy']).toBe("sandbox; default-src 'none'");
      expect(res.headers()['x-content-type-options']).toBe('nosniff');
    }
    await page.goto(`${t.url}/mobile/events/${evil}`);
    await page.waitForTimeout(300);
    expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
    expect(dialogs).toEqual([]);
  });
});
