// Accounts benchmark (BENCHMARKS.md "Accounts"): what a password sign-in costs, with the
// PBKDF2-HMAC-SHA256 verification at 600 000 iterations included, on the Node edition
// (the built server on SQLite) and in workerd (the Worker under Miniflare, as `npm run
// worker` serves it); the bare verification in Node; and what a request with a personal
// token costs beside one with an API key (paired, interleaved runs on the same server).
// `--mode paired` runs only the credential part: `GET /api/projects` with an API key and
// with a personal token, interleaved, over HTTP; and the check each credential runs per
// request (API key digest compare; token lookup and last-used note; dashboard session
// lookup and its user), interleaved in this process against the same SQLite file, so
// the session's cost sits beside the others without a page's rendering. p50/p95/p99 and
// the deltas to the API key.
//
//   node bench/accounts.mjs [--mode all|paired] [--signins 20] [--requests 2000] [--smoke]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { percentiles, round } from './lib/stats.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: argv } = parseArgs({
  options: {
    mode: { type: 'string', default: 'all' },
    signins: { type: 'string', default: '20' },
    requests: { type: 'string', default: '2000' },
    smoke: { type: 'boolean', default: false },
  },
});
if (!['all', 'paired'].includes(argv.mode)) throw new Error('--mode is all or paired');
const signins = argv.smoke ? 3 : Number(argv.signins);
const requests = argv.smoke ? 100 : Number(argv.requests);
const log = (msg) => process.stderr.write(`${msg}\n`);

if (!fs.existsSync(path.join(root, 'dist/editions/workers/local.js')))
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
const dist = (p) => import(path.join(root, 'dist', p));
const { loadConfig } = await dist('config.js');
const { buildNodeDeps, startServer } = await dist('editions/node/server.js');
const { hashPassword, verifyPassword } = await dist('accounts/password.js');
const { buildWorkerBundle, startLocalWorker } = await dist('editions/workers/local.js');
const { resolveToken, touchToken, createSession, findSession, findUser, findUserByEmail } =
  await dist('accounts/store.js');
const { apiKeyDigests, matchApiKeyDigest } = await dist('http/auth.js');

const API_KEY = 'bench-accounts-key';
const PASSWORD = 'bench-password-1';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-bench-accounts-'));

async function json(base, p, init = {}) {
  const res = await fetch(base + p, {
    ...init,
    headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json', ...init.headers },
  });
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
  await json(base, '/api/users', {
    method: 'POST',
    body: JSON.stringify({ email: 'bench@example.com', role: 'admin', password: PASSWORD }),
  });
  const user = (await json(base, '/api/users')).find((u) => u.email === 'bench@example.com');
  return (
    await json(base, '/api/tokens', { method: 'POST', body: JSON.stringify({ name: 'bench', user_id: user.id }) })
  ).token;
}

function summary(times) {
  const [p50, p95, p99] = percentiles(times, [50, 95, 99]);
  return { p50_ms: p50, p95_ms: p95, p99_ms: p99 };
}

/** Each percentile of `b` less `a`'s. */
function delta(a, b) {
  return {
    p50_ms: round(b.p50_ms - a.p50_ms, 3),
    p95_ms: round(b.p95_ms - a.p95_ms, 3),
    p99_ms: round(b.p99_ms - a.p99_ms, 3),
  };
}

/**
 * Runs each of `fns` once per round, `rounds` times, the order rotating every round so
 * no credential always goes first; milliseconds per call, per function.
 */
async function interleaved(fns, rounds) {
  const times = fns.map(() => []);
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < fns.length; k++) {
      const j = (i + k) % fns.length;
      const t = performance.now();
      await fns[j]();
      times[j].push(performance.now() - t);
    }
  }
  return times.map(summary);
}

/** The credential checks alone, in this process: what each kind of request runs before its route. */
async function credentialChecks(deps, token, results) {
  const db = deps.store.db;
  const user = await findUserByEmail(db, 'bench@example.com');
  const sessionId = await createSession(
    deps.store,
    { userId: Number(user.id), apiKeyId: null, ip: null, userAgent: null },
    Date.now(),
  );
  const digests = apiKeyDigests([API_KEY]);
  const [key, tok, session] = await interleaved(
    [
      async () => {
        if (!(await matchApiKeyDigest(digests, API_KEY))) throw new Error('API key not matched');
      },
      async () => {
        const found = await resolveToken(db, token, Date.now());
        if (!found) throw new Error('token not found');
        await touchToken(db, found.token, Date.now());
      },
      async () => {
        const row = await findSession(db, sessionId, Date.now());
        if (!row || !(await findUser(db, Number(row.user_id)))) throw new Error('session not found');
      },
    ],
    requests,
  );
  results.check_api_key = key;
  results.check_token = tok;
  results.check_session = session;
  results.check_token_minus_key = delta(key, tok);
  results.check_session_minus_key = delta(key, session);
}

async function main() {
  log(`faultline accounts bench: ${signins} sign-ins, ${requests} paired requests, ${os.cpus().length} cores (shared)`);
  const results = {};

  if (argv.mode === 'all') {
    // Bare verification, in this process.
    const hash = await hashPassword(PASSWORD);
    const verify = [];
    for (let i = 0; i < signins; i++) {
      const t = performance.now();
      await verifyPassword(PASSWORD, hash);
      verify.push(performance.now() - t);
    }
    results.node_verify = summary(verify);
  }

  // The Node edition on SQLite.
  const config = loadConfig({
    DATABASE_URL: `sqlite:${path.join(work, 'node.db')}`,
    API_KEYS: API_KEY,
    RATE_LIMIT: '0',
    LOG_LEVEL: 'warn',
  });
  const deps = await buildNodeDeps(config, {});
  const server = await startServer(deps, 0, '127.0.0.1');
  const token = await setUp(server.url);
  if (argv.mode === 'all') results.node_sign_in = summary(await signInTimes(server.url));
  const request = (bearer) => async () => {
    const res = await fetch(`${server.url}/api/projects`, { headers: { authorization: `Bearer ${bearer}` } });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET /api/projects answered ${res.status}`);
  };
  // Warm-up: the first requests pay for JIT and the statement cache.
  await interleaved([request(API_KEY), request(token)], 50);
  const [key, tok] = await interleaved([request(API_KEY), request(token)], requests);
  results.node_request_api_key = key;
  results.node_request_token = tok;
  results.node_request_token_minus_key = delta(key, tok);
  await credentialChecks(deps, token, results);
  await server.close();
  if (argv.mode === 'paired') {
    process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
    fs.rmSync(work, { recursive: true, force: true });
    return;
  }

  // The Worker in workerd, D1 local.
  const bundle = await buildWorkerBundle(path.join(work, 'bundle'));
  const worker = await startLocalWorker({
    bundle,
    dataDir: path.join(work, 'd1'),
    port: 0,
    settings: { API_KEYS: API_KEY, RATE_LIMIT: '0', LOG_LEVEL: 'warn' },
  });
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
