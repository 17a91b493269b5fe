#!/usr/bin/env node
// Export and import benchmark (#31): `faultline import` of N events into a fresh
// database, then `faultline export` of that database, on SQLite and PostgreSQL, each as
// its own process: events per second and the process's peak RSS.
//
// The events are the query set's (bench/run.mjs): the bench's payload templates filled
// the same way (bench/lib/payloads.mjs), 10 000 fingerprints, a session every tenth
// item. They are written as an export file's lines into a file in the temporary folder
// (about 9.3 GB for 1 000 000 events; deleted at the end), which becomes the import's
// standard input, as in `faultline import < file`. Piping the generator straight into
// the import measured the generator instead: while the import writes a batch it reads
// nothing, the pipe fills, and the generator waits; then the import waits for it (30 %
// of the import's time idle at 100 000 events). Its database ends up holding what the
// query set holds, which the export then reads.
//
//   node bench/transfer.mjs [--events 1000000] [--issues 10000] [--db sqlite,postgres] [--cpu-prof DIR] [--keep]
//   node bench/transfer.mjs --export-only DATABASE_URL [--events N]
//
// --cpu-prof DIR writes a V8 CPU profile of each import and export process into DIR.
// --keep leaves the imported database in place and prints its URL; --export-only then
// measures the export alone from it (N: the events it holds, for the rate).
//
// PostgreSQL needs BENCH_DATABASE_URL or TEST_DATABASE_URL. Run `npm run build` first.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBenchDatabase, postgresBaseUrl } from './lib/db.mjs';
import { buildTemplates, createFiller, EXCEPTION_TYPES, RELEASES } from './lib/payloads.mjs';
import { sampler } from './lib/proc.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(REPO, 'dist/cli/main.js');

const { values } = parseArgs({
  options: {
    events: { type: 'string', default: '1000000' },
    issues: { type: 'string', default: '10000' },
    db: { type: 'string' },
    'cpu-prof': { type: 'string' },
    keep: { type: 'boolean' },
    'export-only': { type: 'string' },
  },
});
const EVENTS = Number(values.events);
const ISSUES = Number(values.issues);
const profileDir = values['cpu-prof'] ? path.resolve(values['cpu-prof']) : null;
const kinds = (values.db ?? (postgresBaseUrl() ? 'sqlite,postgres' : 'sqlite')).split(',');
const log = (line) => process.stderr.write(line + '\n');
const mb = (bytes) => Math.round(bytes / 2 ** 20);

/** The export file's lines for the query set, in the order an export writes them. */
function* queryLines() {
  const now = Date.now();
  const iso = (ms) => new Date(ms).toISOString();
  yield JSON.stringify({
    type: 'meta',
    format: 1,
    exported_at: iso(now),
    source: { faultline: 'bench', database: 'generated', project: null },
    expected_lines: 0,
  });
  yield JSON.stringify({
    type: 'project',
    slug: 'query',
    id: 1,
    dsn_key: '0123456789abcdef0123456789abcdef',
    name: 'query',
    platform: 'backend',
    sample_keep_first: 100,
    sample_rate: 1,
    daily_quota: 0,
    created_at: iso(now - 86_400_000),
  });
  const fingerprint = (f) => f.toString(16).padStart(32, '0');
  const perIssue = Math.ceil(EVENTS / ISSUES);
  for (let f = 0; f < ISSUES; f++) {
    const type = EXCEPTION_TYPES[f % EXCEPTION_TYPES.length];
    yield JSON.stringify({
      type: 'issue',
      project: 'query',
      fingerprint: fingerprint(f),
      status: 'unresolved',
      title: `${type}: item ${f}`,
      level: 'error',
      error_type: type,
      screen: '',
      location: 'app.js:1',
      platform: 'node',
      event_count: perIssue,
      stored_count: perIssue,
      users: 10,
      first_seen: iso(now - 86_400_000),
      last_seen: iso(now),
      first_release: RELEASES[0],
      last_release: RELEASES[1],
      resolved_release: null,
      resolved_at: null,
      regressed_at: null,
      created_at: iso(now - 86_400_000),
      updated_at: iso(now),
    });
  }
  const templates = buildTemplates();
  const filler = createFiller({
    templates: { ...templates, types: EXCEPTION_TYPES, releases: RELEASES },
    prefix: '0123456789abcdef',
    fingerprints: ISSUES,
    spreadSeconds: 86_400,
  });
  const sessions = [];
  let ec = 0;
  while (ec < EVENTS) {
    const item = filler.next();
    const lines = item.body.split('\n');
    const payload = lines.slice(2).join('\n');
    if (item.kind === 'session') {
      sessions.push(payload);
      continue;
    }
    ec++;
    const f = (ec + Math.floor(ec / 20) * 3) % ISSUES;
    const header = JSON.parse(lines[0]);
    const event = JSON.parse(payload);
    const exception = event.exception.values[0];
    yield JSON.stringify({
      type: 'event',
      project: 'query',
      event_id: header.event_id,
      fingerprint: fingerprint(f),
      timestamp: iso(event.timestamp * 1000),
      received_at: iso(now),
      level: event.level ?? 'error',
      platform: 'node',
      release: event.release ?? '',
      dist: '',
      environment: event.environment ?? '',
      user_id: event.user?.id ?? null,
      user_email: null,
      user_username: null,
      user_ip: null,
      device_id: null,
      device_model: null,
      os_name: 'Linux',
      os_version: '6.1',
      screen: '',
      error_type: exception.type,
      error_location: 'app.js:1',
      title: `${exception.type}: ${exception.value}`,
      message: exception.value,
      is_crash: false,
      sdk_name: 'sentry.javascript.node',
      tags: event.tags ?? {},
      symbolicated: null,
      payload,
    });
  }
  for (const body of sessions) {
    const s = JSON.parse(body);
    yield JSON.stringify({
      type: 'session',
      project: 'query',
      sid: s.sid,
      did: s.did ?? null,
      release: s.attrs.release,
      environment: s.attrs.environment ?? '',
      started: s.started,
      status: s.status,
      errors: s.errors ?? 0,
      updated_at: s.timestamp,
    });
  }
}

/** Writes the lines into a file, one per line. */
async function writeLines(file, lines) {
  const out = fs.createWriteStream(file);
  let buffer = '';
  for (const line of lines) {
    buffer += line + '\n';
    if (buffer.length > 1 << 20) {
      if (!out.write(buffer)) await new Promise((r) => out.once('drain', r));
      buffer = '';
    }
  }
  await new Promise((resolve, reject) => out.end(buffer, (err) => (err ? reject(err) : resolve())));
}

function run(args, env, { inputFile, countOutput } = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const profile = profileDir
      ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${args[0]}-${Date.now()}.cpuprofile`]
      : [];
    const stdin = inputFile ? fs.openSync(inputFile, 'r') : 'ignore';
    const child = spawn(process.execPath, ['--max-old-space-size=1536', ...profile, CLI, ...args], {
      env: { ...process.env, ...env, LOG_LEVEL: 'warn' },
      stdio: [stdin, 'pipe', 'pipe'],
    });
    if (typeof stdin === 'number') fs.closeSync(stdin);
    const memory = sampler(child.pid, 100);
    let stderr = '';
    let stdout = '';
    let bytes = 0;
    let lines = 0;
    child.stderr.on('data', (d) => (stderr += d));
    child.stdout.on('data', (d) => {
      if (countOutput) {
        bytes += d.length;
        for (let i = d.indexOf(10); i !== -1; i = d.indexOf(10, i + 1)) lines++;
      } else stdout += d;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const peak = memory.mark();
      // CPU seconds of the process as last sampled (at most 100 ms before it ended).
      const cpu = memory.now()?.cpu ?? null;
      memory.stop();
      resolve({ code, seconds, peak, cpu, stderr, stdout, bytes, lines });
    });
  });
}

/** Events per CPU second of the CLI process (on a shared machine closer to what it can do than the wall clock). */
const perCpu = (r) => (r.cpu ? Math.round(EVENTS / r.cpu) : null);

const exportFigures = (r) => ({
  seconds: +r.seconds.toFixed(1),
  events_per_s: Math.round(EVENTS / r.seconds),
  cpu_s: r.cpu,
  events_per_cpu_s: perCpu(r),
  peak_rss_mb: mb(r.peak),
  lines: r.lines,
  file_mb: mb(r.bytes),
});
const describeExport = (e) =>
  `export ${e.events_per_s} events/s (${e.seconds} s; ${e.events_per_cpu_s} events per CPU second; peak RSS ${e.peak_rss_mb} MB, ${e.lines} lines, ${e.file_mb} MB)`;

async function exportFrom(url) {
  const exported = await run(['export'], { DATABASE_URL: url }, { countOutput: true });
  if (exported.code !== 0) throw new Error(`export failed (${exported.code}):\n${exported.stderr}`);
  return exportFigures(exported);
}

const results = {};
if (values['export-only']) {
  results.export = await exportFrom(values['export-only']);
  log(describeExport(results.export));
} else {
  const fileDir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-transfer-'));
  const file = path.join(fileDir, 'export.ndjson');
  const generating = Date.now();
  await writeLines(file, queryLines());
  log(`wrote ${mb(fs.statSync(file).size)} MB of lines in ${((Date.now() - generating) / 1000).toFixed(1)} s`);
  for (const kind of kinds) {
    const db = await createBenchDatabase(kind);
    try {
      log(`${kind}: importing ${EVENTS} events over ${ISSUES} issues ...`);
      const imported = await run(['import'], { DATABASE_URL: db.url }, { inputFile: file });
      if (imported.code !== 0)
        throw new Error(`import failed (${imported.code}):\n${imported.stderr}\n${imported.stdout}`);
      log(imported.stdout.trim());
      log(`${kind}: exporting ...`);
      results[kind] = {
        events: EVENTS,
        import: {
          seconds: +imported.seconds.toFixed(1),
          events_per_s: Math.round(EVENTS / imported.seconds),
          cpu_s: imported.cpu,
          events_per_cpu_s: perCpu(imported),
          peak_rss_mb: mb(imported.peak),
        },
        export: await exportFrom(db.url),
      };
      const r = results[kind];
      log(
        `${kind}: import ${r.import.events_per_s} events/s (${r.import.seconds} s; ${r.import.events_per_cpu_s} events per CPU second of the CLI; peak RSS ${r.import.peak_rss_mb} MB); ${describeExport(r.export)}`,
      );
    } finally {
      if (values.keep) log(`${kind}: kept ${db.url}`);
      else await db.drop();
    }
  }
  fs.rmSync(fileDir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(results, null, 2) + '\n');
