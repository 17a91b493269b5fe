// The event page in real Chromium (Debian's /usr/bin/chromium through playwright-core):
// numbered context lines with the frame's own line marked, library frames collapsed until
// their expander is clicked, threads with the crashed one open first, the raw trace
// behind its expander; on a 390 px phone, an event with long breadcrumbs fits the width
// (no sideways scrolling of the page or of a breadcrumb) and every control is at least
// 24 px in both directions. Screenshots go to docs/screenshots/ with
// FAULTLINE_SCREENSHOTS=1, else a temp folder.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';
import { eventId, post } from '../ingest/helpers.js';
import { sendEvent, uploadOk } from '../symbols/helpers.js';
import { JAVA_FIXTURES } from '../symbols/java-fixture.js';
import { API_KEY } from './fixture.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const FIXTURES = path.join(root, 'test/fixtures');
const SHOTS =
  process.env.FAULTLINE_SCREENSHOTS === '1'
    ? path.join(root, 'docs/screenshots')
    : fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-shots-'));
const NOW = Date.parse('2026-11-21T14:00:00.000Z');

/** An event whose breadcrumbs carry long unbroken text: a URL, a category, data keys and values. */
function longCrumbsEvent(): Record<string, unknown> {
  const long = (prefix: string, n: number) => prefix + 'x'.repeat(n);
  const base = Date.parse('2026-11-21T13:40:00.000Z') / 1000;
  return {
    platform: 'javascript',
    level: 'error',
    release: 'web@2.3.4',
    exception: {
      values: [
        {
          type: 'TypeError',
          value: long('Cannot read properties of undefined (reading ', 160),
          mechanism: { type: 'onerror', handled: false },
          stacktrace: {
            frames: [
              {
                abs_path: long('https://cdn.example.com/assets/vendor-', 140) + '.js',
                function: 'dispatch',
                lineno: 1,
                colno: 48213,
                in_app: false,
              },
              {
                abs_path: 'https://shop.example.com/assets/app.js',
                function: 'addToCart',
                lineno: 88,
                colno: 17,
                in_app: true,
                context_line: long('const item = items.find((i) => i.sku === ', 120),
                pre_context: ['function addToCart(sku) {'],
                post_context: ['  cart.push(item.id);', '}'],
              },
            ],
          },
        },
      ],
    },
    breadcrumbs: [
      { timestamp: base, type: 'navigation', category: 'navigation', data: { from: '/', to: long('/search?q=', 200) } },
      {
        timestamp: base + 1,
        type: 'http',
        category: 'fetch',
        level: 'warning',
        data: { method: 'GET', url: long('https://api.example.com/v1/items?filter=', 260), status_code: 503 },
      },
      {
        timestamp: base + 2,
        type: 'default',
        category: long('console.', 90),
        level: 'error',
        message: long('Uncaught promise rejection: ', 300),
        data: { [long('key_', 80)]: long('value_', 250), arguments: [long('arg', 120)] },
      },
      {
        timestamp: base + 3,
        type: 'user',
        category: 'ui.click',
        message: 'body > div#app > main > section.cart > button.add-to-cart[data-sku="SKU-123"]',
      },
    ],
    request: {
      method: 'GET',
      url: long('https://shop.example.com/cart?session=', 180),
      headers: { 'User-Agent': long('Mozilla/5.0 ', 150), Referer: 'https://shop.example.com/' },
    },
    extra: { [long('very_long_extra_key_', 60)]: long('v', 300) },
    contexts: { browser: { name: 'Chrome', version: '131.0.0' }, device: { memory_size: 8_589_934_592 } },
  };
}

describe.skipIf(lacks('chromium')).each(dialects)('the event page in Chromium on %s', (dialect) => {
  let t: TestServer;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  const ids: Record<'java' | 'python' | 'web', number> = { java: 0, python: 0, web: 0 };

  beforeAll(async () => {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    t = await startTestServer(dialect, { env: { API_KEYS: API_KEY, RATE_LIMIT: '0' }, clock: new ManualClock(NOW) });
    const db = t.deps.store.db;
    const android = await createProject(
      db,
      { ...PROJECT_DEFAULTS, slug: 'android', name: 'Android', platform: 'android' },
      NOW,
    );
    const python = await createProject(
      db,
      { ...PROJECT_DEFAULTS, slug: 'py', name: 'Python', platform: 'backend' },
      NOW,
    );
    const web = await createProject(db, { ...PROJECT_DEFAULTS, slug: 'web', name: 'Web', platform: 'web' }, NOW);
    await uploadOk(t, android, {
      kind: 'proguard',
      release: 'com.example.app@1.0.0+1',
      files: [{ name: 'mapping.txt', data: fs.readFileSync(path.join(JAVA_FIXTURES, 'mapping.txt')) }],
    });
    const javaEvent = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'event-shapes/java-threads-event.json'), 'utf8'));
    const detail = async (slug: string, id: string) =>
      (await (await t.api(`/api/projects/${slug}/events/${id}`)).json()).id as number;
    ids.java = await detail('android', await sendEvent(t, android, { ...javaEvent, event_id: eventId() }));
    const res = await post(t, python, fs.readFileSync(path.join(FIXTURES, 'sdk-captures/python-store-event.json')), {
      endpoint: 'store',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(res.status).toBe(200);
    ids.python = (await (await t.api('/api/projects/py/events')).json()).events[0].id;
    ids.web = await detail('web', await sendEvent(t, web, longCrumbsEvent()));

    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    await page.goto(`${t.url}/login`);
    await page.getByLabel('API key').fill(API_KEY);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${t.url}/`);
  });
  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await t?.close();
  });

  it('shows numbered context lines around a frame, its own line marked', async () => {
    await page.goto(`${t.url}/py/events/${ids.python}`);
    const first = page.locator('table.ctx').first();
    expect(await first.isVisible()).toBe(true);
    const numbers = await first.locator('td.ln').allTextContents();
    expect(numbers).toEqual(['2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12']);
    const current = first.locator('tr.cur');
    expect(await current.locator('td.ln').textContent()).toBe('7');
    expect(await current.locator('code').textContent()).toBe('    raise ValueError("py depcheck boom")');
    // The marked line stands out: its background differs from the other lines'.
    const colours = await first
      .locator('tr')
      .evaluateAll((rows) => rows.map((r) => getComputedStyle(r).backgroundColor));
    expect(colours[5]).not.toBe(colours[4]);
    // The line numbers are not part of a copied selection of the code.
    expect(
      await first
        .locator('td.ln')
        .first()
        .evaluate((el) => getComputedStyle(el).userSelect),
    ).toBe('none');
    // The frame's variables wait behind their expander.
    const vars = page.locator('details.vars').first();
    expect(await vars.locator('dl').isVisible()).toBe(false);
    await vars.locator('summary').click();
    expect(await vars.locator('dl').isVisible()).toBe(true);
    expect(await vars.locator('dl').textContent()).toContain("'/srv/app/app-py.py'");
    if (dialect === 'sqlite') {
      await first.evaluate((el) => el.closest('.exception')!.scrollIntoView());
      await page.screenshot({ path: path.join(SHOTS, 'event-context.png') });
    }
  });

  it('collapses library frames until their expander is clicked', async () => {
    await page.goto(`${t.url}/android/events/${ids.java}`);
    const stack = page.locator('.exception').first().locator('ol.stack').first();
    const run = stack.locator(':scope > li.lib-run').first();
    expect(await run.locator('summary').textContent()).toBe('3 library frames');
    const hidden = run.locator('ol.stack > li');
    expect(await hidden.count()).toBe(3);
    for (let i = 0; i < 3; i++) expect(await hidden.nth(i).isVisible()).toBe(false);
    // App frames are visible, JVM frames with their class.
    const appFrames = await stack.locator(':scope > li.app code').allTextContents();
    expect(appFrames.slice(0, 2)).toEqual(['com.example.app.Parser.validate', 'com.example.app.Parser.parse']);
    await run.locator('summary').click();
    for (let i = 0; i < 3; i++) expect(await hidden.nth(i).isVisible()).toBe(true);
    expect(await hidden.locator('code').allTextContents()).toEqual([
      'android.os.Handler.dispatchMessage',
      'android.os.Looper.loop',
      'java.lang.Thread.run',
    ]);
    // The raw trace, behind its own expander, in the JVM's form.
    const raw = page.locator('details.raw-trace');
    expect(await raw.locator('pre').isVisible()).toBe(false);
    await raw.locator('summary').click();
    expect(await raw.locator('pre').textContent()).toContain('\tat com.example.app.Parser.validate(Parser.java:34)');
  });

  it('lists threads with the crashed one first and open, the others on a click', async () => {
    await page.goto(`${t.url}/android/events/${ids.java}`);
    const threads = page.locator('details.thread');
    expect(await threads.count()).toBe(3);
    expect(await threads.locator('summary strong').allTextContents()).toEqual([
      'main',
      'FinalizerDaemon',
      'OkHttp ConnectionPool',
    ]);
    expect(await threads.evaluateAll((els) => els.map((e) => (e as HTMLDetailsElement).open))).toEqual([
      true,
      false,
      false,
    ]);
    expect(await threads.nth(0).locator('.badge.l-fatal').textContent()).toBe('crashed');
    const daemon = threads.nth(1);
    expect(await daemon.locator('ol.stack').isVisible()).toBe(false);
    await daemon.locator('summary').click();
    expect(await daemon.locator('ol.stack').isVisible()).toBe(true);
    // A thread with only library frames shows them all (nothing to single out).
    expect(await daemon.locator('ol.stack > li code').allTextContents()).toEqual([
      'java.lang.Object.wait',
      'java.lang.Daemons$FinalizerDaemon.runInternal',
      'java.lang.Thread.run',
    ]);
    if (dialect === 'sqlite') {
      await page.goto(`${t.url}/android/events/${ids.java}`);
      await page.screenshot({ path: path.join(SHOTS, 'event.png'), fullPage: true });
      await page
        .locator('details.thread')
        .first()
        .evaluate((el) => el.scrollIntoView());
      await page.screenshot({ path: path.join(SHOTS, 'event-threads.png') });
    }
  });

  it('fits a 390 px phone: long breadcrumbs wrap, nothing scrolls sideways, controls are at least 24 px', async () => {
    const storage = await context.storageState();
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      storageState: storage,
      isMobile: true,
      hasTouch: true,
    });
    try {
      const p = await phone.newPage();
      for (const [slug, id] of [
        ['web', ids.web],
        ['android', ids.java],
        ['py', ids.python],
      ] as const) {
        await p.goto(`${t.url}/${slug}/events/${id}`);
        // Open every expander, so what they hold is measured too.
        await p.evaluate(() => document.querySelectorAll('details').forEach((d) => d.setAttribute('open', '')));
        const widths = await p.evaluate(() => ({
          scroll: document.documentElement.scrollWidth,
          client: document.documentElement.clientWidth,
        }));
        // What sticks out, named in the failure message.
        const wide = await p.evaluate(() =>
          [...document.querySelectorAll('main *')]
            .filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
            .filter(
              (el) =>
                !el.parentElement ||
                el.parentElement.getBoundingClientRect().right <= document.documentElement.clientWidth + 1,
            )
            .map((el) => `${el.tagName}.${el.className}`),
        );
        expect(
          widths.scroll,
          `${slug}: page scrollWidth ≤ clientWidth; too wide: ${wide.join(', ')}`,
        ).toBeLessThanOrEqual(widths.client);
        const crumbs = await p.locator('ol.crumbs > li').evaluateAll((els) =>
          els.map((el) => ({
            scroll: el.scrollWidth,
            client: el.clientWidth,
            right: el.getBoundingClientRect().right,
          })),
        );
        for (const c of crumbs) {
          expect(c.scroll, `${slug}: a breadcrumb scrolls sideways`).toBeLessThanOrEqual(c.client);
          expect(c.right).toBeLessThanOrEqual(390);
        }
        if (slug === 'web') expect(crumbs.length).toBe(4);
        // Controls (not links inside running text) are at least 24 × 24 px.
        const small = await p.evaluate(() =>
          [...document.querySelectorAll('summary, button, input, select, nav a, .pager a, header.top a')]
            .filter((el) => (el as HTMLElement).offsetParent !== null || el.tagName === 'SUMMARY')
            .map((el) => ({
              what: `${el.tagName} ${(el.textContent ?? '').trim().slice(0, 30)}`,
              box: el.getBoundingClientRect(),
            }))
            .filter(({ box }) => box.width > 0 && (box.height < 24 || box.width < 24))
            .map(({ what, box }) => `${what}: ${Math.round(box.width)}×${Math.round(box.height)}`),
        );
        expect(small, slug).toEqual([]);
      }
      if (dialect === 'sqlite') {
        await p.goto(`${t.url}/web/events/${ids.web}`);
        await p.locator('ol.crumbs').evaluate((el) => el.scrollIntoView());
        await p.screenshot({ path: path.join(SHOTS, 'phone-event.png') });
      }
    } finally {
      await phone.close();
    }
  });
});
