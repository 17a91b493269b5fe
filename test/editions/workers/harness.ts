// Test harness for the serverless edition: the Worker bundled by wrangler as a deploy
// would bundle it, served by Miniflare (workerd) with a fresh local D1 per worker.
// Requests go over HTTP to workerd; D1 is read and written inside workerd through
// Miniflare's binding (getD1Database), never through a Node SQLite stand-in.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Miniflare } from 'miniflare';
import { buildWorkerBundle, startLocalWorker, type WorkerBundle } from '../../../src/editions/workers/local.js';

let bundle: Promise<WorkerBundle> | null = null;

/** The Worker's bundle, built once per test file (process). */
export function testBundle(): Promise<WorkerBundle> {
  bundle ??= buildWorkerBundle(fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-bundle-')));
  return bundle;
}

/** The D1 binding as Miniflare hands it to Node (statements run in workerd). */
export interface D1 {
  prepare(query: string): D1Statement;
  batch(statements: D1Statement[]): Promise<{ results: Record<string, unknown>[]; meta: { changes: number } }[]>;
  exec(query: string): Promise<unknown>;
}
export interface D1Statement {
  bind(...values: unknown[]): D1Statement;
  all<T = Record<string, unknown>>(): Promise<{ results: T[] }>;
  first<T = Record<string, unknown>>(): Promise<T | null>;
  run(): Promise<unknown>;
}

export interface TestWorker {
  url: string;
  miniflare: Miniflare;
  dataDir: string;
  /** fetch relative to the Worker, with the API key when one was configured. */
  api(pathname: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  d1(): Promise<D1>;
  runCron(cron: string): Promise<void>;
  close(): Promise<void>;
}

export async function startTestWorker(
  settings: Record<string, string> = {},
  options: { dataDir?: string } = {},
): Promise<TestWorker> {
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-d1-'));
  const worker = await startLocalWorker({
    bundle: await testBundle(),
    dataDir,
    port: 0,
    settings: { LOG_LEVEL: 'silent', ...settings },
  });
  const apiKey = (settings.API_KEYS ?? '').split(',')[0]?.trim();
  return {
    url: worker.url,
    miniflare: worker.miniflare,
    dataDir,
    api(pathname, init = {}) {
      const headers = new Headers(init.headers);
      if (apiKey && !headers.has('authorization')) headers.set('authorization', `Bearer ${apiKey}`);
      let body = init.body;
      if (init.json !== undefined) {
        body = JSON.stringify(init.json);
        headers.set('content-type', 'application/json');
      }
      return fetch(worker.url + pathname, { ...init, headers, body });
    },
    async d1() {
      return (await worker.miniflare.getD1Database('DB')) as unknown as D1;
    },
    runCron: (cron) => worker.runCron(cron),
    async close() {
      await worker.close();
      if (!options.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
