// A real minified web app: a small program bundled with @sentry/browser by esbuild
// (minified, with its source map), served over HTTP and run in real Chromium, where the
// SDK reports an uncaught error to the test server. A second copy is run through
// `sentry-cli sourcemaps inject`, so its events carry debug ids.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { buildSync } from 'esbuild';
import { chromium, type Browser } from 'playwright-core';
import { CHROMIUM } from '../helpers/tools.js';

const PARSER = `export function parseOrder(text) {
  const fields = text.split(',');
  if (fields.length < 3) {
    // An order needs an id, a product and a quantity.
    throw new Error('order is missing fields: ' + text);
  }
  return { id: fields[0], product: fields[1], quantity: Number(fields[2]) };
}
`;

const APP = `import * as Sentry from '@sentry/browser';
import { parseOrder } from './parser.js';

function loadOrders(lines) {
  return lines.map((line) => parseOrder(line));
}

function start() {
  const orders = loadOrders(['1,apple,3', '2,pear']);
  document.title = String(orders.length);
}

Sentry.init({ dsn: window.TEST_DSN, release: window.TEST_RELEASE, defaultIntegrations: false, integrations: [Sentry.globalHandlersIntegration()] });
setTimeout(start, 0);
`;

export interface BrowserFixture {
  dir: string;
  /** Plain build: dist/static/app.min.js and its map. */
  plain: { js: Buffer; map: Buffer };
  /** Build after `sentry-cli sourcemaps inject`: debug ids in the code and the map. */
  injected: { js: Buffer; map: Buffer; debugId: string };
  /** 1-based line of the throw in src/parser.js. */
  throwLine: number;
}

export function buildBrowserFixture(): BrowserFixture {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-web-'));
  fs.mkdirSync(path.join(dir, 'src'));
  fs.writeFileSync(path.join(dir, 'src', 'parser.js'), PARSER);
  fs.writeFileSync(path.join(dir, 'src', 'app.js'), APP);
  const build = (outdir: string) =>
    buildSync({
      entryPoints: [path.join(dir, 'src', 'app.js')],
      bundle: true,
      minify: true,
      sourcemap: true,
      format: 'iife',
      outfile: path.join(outdir, 'app.min.js'),
      nodePaths: [path.resolve('node_modules')],
      logLevel: 'silent',
    });
  build(path.join(dir, 'plain', 'static'));
  build(path.join(dir, 'injected', 'static'));
  execFileSync(
    path.resolve('node_modules/@sentry/cli/bin/sentry-cli'),
    ['sourcemaps', 'inject', path.join(dir, 'injected')],
    { stdio: 'pipe' },
  );
  const read = (p: string) => fs.readFileSync(path.join(dir, p));
  const injectedMap = read('injected/static/app.min.js.map');
  const debugId = JSON.parse(injectedMap.toString('utf8')).debug_id ?? JSON.parse(injectedMap.toString('utf8')).debugId;
  return {
    dir,
    plain: { js: read('plain/static/app.min.js'), map: read('plain/static/app.min.js.map') },
    injected: { js: read('injected/static/app.min.js'), map: injectedMap, debugId },
    throwLine: PARSER.split('\n').findIndex((l) => l.includes('throw new Error')) + 1,
  };
}

/** Serves `root` (a build folder) and an HTML page that runs /static/app.min.js. */
export async function serveApp(
  root: string,
  dsn: string,
  release: string,
): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/') {
      res.setHeader('content-type', 'text/html');
      res.end(
        `<!doctype html><script>window.TEST_DSN=${JSON.stringify(dsn)};window.TEST_RELEASE=${JSON.stringify(release)}</script><script src="/static/app.min.js"></script>`,
      );
      return;
    }
    const file = path.join(root, path.normalize(url.pathname));
    if (!file.startsWith(root) || !fs.existsSync(file)) {
      res.statusCode = 404;
      res.end();
      return;
    }
    res.setHeader('content-type', 'application/javascript');
    res.end(fs.readFileSync(file));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

export async function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}

/** Opens the page; the app throws once the SDK is set up, and the SDK sends the event. */
export async function runApp(browser: Browser, url: string): Promise<void> {
  const page = await browser.newPage();
  try {
    await page.goto(url);
    await page.waitForTimeout(300);
  } finally {
    await page.close();
  }
}
