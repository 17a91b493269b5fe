// The dashboard's symbols page on both databases: in Chromium, upload a real
// source map (built here by esbuild) through the form, see it listed, see the
// symbols API's message for a file that is not a source map, delete it; through
// fetch, the upload refused without the session's CSRF token or from another site.
import { transformSync } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, type TestServer } from '../helpers/server.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';
import { API_KEY, Client, seedDemo, startDashboardServer } from './fixture.js';

const noChromium = lacks('chromium');
let browser: Browser;
let sourceMap: string;
let minified: string;

beforeAll(async () => {
  if (!noChromium) browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  const built = transformSync(
    'export function total(items: { price: number }[]): number {\n  return items.reduce((s, i) => s + i.price, 0);\n}\n',
    {
      loader: 'ts',
      sourcefile: 'src/cart/total.ts',
      sourcemap: 'external',
      minify: true,
    },
  );
  sourceMap = built.map;
  minified = built.code;
});
afterAll(async () => {
  await browser?.close();
});

function uploadForm(fields: Record<string, string>, file: { name: string; text: string }): FormData {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.append(k, v);
  data.append('file', new Blob([file.text]), file.name);
  return data;
}

describe.each(dialects)('dashboard symbols page on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startDashboardServer(dialect, { API_KEYS: API_KEY });
    await seedDemo(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it.skipIf(noChromium)(
    'uploads a source map, lists it, shows an issue symbolicated with it beside the original stack, shows why a bad file is refused, and deletes it (Chromium)',
    async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      page.on('dialog', (d) => d.accept());
      await page.goto(`${t.url}/login?next=/demo/symbols`);
      await page.getByLabel('API key').fill(API_KEY);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(`${t.url}/demo/symbols`);

      await page.getByLabel('Kind').selectOption('sourcemap');
      await page.getByLabel('Release', { exact: true }).fill('com.example.shop@1.2.0+120');
      await page
        .getByLabel('File')
        .setInputFiles({ name: 'total.js.map', mimeType: 'application/json', buffer: Buffer.from(sourceMap) });
      await page.getByRole('button', { name: 'Upload' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('1 file uploaded');
      const row = page.locator('tbody tr', { hasText: 'total.js.map' });
      expect(await row.textContent()).toContain('com.example.shop@1.2.0+120');
      const listed = (await (await t.api('/api/projects/demo/symbols')).json()).symbols;
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({
        kind: 'sourcemap',
        release: 'com.example.shop@1.2.0+120',
        filename: 'total.js.map',
      });

      // An event of that release is symbolicated at ingest; its issue shows both stacks.
      const demo = await (await t.api('/api/projects/demo')).json();
      const key = new URL(demo.dsn).username;
      const event = {
        event_id: 'c'.repeat(32),
        timestamp: Date.now() / 1000,
        platform: 'javascript',
        release: 'com.example.shop@1.2.0+120',
        exception: {
          values: [
            {
              type: 'TypeError',
              value: 'items.reduce is not a function',
              stacktrace: {
                frames: [
                  {
                    abs_path: 'app:///total.js',
                    filename: 'total.js',
                    function: 'total',
                    lineno: 1,
                    colno: minified.indexOf('reduce') + 1,
                    in_app: true,
                  },
                ],
              },
            },
          ],
        },
      };
      const sent = await fetch(`${t.url}/api/${demo.id}/store/?sentry_key=${key}`, {
        method: 'POST',
        body: JSON.stringify(event),
      });
      expect(sent.status).toBe(200);
      const stored = await (await t.api(`/api/projects/demo/events/${'c'.repeat(32)}`)).json();
      expect(stored.symbolicated).toBe(true);
      await page.goto(`${t.url}/demo/issues/${stored.fingerprint}`);
      const pair = page.locator('.frames.pair').first();
      expect(await pair.locator('ol.stack').nth(0).textContent()).toContain('src/cart/total.ts');
      expect(await pair.locator('ol.stack').nth(1).textContent()).toContain('total.js:1');
      await page.goto(`${t.url}/demo/symbols`);

      await page.getByLabel('Release', { exact: true }).fill('r1');
      await page
        .getByLabel('File')
        .setInputFiles({ name: 'not-a-map.map', mimeType: 'application/json', buffer: Buffer.from('{"version": 2}') });
      await page.getByRole('button', { name: 'Upload' }).click();
      await expect.poll(() => page.getByRole('alert').textContent()).toContain('is not a source map');

      await row.getByRole('button', { name: 'Delete total.js.map' }).click();
      await expect.poll(() => page.getByRole('status').textContent()).toContain('Symbol file deleted');
      expect((await (await t.api('/api/projects/demo/symbols')).json()).symbols).toHaveLength(0);
      await context.close();
    },
  );

  it('refuses an upload without the session, without the CSRF token or from another origin', async () => {
    const fields = { kind: 'sourcemap', release: 'r2' };
    const file = { name: 'x.js.map', text: sourceMap };
    const anonymous = new Client(t.url);
    expect(
      (
        await anonymous.request('/demo/symbols', {
          method: 'POST',
          body: uploadForm(fields, file),
          headers: { origin: t.url },
        })
      ).status,
    ).toBe(401);
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const csrf = await c.csrf('/demo/symbols');
    expect(
      (await c.request('/demo/symbols', { method: 'POST', body: uploadForm(fields, file), headers: { origin: t.url } }))
        .status,
    ).toBe(403);
    expect(
      (
        await c.request(`/demo/symbols?_csrf=${encodeURIComponent(csrf)}`, {
          method: 'POST',
          body: uploadForm(fields, file),
          headers: { origin: 'http://evil.example' },
        })
      ).status,
    ).toBe(403);
    expect((await (await t.api('/api/projects/demo/symbols')).json()).symbols).toHaveLength(0);
    const ok = await c.request(`/demo/symbols?_csrf=${encodeURIComponent(csrf)}`, {
      method: 'POST',
      body: uploadForm(fields, file),
      headers: { origin: t.url },
    });
    expect(ok.status).toBe(303);
    expect((await (await t.api('/api/projects/demo/symbols')).json()).symbols).toHaveLength(1);
  });
});
