// The serverless edition's ingest benchmark (BENCHMARKS.md "Serverless edition"): the
// Worker under Miniflare (workerd and a local D1, as `npm run worker` serves it) beside
// the Node edition on SQLite, in the same run, with the same load generator and the same
// envelopes (bench/lib/payloads.mjs: SDK-shaped events, a session every 10th request).
// Reports per edition: events/s, latency percentiles, CPU-seconds of the serving
// processes; the Worker/Node ratio; the D1 statements and batches per request (from the
// commit the Worker builds for the same envelopes); cold starts: time to the first
// answered request on a fresh D1 (the schema is migrated then) and on an existing one; and
// the D1 bytes per event of the direct path, the queue path and the direct path with the
// R2 bucket bound (payloads in R2, D1 holding rows and keys), with R2's bytes beside; and,
// from the same statements run on SQLite with D1's page size (bench/d1-bytes.mjs), which
// table or index takes those bytes, direct and queue path, with R2.
//
//   node bench/worker.mjs [--duration 20] [--connections 8] [--fingerprints 100] [--d1-dir /dev/shm] [--smoke]
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { createBenchDatabase } from './lib/db.mjs';
import { startLoad } from './lib/generators.mjs';
import { createFiller, readTemplateFile, writeTemplateFile } from './lib/payloads.mjs';
import { freePort, procStats, startProcess, waitForHealth } from './lib/proc.mjs';
import { round } from './lib/stats.mjs';
import { d1BytesPerEvent } from './d1-bytes.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const { values: argv } = parseArgs({
  options: {
    duration: { type: 'string', default: '20' },
    connections: { type: 'string', default: '8' },
    fingerprints: { type: 'string', default: '100' },
    smoke: { type: 'boolean', default: false },
    // Where the local D1 keeps its files (default: under the OS temp folder); /dev/shm shows the cost of the disk's flushes.
    'd1-dir': { type: 'string' },
  },
});
const duration = argv.smoke ? 3 : Number(argv.duration);
const connections = Number(argv.connections);
const fingerprints = Number(argv.fingerprints);

if (!fs.existsSync(path.join(root, 'dist/editions/workers/local.js')))
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
const dist = (p) => import(path.join(root, 'dist', p));
const { buildWorkerBundle, startLocalWorker } = await dist('editions/workers/local.js');
const { compressBlob, workersIngestRuntime } = await dist('editions/workers/runtime.js');
const { parseEnvelope } = await dist('ingest/envelope.js');
const { buildWork } = await dist('ingest/pipeline.js');
const { prepareWork } = await dist('ingest/prepare.js');
const { buildD1IngestCommit } = await dist('ingest/d1-commit.js');
const { PROJECT_DEFAULTS } = await dist('store/projects.js');

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-bench-worker-'));
const templatesFile = path.join(work, 'templates');
writeTemplateFile(templatesFile);
const log = (msg) => process.stderr.write(`${msg}\n`);

/** CPU seconds of this process's children named `name` (workerd is Miniflare's child). */
function childCpu(name) {
  let cpu = 0;
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (comm === name && ppid === process.pid) cpu += procStats(Number(entry))?.cpu ?? 0;
    } catch {
      // gone meanwhile
    }
  }
  return cpu;
}

/** Bytes of the local D1's SQLite files (database and WAL) under `dir`, once workerd has stopped. */
function d1Bytes(dir) {
  let bytes = 0;
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const folder = entry.parentPath ?? entry.path;
    // The local R2 bucket (dataDir/r2) keeps its index in SQLite files too: not D1.
    if (folder.includes(`${path.sep}r2`)) continue;
    if (entry.isFile() && /\.sqlite(-wal)?$/.test(entry.name)) bytes += fs.statSync(path.join(folder, entry.name)).size;
  }
  return bytes;
}

/**
 * Bytes of the pages the local D1's databases use under `dir` (page_count less the free
 * list, after the WAL is checkpointed into the file), once workerd has stopped: what D1's
 * size counts, without the WAL's copies of pages a short run leaves behind.
 */
function d1UsedBytes(dir) {
  let bytes = 0;
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    const folder = entry.parentPath ?? entry.path;
    if (folder.includes(`${path.sep}r2`) || !entry.isFile() || !entry.name.endsWith('.sqlite')) continue;
    const db = new Database(path.join(folder, entry.name));
    try {
      db.pragma('wal_checkpoint(TRUNCATE)');
      const pages = db.pragma('page_count', { simple: true }) - db.pragma('freelist_count', { simple: true });
      bytes += pages * db.pragma('page_size', { simple: true });
    } finally {
      db.close();
    }
  }
  return bytes;
}

/** Bytes of every file of the local R2 bucket under `dir`/r2 (objects and their index). */
function r2Bytes(dir) {
  const r2 = path.join(dir, 'r2');
  if (!fs.existsSync(r2)) return 0;
  let bytes = 0;
  for (const entry of fs.readdirSync(r2, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) bytes += fs.statSync(path.join(entry.parentPath ?? entry.path, entry.name)).size;
  }
  return bytes;
}

const ownCpu = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1e6;
};

async function createProject(base, slug) {
  const r = await fetch(`${base}/api/projects`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ slug, platform: 'backend' }),
  });
  const body = await r.json();
  if (r.status !== 201) throw new Error(`POST /api/projects answered ${r.status} ${JSON.stringify(body)}`);
  const dsn = new URL(body.dsn);
  return { id: body.id, path: `/api/${body.id}/envelope/?sentry_version=7&sentry_key=${dsn.username}` };
}

/** Time to the first answered request, and the second's. */
async function firstAnswers(url) {
  const t0 = performance.now();
  const first = await fetch(`${url}/health`);
  if (!first.ok) throw new Error(`/health answered ${first.status}`);
  const t1 = performance.now();
  await (await fetch(`${url}/health`)).text();
  return { firstMs: t1 - t0, secondMs: performance.now() - t1 };
}

async function load(url, ingestPath, cpu) {
  const before = cpu();
  const run = startLoad({
    generator: 'node',
    url,
    path: ingestPath,
    templatesFile,
    prefix: randomBytes(8).toString('hex'),
    fingerprints,
    connections,
    mode: 'closed',
    duration,
  });
  const r = await run.result;
  const cpuSeconds = cpu() - before;
  if (r.failed > 0 || r.first_error) log(`  ${r.failed} failed: ${r.first_error ?? JSON.stringify(r.statuses)}`);
  return {
    events_per_s: r.issued_events / r.seconds,
    requests_per_s: r.completed / r.seconds,
    p50: r.latency_ms.p50,
    p99: r.latency_ms.p99,
    ok: r.ok,
    failed: r.failed,
    cpu_seconds: cpuSeconds,
    cpu_ms_per_request: (cpuSeconds * 1000) / Math.max(1, r.completed),
    events: r.issued_events,
    seconds: r.seconds,
  };
}

/** D1 statements the Worker sends for the load's requests: one batch per request. */
function statementsPerRequest() {
  const templates = readTemplateFile(templatesFile);
  const filler = createFiller({ templates, prefix: randomBytes(8).toString('hex'), fingerprints });
  const project = { ...PROJECT_DEFAULTS, id: 1, slug: 'bench', name: 'bench', dsn_key: 'k', created_at: 0 };
  const counts = { event: [], session: [] };
  for (let i = 0; i < 200; i++) {
    const { kind, body } = filler.next();
    const parsed = { kind: 'envelope', envelope: parseEnvelope(new TextEncoder().encode(body)) };
    const { work } = buildWork(project, parsed, {
      receivedAt: Date.now(),
      clientIp: null,
      md5Hex: workersIngestRuntime.md5Hex,
    });
    counts[kind].push(
      buildD1IngestCommit(prepareWork(work), { random: Math.random, compress: compressBlob }).statements.length,
    );
  }
  const mean = (xs) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
  return { event: mean(counts.event), session: mean(counts.session), all: mean([...counts.event, ...counts.session]) };
}

async function main() {
  log(
    `faultline serverless bench: ${duration} s per edition, ${connections} connections, ${fingerprints} fingerprints, ${os.cpus().length} cores (shared)`,
  );
  // --- the Worker: cold starts, then the load
  const bundle = await buildWorkerBundle(path.join(work, 'bundle'));
  const dataDir = argv['d1-dir']
    ? fs.mkdtempSync(path.join(argv['d1-dir'], 'faultline-bench-d1-'))
    : path.join(work, 'd1');
  const settings = { RATE_LIMIT: '0', LOG_LEVEL: 'warn' };
  let t = performance.now();
  let worker = await startLocalWorker({ bundle, dataDir, port: 0, settings, queue: false, blobs: false });
  const workerdUpMs = performance.now() - t;
  const fresh = await firstAnswers(worker.url);
  await worker.close();
  // A migrated, empty D1: what the load adds is measured from here (the schema and the
  // pages SQLite keeps free would otherwise dominate a short run).
  const directBaseline = d1UsedBytes(dataDir);
  t = performance.now();
  worker = await startLocalWorker({ bundle, dataDir, port: 0, settings, queue: false, blobs: false });
  const workerdUpMs2 = performance.now() - t;
  const existing = await firstAnswers(worker.url);
  const workerProject = await createProject(worker.url, 'bench');
  log(
    `worker: cold start ${round(workerdUpMs)} ms to workerd up + ${round(fresh.firstMs)} ms to the first answer (fresh D1)`,
  );

  // --- the Node edition
  const db = await createBenchDatabase('sqlite', { dataDir: work });
  const port = await freePort();
  const env = {
    ...process.env,
    DATABASE_URL: db.url,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT: '0',
    NODE_ENV: 'production',
  };
  for (const k of ['API_KEYS', 'PUBLIC_URL', 'RETENTION_DAYS']) delete env[k];
  t = performance.now();
  const node = startProcess(
    process.execPath,
    ['--max-old-space-size=1536', path.join(root, 'dist/cli/main.js'), 'serve'],
    { env, logFile: path.join(work, 'node.log'), cwd: root },
  );
  const nodeUrl = `http://127.0.0.1:${port}`;
  await waitForHealth(nodeUrl, node);
  const nodeStartMs = performance.now() - t;
  const nodeProject = await createProject(nodeUrl, 'bench');

  log('load: node');
  const nodeResult = await load(nodeUrl, nodeProject.path, () => procStats(node.pid)?.cpu ?? 0);
  log('load: worker');
  const workerResult = await load(worker.url, workerProject.path, () => childCpu('workerd') + ownCpu());

  // What the Worker counted matches what it acknowledged.
  const d1 = await worker.miniflare.getD1Database('DB');
  const counted = await d1.prepare('select coalesce(sum(event_count), 0) as n from issues').first();
  const perRequest = statementsPerRequest();
  await worker.close();
  workerResult.d1_bytes_per_event = d1Bytes(dataDir) / Math.max(1, Number(counted.n));
  workerResult.d1_added_bytes_per_event = (d1UsedBytes(dataDir) - directBaseline) / Math.max(1, Number(counted.n));

  // --- the Worker with the ingest queue: answered once enqueued, committed by the consumer.
  const queueDir = `${dataDir}-queue`;
  const queued = await startLocalWorker({ bundle, dataDir: queueDir, port: 0, settings, queue: true, blobs: false });
  const queueProject = await createProject(queued.url, 'bench');
  log('load: worker with the ingest queue');
  const queueResult = await load(queued.url, queueProject.path, () => childCpu('workerd') + ownCpu());
  const queueD1 = await queued.miniflare.getD1Database('DB');
  // The consumer goes on after the load: the committed rate counts until every event is in.
  // It is done when every acknowledged event is in, or nothing changed for 5 s (a failed
  // request's events were never acknowledged); the drain ends at the last change.
  const drainStart = performance.now();
  let queueCounted = 0;
  let lastChange = drainStart;
  while (performance.now() - drainStart < 300_000 && performance.now() - lastChange < 5000) {
    const now = Number((await queueD1.prepare('select coalesce(sum(event_count), 0) as n from issues').first()).n);
    if (now !== queueCounted) lastChange = performance.now();
    queueCounted = now;
    if (queueCounted >= queueResult.events) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const drainSeconds = (lastChange - drainStart) / 1000;
  queueResult.committed_events_per_s = queueCounted / (queueResult.seconds + drainSeconds);
  const batches = await queueD1.prepare('select count(*) as n from ingest_receipts').first();
  await queued.close();
  queueResult.d1_bytes_per_event = d1Bytes(queueDir) / Math.max(1, queueCounted);
  fs.rmSync(queueDir, { recursive: true, force: true });

  // --- the Worker with the R2 bucket (direct path): payloads in R2, rows and keys in D1.
  const r2Dir = `${dataDir}-r2`;
  let withR2 = await startLocalWorker({ bundle, dataDir: r2Dir, port: 0, settings, queue: false, blobs: true });
  const r2Project = await createProject(withR2.url, 'bench');
  await withR2.close();
  const r2Baseline = d1UsedBytes(r2Dir);
  withR2 = await startLocalWorker({ bundle, dataDir: r2Dir, port: 0, settings, queue: false, blobs: true });
  log('load: worker with the R2 bucket');
  const r2Result = await load(withR2.url, r2Project.path, () => childCpu('workerd') + ownCpu());
  const r2Counted = Number(
    (
      await (
        await withR2.miniflare.getD1Database('DB')
      )
        .prepare('select coalesce(sum(event_count), 0) as n from issues')
        .first()
    ).n,
  );
  await withR2.close();
  r2Result.d1_bytes_per_event = d1Bytes(r2Dir) / Math.max(1, r2Counted);
  r2Result.d1_added_bytes_per_event = (d1UsedBytes(r2Dir) - r2Baseline) / Math.max(1, r2Counted);
  r2Result.r2_bytes_per_event = r2Bytes(r2Dir) / Math.max(1, r2Counted);
  fs.rmSync(r2Dir, { recursive: true, force: true });
  node.child.kill('SIGTERM');
  await new Promise((r) => node.child.once('exit', r));
  await db.drop();
  fs.rmSync(work, { recursive: true, force: true });
  fs.rmSync(dataDir, { recursive: true, force: true });

  log('D1 bytes by table: 3 000 events through the direct and the queue path, payloads in R2');
  const byTable = {
    direct: await d1BytesPerEvent({ events: 3000, fingerprints, r2: true }),
    queue: await d1BytesPerEvent({ events: 3000, fingerprints, r2: true, queue: true }),
  };
  const top = (r) =>
    r.byName
      .slice(0, 8)
      .map((t) => `${t.name} ${round(t.bytes_per_event, 0)}`)
      .join(', ');

  const rows = [
    [
      'ingest events/s',
      round(nodeResult.events_per_s, 0),
      round(workerResult.events_per_s, 0),
      round(workerResult.events_per_s / nodeResult.events_per_s, 2),
    ],
    [
      'latency p50 (ms)',
      round(nodeResult.p50, 1),
      round(workerResult.p50, 1),
      round(workerResult.p50 / nodeResult.p50, 2),
    ],
    [
      'latency p99 (ms)',
      round(nodeResult.p99, 1),
      round(workerResult.p99, 1),
      round(workerResult.p99 / nodeResult.p99, 2),
    ],
    [
      'server CPU-ms per request',
      round(nodeResult.cpu_ms_per_request, 2),
      round(workerResult.cpu_ms_per_request, 2),
      round(workerResult.cpu_ms_per_request / nodeResult.cpu_ms_per_request, 2),
    ],
    ['failed requests', nodeResult.failed, workerResult.failed, ''],
  ];
  const queueRows = [
    [
      'answered events/s',
      round(workerResult.events_per_s, 0),
      round(queueResult.events_per_s, 0),
      round(queueResult.events_per_s / workerResult.events_per_s, 2),
    ],
    [
      'committed events/s',
      round(workerResult.events_per_s, 0),
      round(queueResult.committed_events_per_s, 0),
      round(queueResult.committed_events_per_s / workerResult.events_per_s, 2),
    ],
    ['latency p50 (ms)', round(workerResult.p50, 1), round(queueResult.p50, 1), ''],
    ['latency p99 (ms)', round(workerResult.p99, 1), round(queueResult.p99, 1), ''],
    ['failed requests', workerResult.failed, queueResult.failed, ''],
  ];
  const out = [
    `| ${duration} s, ${connections} connections | Node (SQLite) | Worker (Miniflare, local D1) | Worker / Node |`,
    '| --- | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
    '',
    '| Worker | direct | ingest queue | queue / direct |',
    '| --- | ---: | ---: | ---: |',
    ...queueRows.map((r) => `| ${r.join(' | ')} |`),
    '',
    `Queue: ${queueCounted} of ${queueResult.events} acknowledged events committed ${round(drainSeconds, 1)} s after the load, by ${batches.n} messages; D1 files ${round(queueResult.d1_bytes_per_event, 0)} bytes per event (direct: ${round(workerResult.d1_bytes_per_event, 0)}; payloads in D1).`,
    `D1 bytes each stored event added (pages in use after the load less the migrated empty D1's): direct, payloads in D1 ${round(workerResult.d1_added_bytes_per_event, 0)}; ` +
      `direct with the R2 bucket ${round(r2Result.d1_added_bytes_per_event, 0)} (goal ≤ 500; the local bucket took ${round(r2Result.r2_bytes_per_event, 0)} bytes per event), ` +
      `over ${counted.n} and ${r2Counted} events; with R2 ${round(r2Result.events_per_s, 0)} events/s, p99 ${round(r2Result.p99, 1)} ms.`,
    `D1 bytes per event by table and index, payloads in R2 (${byTable.direct.tag_rows_per_event.toFixed(1)} tags per event): direct ${round(byTable.direct.bytes_per_event, 0)} (${top(byTable.direct)}); ` +
      `queue ${round(byTable.queue.bytes_per_event, 0)} (${top(byTable.queue)}).`,
    `D1 per request: 1 batch; statements ${round(perRequest.event, 1)} for an event, ${round(perRequest.session, 1)} for a session (mean ${round(perRequest.all, 1)}).`,
    `Cold start, Worker: workerd up ${round(workerdUpMs)} ms, then first answer ${round(fresh.firstMs)} ms on a fresh D1 (migrations), ` +
      `${round(existing.firstMs)} ms on an existing one (workerd up ${round(workerdUpMs2)} ms); second request ${round(existing.secondMs, 1)} ms. ` +
      `Node: ${round(nodeStartMs)} ms from spawn to the first answer.`,
    `Worker counted ${counted.n} events; it acknowledged ${workerResult.events}.`,
  ];
  process.stdout.write(`${out.join('\n')}\n`);
  process.stdout.write(
    `RESULT ${JSON.stringify({ node: nodeResult, worker: workerResult, queue: queueResult, r2: r2Result, byTable, perRequest, coldStart: { workerdUpMs, fresh, workerdUpMs2, existing, nodeStartMs } })}\n`,
  );
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
