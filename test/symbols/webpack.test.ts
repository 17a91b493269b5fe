// Source-map fidelity with a real webpack production bundle thrown in Chromium through
// @sentry/browser, on both databases: webpack's `webpack:///./src/x.js` sources read as
// `src/x.js` (abs_path as the map writes it), and each frame is named after the function
// that encloses it in the original source, as Sentry's symbolicator names it, not after
// the caller's call-site token (`apply` for a click handler the SDK wraps); a built-in's
// frame without a file (`JSON.parse`) never makes the issue's location.
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { lacks } from '../helpers/tools.js';
import { dsnOf, makeProject } from '../ingest/helpers.js';
import { launchChromium, runApp, serveApp } from './browser-fixture.js';
import { eventDetail, eventually, uploadOk } from './helpers.js';
import { buildWebpackFixture, type WebpackFixture } from './webpack-fixture.js';

const noChromium = lacks('chromium');
let fx: WebpackFixture;
let browser: Browser;

beforeAll(async () => {
  if (noChromium) return;
  fx = await buildWebpackFixture();
  browser = await launchChromium();
}, 180_000);
afterAll(async () => {
  await browser?.close();
});

describe.skipIf(noChromium).each(dialects)('webpack bundle symbolicated on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('names files and functions as Sentry shows them, and locates a JSON.parse error at the app line that called it', async () => {
    const project = await makeProject(t);
    await uploadOk(t, project, {
      kind: 'sourcemap',
      release: 'shop@1',
      files: [{ name: '~/static/app.min.js.map', data: fx.map }],
    });
    const app = await serveApp(fx.dir, dsnOf(t, project), 'shop@1');
    let detail: any;
    let parseEvents: any[] = [];
    try {
      await runApp(browser, `${app.url}/`);
      const list = await eventually(async () => {
        const body = (await (await t.api(`/api/projects/${project.slug}/events`)).json()) as any;
        return body.events?.length >= 2 ? body.events : null;
      });
      const thrown = list.find((e: any) => e.title.startsWith('Error: item is missing fields'));
      detail = await eventDetail(t, project, thrown.event_id);
      parseEvents = list.filter((e: any) => e.title.startsWith('SyntaxError'));
    } finally {
      await app.close();
    }
    expect(detail.symbolicated).toBe(true);
    const frames = detail.exceptions.at(-1).symbolicated_frames as any[];
    const ours = [...frames].reverse().filter((f) => f.filename?.startsWith('src/'));
    // Innermost first, as Sentry shows the same bundle: parseLine throws; the map callback
    // is anonymous (the SDK's `?` stays); checkout is inlined into onBuyClick by terser, so
    // its line belongs to onBuyClick's minified function; the setTimeout callback.
    expect(ours.map((f) => [f.function, f.filename, f.abs_path, f.lineno])).toEqual([
      ['parseLine', 'src/cart.js', 'webpack:///./src/cart.js', fx.throwLine],
      ['?', 'src/cart.js', 'webpack:///./src/cart.js', 2],
      ['onBuyClick', 'src/cart.js', 'webpack:///./src/cart.js', 2],
      ['?', 'src/app.js', 'webpack:///./src/app.js', 17],
    ]);
    expect(frames.map((f) => f.function)).not.toContain('apply');
    // The SDK's own wrapper keeps its name from its source.
    expect(frames.some((f) => f.function === 'sentryWrapped' && f.in_app === false)).toBe(true);
    expect(ours[0].context_line).toContain("throw new Error('item is missing fields: '");
    expect(detail.error_location).toBe(`cart.js:${fx.throwLine}`);

    // Chrome's `at JSON.parse (<anonymous>)` frame, in-app for the browser SDK, is passed
    // over: the location is the app's line that called it, not `:JSON.parse`.
    expect(parseEvents).toHaveLength(1);
    const parse = await eventDetail(t, project, parseEvents[0].event_id);
    const received = parse.exceptions.at(-1).frames as any[];
    expect(received.at(-1)).toMatchObject({ function: 'JSON.parse', in_app: true });
    expect(parse.error_location).toBe(`app.js:${fx.parseLine}`);
    const issue = (await (await t.api(`/api/projects/${project.slug}/issues/${parse.fingerprint}`)).json()) as any;
    expect(issue.location).toBe(`app.js:${fx.parseLine}`);
  });
});
