#!/usr/bin/env node
// Attachment benchmark (`node bench/attachments.mjs`): starts the real server (dist/) on
// a fresh SQLite database (then PostgreSQL when BENCH_DATABASE_URL or TEST_DATABASE_URL is
// set) and sends --events Android crash envelopes at --concurrency, first plain, then each
// with a 300 KB screenshot (incompressible, as PNG data is) and a 50 KB view hierarchy:
// events/s and MB/s of request bodies for both, the server's RSS after each phase; then
// the dashboard's event page of an event with both attachments (p50/p95 over --samples
// requests after warm-ups). Needs dist/ (npx tsc -p tsconfig.build.json). Writes JSON to
// bench/results/. Never asserts on speed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBenchDatabase, postgresBaseUrl } from './lib/db.mjs';
import { freePort, procStats, startProcess, waitForHealth } from './lib/proc.mjs';
import { percentiles, round } from './lib/stats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const { values: argv } = parseArgs({
  options: {
    db: { type: 'string' },
    events: { type: 'string', default: '2000' },
    concurrency: { type: 'string', default: '16' },
    samples: { type: 'string', default: '50' },
  },
});
const N = Number(argv.events);
const C = Number(argv.concurrency);
const kinds = argv.db ? argv.db.split(',') : ['sqlite', ...(postgresBaseUrl() ? ['postgres'] : [])];
const event = JSON.parse(fs.readFileSync(path.join(root, 'test/fixtures/mobile/android-event.json'), 'utf8'));

/** A screenshot's bytes: a PNG signature, then data that does not compress. */
const screenshot = Buffer.concat([
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
  randomBytes(300 * 1024 - 8),
]);
/** A 50 KB view hierarchy: nested views as the Android SDK writes them. */
function viewHierarchy() {
  const views = [];
  for (let i = 0; views.length === 0 || JSON.stringify(views).length < 50 * 1024; i++) {
    views.push({
      type: 'android.widget.TextView',
      identifier: `label_${i}`,
      width: 300,
      height: 60,
      x: 10,
      y: i * 60,
      alpha: 1,
      visibility: 'visible',
      children: [],
    });
  }
  return Buffer.from(
    JSON.stringify({
      rendering_system: 'android_view_system',
      windows: [
        {
          type: 'com.android.internal.policy.DecorView',
          width: 1080,
          height: 2400,
          children: [{ type: 'android.widget.LinearLayout', children: views }],
        },
      ],
    }),
  );
}
const hierarchy = viewHierarchy();

function envelope(withFiles) {
  const id = randomBytes(16).toString('hex');
  const items = [
    [{ type: 'event' }, Buffer.from(JSON.stringify({ ...event, event_id: id, timestamp: Date.now() / 1000 }))],
  ];
  if (withFiles) {
    items.push([
      {
        type: 'attachment',
        filename: 'screenshot.png',
        content_type: 'image/png',
        attachment_type: 'event.attachment',
      },
      screenshot,
    ]);
    items.push([
      {
        type: 'attachment',
        filename: 'view-hierarchy.json',
        content_type: 'application/json',
        attachment_type: 'event.view_hierarchy',
      },
      hierarchy,
    ]);
  }
  const parts = [Buffer.from(`${JSON.stringify({ event_id: id })}\n`)];
  for (const [h, payload] of items)
    parts.push(Buffer.from(`${JSON.stringify({ ...h, length: payload.length })}\n`), payload, Buffer.from('\n'));
  return { id, body: Buffer.concat(parts) };
}

async function phase(url, project, withFiles) {
  const bodies = Array.from({ length: N }, () => envelope(withFiles));
  let next = 0;
  let bytes = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: C }, async () => {
      while (next < bodies.length) {
        const { body } = bodies[next++];
        const res = await fetch(`${url}/api/${project.id}/envelope/?sentry_key=${project.dsn_key}`, {
          method: 'POST',
          body,
        });
        if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
        await res.arrayBuffer();
        bytes += body.length;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    events: N,
    seconds: round(seconds),
    events_per_s: round(N / seconds),
    mb_per_s: round(bytes / 1024 / 1024 / seconds),
    last: bodies.at(-1).id,
  };
}

async function measure(kind) {
  const database = await createBenchDatabase(kind);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const logFile = path.join(os.tmpdir(), `faultline-bench-attachments-${kind}.log`);
  const proc = startProcess(process.execPath, [path.join(here, 'server-entry.mjs')], {
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      RATE_LIMIT: '0',
      API_KEYS: '',
    },
    logFile,
    cwd: root,
  });
  try {
    await waitForHealth(url, proc);
    const created = await fetch(`${url}/api/projects`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slug: 'bench', platform: 'android' }),
    });
    const project = await created.json();
    project.dsn_key = new URL(project.dsn).username;
    const plain = await phase(url, project, false);
    plain.rss_mb = round(procStats(proc.pid).rss / 1024 / 1024);
    const files = await phase(url, project, true);
    files.rss_mb = round(procStats(proc.pid).rss / 1024 / 1024);
    const page = `${url}/bench/events/${files.last}`;
    const times = [];
    let cpuBefore = null;
    for (let i = 0; i < 3 + Number(argv.samples); i++) {
      if (i === 3) cpuBefore = procStats(proc.pid).cpu;
      const t0 = performance.now();
      const res = await fetch(page);
      const html = await res.text();
      if (res.status !== 200 || !html.includes('view-hierarchy')) throw new Error(`event page answered ${res.status}`);
      if (i >= 3) times.push(performance.now() - t0);
    }
    // The server's CPU per page (all its threads, 10 ms ticks): less bent by a loaded machine than the times.
    const cpuMs = round(((procStats(proc.pid).cpu - cpuBefore) * 1000) / Number(argv.samples));
    const [p50, p95, p99] = percentiles(times, [50, 95, 99]);
    return {
      kind,
      plain,
      with_attachments: files,
      event_page_ms: { p50: round(p50), p95: round(p95), p99: round(p99), server_cpu: cpuMs },
      hwm_mb: round(procStats(proc.pid).hwm / 1024 / 1024),
    };
  } finally {
    await proc.stop();
    await database.drop();
  }
}

const results = [];
for (const kind of kinds) {
  const r = await measure(kind);
  results.push(r);
  console.log(JSON.stringify(r));
}
fs.mkdirSync(path.join(here, 'results'), { recursive: true });
fs.writeFileSync(
  path.join(here, 'results', `attachments-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
  `${JSON.stringify({ events: N, concurrency: C, cpus: os.cpus().length, results }, null, 2)}\n`,
);
