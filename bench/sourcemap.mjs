// Source-map memory and parse time (issue 38), against the built server (npm run build first):
//
//   1. what a loaded map really holds, in this process: the V8 heap and ArrayBuffer memory
//      a LoadedSourceMap keeps (after full collections) against what the parse cache
//      charges for it (`memoryBytes`), for maps of several shapes; and the same realistic
//      map held by @jridgewell/trace-mapping with its mappings decoded (the old loader);
//   2. for a realistic 50 MB map (2 M segments, 40 MB sourcesContent) and the largest map
//      the limits allow (10 M segments on 1.99 M lines, 150 MB sourcesContent): a fresh
//      `faultline serve` on SQLite, the upload, then the first event that needs the map:
//      its ingest answer time and the time until the event shows symbolicated frames
//      (first use: read, parse on the parse thread, symbolicate), /health p50/p99/max
//      polled every 5 ms from the upload's end to that point (and, as the control, for
//      3 s on the idle server before the upload), and the server's peak RSS.
//
//   node bench/sourcemap.mjs [--quick] [--skip-largest] [--server-only]
//
// (--server-only: part 2 alone, e.g. against an older build for comparison.)
//
// The machine is shared: times vary with what else runs; memory is steadier.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { encode } from '@jridgewell/sourcemap-codec';
import { TraceMap, decodedMappings } from '@jridgewell/trace-mapping';
import { freePort, procStats, sleep, startProcess, waitForHealth } from './lib/proc.mjs';
import { percentiles, round } from './lib/stats.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');
const QUICK = process.argv.includes('--quick');
const SKIP_LARGEST = process.argv.includes('--skip-largest');
const MB = 1024 * 1024;

if (!fs.existsSync(CLI)) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(2);
}
// Part 1 needs full collections between measurements.
if (typeof globalThis.gc !== 'function') {
  const r = spawnSync(process.execPath, ['--expose-gc', '--max-old-space-size=4096', ...process.argv.slice(1)], {
    stdio: 'inherit',
  });
  process.exit(r.status ?? 1);
}

const SERVER_ONLY = process.argv.includes('--server-only');
const { parseSourceMap, LoadedSourceMap } = await import('../dist/symbols/sourcemap.js');
// The limits (a build from before them has none: the same sizes then, for comparison).
const { SOURCE_MAP_LIMITS } = await import('../dist/symbols/sourcemap-index.js').catch(() => ({
  SOURCE_MAP_LIMITS: { maxSegments: 10_000_000, maxLines: 2_000_000 },
}));

const scale = QUICK ? 0.1 : 1;

/** A bundle-like map: `segments` over `lines` generated lines, `contentBytes` of sources over `files` files. */
function buildMap({ segments, lines, contentBytes, files = 2000, names = 50_000 }) {
  const perLine = Math.ceil(segments / lines);
  const decoded = [];
  let made = 0;
  let seed = 1;
  const rnd = (n) => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % n;
  };
  // As a bundler writes them: columns a few apart, the source changing now and then, the
  // original line moving a little, a name on some segments (about 5 bytes a segment).
  let src = 0;
  let oLine = 0;
  let oCol = 0;
  let name = 0;
  for (let l = 0; l < lines; l++) {
    const line = [];
    let col = 0;
    for (let s = 0; s < perLine && made < segments; s++, made++) {
      col += 1 + rnd(8);
      if (rnd(40) === 0) src = rnd(files);
      oLine = Math.max(0, oLine + rnd(4) - 1);
      oCol = Math.max(0, oCol + rnd(15) - 7);
      if (rnd(6) === 0) name = Math.min(names - 1, Math.max(0, name + rnd(30) - 14));
      line.push(rnd(6) === 0 ? [col, src, oLine, oCol, name] : [col, src, oLine, oCol]);
    }
    decoded.push(line);
  }
  const sourceText = 'export function handler(request, response) { return compute(request.body, response); }\n';
  const perFile = Math.floor(contentBytes / files);
  const content = sourceText.repeat(Math.max(1, Math.ceil(perFile / sourceText.length))).slice(0, perFile);
  const parts = [
    '{"version":3,"file":"app.min.js","sources":',
    JSON.stringify(Array.from({ length: files }, (_, i) => `webpack:///./src/module${i}.js`)),
    ',"names":',
    JSON.stringify(Array.from({ length: names }, (_, i) => `identifier${i}`)),
    ',"mappings":',
    JSON.stringify(encode(decoded)),
    ',"sourcesContent":[',
  ];
  const text = parts.join('') + Array.from({ length: files }, () => JSON.stringify(content)).join(',') + ']}';
  return Buffer.from(text);
}

function held() {
  globalThis.gc();
  globalThis.gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** Memory one loaded map keeps against what the cache charges for it. */
function measureLoaded(label, bytes) {
  const before = held();
  const t0 = performance.now();
  let loaded = new LoadedSourceMap(parseSourceMap(bytes, 'bench.js.map'));
  const parseMs = performance.now() - t0;
  const after = held();
  const charged = loaded.memoryBytes;
  loaded.lookup(1, 1);
  loaded = null;
  return {
    label,
    fileMB: round(bytes.length / MB, 1),
    parseMs: round(parseMs, 0),
    heldMB: round((after - before) / MB, 1),
    chargedMB: round(charged / MB, 1),
    ratio: round(charged / (after - before), 2),
  };
}

function measureTraceMapping(label, bytes) {
  const before = held();
  const t0 = performance.now();
  let map = new TraceMap(JSON.parse(bytes.toString('utf8')));
  decodedMappings(map);
  const parseMs = performance.now() - t0;
  const after = held();
  map = null;
  return {
    label,
    fileMB: round(bytes.length / MB, 1),
    parseMs: round(parseMs, 0),
    heldMB: round((after - before) / MB, 1),
    chargedMB: round((bytes.length * 3 + 4096) / MB, 1),
    ratio: null,
  };
}

console.log(
  `node ${process.version}, ${os.cpus().length} CPUs, heap limit ${round(v8.getHeapStatistics().heap_size_limit / MB, 0)} MB${QUICK ? ', --quick' : ''}`,
);
const realistic = {
  segments: Math.round(2_000_000 * scale),
  lines: Math.round(5_000 * scale),
  contentBytes: Math.round(40 * MB * scale),
};
const largest = {
  segments: Math.round(SOURCE_MAP_LIMITS.maxSegments * scale),
  lines: Math.round((SOURCE_MAP_LIMITS.maxLines - 10_000) * scale),
  contentBytes: Math.round(150 * MB * scale),
};

// ---------------------------------------------------------------- 1. held against charged
const shapes = [
  ['realistic (2 M segments, 40 MB sourcesContent)', realistic],
  ['no sourcesContent, 2 M segments', { ...realistic, contentBytes: 0, files: 2000 }],
  [
    'degenerate: 10 M segments on one line',
    { segments: Math.round(SOURCE_MAP_LIMITS.maxSegments * scale), lines: 1, contentBytes: 0, files: 1, names: 1 },
  ],
  [
    '500 000 names, 1 M segments',
    {
      segments: Math.round(1_000_000 * scale),
      lines: 2000,
      contentBytes: 0,
      files: 100,
      names: Math.round(500_000 * scale),
    },
  ],
];
const rows = [];
for (const [label, shape] of SERVER_ONLY ? [] : shapes) {
  const bytes = buildMap(shape);
  rows.push(measureLoaded(label, bytes));
  if (shape === realistic) rows.push(measureTraceMapping('the same map in trace-mapping (old loader), decoded', bytes));
}
if (!SERVER_ONLY) {
  console.log('\n1. memory a loaded map holds (heap + ArrayBuffers, after GC) against the cache charge');
  console.table(rows);
}

// ---------------------------------------------------------------- 2. the server
/** GET /health every 5 ms while `go()`, each answer's time into `out`. */
async function pollHealth(url, out, go) {
  while (go()) {
    const t = performance.now();
    const r = await fetch(`${url}/health`);
    await r.arrayBuffer();
    out.push(performance.now() - t);
    await sleep(5);
  }
}

async function serverRun(label, bytes) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-bench-sm-'));
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    DATABASE_URL: `sqlite:${path.join(dir, 'f.db')}`,
    PORT: String(port),
    HOST: '127.0.0.1',
    RATE_LIMIT: '0',
    LOG_LEVEL: 'warn',
  };
  delete env.API_KEYS;
  // As `npm start` runs it.
  const server = startProcess(process.execPath, ['--max-old-space-size=1536', CLI, 'serve'], {
    env: { ...env, MALLOC_MMAP_THRESHOLD_: '131072' },
    logFile: path.join(dir, 'server.log'),
    cwd: ROOT,
  });
  try {
    await waitForHealth(url, server);
    const created = await (
      await fetch(`${url}/api/projects`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ slug: 'bench' }),
      })
    ).json();
    const key = new URL(created.dsn).username;
    const idleRss = procStats(server.pid).rss;
    // The control: /health on the idle server for 3 s (the machine's own noise).
    const idle = [];
    const idleUntil = performance.now() + 3000;
    await pollHealth(url, idle, () => performance.now() < idleUntil);
    const form = new FormData();
    form.append('kind', 'sourcemap');
    form.append('release', '1.0');
    form.append('file', new Blob([bytes]), 'app.min.js.map');
    const up0 = performance.now();
    const up = await fetch(`${url}/api/projects/bench/symbols`, { method: 'POST', body: form });
    const uploadMs = performance.now() - up0;
    if (up.status !== 201) throw new Error(`upload answered ${up.status}: ${await up.text()}`);
    await up.arrayBuffer();
    // /health polled from here until the first event is symbolicated.
    let polling = true;
    const health = [];
    const poller = pollHealth(url, health, () => polling);
    let peak = 0;
    const rssTimer = setInterval(() => (peak = Math.max(peak, procStats(server.pid)?.rss ?? 0)), 50);
    const id = randomBytes(16).toString('hex');
    const frames = [
      {
        abs_path: 'https://cdn.example.com/app.min.js',
        filename: 'https://cdn.example.com/app.min.js',
        function: 'o',
        lineno: 3,
        colno: 40,
        in_app: true,
      },
    ];
    const event = {
      event_id: id,
      platform: 'javascript',
      level: 'error',
      release: '1.0',
      timestamp: Date.now() / 1000,
      exception: { values: [{ type: 'Error', value: 'boom', stacktrace: { frames } }] },
    };
    const t0 = performance.now();
    const res = await fetch(`${url}/api/${created.id}/envelope/?sentry_key=${key}`, {
      method: 'POST',
      body: `{"event_id":"${id}"}\n{"type":"event"}\n${JSON.stringify(event)}\n`,
    });
    await res.arrayBuffer();
    const ingestMs = performance.now() - t0;
    let symbolicatedMs = null;
    for (let i = 0; i < 6000; i++) {
      const r = await fetch(`${url}/api/projects/bench/events/${id}`);
      const body = r.status === 200 ? await r.json() : (await r.arrayBuffer(), null);
      if (body?.exceptions?.at(-1)?.symbolicated_frames) {
        symbolicatedMs = performance.now() - t0;
        break;
      }
      await sleep(20);
    }
    // A few more samples after the parse, then stop.
    await sleep(300);
    polling = false;
    await poller;
    clearInterval(rssTimer);
    const stats = procStats(server.pid);
    const [p50, p99] = percentiles(health, [50, 99]);
    const [idleP50, idleP99] = percentiles(idle, [50, 99]);
    return {
      label,
      fileMB: round(bytes.length / MB, 1),
      uploadS: round(uploadMs / 1000, 2),
      ingestAnswerMs: round(ingestMs, 0),
      firstUseMs: symbolicatedMs === null ? 'never' : round(symbolicatedMs, 0),
      idleHealthP50P99MaxMs: `${round(idleP50, 1)} / ${round(idleP99, 1)} / ${round(Math.max(...idle), 1)}`,
      healthSamples: health.length,
      healthP50Ms: round(p50, 1),
      healthP99Ms: round(p99, 1),
      healthMaxMs: round(Math.max(...health), 1),
      idleRssMB: round(idleRss / MB, 0),
      peakRssMB: round(Math.max(peak, stats.hwm ?? 0) / MB, 0),
    };
  } finally {
    await server.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const runs = [await serverRun('realistic 50 MB map', buildMap(realistic))];
if (!SKIP_LARGEST) runs.push(await serverRun('largest map within the limits', buildMap(largest)));
console.log('\n2. the server (SQLite): upload, then the first event that needs the map');
console.table(runs);
