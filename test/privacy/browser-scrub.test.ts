// Scrubbing end to end with the browser SDK: @sentry/browser (bundled with esbuild, run in
// real Chromium) reports an error from a page whose URL carries a token in its query,
// with extra data, a user context and a breadcrumb holding secrets; nothing secret reaches
// a stored column, the raw payload or the API. A second project with scrubbing off gets
// the same secrets, so the check above can fail.
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedPayload } from '../../src/editions/node/payloads.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';
import { dsnOf, eventsOf, issuesOf, makeProject } from '../ingest/helpers.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const noChromium = lacks('chromium');

const SECRETS = ['page-query-secret', 'hunter2-browser', 'sk_live_browser', 'crumb-secret', '4111 1111 1111 1111'];

/** @sentry/browser as one script the page loads, exposing `Sentry`. */
async function browserBundle(): Promise<string> {
  const result = await build({
    stdin: { contents: "export * from '@sentry/browser';", resolveDir: path.join(HERE, '../..'), loader: 'js' },
    bundle: true,
    format: 'iife',
    globalName: 'Sentry',
    write: false,
    logLevel: 'silent',
  });
  return result.outputFiles[0].text;
}

function pageHtml(dsn: string): string {
  return `<!doctype html><html><head><script src="/sentry.js"></script><script>
    Sentry.init({ dsn: ${JSON.stringify(dsn)}, release: 'web@1', sendDefaultPii: true });
    Sentry.setExtra('db_password', 'hunter2-browser');
    Sentry.setExtra('config', { stripe_api_key: 'sk_live_browser', region: 'eu' });
    Sentry.addBreadcrumb({ category: 'auth', message: 'signed in', data: { session_token: 'crumb-secret' } });
    setTimeout(() => { throw new Error('charge failed for card 4111 1111 1111 1111'); }, 50);
  </script></head><body>checkout</body></html>`;
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.skipIf(noChromium).each(dialects)('@sentry/browser sending secrets, on %s', (dialect) => {
  let t: TestServer;
  let browser: Browser;
  let pages: http.Server;
  let scrubbed: ProjectRow;
  let open: ProjectRow;

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: { now: () => Date.now() }, env: { RATE_LIMIT: '0' } });
    scrubbed = await makeProject(t);
    open = await makeProject(t);
    const off = await t.api(`/api/projects/${open.slug}`, { method: 'PATCH', json: { scrub_defaults: false } });
    expect(off.status).toBe(200);
    const bundle = await browserBundle();
    const dsnFor: Record<string, string> = { '/scrubbed': dsnOf(t, scrubbed), '/open': dsnOf(t, open) };
    pages = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      if (url.pathname === '/sentry.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
      else res.writeHead(200, { 'content-type': 'text/html' }).end(pageHtml(dsnFor[url.pathname] ?? ''));
    });
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(pages.address() as { port: number }).port}`;
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    for (const [pathname, project] of [
      ['/scrubbed', scrubbed],
      ['/open', open],
    ] as const) {
      const context = await browser.newContext();
      const tab = await context.newPage();
      await tab.goto(`${base}${pathname}?token=page-query-secret&view=cart`);
      await waitFor(`the event of ${pathname}`, async () => (await eventsOf(t, project)).length > 0);
      await context.close();
    }
  }, 90_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => pages?.close(r));
    await t?.close();
  });

  async function everythingStored(project: ProjectRow): Promise<string> {
    const [event] = await eventsOf(t, project);
    const issues = await issuesOf(t, project);
    const raw = (await storedPayload(t.deps.store.db, event)).toString('utf8');
    const detail = await (await t.api(`/api/projects/${project.slug}/events/${event.id}`)).text();
    const tags = await t.deps.store.db
      .selectFrom('event_tags')
      .selectAll()
      .where('project_id', '=', project.id)
      .execute();
    return JSON.stringify({ event: { ...event, detail: null, raw: null }, issues, tags }) + raw + detail;
  }

  it('nothing secret is stored or served; the detail says what was filtered', async () => {
    const all = await everythingStored(scrubbed);
    for (const secret of SECRETS) expect(all, secret).not.toContain(secret);
    const [issue] = await issuesOf(t, scrubbed);
    expect(issue.title).toBe('Error: charge failed for card [Filtered]');
    const [event] = await eventsOf(t, scrubbed);
    const detail = await (await t.api(`/api/projects/${scrubbed.slug}/events/${event.id}`)).json();
    expect(detail.extra.db_password).toBe('[Filtered]');
    expect(detail.extra.config.region).toBe('eu');
    expect(detail.scrubbed.total).toBeGreaterThanOrEqual(4);
    expect(detail.scrubbed.rules.creditcard).toBeGreaterThanOrEqual(1);
    // The page's URL keeps its harmless parameters.
    expect(JSON.stringify(detail.request)).toContain('view=cart');
  });

  it('with scrubbing off the same page stores the secrets (the test above can fail)', async () => {
    const all = await everythingStored(open);
    for (const secret of SECRETS) expect(all, secret).toContain(secret);
  });
});
