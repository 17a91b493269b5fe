// Memory under hostile input (#25 item 9): starts `faultline serve` (dist/, as
// `npm start` runs it) on a fresh SQLite database, runs a warm-up pass and then
// RUNS passes of a hostile corpus (deep nesting, near-limit and gzip-bomb bodies,
// malformed envelopes, many distinct events, issues, releases, tags and user agents,
// management requests with bad input), and reads the server's RSS once it has been
// idle for a few seconds after each pass. Passes when every idle RSS is within
// LIMIT x the idle RSS after warm-up and the last is not the highest of an upward run.
//
//   node bench/hostile-memory.mjs [--runs 5] [--requests 1400] [--idle-ms 4000] [--big] [--glibc-default] [--postgres URL] [--trace-gc]
//
// The machine is shared: the numbers are noisy; the ratio, not the absolute MB, is the
// signal. Exits 1 when the bound does not hold.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { freePort, procStats, sleep, startProcess, waitForHealth } from './lib/proc.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(ROOT, 'dist/cli/main.js');
const LIMIT = 1.3;

function option(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : fallback;
}
const RUNS = Number(option('runs', 5));
const REQUESTS = Number(option('requests', 1400));
const IDLE_MS = Number(option('idle-ms', 4000));
const CONCURRENCY = 8;
const POSTGRES = option('postgres', null);
const TRACE_GC = process.argv.includes('--trace-gc');
/** --glibc-default: run the server without the allocator setting `npm start` uses. */
const GLIBC_DEFAULT = process.argv.includes('--glibc-default');
/** --big: the big-body cases send 12-19 MB (just under the limit) instead of up to 2 MB. */
const BIG = process.argv.includes('--big');

if (!fs.existsSync(CLI)) {
  console.error('dist/ is missing: run `npm run build` first');
  process.exit(2);
}

const hex = (n) => randomBytes(n).toString('hex');
const MB = 1024 * 1024;

/** One hostile request: method, path (relative to the server), headers, body. */
function hostile(i, project) {
  const ingest = `/api/${project.id}/envelope/?sentry_key=${project.key}`;
  const event = (extra = {}) => ({
    event_id: hex(16),
    timestamp: Date.now() / 1000,
    platform: 'javascript',
    level: 'error',
    release: `rel-${hex(4)}`,
    environment: 'hostile',
    tags: { a: hex(90), b: hex(90) },
    user: { id: hex(8) },
    request: {
      headers: { 'User-Agent': `Mozilla/5.0 (X11; Linux x86_64) Hostile/${hex(6)} Chrome/131.0.${i}.0 Safari/537.36` },
    },
    exception: {
      values: [
        {
          type: `E${hex(3)}`,
          value: hex(40),
          stacktrace: { frames: [{ filename: `/app/${hex(6)}.js`, function: hex(6), lineno: i, in_app: true }] },
        },
      ],
    },
    ...extra,
  });
  const env = (items) =>
    `{}\n${items.map((p) => `{"type":"event"}\n${typeof p === 'string' ? p : JSON.stringify(p)}`).join('\n')}`;
  const deep = (n, open = '[', close = ']') => open.repeat(n) + '1' + close.repeat(n);
  switch (i % 14) {
    case 0: // deep nesting in several places, valid events beside it
      return {
        method: 'POST',
        path: ingest,
        body: env([
          JSON.stringify(event()).replace('"level":"error"', `"level":"error","extra":${deep(5000)}`),
          event(),
          event(),
        ]),
      };
    case 1:
      return {
        method: 'POST',
        path: ingest,
        body: env([JSON.stringify(event()).replace('"tags":{', `"tags":{"deep":${deep(5000, '{"a":', '}')},`)]),
      };
    case 2: // 100 distinct events with long text: many issues, releases, seen ids
      return {
        method: 'POST',
        path: ingest,
        body: env(Array.from({ length: 100 }, () => event({ message: hex(2000) }))),
      };
    case 3: // a gzip bomb (413)
      return { method: 'POST', path: ingest, headers: { 'Content-Encoding': 'gzip' }, body: BOMB };
    case 4: // a body of a few MB that is one big event (stored)
      return {
        method: 'POST',
        path: ingest,
        body: env([event({ extra: { blob: 'x'.repeat(BIG ? (12 + (i % 8)) * MB : (i % 3) * MB + 1000) } })]),
      };
    case 5: // over the 20 MB limit (413), now and then
      if (i % 70 === 5) return { method: 'POST', path: ingest, body: OVERSIZED };
      return {
        method: 'POST',
        path: ingest,
        body: env([
          event({ breadcrumbs: Array.from({ length: 300 }, () => ({ message: hex(100), data: { a: hex(50) } })) }),
        ]),
      };
    case 6: // malformed
      return {
        method: 'POST',
        path: ingest,
        body: `{"dsn":"http://%ff@h/1"}\n{"type":"event","length":99999}\n${hex(500)}`,
      };
    case 7: // NUL and lone surrogates everywhere
      return {
        method: 'POST',
        path: ingest,
        body: env([JSON.stringify(event({ message: 'a\u0000b\ud800' })).replaceAll('"hostile"', '"\\u0000\\ud800"')]),
      };
    case 8: // wrong key (401)
      return { method: 'POST', path: `/api/${project.id}/envelope/?sentry_key=${hex(16)}`, body: env([event()]) };
    case 9: // sessions with many releases and sids
      return {
        method: 'POST',
        path: ingest,
        body: `{}\n${Array.from({ length: 50 }, () => `{"type":"session"}\n${JSON.stringify({ sid: hex(16), init: true, started: new Date().toISOString(), status: 'unhandled', attrs: { release: `rel-${hex(4)}` } })}`).join('\n')}`,
      };
    case 10: // management: bad query parameters and paths
      return {
        method: 'GET',
        path: `/api/projects/${project.slug}/issues?q=${hex(200)}&days=${i}&limit=abc&environment=%00`,
      };
    case 11:
      return {
        method: 'GET',
        path: `/api/projects/${project.slug}/events?release=${'%ed%a0%80'.repeat(10)}&q=${hex(300)}`,
      };
    case 12:
      return {
        method: 'POST',
        path: `/api/projects`,
        headers: { 'content-type': 'application/json' },
        body: `{"slug":"${hex(40)}","name":${JSON.stringify(hex(10))},"x":${deep(3000)}}`,
      };
    default: // an envelope of many small malformed items
      return {
        method: 'POST',
        path: ingest,
        body: `{}\n${Array.from({ length: 2000 }, () => `{"type":"event"}\n{"event_id":${hex(4)}`).join('\n')}`,
      };
  }
}

const BOMB = gzipSync(Buffer.alloc(30 * MB));
const OVERSIZED = Buffer.alloc(21 * MB, 0x61);

async function request(base, r) {
  try {
    const res = await fetch(base + r.path, { method: r.method, headers: r.headers, body: r.body, duplex: 'half' });
    await res.arrayBuffer();
    return res.status;
  } catch {
    return 0; // the server may close a connection it refused before reading the whole body
  }
}

async function pass(base, project, count) {
  const statuses = new Map();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        const status = await request(base, hostile(i, project));
        statuses.set(status, (statuses.get(status) ?? 0) + 1);
      }
    }),
  );
  return Object.fromEntries([...statuses].sort((a, b) => a[0] - b[0]));
}

async function idleRss(pid) {
  await sleep(IDLE_MS);
  return procStats(pid)?.rss ?? NaN;
}

const mb = (b) => (b / MB).toFixed(1);

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-hostile-'));
  const port = await freePort();
  const databaseUrl = POSTGRES ?? `sqlite:${path.join(dir, 'faultline.db')}`;
  const logFile = path.join(dir, 'server.log');
  // The flags and allocator setting of `npm start` (package.json; README "Memory").
  const allocator = GLIBC_DEFAULT ? {} : { MALLOC_MMAP_THRESHOLD_: '131072' };
  const args = ['--max-old-space-size=1536', '--v8-pool-size=2', ...(TRACE_GC ? ['--trace-gc'] : []), CLI, 'serve'];
  const server = startProcess(process.execPath, args, {
    env: {
      ...allocator,
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT: '0',
    },
    logFile,
    cwd: ROOT,
  });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHealth(base, server);
    const created = await fetch(`${base}/api/projects`, {
      method: 'POST',
      body: JSON.stringify({ slug: `hostile-${hex(3)}` }),
    });
    const p = await created.json();
    const project = { id: p.id, slug: p.slug, key: new URL(p.dsn).username };
    console.log(
      `faultline serve pid ${server.pid} on ${POSTGRES ? 'PostgreSQL' : 'SQLite'}${GLIBC_DEFAULT ? ' (glibc malloc defaults)' : ''}${BIG ? ', big bodies' : ''}; ${REQUESTS} hostile requests per pass, idle ${IDLE_MS} ms before each reading`,
    );
    console.log(`started: RSS ${mb(procStats(server.pid).rss)} MB`);
    const warm = await pass(base, project, REQUESTS);
    const baseline = await idleRss(server.pid);
    console.log(`warm-up: idle RSS ${mb(baseline)} MB  statuses ${JSON.stringify(warm)}`);
    const readings = [];
    for (let run = 1; run <= RUNS; run++) {
      const statuses = await pass(base, project, REQUESTS);
      const rss = await idleRss(server.pid);
      readings.push(rss);
      console.log(
        `run ${run}: idle RSS ${mb(rss)} MB (${(rss / baseline).toFixed(2)}x warm-up, peak so far ${mb(procStats(server.pid).hwm)} MB)  statuses ${JSON.stringify(statuses)}`,
      );
      if (statuses[500] || statuses[0] === REQUESTS)
        console.log(`  run ${run}: the server failed some requests (see ${logFile})`);
    }
    const worst = Math.max(...readings) / baseline;
    const rising = readings.every((r, i) => i === 0 || r > readings[i - 1]);
    console.log(
      `highest idle RSS ${worst.toFixed(2)}x warm-up (limit ${LIMIT}x)${rising ? '; every run higher than the one before' : ''}`,
    );
    console.log('(numbers from a shared machine: noisy)');
    if (worst > LIMIT || (rising && readings.length > 2)) process.exitCode = 1;
  } finally {
    await server.stop();
    if (!TRACE_GC) fs.rmSync(dir, { recursive: true, force: true });
    else console.log(`server log with --trace-gc lines: ${logFile}`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
