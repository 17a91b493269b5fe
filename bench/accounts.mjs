// Accounts benchmark (BENCHMARKS.md "Accounts"): what a password sign-in costs, with the
// PBKDF2-HMAC-SHA256 verification at 600 000 iterations included, on the Node edition
// (the built server on SQLite) and in workerd (the Worker under Miniflare, as `npm run
// worker` serves it); the bare verification in Node; and what a request with a personal
// token costs beside one with an API key (paired, interleaved runs on the same server).
//
//   node bench/accounts.mjs [--signins 20] [--requests 2000] [--smoke]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { percentiles, round } from './lib/stats.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: argv } = parseArgs({ options: { signins: { type: 'string', default: '20' }, requests: { type: 'string', default: '2000' }, smoke: { type: 'boolean', default: false } } });
const signins = argv.smoke ? 3 : Number(argv.signins);
const requests = argv.smoke ? 100 : Number(argv.requests);
const log = (msg) => process.stderr.write(`${msg}\n`);

if (!fs.existsSync(path.join(root, 'dist/editions/workers/local.js'))) execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
const dist = (p) => import(path.join(root, 'dist', p));
const { loadConfig } = await dist('config.js');
const { buildNodeDeps, startServer } = await dist('editions/node/server.js');
const { hashPassword, verifyPassword } = await dist('accounts/password.js');
const { buildWorkerBundle, startLocalWorker } = await dist('editions/workers/local.js');

const API_KEY = 'bench-accounts-key';
const PASSWORD = 'bench-password-1';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-bench-accounts-'));

async function json(base, p, init = {}) {
  const res = await fetch(base + p, { ...init, headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...init.headers } });
  if (res.status >= 400) throw new Error(`${p} answered ${res.status} ${await res.text()}`);
  return res.json();
}

/** Sequential password sign-ins; milliseconds each. */
async function signInTimes(base) {
  const times = [];
  for (let i = 0; i < signins; i++) {
    const t = performance.now();
    const res = await fetch(`${base}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ email: 'bench@example.com', password: PASSWORD }),
    });
    await res.arrayBuffer();
    if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
    times.push(performance.now() - t);
  }
  return times;
}

async function setUp(base) {
  await json(base, '/api/users', { method: 'POST', body: JSON.stringify({ email: 'bench@example.com', role: 'admin', password: PASSWORD }) });
  const user = (await json(base, '/api/users')).find((u) => u.email === 'bench@example.com');
  return (await json(base, '/api/tokens', { method: 'POST', body: JSON.stringify({ name: 'bench', user_id: user.id }) })).token;
}

function summary(times) {
  const [p50, p95] = percentiles(times, [50, 95]);
  return { p50_ms: p50, p95_ms: p95 };
}

async function main() {
  log(`faultline accounts bench: ${signins} sign-ins, ${requests} paired requests, ${os.cpus().length} cores (shared)`);
  const results = {};

  // Bare verification, in this process.
  const hash = await hashPassword(PASSWORD);
  const verify = [];
  for (let i = 0; i < signins; i++) {
    const t = performance.now();
    await verifyPassword(PASSWORD, hash);
    verify.push(performance.now() - t);
  }
  results.node_verify = summary(verify);

  // The Node edition on SQLite.
  const config = loadConfig({ DATABASE_URL: `sqlite:${path.join(work, 'node.db')}`, API_KEYS: API_KEY, RATE_LIMIT: '0', LOG_LEVEL: 'warn' });
  const deps = await buildNodeDeps(config, {});
  const server = await startServer(deps, 0, '127.0.0.1');
  const token = await setUp(server.url);
  results.node_sign_in = summary(await signInTimes(server.url));
  const key = [];
  const tok = [];
  for (let i = 0; i < requests; i++) {
    for (const [bearer, out] of i % 2 ? [[API_KEY, key], [token, tok]] : [[token, tok], [API_KEY, key]]) {
      const t = performance.now();
      const res = await fetch(`${server.url}/api/projects`, { headers: { authorization: `Bearer ${bearer}` } });
      await res.arrayBuffer();
      out.push(performance.now() - t);
    }
  }
  results.node_request_api_key = summary(key);
  results.node_request_token = summary(tok);
  results.node_token_minus_key_p95_ms = round(results.node_request_token.p95_ms - results.node_request_api_key.p95_ms);
  await server.close();

  // The Worker in workerd, D1 local.
  const bundle = await buildWorkerBundle(path.join(work, 'bundle'));
  const worker = await startLocalWorker({ bundle, dataDir: path.join(work, 'd1'), port: 0, settings: { API_KEYS: API_KEY, RATE_LIMIT: '0', LOG_LEVEL: 'warn' } });
  try {
    await setUp(worker.url);
    results.workerd_sign_in = summary(await signInTimes(worker.url));
  } finally {
    await worker.close();
  }
  process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
  fs.rmSync(work, { recursive: true, force: true });
}

await main();
