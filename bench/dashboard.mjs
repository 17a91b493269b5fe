#!/usr/bin/env node
// Dashboard benchmark (`node bench/dashboard.mjs`): starts the real server (dist/)
// with API_KEYS set on a fresh SQLite database (then PostgreSQL when
// BENCH_DATABASE_URL or TEST_DATABASE_URL is set), loads a project with SDK-shaped
// envelopes through ingest (the same generator and templates as bench/run.mjs),
// signs in like a browser, then measures for every page the time from request to
// the last byte and the time the dashboard itself reports (Server-Timing) (p50/p95
// over --samples requests after 3 unrecorded warm-ups), beside its JSON route, and
// the weight of each page of an empty project (HTML plus the stylesheet and
// script, uncompressed: the page "without the data"), and triage: the issues list with
// a three-token search and an environment filter, an issue with 50 activity entries,
// and the merge of two issues of --merge-events events each. Writes JSON to
// bench/results/. Never asserts on speed.
//
// The loaded databases are kept in a cache (--cache, default bench/.cache): a SQLite file
// and a PostgreSQL database named after the size (faultline_bench_1m for 1 M events),
// each with a dataset.json beside it, so a rerun only measures. A cached database is
// loaded anew when it is missing, when its event count or the dataset version differ,
// when it holds a migration this build does not know (another branch's schema), or when
// it is older than --max-age-hours (its events span the six days before the load and the
// pages show the last seven). Migrations this build adds to a cached database are applied
// by the server at start, as an upgrade would.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBenchDatabase, postgresBaseUrl } from './lib/db.mjs';
import { cachedDatabase } from './lib/dataset-cache.mjs';
import { amplify } from './lib/amplify.mjs';
import { startLoad } from './lib/generators.mjs';
import { RELEASES, writeTemplateFile } from './lib/payloads.mjs';
import { freePort, procStats, sleep, startProcess, waitForHealth } from './lib/proc.mjs';
import { percentiles, round } from './lib/stats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

const HELP = `usage: node bench/dashboard.mjs [options]

  --db LIST       sqlite,postgres (default: sqlite, plus postgres when BENCH_DATABASE_URL or TEST_DATABASE_URL is set)
  --events N      events loaded into the measured project (default 1000000)
  --issues N      distinct fingerprints among them (default 10000)
  --samples N     timed requests per page (default 50)
  --pages LIST    only the pages whose path contains one of these comma-separated words
  --cache DIR     where loaded databases are kept for the next run (default bench/.cache)
  --no-cache      load fresh databases and drop them afterwards
  --rebuild       load the cached databases anew
  --max-age-hours N  reload a cached database older than this (default 24)
  --amplify K     ingest events/K events, then copy each K-1 times in SQL and count the
                  aggregates again (bench/lib/amplify.mjs): for a machine too loaded to
                  ingest the whole set; measures of record use the default, 1
  --merge-events N events of each of the two issues merged (default 0; only with --no-cache,
                  since it adds to the data; 100000 is the measure in BENCHMARKS.md)
  --keep-data     with --no-cache: do not delete the databases afterwards (their URLs are printed)
  --reuse LIST    kind=URL,...: measure databases a --keep-data run loaded instead of
                  loading new ones (the server migrates them first), e.g.
                  sqlite=sqlite:/tmp/x/faultline.db,postgres=postgres://.../faultline_bench_ab12
`;

const { values: argv } = parseArgs({
  options: {
    db: { type: 'string' },
    events: { type: 'string', default: '1000000' },
    issues: { type: 'string', default: '10000' },
    samples: { type: 'string', default: '50' },
    pages: { type: 'string' },
    cache: { type: 'string', default: path.join(here, '.cache') },
    'no-cache': { type: 'boolean', default: false },
    rebuild: { type: 'boolean', default: false },
    'max-age-hours': { type: 'string', default: '24' },
    amplify: { type: 'string', default: '1' },
    'merge-events': { type: 'string', default: '0' },
    'keep-data': { type: 'boolean', default: false },
    reuse: { type: 'string' },
    help: { type: 'boolean', default: false },
  },
});
if (argv.help) {
  console.log(HELP);
  process.exit(0);
}
const opts = {
  dbs: (argv.db ?? (postgresBaseUrl() ? 'sqlite,postgres' : 'sqlite')).split(',').map((s) => s.trim()),
  events: Number(argv.events),
  issues: Number(argv.issues),
  samples: Number(argv.samples),
  mergeEvents: argv['no-cache'] ? Number(argv['merge-events']) : 0,
  pages: argv.pages ? argv.pages.split(',').filter(Boolean) : null,
  amplify: Number(argv.amplify),
};
const reuse = new Map(
  (argv.reuse ?? '')
    .split(',')
    .filter(Boolean)
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
const API_KEY = `bench-${randomBytes(8).toString('hex')}`;
const log = (...a) => console.log(...a);

async function startServer(databaseUrl, logFile) {
  const port = await freePort();
  const env = { ...process.env };
  for (const k of ['PUBLIC_URL', 'CORS_ORIGIN', 'RETENTION_DAYS']) delete env[k];
  Object.assign(env, {
    DATABASE_URL: databaseUrl,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT: '0',
    API_KEYS: API_KEY,
    NODE_ENV: 'production',
  });
  const proc = startProcess(
    process.execPath,
    ['--max-old-space-size=1536', path.join(root, 'dist/cli/main.js'), 'serve'],
    { env, logFile, cwd: root },
  );
  const url = `http://127.0.0.1:${port}`;
  await waitForHealth(url, proc);
  return { proc, url };
}

async function api(base, method, pathname, body) {
  const r = await fetch(`${base}${pathname}`, {
    method,
    headers: { authorization: `Bearer ${API_KEY}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await r.text();
  if (r.status >= 400) throw new Error(`${method} ${pathname} answered ${r.status}: ${text.slice(0, 200)}`);
  return JSON.parse(text);
}

async function signIn(base) {
  const r = await fetch(`${base}/login`, {
    method: 'POST',
    redirect: 'manual',
    headers: { origin: base, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ key: API_KEY, next: '/' }),
  });
  const cookie = r.headers.getSetCookie().find((c) => c.startsWith('faultline_session='));
  if (r.status !== 303 || !cookie) throw new Error(`sign-in answered ${r.status}`);
  return cookie.split(';')[0];
}

async function loadEvents(base, counter, slug, events = opts.events, fingerprints = opts.issues) {
  const project = await api(base, 'POST', '/api/projects', { slug, name: `bench ${slug}`, platform: 'backend' });
  const dsn = new URL(project.dsn);
  const templatesFile = path.join(os.tmpdir(), `faultline-dashboard-bench-${process.pid}.json`);
  writeTemplateFile(templatesFile);
  const started = performance.now();
  const load = startLoad({
    generator: 'node',
    mode: 'closed',
    url: base,
    path: `/api/${project.id}/envelope/?sentry_version=7&sentry_key=${dsn.username}&sentry_client=sentry.javascript.node%2F11.12.0`,
    templatesFile,
    prefix: `${randomBytes(4).toString('hex')}00010000`,
    fingerprints,
    spreadSeconds: 6 * 24 * 3600,
    sessionEvery: 10,
    connections: 64,
    events,
  });
  const result = await load.result;
  for (let i = 0; i < 600 && (await counter.count('counted', project.id)) < events; i++) await sleep(100);
  fs.rmSync(templatesFile, { force: true });
  return { id: project.id, seconds: round((performance.now() - started) / 1000), failed: result.failed };
}

async function timePage(base, cookie, p, samples, headers = {}, serverPid = null) {
  const times = [];
  const serverTimes = [];
  let bytes = 0;
  let cpuBefore = null;
  for (let i = 0; i < samples + 3; i++) {
    if (i === 3 && serverPid) cpuBefore = procStats(serverPid)?.cpu ?? null;
    const t = performance.now();
    const r = await fetch(base + p, { headers: { cookie, ...headers }, redirect: 'manual' });
    const body = await r.arrayBuffer();
    const ms = performance.now() - t;
    if (r.status !== 200) throw new Error(`${p} answered ${r.status}`);
    bytes = body.byteLength;
    const server = /page;dur=([0-9.]+)/.exec(r.headers.get('server-timing') ?? '');
    if (i >= 3) {
      times.push(ms);
      if (server) serverTimes.push(Number(server[1]));
    }
  }
  // The server process's CPU per request (all its threads; 10 ms ticks, so a mean over the
  // samples): less bent by other work on a shared machine than the times are.
  const cpuAfter = cpuBefore === null ? null : (procStats(serverPid)?.cpu ?? null);
  const cpuMs = cpuAfter === null ? null : round(((cpuAfter - cpuBefore) * 1000) / samples);
  const [p50, p95, p99] = percentiles(times, [50, 95, 99]);
  const [s50, s95] = serverTimes.length ? percentiles(serverTimes, [50, 95]) : [null, null];
  return {
    page: p,
    p50_ms: round(p50),
    p95_ms: round(p95),
    p99_ms: round(p99),
    server_p50_ms: s50 === null ? null : round(s50),
    server_p95_ms: s95 === null ? null : round(s95),
    server_cpu_ms: cpuMs,
    html_bytes: bytes,
  };
}

async function bytesOf(base, cookie, p) {
  const r = await fetch(base + p, { headers: { cookie } });
  if (r.status !== 200) throw new Error(`${p} answered ${r.status}`);
  return (await r.arrayBuffer()).byteLength;
}

/** Three search tokens: a status, a level and a word (docs/api.md "Issue search"). */
const SEARCH = encodeURIComponent('is:unresolved level:error timeout');

/** Loads two issues of --merge-events events each into a project of their own, then merges one into the other, timed. */
async function benchMerge(base, counter, kind) {
  log(`[${kind}] loading two issues of ${opts.mergeEvents} events each to merge ...`);
  const loaded = await loadEvents(base, counter, 'merge', 2 * opts.mergeEvents, 2);
  const { issues } = await api(base, 'GET', '/api/projects/merge/issues?days=90');
  const [into, from] = issues;
  const started = performance.now();
  const merged = await api(base, 'POST', '/api/projects/merge/issues/merge', {
    fingerprints: [from.fingerprint],
    into: into.fingerprint,
  });
  const ms = round(performance.now() - started);
  log(
    `[${kind}] merged ${from.event_count} events into an issue of ${into.event_count} in ${ms} ms (now ${merged.event_count})`,
  );
  return {
    events: [into.event_count, from.event_count],
    merged_event_count: merged.event_count,
    ms,
    load_seconds: loaded.seconds,
  };
}

async function benchDatabase(kind, runDir) {
  let reused = reuse.get(kind);
  let db;
  if (reused) db = { url: reused, counter: async () => ({}), drop: async () => {} };
  else if (argv['no-cache']) db = await createBenchDatabase(kind);
  else {
    const { migrations } = await import(path.join(root, 'dist/store/migrations.js'));
    db = await cachedDatabase(kind, {
      dir: path.resolve(argv.cache),
      events: opts.events,
      issues: opts.issues,
      amplify: opts.amplify,
      knownMigrations: Object.keys(migrations(kind)),
      maxAgeHours: Number(argv['max-age-hours']),
      rebuild: argv.rebuild,
    });
    log(
      db.fresh
        ? `[${kind}] loading the cached dataset anew: ${db.reason}`
        : `[${kind}] measuring the cached dataset of ${db.meta.built_at}`,
    );
    if (!db.fresh) reused = db.url;
  }
  log(`[${kind}] database ${db.url}`);
  let server = await startServer(db.url, path.join(runDir, `server-${kind}.log`));
  const counter = await db.counter();
  try {
    let loaded = { seconds: null };
    if (!reused) {
      log(
        `[${kind}] loading ${Math.ceil(opts.events / opts.amplify)} events over ${opts.issues} fingerprints${opts.amplify > 1 ? `, then copying them to ${opts.events}` : ''} ...`,
      );
      loaded = await loadEvents(server.url, counter, 'query', Math.ceil(opts.events / opts.amplify));
      log(`[${kind}] loaded in ${loaded.seconds} s${loaded.failed ? ` (${loaded.failed} failed requests)` : ''}`);
      if (opts.amplify > 1) {
        await server.proc.stop();
        const started = performance.now();
        const n = await amplify(db.url, { projectId: loaded.id, k: opts.amplify, spanMs: 6 * 24 * 3600_000, log });
        log(`[${kind}] copied to ${n} events in ${round((performance.now() - started) / 1000)} s`);
        server = await startServer(db.url, path.join(runDir, `server-${kind}.log`));
      }
      if (kind === 'postgres') await counter.vacuumIfAutovacuumOff();
      db.markLoaded?.({ load_seconds: loaded.seconds, failed_requests: loaded.failed });
    }
    const projects = await api(server.url, 'GET', '/api/projects');
    if (!(projects.projects ?? projects).some((p) => p.slug === 'empty'))
      await api(server.url, 'POST', '/api/projects', { slug: 'empty', name: 'Empty', platform: 'web' });
    const cookie = await signIn(server.url);

    const assets = {
      css: await bytesOf(server.url, cookie, '/static/dashboard.css'),
      js: await bytesOf(server.url, cookie, '/static/dashboard.js'),
    };
    const emptyPages = [
      '/',
      '/empty',
      '/empty/issues',
      '/empty/events',
      '/empty/releases',
      '/empty/alerts',
      '/empty/symbols',
      '/empty/settings',
    ];
    const weight = [];
    for (const p of emptyPages) {
      const html = await bytesOf(server.url, cookie, p);
      weight.push({ page: p, html_bytes: html, with_assets_bytes: html + assets.css + assets.js });
    }

    const issues = await api(server.url, 'GET', '/api/projects/query/issues?sort=events&limit=5');
    // Triage: an issue with 50 activity entries (comments and status changes through the API).
    const busy = issues.issues[1]?.fingerprint;
    const activityBefore = (await api(server.url, 'GET', `/api/projects/query/issues/${busy}/activity`)).activity
      .length;
    for (let i = activityBefore; i < 50; i++) {
      if (i % 5 === 0)
        await api(server.url, 'PATCH', `/api/projects/query/issues/${busy}`, {
          status: i % 10 === 0 ? 'triaged' : 'unresolved',
        });
      else
        await api(server.url, 'POST', `/api/projects/query/issues/${busy}/comments`, {
          text: `Comment ${i}: ${'looked into it. '.repeat(8)}`,
        });
    }
    const events = await api(server.url, 'GET', '/api/projects/query/events?limit=1');
    const fp = issues.issues[0]?.fingerprint;
    const release = encodeURIComponent(RELEASES[3]);
    // Each page beside the JSON route it is built on, to tell rendering from querying.
    const A = '/api/projects/query';
    const pages = [
      ['/', '/api/projects'],
      ['/query', `${A}/overview`],
      ['/query/issues', `${A}/issues`],
      ['/query/issues?level=error&q=timeout&sort=events', `${A}/issues?level=error&q=timeout&sort=events`],
      [`/query/issues?q=${SEARCH}&environment=production`, `${A}/issues?q=${SEARCH}&environment=production`],
      ['/query/issues?sort=users', `${A}/issues?sort=users`],
      [`/query/issues/${busy}`, `${A}/issues/${busy}/activity`],
      [`/query/issues/${fp}`, `${A}/issues/${fp}`],
      ['/query/events', `${A}/events`],
      ['/query/events?tag.region=eu-west-1', `${A}/events?tag.region=eu-west-1`],
      [`/query/events/${events.events[0]?.id}`, `${A}/events/${events.events[0]?.id}`],
      ['/query/releases', `${A}/releases`],
      [`/query/releases/${release}`, `${A}/releases/${release}`],
      ['/query/alerts', `${A}/alerts`],
      ['/query/symbols', `${A}/symbols`],
      ['/query/settings', `${A}`],
    ];
    const latency = [];
    for (const [p, apiPath] of pages) {
      if (opts.pages && !opts.pages.some((w) => p.includes(w))) continue;
      const r = await timePage(server.url, cookie, p, opts.samples, {}, server.proc.pid);
      const j = await timePage(server.url, `x=1`, apiPath, opts.samples, { authorization: `Bearer ${API_KEY}` });
      r.api = { path: apiPath, p50_ms: j.p50_ms, p95_ms: j.p95_ms };
      log(
        `[${kind}] ${p}: p50 ${r.p50_ms} ms, p95 ${r.p95_ms} ms, p99 ${r.p99_ms} ms (in the dashboard: p50 ${r.server_p50_ms}, p95 ${r.server_p95_ms}; server CPU ${r.server_cpu_ms} ms per request), ${r.html_bytes} B; JSON route: p50 ${j.p50_ms} ms, p95 ${j.p95_ms} ms`,
      );
      latency.push(r);
    }
    for (const w of weight)
      log(`[${kind}] empty ${w.page}: ${w.html_bytes} B HTML, ${w.with_assets_bytes} B with CSS and JS`);
    const merge = opts.mergeEvents > 0 && !reused ? await benchMerge(server.url, counter, kind) : null;
    return {
      kind,
      events: opts.events,
      issues: opts.issues,
      load_seconds: loaded.seconds,
      assets,
      weight,
      latency,
      merge,
    };
  } finally {
    await counter.close?.();
    await server.proc.stop();
    if (!argv['keep-data']) await db.drop();
  }
}

async function main() {
  if (!fs.existsSync(path.join(root, 'dist/cli/main.js'))) throw new Error('run `npm run build` first');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const runDir = path.join(here, 'results');
  fs.mkdirSync(runDir, { recursive: true });
  const result = {
    kind: 'dashboard',
    at: new Date().toISOString(),
    cpus: os.cpus().length,
    samples: opts.samples,
    databases: {},
  };
  for (const kind of opts.dbs) result.databases[kind] = await benchDatabase(kind, runDir);
  const file = path.join(runDir, `dashboard-${stamp}.json`);
  fs.writeFileSync(file, JSON.stringify(result, null, 2));
  log(`results: ${path.relative(root, file)}`);
}

main().catch((err) => {
  console.error(`bench/dashboard: ${err.stack ?? err}`);
  process.exit(1);
});
