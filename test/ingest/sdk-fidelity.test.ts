// Real SDKs for what Sentry would show (#25 items 10-12): @sentry/node and
// @sentry/browser (bundled with esbuild, run in Chromium) send an error with a cause;
// the issue is titled and grouped by the outer error. The browser's events get their
// browser and OS from the User-Agent, and its unhandled error makes the page's session
// `unhandled`, which counts as crashed in the release's health.
import { execFile } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedPayload } from '../../src/editions/node/payloads.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { dsnOf, eventsOf, issuesOf, makeProject, sessionsOf } from './helpers.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const NODE_CLIENT = path.join(HERE, 'clients/node-sdk.mjs');
const RELEASE = 'web-fidelity@1.0.0';
const noChromium = lacks('chromium');

function runNodeClient(scenario: string, dsn: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [NODE_CLIENT, scenario],
      { env: { ...process.env, FAULTLINE_DSN: dsn }, timeout: 30_000 },
      (err, _stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stderr });
      },
    );
  });
}

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

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.each(dialects)('SDK fidelity on %s', (dialect) => {
  let t: TestServer;
  let browser: Browser;
  let page: http.Server;
  let pageUrl: string;
  let nodeProject: ProjectRow;
  let webProject: ProjectRow;
  let nodeRun: { code: number; stderr: string };

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: { now: () => Date.now() }, env: { RATE_LIMIT: '0' } });
    nodeProject = await makeProject(t);
    webProject = await makeProject(t);
    const bundle = await browserBundle();
    const html = `<!doctype html><html><head><script src="/sentry.js"></script><script>
      Sentry.init({ dsn: ${JSON.stringify(dsnOf(t, webProject))}, release: ${JSON.stringify(RELEASE)}, environment: 'test' });
      setTimeout(() => { throw new Error('outer', { cause: new TypeError('inner') }); }, 50);
    </script></head><body>fidelity</body></html>`;
    page = http.createServer((req, res) => {
      if (req.url === '/sentry.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(bundle);
      else res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    });
    await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
    pageUrl = `http://127.0.0.1:${(page.address() as { port: number }).port}/`;
    const [run, launched] = await Promise.all([
      runNodeClient('chained', dsnOf(t, nodeProject)),
      noChromium ? undefined : chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] }),
    ]);
    nodeRun = run;
    if (launched) browser = launched;
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => page?.close(r));
    await t?.close();
  });

  it('@sentry/node: an error with a cause is titled and grouped by the outer error', async () => {
    expect(nodeRun.code, nodeRun.stderr).toBe(0);
    const [issue] = await issuesOf(t, nodeProject);
    expect(issue.title).toBe('Error: outer');
    expect(issue.error_type).toBe('Error');
    const [event] = await eventsOf(t, nodeProject);
    // What the SDK sent: the cause first, linked by exception_id/parent_id.
    const sent = JSON.parse(new TextDecoder().decode(await storedPayload(t.deps.store.db, event)));
    expect(sent.exception.values.map((e: any) => [e.type, e.mechanism?.exception_id, e.mechanism?.parent_id])).toEqual([
      ['TypeError', 1, 0],
      ['Error', 0, undefined],
    ]);
  });

  it.skipIf(noChromium)(
    '@sentry/browser in Chromium: outer-error title, browser and OS from the User-Agent, and an unhandled session counted as crashed',
    async () => {
      const context = await browser.newContext();
      const tab = await context.newPage();
      await tab.goto(pageUrl);
      const [issue] = await waitFor('the browser event', async () => {
        const issues = await issuesOf(t, webProject);
        return issues.length > 0 && issues;
      });
      const sessions = await waitFor('the unhandled session update', async () => {
        const rows = await sessionsOf(t, webProject);
        return rows.length > 0 && rows[0].status === 'unhandled' && rows;
      });
      await context.close();
      expect(issue.title).toBe('Error: outer');
      expect(sessions).toHaveLength(1);

      const [event] = await eventsOf(t, webProject);
      expect(event.platform).toBe('javascript');
      expect(event.is_crash).toBeTruthy();
      expect(event.os_name).toBe('Linux');
      const detail = (await (await t.api(`/api/projects/${webProject.slug}/events/${event.event_id}`)).json()) as {
        contexts: Record<string, any>;
      };
      expect(detail.contexts.browser).toMatchObject({ type: 'browser', name: expect.stringMatching(/Chrom/) });
      expect(detail.contexts.browser.version).toMatch(/^\d+\./);
      expect(detail.contexts.os).toMatchObject({ type: 'os', name: 'Linux' });

      const { release } = (await (
        await t.api(`/api/projects/${webProject.slug}/releases/${encodeURIComponent(RELEASE)}`)
      ).json()) as {
        release: { crashes: number; sessions: { total: number; crashed: number }; crash_free_rate: number };
      };
      expect(release.crashes).toBe(1);
      expect(release.sessions).toMatchObject({ total: 1, crashed: 1 });
      expect(release.crash_free_rate).toBe(0);
    },
    30_000,
  );
});
