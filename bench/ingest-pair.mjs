#!/usr/bin/env node
// Paired ingest throughput of two builds (BENCHMARKS.md "Ingest against an older build"):
// node bench/ingest-pair.mjs --base DIR [--head DIR] [--db sqlite|postgres] [--pairs N]
// [--warmup S] [--duration S]. DIR is a checkout with dist/ built (a `git worktree` of
// the older commit). Per pair, in alternating order, each build serves a fresh database
// with `npm start`'s node options; wrk (128 connections, the benchmark's SDK-shaped
// envelopes, 200 fingerprints) warms it up, which also passes the first use of every
// fingerprint (new issues, their alerts) and the one-off User-Agent parse, then the
// measured phase runs. Reports committed events/s (from the database) and the server's
// CPU seconds per 1 000 events, with the load average, and the ratios head/base per pair:
// on a shared machine only those ratios mean anything.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { createBenchDatabase } from './lib/db.mjs';
import { startLoad } from './lib/generators.mjs';
import { writeTemplateFile } from './lib/payloads.mjs';
import { freePort, procStats, sleep, startProcess, waitForHealth } from './lib/proc.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: argv } = parseArgs({
  options: {
    base: { type: 'string' },
    head: { type: 'string', default: path.resolve(here, '..') },
    db: { type: 'string', default: 'sqlite' },
    pairs: { type: 'string', default: '3' },
    warmup: { type: 'string', default: '6' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '128' },
    'cpu-prof': { type: 'string' },
  },
});
if (!argv.base) throw new Error('--base DIR (a checkout of the older build with dist/) is required');
const builds = { base: path.resolve(argv.base), head: path.resolve(argv.head) };
for (const [name, dir] of Object.entries(builds))
  if (!fs.existsSync(path.join(dir, 'dist/cli/main.js'))) throw new Error(`${name}: ${dir}/dist/cli/main.js missing`);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-ingest-pair-'));
const templatesFile = path.join(tmp, 'templates.txt');
writeTemplateFile(templatesFile);
const prefixBase = randomBytes(4).toString('hex');
let loads = 0;
const nextPrefix = () => `${prefixBase}${(++loads).toString(16).padStart(4, '0')}0000`;

/** `npm start`'s node options and environment assignments (`MALLOC_MMAP_THRESHOLD_=…`) of the build in `dir`. */
function startScript(dir) {
  const words = (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')).scripts?.start ?? '').split(/\s+/);
  const env = Object.fromEntries(
    words
      .filter((w) => /^[A-Z_][A-Z0-9_]*=/.test(w))
      .map((w) => [w.slice(0, w.indexOf('=')), w.slice(w.indexOf('=') + 1)]),
  );
  return { flags: words.filter((w) => w.startsWith('--')), env };
}

async function settle(counter, projectId, settleMs = 1000) {
  let last = await counter.count('counted', projectId);
  let lastChange = performance.now();
  for (;;) {
    await sleep(100);
    const c = await counter.count('counted', projectId);
    if (c !== last) {
      last = c;
      lastChange = performance.now();
    } else if (performance.now() - lastChange >= settleMs) return { count: last, at: lastChange };
  }
}

/** CPU seconds per thread of `pid` (/proc/<pid>/task), keyed by `tid comm`. */
function threadCpu(pid) {
  const out = new Map();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      out.set(`${tid} ${comm}`, (Number(f[11]) + Number(f[12])) / 100);
    } catch {}
  }
  return out;
}

let runs = 0;
async function runOne(name) {
  const dir = builds[name];
  const db = await createBenchDatabase(argv.db);
  const port = await freePort();
  const env = { ...process.env };
  for (const k of ['API_KEYS', 'PUBLIC_URL', 'CORS_ORIGIN', 'RETENTION_DAYS']) delete env[k];
  Object.assign(env, {
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT: '0',
    NODE_ENV: 'production',
  });
  const start = startScript(dir);
  Object.assign(env, start.env);
  // --cpu-prof DIR: each run's server writes its threads' CPU profiles under DIR/<build>-<run>.
  const prof = argv['cpu-prof']
    ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(argv['cpu-prof'], `${name}-${++runs}`)}`]
    : [];
  const server = startProcess(
    process.execPath,
    [...start.flags, ...prof, path.join(dir, 'dist/cli/main.js'), 'serve'],
    {
      env,
      logFile: path.join(tmp, `${name}.log`),
      cwd: dir,
    },
  );
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(url, server);
    const r = await fetch(`${url}/api/projects`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'pair', name: 'pair', platform: 'backend' }),
    });
    if (r.status !== 201) throw new Error(`${name}: POST /api/projects ${r.status} ${await r.text()}`);
    const project = await r.json();
    const key = new URL(project.dsn).username;
    const ingestPath = `/api/${project.id}/envelope/?sentry_version=7&sentry_key=${key}&sentry_client=sentry.javascript.node%2F11.12.0`;
    const counter = await db.counter();
    const load = (seconds) =>
      startLoad({
        generator: 'wrk',
        mode: 'closed',
        url,
        path: ingestPath,
        templatesFile,
        prefix: nextPrefix(),
        fingerprints: 200,
        sessionEvery: 10,
        connections: Number(argv.connections),
        duration: seconds,
      });
    await load(Number(argv.warmup)).result;
    await settle(counter, project.id, 500);
    const before = await counter.count('counted', project.id);
    const { cpu: cpu0, written: written0 } = procStats(server.pid);
    const threads0 = threadCpu(server.pid);
    // CLOCK_MONOTONIC µs, the clock of a CPU profile's timestamps: the measured window within a --cpu-prof profile.
    const window0 = Number(process.hrtime.bigint() / 1000n);
    const loadavg = os.loadavg()[0];
    const l = load(Number(argv.duration));
    const result = await l.result;
    const ended = performance.now();
    const settled = await settle(counter, project.id);
    const { cpu: cpu1, written: written1 } = procStats(server.pid);
    const threads1 = threadCpu(server.pid);
    const events = settled.count - before;
    // Each thread's CPU ms per 1 000 events (threads that used any), by name: where a difference between builds lies.
    const threads = {};
    // Threads by start order (`#0` is the main thread; Node names them all `node`).
    const ids = [...threads1.keys()].sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10));
    ids.forEach((k, i) => {
      const ms = Math.round(((threads1.get(k) - (threads0.get(k) ?? 0)) / events) * 1e6);
      if (ms > 0) threads[`#${i} ${k.slice(k.indexOf(' ') + 1)}`] = ms;
    });
    const window1 = Number(process.hrtime.bigint() / 1000n);
    const wall = (Math.max(settled.at, ended) - l.started) / 1000;
    await counter.close?.();
    return {
      build: name,
      events_per_s: Math.round(events / wall),
      cpu_s_per_1000: Number((((cpu1 - cpu0) / events) * 1000).toFixed(3)),
      failed: result.failed,
      load: Number(loadavg.toFixed(1)),
      events,
      thread_cpu_ms_per_1000: threads,
      // The server's own storage writes (SQLite's file and WAL; PostgreSQL's are its server's).
      ...(written0 === null || written1 === null
        ? {}
        : { written_kb_per_event: Number(((written1 - written0) / 1024 / events).toFixed(1)) }),
      ...(prof.length ? { profile_window_us: [window0, window1] } : {}),
    };
  } finally {
    await server.stop();
    await db.drop();
  }
}

const rows = [];
for (let i = 0; i < Number(argv.pairs); i++) {
  const order = i % 2 === 0 ? ['base', 'head'] : ['head', 'base'];
  const pair = {};
  for (const name of order) {
    pair[name] = await runOne(name);
    console.log(JSON.stringify({ pair: i + 1, db: argv.db, ...pair[name] }));
  }
  const ratio = {
    pair: i + 1,
    db: argv.db,
    throughput_head_over_base: Number((pair.head.events_per_s / pair.base.events_per_s).toFixed(3)),
    cpu_per_event_head_over_base: Number((pair.head.cpu_s_per_1000 / pair.base.cpu_s_per_1000).toFixed(3)),
  };
  rows.push(ratio);
  console.log(JSON.stringify(ratio));
}
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
console.log(
  JSON.stringify({
    db: argv.db,
    pairs: rows.length,
    median_throughput_ratio: median(rows.map((r) => r.throughput_head_over_base)),
    median_cpu_per_event_ratio: median(rows.map((r) => r.cpu_per_event_head_over_base)),
  }),
);
fs.rmSync(tmp, { recursive: true, force: true });
