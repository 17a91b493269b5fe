#!/usr/bin/env node
// Benchmark harness (`npm run bench`, `npm run bench:smoke`): starts the real server
// as its own process on a fresh SQLite database (then PostgreSQL when
// BENCH_DATABASE_URL or TEST_DATABASE_URL is set), drives it from a separate load
// generator with SDK-shaped envelopes, counts what was committed from the database,
// runs the same generator against a no-op node:http baseline, measures read-API
// latency on a large project, and writes JSON to bench/results/. BENCHMARKS.md
// explains the method. Never asserts on speed; the smoke run fails only when the
// harness or the server's basic behaviour is broken (nothing processed, errors).
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createBenchDatabase, postgresBaseUrl } from './lib/db.mjs';
import { startLoad, wrkVersion } from './lib/generators.mjs';
import { RELEASES, writeTemplateFile } from './lib/payloads.mjs';
import { freePort, sampler, sleep, startProcess, usageOfProcessesNamed, waitForHealth } from './lib/proc.mjs';
import { summarizeProfile } from './lib/profile.mjs';
import { percentiles, round } from './lib/stats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const resultsDir = path.join(here, 'results');

const HELP = `usage: node bench/run.mjs [options]

  --smoke                 small CI run: a few hundred events per phase, strict sanity checks, no speed asserts
  --db LIST               sqlite,postgres (default: sqlite, plus postgres when BENCH_DATABASE_URL or TEST_DATABASE_URL is set)
  --generator G           auto (wrk when installed, else node), wrk or node, for the closed-loop phases
  --connections N         concurrent connections of the closed-loop generator (default 128: with 64, a
                          batch's answers come back as one burst and ~20 % of the CPU stayed idle)
  --duration S            saturation phase length in seconds (default 30)
  --rate N                events/s of the fixed-rate phase (default 2000; 1 request in 10 is a session)
  --rate-duration S       fixed-rate phase length (default 30, after a 5 s unrecorded warm-up)
  --backlog N             events for the read-API visibility phase (default 20000)
  --query-events N        events loaded before measuring query latency (default 1000000; 0 skips)
  --query-issues N        distinct fingerprints of that project (default 10000)
  --query-samples N       timed requests per read endpoint (default 50)
  --profile               instead of the full run: CPU-profile the server (node --cpu-prof) under saturation and print its hot spots
  --profile-duration S    length of the profiled load (default 20)
  --entry E               auto, cli (dist/cli/main.js serve) or edition (bench/server-entry.mjs)
  --data-dir DIR          where SQLite benchmark files go (default: the OS temp dir)
  --keep-data             do not delete the databases afterwards
  --no-build              do not rebuild dist/ even when src/ is newer
  --alert-channels N      give the benchmark project N webhook channels pointing at a local receiver that
                          answers after 2 s, with every rule's cooldown 0 (each new issue alerts each
                          channel): compare with a run without to see what alert delivery costs ingest
  --alert-kinds LIST      kinds of those channels, taken in turn (default webhook): webhook, slack, discord,
                          teams (all to the slow receiver) and email (a local SMTP server with STARTTLS that
                          accepts each message after 2 s), e.g. --alert-channels 5 --alert-kinds webhook,slack,discord,teams,email
`;

const { values: argv } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    db: { type: 'string' },
    generator: { type: 'string', default: 'auto' },
    connections: { type: 'string' },
    duration: { type: 'string' },
    rate: { type: 'string' },
    'rate-duration': { type: 'string' },
    backlog: { type: 'string' },
    'query-events': { type: 'string' },
    'query-issues': { type: 'string' },
    'query-samples': { type: 'string' },
    profile: { type: 'boolean', default: false },
    'profile-duration': { type: 'string' },
    entry: { type: 'string', default: 'auto' },
    'data-dir': { type: 'string' },
    'keep-data': { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    'alert-channels': { type: 'string' },
    'alert-kinds': { type: 'string', default: 'webhook' },
    help: { type: 'boolean', default: false },
  },
});
if (argv.help) {
  process.stdout.write(HELP);
  process.exit(0);
}

const smoke = argv.smoke;
const num = (name, fallback) => {
  const v = argv[name];
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) throw new Error(`--${name} must be a non-negative number (got ${v})`);
  return n;
};
const opts = {
  connections: num('connections', smoke ? 16 : 128),
  warmupSeconds: smoke ? 0 : 5,
  duration: num('duration', 30),
  saturationEvents: smoke ? 300 : 0,
  rate: num('rate', smoke ? 200 : 2000),
  rateDuration: num('rate-duration', smoke ? 1 : 30),
  rateWarmup: smoke ? 0.5 : 5,
  backlog: num('backlog', smoke ? 200 : 20_000),
  queryEvents: num('query-events', smoke ? 300 : 1_000_000),
  queryIssues: num('query-issues', smoke ? 50 : 10_000),
  querySamples: num('query-samples', smoke ? 5 : 50),
  profileDuration: num('profile-duration', smoke ? 3 : 20),
  fingerprints: 200,
  sessionEvery: 10,
  alertChannels: num('alert-channels', 0),
  alertKinds: argv['alert-kinds']
    .split(',')
    .map((k) => k.trim())
    .filter(Boolean),
  settleMs: smoke ? 500 : 1000,
};
const SPREAD_SECONDS = 6 * 24 * 3600;

const log = (...a) => console.log(...a);
const failures = [];
const warn = (msg) => {
  log(`  ! ${msg}`);
  failures.push(msg);
};
// Slowness is reported, never a failure (CI must not assert on speed).
const notes = [];
const note = (msg) => {
  log(`  note: ${msg}`);
  notes.push(msg);
};
/** Requests answered with an HTTP error (not slowness: unanswered requests are counted apart). */
const httpErrors = (statuses) =>
  Object.entries(statuses ?? {})
    .filter(([k]) => k === 'non_2xx' || /^[1345]\d\d$/.test(k))
    .reduce((s, [, v]) => s + v, 0);

// ---------- build and server ----------

function newestMtime(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(p) : fs.statSync(p).mtimeMs);
  }
  return newest;
}

function ensureBuilt() {
  const marker = path.join(root, 'dist', 'editions', 'node', 'server.js');
  const built = fs.existsSync(marker) ? fs.statSync(marker).mtimeMs : 0;
  if (argv['no-build'] && built) return;
  if (built && newestMtime(path.join(root, 'src')) <= built) return;
  log('building (npm run build) ...');
  const r = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    if (!fs.existsSync(marker)) throw new Error('npm run build failed and there is no dist/ to run');
    log('  ! npm run build reported errors; running the dist/ it produced');
  }
}

/** The node options of package.json's `npm start`, so the bench runs what users run. */
function startScriptFlags() {
  const start = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts?.start ?? '';
  return start.split(/\s+/).filter((word) => word.startsWith('--'));
}

function serverCommand(cpuProfDir) {
  const cli = path.join(root, 'dist', 'cli', 'main.js');
  const entry = argv.entry === 'auto' ? (fs.existsSync(cli) ? 'cli' : 'edition') : argv.entry;
  const flags = [...startScriptFlags(), ...(cpuProfDir ? ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`] : [])];
  return entry === 'cli'
    ? { entry, args: [...flags, cli, 'serve'] }
    : { entry, args: [...flags, path.join(here, 'server-entry.mjs')] };
}

async function startFaultline(databaseUrl, logFile, cpuProfDir, extraEnv = {}) {
  const port = await freePort();
  const env = { ...process.env };
  for (const k of ['API_KEYS', 'PUBLIC_URL', 'CORS_ORIGIN', 'RETENTION_DAYS']) delete env[k];
  Object.assign(env, {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT: '0',
    NODE_ENV: 'production',
  });
  // The alert channels' receiver listens on 127.0.0.1.
  if (opts.alertChannels > 0) env.WEBHOOK_ALLOW_PRIVATE = 'true';
  Object.assign(env, extraEnv);
  const { entry, args } = serverCommand(cpuProfDir);
  const proc = startProcess(process.execPath, args, { env, logFile, cwd: root });
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, proc);
  return { proc, url, entry, pid: proc.pid };
}

async function startBaseline(logFile) {
  const port = await freePort();
  const proc = startProcess(process.execPath, [path.join(here, 'baseline.mjs')], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
    logFile,
    cwd: root,
  });
  await proc.waitForLine((l) => l.startsWith('listening'));
  return { proc, url: `http://127.0.0.1:${port}`, pid: proc.pid };
}

async function api(base, method, pathname, body) {
  const r = await fetch(`${base}${pathname}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: r.status, json, text };
}

async function createProject(base, slug) {
  const r = await api(base, 'POST', '/api/projects', { slug, name: `bench ${slug}`, platform: 'backend' });
  if (r.status !== 201 || !r.json?.dsn)
    throw new Error(`POST /api/projects answered ${r.status} ${r.text.slice(0, 300)}`);
  const dsn = new URL(r.json.dsn);
  const id = Number(r.json.id ?? dsn.pathname.split('/').pop());
  return {
    slug,
    id,
    key: dsn.username,
    ingestPath: `/api/${id}/envelope/?sentry_version=7&sentry_key=${dsn.username}&sentry_client=sentry.javascript.node%2F11.12.0`,
  };
}

/** A local webhook receiver that answers every alert after `delayMs`; counts what it got. */
async function startSlowReceiver(delayMs) {
  const { default: http } = await import('node:http');
  let received = 0;
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      received += 1;
      setTimeout(() => res.end('ok'), delayMs);
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}/hook`,
    received: () => received,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(resolve);
      }),
  };
}

/** A local SMTP server (smtp-server, STARTTLS with its own certificate) that accepts each message after `delayMs`. */
async function startSlowSmtp(delayMs) {
  const { SMTPServer } = await import('smtp-server');
  let received = 0;
  const server = new SMTPServer({
    authOptional: true,
    logger: false,
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => {
        received += 1;
        setTimeout(() => callback(), delayMs);
      });
    },
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    env: {
      SMTP_URL: `smtp://127.0.0.1:${server.server.address().port}/?tls.rejectUnauthorized=false`,
      SMTP_FROM: 'bench@faultline.test',
    },
    received: () => received,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}

/** N channels of the --alert-kinds on the project, every rule's cooldown 0 (see --alert-channels). */
async function addAlertChannels(base, project, receiver, n) {
  for (let i = 0; i < n; i++) {
    const kind = opts.alertKinds[i % opts.alertKinds.length];
    const config = kind === 'email' ? { to: [`oncall${i}@faultline.test`] } : { url: `${receiver.url}?channel=${i}` };
    const r = await api(base, 'POST', `/api/projects/${project.slug}/alerts/channels`, { kind, config });
    if (r.status !== 201) throw new Error(`POST alerts/channels answered ${r.status} ${r.text.slice(0, 300)}`);
  }
  for (const type of ['new_issue', 'regression', 'crash_spike']) {
    const r = await api(base, 'PATCH', `/api/projects/${project.slug}/alerts/${type}`, { cooldown_minutes: 0 });
    if (r.status !== 200) throw new Error(`PATCH alerts/${type} answered ${r.status} ${r.text.slice(0, 300)}`);
  }
}

// ---------- phases ----------

const runPrefix = randomBytes(4).toString('hex');
let loadCounter = 0;
/** 16 hex: 8 for this run, 4 per load (wrk adds 4 per thread) and 4 spare, so no event_id repeats. */
const nextPrefix = () => `${runPrefix}${(++loadCounter).toString(16).padStart(4, '0')}0000`;

/** The server's CPU seconds and storage writes now, and the local PostgreSQL's (null for SQLite or without /proc). */
function usageNow(serverSampler, kind) {
  const s = serverSampler.now();
  return { cpu: s.cpu, written: s.written, db: kind === 'postgres' ? usageOfProcessesNamed('postgres') : null };
}

/**
 * CPU and storage writes between two usageNow() readings over `seconds`: the server's and
 * the local PostgreSQL's cores, and both processes' writes in MB/s and, given the
 * events processed meanwhile, in KB per event.
 */
function usageBetween(u0, u1, seconds, events) {
  const grown = (a, b) => (a === null || b === null ? null : b - a);
  const db = u0.db && u1.db;
  const serverWritten = grown(u0.written, u1.written);
  const dbWritten = db ? grown(u0.db.written, u1.db.written) : 0;
  const written = serverWritten === null || dbWritten === null ? null : serverWritten + dbWritten;
  return {
    server_cpu_cores: round((u1.cpu - u0.cpu) / seconds),
    // The local PostgreSQL server's processes, which share the machine's cores.
    ...(db ? { database_cpu_cores: round((u1.db.cpu - u0.db.cpu) / seconds) } : {}),
    ...(written === null
      ? {}
      : {
          storage_writes_mb_per_s: round(written / 2 ** 20 / seconds, 1),
          ...(events ? { storage_writes_kb_per_event: round(written / 1024 / events, 1) } : {}),
        }),
  };
}

/** Polls the committed count until it stops changing; returns when the last change was seen. */
async function settle(counter, projectId, sinceMs, settleMs) {
  let last = await counter.count('counted', projectId);
  let lastChange = performance.now();
  let changedAfterStart = false;
  const deadline = performance.now() + 300_000;
  while (performance.now() < deadline) {
    await sleep(100);
    const c = await counter.count('counted', projectId);
    if (c !== last) {
      last = c;
      lastChange = performance.now();
      changedAfterStart = true;
    } else if (performance.now() - lastChange >= settleMs) break;
  }
  return { count: last, doneAt: changedAfterStart ? lastChange : sinceMs };
}

/**
 * Closed-loop load against faultline: for `duration` seconds, or until `events` events
 * are committed. Processed events/s = committed events / wall time from the first
 * request until the last of them is committed (read from the database).
 */
async function ingestPhase(
  ctx,
  project,
  { generator, duration, events, fingerprints, spreadSeconds = 0, connections },
) {
  const { counter, server } = ctx;
  const before = await counter.all(project.id);
  ctx.sampler.mark();
  const usage0 = usageNow(ctx.sampler, ctx.kind);
  const load = startLoad({
    generator,
    mode: 'closed',
    url: server.url,
    path: project.ingestPath,
    templatesFile: ctx.templatesFile,
    prefix: nextPrefix(),
    fingerprints,
    spreadSeconds,
    sessionEvery: opts.sessionEvery,
    connections,
    duration: events ? 0 : duration,
    events: generator === 'node' ? events : 0,
  });
  let progressTimer;
  if (events) {
    const target = before.counted + events;
    let lastLog = performance.now();
    progressTimer = (async () => {
      for (;;) {
        await sleep(250);
        const c = await counter.count('counted', project.id).catch(() => 0);
        if (performance.now() - lastLog > 15_000) {
          lastLog = performance.now();
          log(`    ... ${c - before.counted} / ${events} events committed`);
        }
        if (c >= target) {
          if (generator === 'wrk') load.stop();
          return;
        }
        if (load.done) return;
      }
    })();
  }
  const result = await load.result;
  load.done = true;
  const ended = performance.now();
  await progressTimer;
  const t0 = load.started;
  const settled = await settle(counter, project.id, ended, opts.settleMs);
  const after = await counter.all(project.id);
  const usage1 = usageNow(ctx.sampler, ctx.kind);
  const peakRss = ctx.sampler.mark();
  const wall = (Math.max(settled.doneAt, ended) - t0) / 1000;
  const processed = after.counted - before.counted;
  return {
    generator: result.generator,
    connections,
    send_seconds: round(result.seconds),
    commit_wall_seconds: round(wall),
    requests_ok: result.ok,
    requests_failed: result.failed,
    statuses: result.statuses,
    first_error: result.first_error ?? null,
    accepted_requests_per_s: round(result.ok / result.seconds, 0),
    processed_events: processed,
    stored_events: after.stored - before.stored,
    sessions_added: after.sessions - before.sessions,
    issues_total: after.issues,
    processed_events_per_s: round(processed / wall, 0),
    latency_ms: result.latency_ms,
    ...usageBetween(usage0, usage1, wall, processed),
    generator_cpu_cores: round(result.generator_cpu_seconds / result.seconds),
    server_peak_rss_mb: round(peakRss / 2 ** 20, 1),
  };
}

/** Open-loop fixed rate (events/s; sessions come on top, 1 request in 10). */
async function fixedRatePhase(target, ingestPath, { ctxSampler, kind } = {}) {
  ctxSampler?.mark();
  const usage0 = ctxSampler ? usageNow(ctxSampler, kind) : null;
  const requestRate = opts.sessionEvery > 0 ? (opts.rate * opts.sessionEvery) / (opts.sessionEvery - 1) : opts.rate;
  const load = startLoad({
    generator: 'node',
    mode: 'open',
    url: target.url,
    path: ingestPath,
    templatesFile: ctxTemplates,
    prefix: nextPrefix(),
    fingerprints: opts.fingerprints,
    sessionEvery: opts.sessionEvery,
    connections: 512,
    rate: requestRate,
    duration: opts.rateDuration,
    warmup: opts.rateWarmup,
  });
  const r = await load.result;
  const usage1 = ctxSampler ? usageNow(ctxSampler, kind) : null;
  return {
    generator: 'node (open loop)',
    target_events_per_s: opts.rate,
    target_requests_per_s: round(requestRate, 0),
    recorded_seconds: round(r.seconds),
    overloaded: r.overloaded ?? false,
    achieved_requests_per_s: round(r.completed / r.seconds, 0),
    requests_ok: r.ok,
    requests_failed: r.failed,
    statuses: r.statuses,
    first_error: r.first_error,
    latency_ms: r.latency_ms,
    ...(ctxSampler
      ? {
          ...usageBetween(usage0, usage1, r.seconds + opts.rateWarmup),
          server_peak_rss_mb: round(ctxSampler.mark() / 2 ** 20, 1),
        }
      : {}),
  };
}

/** Sends `n` events to a new project and times until the issues list and overview show them all. */
async function backlogPhase(ctx) {
  const project = await createProject(ctx.server.url, 'backlog');
  const n = opts.backlog;
  const load = startLoad({
    generator: 'node',
    mode: 'closed',
    url: ctx.server.url,
    path: project.ingestPath,
    templatesFile: ctx.templatesFile,
    prefix: nextPrefix(),
    fingerprints: opts.fingerprints,
    sessionEvery: opts.sessionEvery,
    connections: opts.connections,
    events: n,
  });
  const r = await load.result;
  const acked = performance.now();
  const t0 = load.started;
  const seen = { overview: null, issues: null };
  const last = { overview: null, issues: null };
  const deadline = performance.now() + (smoke ? 30_000 : 300_000);
  while ((seen.overview === null || seen.issues === null) && performance.now() < deadline) {
    if (seen.overview === null) {
      const o = await api(ctx.server.url, 'GET', `/api/projects/${project.slug}/overview`);
      last.overview = o.status === 200 ? o.json?.totals?.events : `status ${o.status}`;
      if (o.status === 200 && o.json?.totals?.events >= n) seen.overview = performance.now();
    }
    if (seen.issues === null) {
      const i = await api(ctx.server.url, 'GET', `/api/projects/${project.slug}/issues?limit=500`);
      const sum =
        i.status === 200 ? (i.json?.issues ?? []).reduce((s, x) => s + (x.event_count ?? 0), 0) : `status ${i.status}`;
      last.issues = sum;
      if (i.status === 200 && sum >= n) seen.issues = performance.now();
    }
    if (seen.overview === null || seen.issues === null) await sleep(50);
  }
  const s = (t) => (t === null ? null : round((t - t0) / 1000));
  const lag = (t) => (t === null ? null : round(Math.max(0, t - acked) / 1000, 3));
  const out = {
    events: n,
    requests_ok: r.ok,
    requests_failed: r.failed,
    send_seconds: round(r.seconds),
    overview_visible_after_s: s(seen.overview),
    issues_visible_after_s: s(seen.issues),
    overview_lag_after_last_ack_s: lag(seen.overview),
    issues_lag_after_last_ack_s: lag(seen.issues),
    last_seen_totals: last,
  };
  if (seen.overview === null)
    warn(`backlog: overview never showed ${n} events (last: ${JSON.stringify(last.overview)})`);
  if (seen.issues === null)
    warn(`backlog: issues list never summed to ${n} events (last: ${JSON.stringify(last.issues)})`);
  return out;
}

async function timeEndpoint(base, name, makePath, samples) {
  const times = [];
  let status = null;
  let problem = null;
  let bytes = 0;
  for (let i = 0; i < samples + 3; i++) {
    const p = makePath(i);
    const t = performance.now();
    const r = await fetch(`${base}${p}`);
    const body = await r.arrayBuffer();
    const ms = performance.now() - t;
    status = r.status;
    bytes = body.byteLength;
    if (r.status !== 200) {
      problem = `${p} answered ${r.status}: ${Buffer.from(body).toString().slice(0, 200)}`;
      break;
    }
    if (i >= 3) times.push(ms); // the first three warm caches and are not recorded
  }
  const [p50, p95, max] = percentiles(times, [50, 95, 100]);
  return { name, samples: times.length, p50_ms: p50, p95_ms: p95, max_ms: max, status, response_bytes: bytes, problem };
}

async function queryPhase(ctx, generator) {
  const project = await createProject(ctx.server.url, 'query');
  log(`  loading ${opts.queryEvents} events over ${opts.queryIssues} fingerprints into project "query" ...`);
  const load = await ingestPhase(ctx, project, {
    generator,
    events: opts.queryEvents,
    fingerprints: opts.queryIssues,
    spreadSeconds: SPREAD_SECONDS,
    connections: opts.connections,
  });
  const counts = await ctx.counter.all(project.id);
  if (await ctx.counter.vacuumIfAutovacuumOff()) {
    note(
      'query: the PostgreSQL server runs with autovacuum off; the harness ran VACUUM ANALYZE after loading, as autovacuum would have',
    );
  }
  const base = ctx.server.url;
  const slug = project.slug;
  const list = await api(base, 'GET', `/api/projects/${slug}/issues?limit=500&sort=events`);
  const fps = (list.json?.issues ?? []).map((i) => i.fingerprint).filter(Boolean);
  if (fps.length === 0) warn(`query: issues list gave no fingerprints (status ${list.status})`);
  const release = encodeURIComponent(RELEASES[3]);
  const endpoints = [
    ['issues list', () => `/api/projects/${slug}/issues`],
    ['issue detail', (i) => `/api/projects/${slug}/issues/${fps[i % Math.max(1, fps.length)] ?? 'none'}`],
    ['events page', () => `/api/projects/${slug}/events`],
    [
      'events, tag filter (customer: ~0.01%)',
      (i) => `/api/projects/${slug}/events?tag.customer=c${(i * 37) % opts.queryIssues}`,
    ],
    ['events, tag filter (region: ~25%)', () => `/api/projects/${slug}/events?tag.region=eu-west-1`],
    ['releases list', () => `/api/projects/${slug}/releases`],
    ['release detail', () => `/api/projects/${slug}/releases/${release}`],
    ['overview', () => `/api/projects/${slug}/overview`],
  ];
  const latency = [];
  for (const [name, make] of endpoints) {
    const r = await timeEndpoint(base, name, make, opts.querySamples);
    if (r.problem) warn(`query ${name}: ${r.problem}`);
    latency.push(r);
  }
  return {
    events_loaded: load.processed_events,
    events_stored_total: counts.stored,
    issues: counts.issues,
    load,
    database_bytes: await ctx.counter.size(),
    latency,
  };
}

// ---------- report ----------

function table(rows, headers) {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const line = (cells) => cells.map((c, i) => String(c ?? '').padEnd(widths[i])).join('  ');
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

const f = (x, unit = '') => (x === null || x === undefined ? 'n/a' : `${x}${unit}`);
const lat = (l) => (l ? `${f(l.p50)} / ${f(l.p95)} / ${f(l.p99)}` : 'n/a');
/** The server's and the local PostgreSQL's storage writes of a phase: MB/s, and KB per event where counted. */
const storage = (phase) =>
  phase?.storage_writes_mb_per_s === undefined
    ? 'n/a'
    : `${phase.storage_writes_mb_per_s}${phase.storage_writes_kb_per_event === undefined ? '' : `, ${phase.storage_writes_kb_per_event}`}`;

function printSummary(result) {
  const dbs = Object.keys(result.databases);
  const b = result.baseline;
  const rows = [];
  const row = (label, fn) => rows.push([label, ...dbs.map((d) => fn(result.databases[d]))]);
  row('saturation generator', (d) => `${d.saturation?.generator ?? 'n/a'}, ${d.saturation?.connections ?? ''} conns`);
  row('baseline (no-op node:http) requests/s', () => f(b?.saturation?.accepted_requests_per_s));
  row('accepted requests/s', (d) => f(d.saturation?.accepted_requests_per_s));
  row('  ratio faultline / baseline', (d) => f(d.ratio_accepted));
  row('processed events/s (from the DB)', (d) => f(d.saturation?.processed_events_per_s));
  row('  ratio vs baseline events/s', (d) => f(d.ratio_processed));
  row('latency at saturation p50/p95/p99 ms', (d) => lat(d.saturation?.latency_ms));
  row(`latency at ${opts.rate} events/s p50/p95/p99 ms`, (d) => lat(d.fixed_rate?.latency_ms));
  row(`  baseline at ${opts.rate} events/s`, () => lat(b?.fixed_rate?.latency_ms));
  row('server CPU at saturation (cores)', (d) => f(d.saturation?.server_cpu_cores));
  row('  database server CPU (cores, local PostgreSQL)', (d) =>
    d.saturation?.database_cpu_cores === undefined ? 'n/a' : f(d.saturation.database_cpu_cores),
  );
  row('  load generator CPU (cores)', (d) => f(d.saturation?.generator_cpu_cores));
  row('storage writes at saturation MB/s, KB per event', (d) => storage(d.saturation));
  row(`storage writes at ${opts.rate} events/s MB/s`, (d) => storage(d.fixed_rate));
  row('server peak RSS under load MB', (d) => f(d.peak_rss_under_load_mb));
  row('server peak RSS whole run (VmHWM) MB', (d) => f(d.peak_rss_run_mb));
  row(`backlog ${opts.backlog} events: issues / overview visible s`, (d) =>
    d.backlog
      ? `${f(d.backlog.issues_visible_after_s)} / ${f(d.backlog.overview_visible_after_s)} (sent in ${d.backlog.send_seconds})`
      : 'n/a',
  );
  row(`query set: events loaded, load events/s`, (d) =>
    d.query ? `${d.query.events_loaded}, ${d.query.load.processed_events_per_s}/s` : 'n/a',
  );
  row('query set: database size MB', (d) => (d.query ? round(d.query.database_bytes / 2 ** 20, 0) : 'n/a'));
  for (const name of result.databases[dbs[0]]?.query?.latency.map((l) => l.name) ?? []) {
    row(`  ${name} p50/p95 ms`, (d) => {
      const l = d.query?.latency.find((x) => x.name === name);
      return l ? (l.problem ? `error ${l.status}` : `${l.p50_ms} / ${l.p95_ms}`) : 'n/a';
    });
  }
  log(`\n${table(rows, ['', ...dbs])}`);
}

// ---------- main ----------

let ctxTemplates;

async function benchDatabase(kind, generator, baseline, runDir) {
  log(`\n== ${kind} ==`);
  const database = await createBenchDatabase(kind, { dataDir: argv['data-dir'] });
  let server;
  let counter;
  let ctx;
  let alertReceiver;
  let smtp;
  const out = {};
  try {
    if (opts.alertChannels > 0 && opts.alertKinds.includes('email')) smtp = await startSlowSmtp(2000);
    server = await startFaultline(database.url, path.join(runDir, `server-${kind}.log`), undefined, smtp?.env);
    counter = await database.counter();
    out.server_entry = server.entry;
    out.database_version = await counter.version();
    ctx = { kind, server, counter, templatesFile: ctxTemplates, sampler: sampler(server.pid) };
    const project = await createProject(server.url, 'bench');
    if (opts.alertChannels > 0) {
      alertReceiver = await startSlowReceiver(2000);
      await addAlertChannels(server.url, project, alertReceiver, opts.alertChannels);
      log(
        `  ${opts.alertChannels} channels (${opts.alertKinds.join(', ')}) on the project (receivers answering after 2 s), cooldowns 0`,
      );
    }

    if (opts.warmupSeconds > 0) {
      log(`  warm-up ${opts.warmupSeconds} s`);
      await ingestPhase(ctx, project, {
        generator,
        duration: opts.warmupSeconds,
        fingerprints: opts.fingerprints,
        connections: opts.connections,
      });
    }
    log(
      `  saturation: ${opts.saturationEvents ? `${opts.saturationEvents} events` : `${opts.duration} s`}, ${generator}, ${opts.connections} connections`,
    );
    out.saturation = await ingestPhase(ctx, project, {
      generator,
      duration: opts.duration,
      events: opts.saturationEvents,
      fingerprints: opts.fingerprints,
      connections: opts.connections,
    });
    log(
      `    ${out.saturation.accepted_requests_per_s} requests/s accepted, ${out.saturation.processed_events_per_s} events/s processed`,
    );
    if (out.saturation.processed_events === 0) warn('saturation: no event was processed');
    if (httpErrors(out.saturation.statuses) > 0)
      warn(
        `saturation: requests answered with errors ${JSON.stringify(out.saturation.statuses)} ${out.saturation.first_error ?? ''}`,
      );
    else if (out.saturation.requests_failed > 0)
      note(
        `saturation: ${out.saturation.requests_failed} requests not answered ${JSON.stringify(out.saturation.statuses)}`,
      );
    if (baseline?.saturation) {
      out.ratio_accepted = round(
        out.saturation.accepted_requests_per_s / baseline.saturation.accepted_requests_per_s,
        3,
      );
      const baselineEvents =
        (baseline.saturation.accepted_requests_per_s * (opts.sessionEvery - 1)) / opts.sessionEvery;
      out.ratio_processed = round(out.saturation.processed_events_per_s / baselineEvents, 3);
    }

    log(`  fixed rate: ${opts.rate} events/s for ${opts.rateDuration} s`);
    out.fixed_rate = await fixedRatePhase(server, project.ingestPath, { ctxSampler: ctx.sampler, kind });
    log(`    p50/p95/p99 ${lat(out.fixed_rate.latency_ms)} ms at ${out.fixed_rate.achieved_requests_per_s} requests/s`);
    if (out.fixed_rate.overloaded)
      note(`fixed rate: the server fell more than 5 s behind ${opts.rate} events/s; the run stopped early`);
    // Requests abandoned by the generator may still be committing; let them finish before the next phase.
    await settle(counter, project.id, performance.now(), opts.settleMs);
    if (httpErrors(out.fixed_rate.statuses) > 0)
      warn(
        `fixed rate: requests answered with errors ${JSON.stringify(out.fixed_rate.statuses)} ${out.fixed_rate.first_error ?? ''}`,
      );
    else if (out.fixed_rate.requests_failed > 0)
      note(
        `fixed rate: ${out.fixed_rate.requests_failed} requests not answered ${JSON.stringify(out.fixed_rate.statuses)}`,
      );
    out.peak_rss_under_load_mb = Math.max(out.saturation.server_peak_rss_mb, out.fixed_rate.server_peak_rss_mb);

    log(`  backlog: ${opts.backlog} events, then poll the read API`);
    out.backlog = await backlogPhase(ctx);
    log(
      `    issues visible after ${out.backlog.issues_visible_after_s} s, overview after ${out.backlog.overview_visible_after_s} s (sent in ${out.backlog.send_seconds} s)`,
    );

    if (opts.queryEvents > 0) {
      out.query = await queryPhase(ctx, generator);
      log(
        `    loaded ${out.query.events_loaded} events at ${out.query.load.processed_events_per_s}/s; database ${round(out.query.database_bytes / 2 ** 20, 0)} MB`,
      );
      for (const l of out.query.latency)
        log(`    ${l.name}: p50 ${l.p50_ms} ms, p95 ${l.p95_ms} ms${l.problem ? ` (${l.problem})` : ''}`);
    }
    out.peak_rss_run_mb = round((ctx.sampler.now().hwm ?? 0) / 2 ** 20, 1);
    if (alertReceiver) {
      out.alert_channels = opts.alertChannels;
      out.alert_kinds = opts.alertKinds;
      out.alert_requests_received = alertReceiver.received();
      if (smtp) out.alert_emails_received = smtp.received();
      log(
        `    alert receiver got ${out.alert_requests_received} requests${smtp ? `, the SMTP server ${out.alert_emails_received} messages` : ''}`,
      );
    }
  } finally {
    ctx?.sampler.stop();
    await alertReceiver?.close();
    await smtp?.close();
    await counter?.close().catch(() => {});
    if (server) await server.proc.stop();
    if (!argv['keep-data'])
      await database.drop().catch((err) => log(`  ! could not drop the ${kind} database: ${err.message}`));
    else log(`  kept ${database.url}`);
  }
  return out;
}

async function runBaseline(generator, runDir) {
  log('\n== baseline: no-op node:http server ==');
  const b = await startBaseline(path.join(runDir, 'baseline.log'));
  const s = sampler(b.pid);
  try {
    const path_ =
      '/api/1/envelope/?sentry_version=7&sentry_key=baseline&sentry_client=sentry.javascript.node%2F11.12.0';
    const load = startLoad({
      generator,
      mode: 'closed',
      url: b.url,
      path: path_,
      templatesFile: ctxTemplates,
      prefix: nextPrefix(),
      fingerprints: opts.fingerprints,
      sessionEvery: opts.sessionEvery,
      connections: opts.connections,
      // The baseline has no database to count from, so a count-limited (smoke) run uses a short duration instead.
      duration: opts.saturationEvents ? 2 : opts.duration,
    });
    const cpu0 = s.now().cpu;
    const r = await load.result;
    const cpu1 = s.now().cpu;
    const saturation = {
      generator: r.generator,
      connections: opts.connections,
      send_seconds: round(r.seconds),
      requests_ok: r.ok,
      requests_failed: r.failed,
      accepted_requests_per_s: round(r.ok / r.seconds, 0),
      latency_ms: r.latency_ms,
      server_cpu_cores: round((cpu1 - cpu0) / r.seconds),
      generator_cpu_cores: round(r.generator_cpu_seconds / r.seconds),
    };
    log(`  ${saturation.accepted_requests_per_s} requests/s (${r.generator}, ${opts.connections} connections)`);
    const fixed = await fixedRatePhase(b, path_);
    log(`  at ${opts.rate} events/s: p50/p95/p99 ${lat(fixed.latency_ms)} ms`);
    return { saturation, fixed_rate: fixed, peak_rss_mb: round((s.now()?.hwm ?? 0) / 2 ** 20, 1) };
  } finally {
    s.stop();
    await b.proc.stop();
  }
}

function machineInfo() {
  let nproc = null;
  try {
    nproc = Number(execFileSync('nproc').toString().trim());
  } catch {}
  return {
    nproc,
    cpus: os.cpus().length,
    cpu_model: os.cpus()[0]?.model ?? null,
    memory_gb: round(os.totalmem() / 2 ** 30, 1),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
  };
}

async function profileRun(runDir, generator, kind) {
  const profDir = path.join(runDir, 'cpuprofile');
  fs.mkdirSync(profDir, { recursive: true });
  log(`\n== CPU profile: ${kind}, ${generator}, ${opts.profileDuration} s of saturation ==`);
  const database = await createBenchDatabase(kind, { dataDir: argv['data-dir'] });
  let server;
  let counter;
  let sat;
  let smtp;
  let alertReceiver;
  try {
    if (opts.alertChannels > 0 && opts.alertKinds.includes('email')) smtp = await startSlowSmtp(2000);
    server = await startFaultline(database.url, path.join(runDir, `server-profile-${kind}.log`), profDir, smtp?.env);
    counter = await database.counter();
    const ctx = { kind, server, counter, templatesFile: ctxTemplates, sampler: sampler(server.pid) };
    const project = await createProject(server.url, 'bench');
    if (opts.alertChannels > 0) {
      alertReceiver = await startSlowReceiver(2000);
      await addAlertChannels(server.url, project, alertReceiver, opts.alertChannels);
      log(`  ${opts.alertChannels} channels (${opts.alertKinds.join(', ')}) on the project, cooldowns 0`);
    }
    sat = await ingestPhase(ctx, project, {
      generator,
      duration: opts.profileDuration,
      fingerprints: opts.fingerprints,
      connections: opts.connections,
    });
    ctx.sampler.stop();
    log(
      `  ${sat.accepted_requests_per_s} requests/s accepted, ${sat.processed_events_per_s} events/s processed (profiler on)`,
    );
  } finally {
    await counter?.close().catch(() => {});
    const exit = server ? await server.proc.stop('SIGTERM', 60_000) : null;
    await alertReceiver?.close();
    await smtp?.close();
    if (exit && exit.code !== 0)
      log(`  ! server exited with ${JSON.stringify(exit)}; the profile is written only on a clean exit`);
    if (!argv['keep-data']) await database.drop().catch(() => {});
  }
  // One file per thread: the main thread, then any worker threads the server started.
  const files = fs
    .readdirSync(profDir)
    .filter((x) => x.endsWith('.cpuprofile'))
    .sort();
  if (files.length === 0)
    throw new Error(`no .cpuprofile in ${profDir}: the server did not exit cleanly on SIGTERM (try --entry edition)`);
  const threads = [];
  for (const [i, name] of files.entries()) {
    const file = path.join(profDir, name);
    const summary = summarizeProfile(file, i === 0 ? 30 : 12);
    threads.push({ file: path.relative(root, file), thread: i === 0 ? 'main' : `worker ${i}`, summary });
    log(
      `\n${i === 0 ? 'main thread' : `worker thread ${i}`}: ${path.relative(root, file)}: ${summary.busyMs} ms busy, ${summary.idlePct}% idle`,
    );
    log('self time by function (% of busy time):');
    log(
      table(
        summary.functions.map((x) => [`${x.pct}%`, x.selfMs, x.name, x.file]),
        ['%', 'ms', 'function', 'where'],
      ),
    );
    if (i === 0) {
      log('\nself time by package / file group:');
      log(
        table(
          summary.packages.map((x) => [`${x.pct}%`, x.selfMs, x.package]),
          ['%', 'ms', 'package'],
        ),
      );
      log('\nby faultline function, including the library and runtime code it calls:');
      log(
        table(
          summary.owners.map((x) => [`${x.pct}%`, x.ms, x.owner]),
          ['%', 'ms', 'function'],
        ),
      );
    }
  }
  return { saturation: sat, threads };
}

async function main() {
  ensureBuilt();
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const runDir = path.join(resultsDir, `${smoke ? 'smoke' : argv.profile ? 'profile' : 'bench'}-${stamp}`);
  fs.mkdirSync(runDir, { recursive: true });
  ctxTemplates = path.join(runDir, 'templates.txt');
  writeTemplateFile(ctxTemplates);

  const wrk = wrkVersion();
  let generator = argv.generator;
  if (generator === 'auto') generator = wrk ? 'wrk' : 'node';
  if (generator === 'wrk' && !wrk) throw new Error('--generator wrk: wrk is not installed (apt-get install wrk)');
  const dbs = argv.db
    ? argv.db.split(',').map((s) => s.trim())
    : ['sqlite', ...(postgresBaseUrl() ? ['postgres'] : [])];
  for (const d of dbs)
    if (!['sqlite', 'postgres'].includes(d)) throw new Error(`--db: unknown database ${d} (sqlite, postgres)`);

  const result = {
    kind: smoke ? 'smoke' : argv.profile ? 'profile' : 'full',
    run_at: new Date().toISOString(),
    machine: { ...machineInfo(), wrk },
    generator,
    options: opts,
    baseline: null,
    databases: {},
  };
  log(
    `faultline benchmark (${result.kind}); generator for closed-loop phases: ${generator}${wrk ? ` (wrk ${wrk})` : ' (wrk not installed)'}`,
  );
  log(
    `machine: ${result.machine.nproc} cores (${result.machine.cpu_model}), node ${process.version}; results in ${path.relative(root, runDir)}`,
  );

  if (argv.profile) {
    result.profile = await profileRun(runDir, generator, dbs[0]);
  } else {
    result.baseline = await runBaseline(generator, runDir);
    for (const kind of dbs) result.databases[kind] = await benchDatabase(kind, generator, result.baseline, runDir);
    printSummary(result);
  }
  result.problems = failures;
  result.notes = notes;
  const file = path.join(runDir, 'result.json');
  fs.writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
  fs.writeFileSync(path.join(resultsDir, `latest-${result.kind}.json`), `${JSON.stringify(result, null, 2)}\n`);
  log(`\nresults: ${path.relative(root, file)}`);
  if (failures.length > 0) {
    log(`\n${failures.length} problem(s):\n${failures.map((x) => `  - ${x}`).join('\n')}`);
    if (smoke) process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(`bench failed: ${err.stack ?? err}`);
  process.exit(1);
});
