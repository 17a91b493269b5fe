#!/usr/bin/env node
// Whole-server cost of scrubbing (BENCHMARKS.md "Scrubbing"): the real server (dist/, a
// fresh SQLite file) takes the benchmark's SDK-shaped envelopes for two projects, one
// with scrubbing off and one with the defaults plus 20 custom fields, in alternating
// closed-loop phases of the node load generator. Each phase reports events/s and the
// server's CPU seconds per 1 000 events (from /proc, so other work on a shared machine
// counts less than in wall-clock rates). Usage: node bench/scrub-server.mjs [pairs]
// [seconds] (run `npm run build` first).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startLoad } from './lib/generators.mjs';
import { writeTemplateFile } from './lib/payloads.mjs';
import { freePort, procStats, startProcess, waitForHealth } from './lib/proc.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pairs = Number(process.argv[2] ?? 4);
const seconds = Number(process.argv[3] ?? 8);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-scrub-bench-'));
const templatesFile = path.join(dir, 'templates.txt');
writeTemplateFile(templatesFile);
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
const key = 'scrub-bench-key-0123456789';
const server = startProcess(process.execPath, [path.join(root, 'dist/cli/main.js'), 'serve'], {
  env: {
    ...process.env,
    DATABASE_URL: `sqlite:${path.join(dir, 'faultline.db')}`,
    PORT: String(port),
    HOST: '127.0.0.1',
    API_KEYS: key,
    RATE_LIMIT: '0',
    LOG_LEVEL: 'warn',
  },
  logFile: path.join(dir, 'server.log'),
  cwd: root,
});
try {
  await waitForHealth(base, server);
  const create = async (body) => {
    const r = await fetch(`${base}/api/projects`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (r.status !== 201) throw new Error(`project: ${r.status} ${await r.text()}`);
    return r.json();
  };
  const off = await create({ slug: 'scrub-off', scrub_defaults: false });
  const on = await create({
    slug: 'scrub-on',
    scrub_fields: Array.from({ length: 20 }, (_, i) => `custom_field_${i}`),
  });
  const phase = async (project, n) => {
    const dsnKey = new URL(project.dsn).username;
    const before = procStats(server.pid).cpu;
    const load = startLoad({
      generator: 'node',
      url: base,
      path: `/api/${project.id}/envelope/?sentry_key=${dsnKey}`,
      templatesFile,
      prefix: (n.toString(16) + 'abcdef0123456789').slice(0, 16).padStart(16, '0'),
      fingerprints: 500,
      sessionEvery: 0,
      connections: 32,
      duration: seconds,
    });
    const r = await load.result;
    const cpu = procStats(server.pid).cpu - before;
    return { rate: r.ok / r.seconds, cpuPer1000: (cpu / Math.max(1, r.ok)) * 1000 };
  };
  const rows = [];
  let n = 0;
  for (let i = 0; i < pairs; i++) {
    const order = i % 2 === 0 ? [off, on] : [on, off];
    const result = {};
    for (const p of order) result[p === off ? 'off' : 'on'] = await phase(p, ++n);
    rows.push(result);
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(
    JSON.stringify(
      {
        pairs,
        seconds,
        off_events_per_s: Math.round(median(rows.map((r) => r.off.rate))),
        on_events_per_s: Math.round(median(rows.map((r) => r.on.rate))),
        rate_ratio_median: Number(median(rows.map((r) => r.on.rate / r.off.rate)).toFixed(3)),
        cpu_ms_per_1000_off: Number(median(rows.map((r) => r.off.cpuPer1000 * 1000)).toFixed(1)),
        cpu_ms_per_1000_on: Number(median(rows.map((r) => r.on.cpuPer1000 * 1000)).toFixed(1)),
        cpu_ratio_median: Number(median(rows.map((r) => r.off.cpuPer1000 / r.on.cpuPer1000)).toFixed(3)),
      },
      null,
      2,
    ),
  );
} finally {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
