// A real webpack production build (terser-minified, devtool 'source-map') of a small app
// with @sentry/browser: a button's click handler calls into a cart module that throws.
// The SDK wraps event listeners and calls the handler through `fn.apply(...)`, so the
// caller's call-site token at the handler's frame is `apply`: the name a caller-based
// rule gives the handler, where Sentry shows `onBuyClick`. A timer then parses a
// broken JSON setting: V8's `JSON.parse` frame, without a file, is the innermost.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import webpack from 'webpack';

export const CART = `export function checkout(items) {
  const lines = items.split(',').map((item) => parseLine(item));
  return lines.reduce((sum, line) => sum + line.quantity * line.price, 0);
}

export function priceOf(item) {
  return parseLine(item).price;
}

function parseLine(item) {
  const parts = item.split(':');
  if (parts.length !== 3) {
    // An item needs a product, a quantity and a price.
    throw new Error('item is missing fields: ' + item);
  }
  return { product: parts[0], quantity: Number(parts[1]), price: Number(parts[2]) };
}
`;

export const APP = `import * as Sentry from '@sentry/browser';
import { checkout, priceOf } from './cart.js';

function onBuyClick(event) {
  const total = checkout(event.target.dataset.items);
  document.title = 'Total ' + total;
}

Sentry.init({ dsn: window.TEST_DSN, release: window.TEST_RELEASE });
for (const items of ['apple:2:3,pear:1', 'plum:1:2']) {
  const button = document.createElement('button');
  button.dataset.items = items;
  button.textContent = 'from ' + priceOf(items.split(',')[0]);
  button.addEventListener('click', onBuyClick);
  document.documentElement.append(button);
}
setTimeout(() => document.querySelector('button').click(), 0);

function loadPrefs() {
  const saved = localStorage.getItem('prefs') || '{"theme":';
  return JSON.parse(saved);
}
setTimeout(() => document.title = String(loadPrefs().theme), 20);
`;

export interface WebpackFixture {
  /** The build folder: static/app.min.js and static/app.min.js.map. */
  dir: string;
  js: Buffer;
  map: Buffer;
  /** 1-based line of the throw in src/cart.js. */
  throwLine: number;
  /** 1-based line of the JSON.parse call in src/app.js (a built-in's frame, without a file, above it). */
  parseLine: number;
}

/** Builds the app with webpack in production mode into a temporary folder. */
export async function buildWebpackFixture(): Promise<WebpackFixture> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-webpack-'));
  fs.mkdirSync(path.join(root, 'src'));
  fs.writeFileSync(path.join(root, 'src', 'cart.js'), CART);
  fs.writeFileSync(path.join(root, 'src', 'app.js'), APP);
  const out = path.join(root, 'build', 'static');
  const stats = await new Promise<webpack.Stats>((resolve, reject) =>
    webpack(
      {
        mode: 'production',
        devtool: 'source-map',
        context: root,
        entry: './src/app.js',
        output: { path: out, filename: 'app.min.js' },
        resolve: { modules: [path.resolve('node_modules')] },
        infrastructureLogging: { level: 'none' },
      },
      (err, s) => (err || !s ? reject(err ?? new Error('webpack gave no stats')) : resolve(s)),
    ),
  );
  if (stats.hasErrors()) throw new Error(stats.toString('errors-only'));
  return {
    dir: path.join(root, 'build'),
    js: fs.readFileSync(path.join(out, 'app.min.js')),
    map: fs.readFileSync(path.join(out, 'app.min.js.map')),
    throwLine: CART.split('\n').findIndex((l) => l.includes('throw new Error')) + 1,
    parseLine: APP.split('\n').findIndex((l) => l.includes('return JSON.parse(saved)')) + 1,
  };
}
