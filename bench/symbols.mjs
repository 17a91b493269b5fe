// Symbolication benchmark (issue 28), against the built server (npm run build first):
//
//   1. a 30 MB ProGuard mapping and a 5 MB source map (both synthetic) are uploaded; the
//      time from the upload's answer to the answer of the first event they symbolicate
//      (the file is read and parsed on that first event);
//   2. the per-event symbolication cost once cached, for 30-frame stacks of each kind
//      (in this process, through the same SymbolService the server uses), p50/p95/p99;
//   3. ingest throughput of symbolicated events against plain events (HTTP, 8 at a time);
//   4. the server's peak RSS growth while a 200 MB mapping is uploaded (streamed by the
//      client, generated on the fly; the server runs as a child process);
//   5. re-symbolication of 100 000 stored events of the release (written through the
//      group-commit writer in this process, then one run of the background job).
//
//   node bench/symbols.mjs [--quick]      (--quick: smaller sizes, for a smoke run)
//
// Numbers depend on the machine and what else runs on it; the development VM is shared.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { openStore } from '../dist/editions/node/open-store.js';
import { migrate } from '../dist/store/database.js';
import { SymbolService } from '../dist/symbols/service.js';
import { normalizeEvent, symbolicationInputOf } from '../dist/ingest/normalize.js';
import { createIngestWriter } from '../dist/editions/node/writer.js';
import { nodeIngestRuntime } from '../dist/editions/node/runtime.js';
import { storedPayloads } from '../dist/editions/node/payloads.js';
import { scheduleResymbolication } from '../dist/symbols/resymbolicate.js';

const quick = process.argv.includes('--quick');
/** --resym-only: only step 5 (after the uploads it needs). */
const resymOnly = process.argv.includes('--resym-only');
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MB = 1024 * 1024;
const PROGUARD_MB = quick ? 5 : 30;
const SOURCEMAP_MB = quick ? 1 : 5;
const BIG_UPLOAD_MB = quick ? 40 : 200;
const RESYMBOLICATE_EVENTS = Number(process.env.RESYM_EVENTS ?? (quick ? 5000 : 100_000));

// ------------------------------------------------------------------ synthetic files

/** A ProGuard mapping of about `bytes`: classes with fields and ranged methods, some inlined. */
function* proguardLines(bytes) {
  let size = 0;
  for (let c = 0; size < bytes; c++) {
    const lines = [`com.example.app.feature${c % 97}.Screen${c}Presenter -> a.a${c.toString(36)}:`];
    lines.push(`    java.lang.String title -> a`);
    for (let m = 0; m < 12; m++) {
      const start = m * 10 + 1;
      lines.push(
        `    ${start}:${start + 9}:void handleEvent${m}(int,java.lang.String):${100 + m * 20}:${109 + m * 20} -> ${String.fromCharCode(97 + (m % 26))}`,
      );
      if (m % 4 === 0)
        lines.push(
          `    ${start + 500}:${start + 500}:void helper${m}():${300 + m}:${300 + m} -> ${String.fromCharCode(97 + (m % 26))}`,
          `    ${start + 500}:${start + 500}:void handleEvent${m}(int,java.lang.String):${105 + m * 20} -> ${String.fromCharCode(97 + (m % 26))}`,
        );
    }
    const text = lines.join('\n') + '\n';
    size += text.length;
    yield text;
  }
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
function vlq(n) {
  let v = n < 0 ? (-n << 1) | 1 : n << 1;
  let out = '';
  do {
    let digit = v & 31;
    v >>>= 5;
    if (v > 0) digit |= 32;
    out += B64[digit];
  } while (v > 0);
  return out;
}

/** A source map of about `bytes`: one minified line per source line group, sources with content. */
function sourceMap(bytes) {
  const sources = [];
  const contents = [];
  const lines = [];
  const perSource = 2000;
  let size = 0;
  let prevSource = 0;
  let prevLine = 0;
  let prevCol = 0;
  let prevName = 0;
  for (let s = 0; size < bytes; s++) {
    sources.push(`webpack://app/./src/module${s}.js`);
    const content = Array.from(
      { length: perSource },
      (_, i) => `  const value${i} = compute(${i}); // line ${i + 1} of module ${s}`,
    ).join('\n');
    contents.push(content);
    size += content.length;
    // Generated line per source: a segment every 40 columns mapping to consecutive source lines.
    for (let block = 0; block < perSource / 100; block++) {
      const segs = [];
      for (let i = 0; i < 100; i++) {
        const line = block * 100 + i;
        segs.push(
          vlq(i === 0 ? 0 : 40) + vlq(s - prevSource) + vlq(line - prevLine) + vlq(2 - prevCol) + vlq(0 - prevName),
        );
        prevSource = s;
        prevLine = line;
        prevCol = 2;
        prevName = 0;
      }
      const text = segs.join(',');
      lines.push(text);
      size += text.length;
    }
  }
  return JSON.stringify({
    version: 3,
    file: 'app.min.js',
    sources,
    sourcesContent: contents,
    names: ['compute'],
    mappings: lines.join(';'),
  });
}

// ------------------------------------------------------------------ server and HTTP

async function startServer(dbUrl) {
  const child = spawn(process.execPath, ['--max-old-space-size=1536', path.join(root, 'bench/server-entry.mjs')], {
    env: { ...process.env, DATABASE_URL: dbUrl, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn', RATE_LIMIT: '0' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    child.stdout.on('data', (d) => {
      const m = /listening (\S+)/.exec(String(d));
      if (m) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`server exited ${code}`)));
  });
  let stopped = null;
  return { url, child, stop: () => (stopped ??= new Promise((r) => (child.once('exit', r), child.kill('SIGTERM')))) };
}

function status(pid) {
  const text = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(text)[1]) * 1024;
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

async function json(url, init) {
  const res = await fetch(url, init);
  const body = await res.json();
  if (!res.ok) throw new Error(`${init?.method ?? 'GET'} ${url}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/** Streams a multipart upload whose file part comes from `chunks` (async iterable of strings). */
function uploadStream(url, fields, filename, chunks) {
  const boundary = `----bench${Date.now()}`;
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } },
      (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () =>
          res.statusCode === 201 ? resolve(JSON.parse(body)) : reject(new Error(`${res.statusCode} ${body}`)),
        );
      },
    );
    req.on('error', reject);
    (async () => {
      for (const [k, v] of Object.entries(fields))
        req.write(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
      req.write(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
      );
      for await (const c of chunks) if (!req.write(c)) await new Promise((r) => req.once('drain', r));
      req.end(`\r\n--${boundary}--\r\n`);
    })().catch(reject);
  });
}

async function* batched(lines, size = 256 * 1024) {
  let buf = '';
  for (const l of lines) {
    buf += l;
    if (buf.length >= size) {
      yield buf;
      buf = '';
    }
  }
  if (buf) yield buf;
}

function javaEvent(release, frames) {
  return {
    platform: 'java',
    release,
    exception: { values: [{ type: 'a', module: 'a', value: 'boom', stacktrace: { frames } }] },
  };
}

function javaFrames(n, seed = 0) {
  return Array.from({ length: n }, (_, i) => {
    const c = (i * 7919 + seed) % 20000;
    const m = i % 12;
    return {
      module: `a.a${c.toString(36)}`,
      function: String.fromCharCode(97 + m),
      filename: 'SourceFile',
      lineno: m * 10 + 5,
      in_app: true,
    };
  });
}

function jsFrames(n) {
  return Array.from({ length: n }, (_, i) => ({
    abs_path: 'https://shop.example.com/static/app.min.js',
    filename: 'app.min.js',
    function: 'x',
    lineno: 1 + (i % 20),
    colno: 1 + 40 * (i % 90),
    in_app: true,
  }));
}

async function sendEvent(base, project, event) {
  const res = await fetch(`${base}/api/${project.id}/store/?sentry_key=${project.key}`, {
    method: 'POST',
    body: JSON.stringify(event),
    headers: { 'content-type': 'application/json' },
  });
  if (res.status !== 200) throw new Error(`ingest ${res.status} ${await res.text()}`);
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

// ------------------------------------------------------------------ run

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-bench-symbols-'));
const dbUrl = process.env.BENCH_DATABASE_URL ?? `sqlite:${path.join(dir, 'bench.db')}`;
const server = await startServer(dbUrl);
const out = {
  machine: `${os.cpus().length} cores, load ${os
    .loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')}`,
  database: dbUrl.split(':')[0],
};
try {
  const base = server.url;
  const mk = async (slug) => {
    const p = await json(`${base}/api/projects`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ slug }),
    });
    return { ...p, key: /\/\/([0-9a-f]{32})@/.exec(p.dsn)[1] };
  };
  const android = await mk('bench-android');
  const web = await mk('bench-web');
  const plain = await mk('bench-plain');

  // 1. First symbolicated event after upload.
  let t = performance.now();
  const [mapping] = (
    await uploadStream(
      `${base}/api/projects/bench-android/symbols`,
      { kind: 'proguard', release: 'app@1' },
      'mapping.txt',
      batched(proguardLines(PROGUARD_MB * MB)),
    )
  ).symbols;
  out.proguard_upload_ms = Math.round(performance.now() - t);
  out.proguard_mb = +(mapping.size / MB).toFixed(1);
  t = performance.now();
  await sendEvent(base, android, javaEvent('app@1', javaFrames(30)));
  out.proguard_first_event_ms = Math.round(performance.now() - t);
  t = performance.now();
  await sendEvent(base, android, javaEvent('app@1', javaFrames(30, 1)));
  out.proguard_second_event_ms = Math.round(performance.now() - t);

  if (!resymOnly) {
    const mapText = sourceMap(SOURCEMAP_MB * MB);
    t = performance.now();
    await uploadStream(
      `${base}/api/projects/bench-web/symbols`,
      { kind: 'sourcemap', release: 'web@1' },
      'app.min.js.map',
      [mapText],
    );
    out.sourcemap_upload_ms = Math.round(performance.now() - t);
    out.sourcemap_mb = +(mapText.length / MB).toFixed(1);
    t = performance.now();
    await sendEvent(base, web, {
      platform: 'javascript',
      release: 'web@1',
      exception: { values: [{ type: 'Error', value: 'x', stacktrace: { frames: jsFrames(30) } }] },
    });
    out.sourcemap_first_event_ms = Math.round(performance.now() - t);

    // 2. Per-event cost once cached, in this process.
    const store = await openStore(dbUrl);
    await migrate(store);
    const service = new SymbolService({ store, clock: { now: () => Date.now() }, logger: pino({ level: 'silent' }) });
    for (const [name, projectId, event] of [
      ['proguard', android.id, (i) => javaEvent('app@1', javaFrames(30, i % 50))],
      [
        'sourcemap',
        web.id,
        () => ({
          platform: 'javascript',
          release: 'web@1',
          exception: { values: [{ type: 'Error', value: 'x', stacktrace: { frames: jsFrames(30) } }] },
        }),
      ],
    ]) {
      const times = [];
      for (let i = 0; i < (quick ? 500 : 3000); i++) {
        const input = symbolicationInputOf(JSON.parse(JSON.stringify(event(i))));
        const s = performance.now();
        const run = await service.prepare(projectId, [input]);
        const result = run(input);
        times.push(performance.now() - s);
        if (!result) throw new Error(`${name}: nothing symbolicated`);
      }
      times.splice(0, 50);
      times.sort((a, b) => a - b);
      out[`${name}_30_frames_ms`] = {
        p50: +percentile(times, 50).toFixed(3),
        p95: +percentile(times, 95).toFixed(3),
        p99: +percentile(times, 99).toFixed(3),
      };
    }
    await store.close();

    // 3. Ingest throughput, symbolicated against plain (8 requests at a time).
    const rate = async (project, make, n) => {
      let i = 0;
      const s = performance.now();
      await Promise.all(
        Array.from({ length: 8 }, async () => {
          while (i < n) await sendEvent(base, project, make(i++));
        }),
      );
      return n / ((performance.now() - s) / 1000);
    };
    const n = quick ? 300 : 2000;
    out.ingest_plain_events_per_s = Math.round(await rate(plain, (i) => javaEvent('app@1', javaFrames(30, i % 50)), n));
    out.ingest_symbolicated_events_per_s = Math.round(
      await rate(android, (i) => javaEvent('app@1', javaFrames(30, i % 50)), n),
    );
    out.ingest_ratio = +(out.ingest_symbolicated_events_per_s / out.ingest_plain_events_per_s).toFixed(2);

    // 4. RSS growth while a big mapping is uploaded.
    const before = status(server.child.pid);
    let peak = before.rss;
    const sampler = setInterval(() => (peak = Math.max(peak, status(server.child.pid).rss)), 20);
    t = performance.now();
    await uploadStream(
      `${base}/api/projects/bench-android/symbols`,
      { kind: 'proguard', release: 'app@2' },
      'big-mapping.txt',
      batched(proguardLines(BIG_UPLOAD_MB * MB)),
    );
    clearInterval(sampler);
    out.big_upload_mb = BIG_UPLOAD_MB;
    out.big_upload_s = +((performance.now() - t) / 1000).toFixed(1);
    out.big_upload_rss_before_mb = Math.round(before.rss / MB);
    out.big_upload_rss_growth_mb = Math.round((peak - before.rss) / MB);
  }
  await server.stop();

  // 5. Re-symbolication of the release's stored events.
  const store2 = await openStore(dbUrl);
  const logger = pino({ level: 'silent' });
  const clock = { now: () => Date.now() };
  const projectRow = await store2.db
    .selectFrom('projects')
    .selectAll()
    .where('id', '=', android.id)
    .executeTakeFirstOrThrow();
  const writer = createIngestWriter({ store: store2, clock, logger });
  let written = 0;
  t = performance.now();
  while (written < RESYMBOLICATE_EVENTS) {
    const works = [];
    for (let w = 0; w < 20 && written < RESYMBOLICATE_EVENTS; w++) {
      const events = [];
      for (let e = 0; e < 50 && written < RESYMBOLICATE_EVENTS; e++, written++) {
        const payload = new TextEncoder().encode(JSON.stringify(javaEvent('app@9', javaFrames(30, written % 500))));
        events.push(
          normalizeEvent(payload, {
            receivedAt: Date.now(),
            sentAt: null,
            envelopeEventId: null,
            clientIp: null,
            md5Hex: nodeIngestRuntime.md5Hex,
          }),
        );
      }
      works.push(writer.submit({ project: projectRow, receivedAt: Date.now(), events, sessions: [], aggregates: [] }));
    }
    await Promise.all(works);
  }
  await writer.close();
  out.resymbolicate_seed_s = +((performance.now() - t) / 1000).toFixed(1);
  await store2.db
    .updateTable('symbol_files')
    .set({ release: 'app@9' })
    .where('project_id', '=', android.id)
    .where('release', '=', 'app@1')
    .execute();
  const service2 = new SymbolService({ store: store2, clock, logger, readPayloads: storedPayloads });
  t = performance.now();
  await scheduleResymbolication(store2, android.id, 'app@9', Date.now());
  service2.start();
  await service2.jobs.idle();
  out.resymbolicate_events = RESYMBOLICATE_EVENTS;
  out.resymbolicate_s = +((performance.now() - t) / 1000).toFixed(1);
  const job = await store2.db.selectFrom('symbol_jobs').selectAll().orderBy('id', 'desc').executeTakeFirstOrThrow();
  out.resymbolicate_done = Number(job.done);
  await service2.close();
  await store2.close();
} finally {
  await server.stop();
  fs.rmSync(dir, { recursive: true, force: true });
}
console.log(JSON.stringify(out, null, 2));
