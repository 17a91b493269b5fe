#!/usr/bin/env node
// Export and import benchmark (#31): `faultline import` of N events into a fresh
// database, then `faultline export` of that database, on SQLite and PostgreSQL, each as
// its own process: events per second and the process's peak RSS.
//
// The events are the query set's (bench/run.mjs): the bench's payload templates filled
// the same way (bench/lib/payloads.mjs), 10 000 fingerprints, a session every tenth
// item. They are written as an export file's lines straight into the import's standard
// input (the file of 1 000 000 such events is about 9 GB, so it is never kept): the
// import reads them as it would read a file, and its database ends up holding what the
// query set holds, which the export then reads.
//
//   node bench/transfer.mjs [--events 1000000] [--issues 10000] [--db sqlite,postgres] [--cpu-prof DIR]
//
// --cpu-prof DIR writes a V8 CPU profile of each import and export process into DIR.
//
// PostgreSQL needs BENCH_DATABASE_URL or TEST_DATABASE_URL. Run `npm run build` first.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBenchDatabase, postgresBaseUrl } from './lib/db.mjs';
import { buildTemplates, createFiller, EXCEPTION_TYPES, RELEASES } from './lib/payloads.mjs';
import { sampler } from './lib/proc.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const CLI = path.join(REPO, 'dist/cli/main.js');

const { values } = parseArgs({
  options: { events: { type: 'string', default: '1000000' }, issues: { type: 'string', default: '10000' }, db: { type: 'string' }, 'cpu-prof': { type: 'string' } },
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
  yield JSON.stringify({ type: 'meta', format: 1, exported_at: iso(now), source: { faultline: 'bench', database: 'generated', project: null }, expected_lines: 0 });
  yield JSON.stringify({ type: 'project', slug: 'query', id: 1, dsn_key: '0123456789abcdef0123456789abcdef', name: 'query', platform: 'backend', sample_keep_first: 100, sample_rate: 1, daily_quota: 0, created_at: iso(now - 86_400_000) });
  const fingerprint = (f) => f.toString(16).padStart(32, '0');
  const perIssue = Math.ceil(EVENTS / ISSUES);
  for (let f = 0; f < ISSUES; f++) {
    const type = EXCEPTION_TYPES[f % EXCEPTION_TYPES.length];
    yield JSON.stringify({
      type: 'issue', project: 'query', fingerprint: fingerprint(f), status: 'unresolved', title: `${type}: item ${f}`, level: 'error', error_type: type, screen: '', location: 'app.js:1', platform: 'node',
      event_count: perIssue, stored_count: perIssue, users: 10, first_seen: iso(now - 86_400_000), last_seen: iso(now), first_release: RELEASES[0], last_release: RELEASES[1],
      resolved_release: null, resolved_at: null, regressed_at: null, created_at: iso(now - 86_400_000), updated_at: iso(now),
    });
  }
  const templates = buildTemplates();
  const filler = createFiller({ templates: { ...templates, types: EXCEPTION_TYPES, releases: RELEASES }, prefix: '0123456789abcdef', fingerprints: ISSUES, spreadSeconds: 86_400 });
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
      type: 'event', project: 'query', event_id: header.event_id, fingerprint: fingerprint(f), timestamp: iso(event.timestamp * 1000), received_at: iso(now),
      level: event.level ?? 'error', platform: 'node', release: event.release ?? '', dist: '', environment: event.environment ?? '', user_id: event.user?.id ?? null,
      user_email: null, user_username: null, user_ip: null, device_id: null, device_model: null, os_name: 'Linux', os_version: '6.1', screen: '',
      error_type: exception.type, error_location: 'app.js:1', title: `${exception.type}: ${exception.value}`, message: exception.value, is_crash: false,
      sdk_name: 'sentry.javascript.node', tags: event.tags ?? {}, symbolicated: null, payload,
    });
  }
  for (const body of sessions) {
    const s = JSON.parse(body);
    yield JSON.stringify({ type: 'session', project: 'query', sid: s.sid, did: s.did ?? null, release: s.attrs.release, environment: s.attrs.environment ?? '', started: s.started, status: s.status, errors: s.errors ?? 0, updated_at: s.timestamp });
  }
}

function run(args, env, { input, countOutput } = {}) {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${args[0]}-${Date.now()}.cpuprofile`] : [];
    const child = spawn(process.execPath, ['--max-old-space-size=1536', ...profile, CLI, ...args], { env: { ...process.env, ...env, LOG_LEVEL: 'warn' }, stdio: ['pipe', 'pipe', 'pipe'] });
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
    if (input) {
      (async () => {
        let buffer = '';
        for (const line of input) {
          buffer += line + '\n';
          if (buffer.length > 1 << 20) {
            if (!child.stdin.write(buffer)) await new Promise((r) => child.stdin.once('drain', r));
            buffer = '';
          }
        }
        child.stdin.end(buffer);
      })().catch(reject);
    } else child.stdin.end();
  });
}

/** Events per CPU second of the CLI process (on a shared machine closer to what it can do than the wall clock). */
const perCpu = (r) => (r.cpu ? Math.round(EVENTS / r.cpu) : null);

const results = {};
for (const kind of kinds) {
  const db = await createBenchDatabase(kind);
  try {
    log(`${kind}: importing ${EVENTS} events over ${ISSUES} issues ...`);
    const imported = await run(['import'], { DATABASE_URL: db.url }, { input: queryLines() });
    if (imported.code !== 0) throw new Error(`import failed (${imported.code}):\n${imported.stderr}\n${imported.stdout}`);
    log(imported.stdout.trim());
    log(`${kind}: exporting ...`);
    const exported = await run(['export'], { DATABASE_URL: db.url }, { countOutput: true });
    if (exported.code !== 0) throw new Error(`export failed (${exported.code}):\n${exported.stderr}`);
    results[kind] = {
      events: EVENTS,
      import: { seconds: +imported.seconds.toFixed(1), events_per_s: Math.round(EVENTS / imported.seconds), cpu_s: imported.cpu, events_per_cpu_s: perCpu(imported), peak_rss_mb: mb(imported.peak) },
      export: { seconds: +exported.seconds.toFixed(1), events_per_s: Math.round(EVENTS / exported.seconds), cpu_s: exported.cpu, events_per_cpu_s: perCpu(exported), peak_rss_mb: mb(exported.peak), lines: exported.lines, file_mb: mb(exported.bytes) },
    };
    const r = results[kind];
    log(`${kind}: import ${r.import.events_per_s} events/s (${r.import.seconds} s; ${r.import.events_per_cpu_s} events per CPU second of the CLI; peak RSS ${r.import.peak_rss_mb} MB); ` +
      `export ${r.export.events_per_s} events/s (${r.export.seconds} s; ${r.export.events_per_cpu_s} events per CPU second; peak RSS ${r.export.peak_rss_mb} MB, ${r.export.lines} lines, ${r.export.file_mb} MB)`);
  } finally {
    await db.drop();
  }
}
process.stdout.write(JSON.stringify(results, null, 2) + '\n');
