// D1 bytes per stored event, table by table and index by index (BENCHMARKS.md "Serverless
// edition"). The Worker's own ingest statements (src/ingest/d1-commit.ts: one batch per
// request, as the direct path commits them, or with `--queue` one per 100 requests merged
// as the queue consumer does, with its receipts; with `--r2` the payload chunks name
// objects and keep no bytes, as with the BLOBS bucket bound) run against a SQLite database with
// D1's page size, migrated by the same migrations; SQLite's `dbstat` then says which table
// or index takes what. Faster than the Worker under Miniflare (which runs the same
// statements), so it measures thousands of events on a loaded machine; the totals match
// bench/worker.mjs's pages in use per event.
//
//   node bench/d1-bytes.mjs [--events 5000] [--fingerprints 100] [--r2] [--queue] [--json]
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { execFileSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { createFiller, readTemplateFile, writeTemplateFile } from './lib/payloads.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');

if (!fs.existsSync(path.join(root, 'dist/ingest/d1-commit.js')))
  execFileSync('npm', ['run', 'build'], { cwd: root, stdio: 'inherit' });
const dist = (p) => import(path.join(root, 'dist', p));

/** D1's page size (what `PRAGMA page_size` answers in a local D1). */
const D1_PAGE_SIZE = 4096;

/**
 * Bytes each table and index of `file` takes (pages, by dbstat) and its pages in use.
 * @returns {{ byName: Map<string, number>, used: number }}
 */
function pagesOf(file) {
  const db = new Database(file);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
    const byName = new Map(
      db
        .prepare('select name, sum(pgsize) as bytes from dbstat group by name')
        .all()
        .map((r) => [r.name, r.bytes]),
    );
    const used =
      (db.pragma('page_count', { simple: true }) - db.pragma('freelist_count', { simple: true })) *
      db.pragma('page_size', { simple: true });
    return { byName, used };
  } finally {
    db.close();
  }
}

/**
 * Stores `events` SDK-shaped events (and the sessions the load interleaves) as the Worker's
 * direct path does, one request's batch at a time; the D1 bytes they added, by name.
 */
export async function d1BytesPerEvent({ events, fingerprints, r2, queue = false }) {
  const { openStore } = await dist('editions/node/open-store.js');
  const { migrate } = await dist('store/migrate.js');
  const { createProject, PROJECT_DEFAULTS } = await dist('store/projects.js');
  const { compressBlob, workersIngestRuntime } = await dist('editions/workers/runtime.js');
  const { parseEnvelope } = await dist('ingest/envelope.js');
  const { buildWork } = await dist('ingest/pipeline.js');
  const { prepareWork } = await dist('ingest/prepare.js');
  const { buildD1IngestCommit } = await dist('ingest/d1-commit.js');
  const { payloadObjectKey } = await dist('store/blobs.js');
  const { mergeWorks, needsReceipt } = await dist('editions/workers/ingest-queue.js');

  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-d1-bytes-'));
  try {
    const file = path.join(work, 'd1.sqlite');
    const init = new Database(file);
    init.pragma(`page_size = ${D1_PAGE_SIZE}`);
    init.pragma('journal_mode = wal');
    init.close();
    const store = await openStore(`sqlite:${file}`);
    await migrate(store);
    const project = await createProject(store.db, { ...PROJECT_DEFAULTS, slug: 'bench', name: 'bench' }, Date.now());
    await store.close();
    const before = pagesOf(file);

    const templatesFile = path.join(work, 'templates');
    writeTemplateFile(templatesFile);
    const filler = createFiller({
      templates: readTemplateFile(templatesFile),
      prefix: randomBytes(8).toString('hex'),
      fingerprints,
    });
    const db = new Database(file);
    db.pragma('foreign_keys = on');
    const cache = new Map();
    const prepared = (sql) => {
      let s = cache.get(sql);
      if (!s) {
        s = db.prepare(sql);
        cache.set(sql, s);
      }
      return s;
    };
    // D1 binds ?N by number; better-sqlite3 takes them as named parameters.
    const value = (v) => (typeof v === 'boolean' ? Number(v) : v);
    const run = db.transaction((statements) => {
      for (const q of statements) {
        const s = prepared(q.sql.replace(/\?(\d+)/g, '@p$1'));
        const named = {};
        for (const m of q.sql.matchAll(/\?(\d+)/g)) named[`p${m[1]}`] = value(q.parameters[Number(m[1]) - 1]);
        if (s.reader) s.all(named);
        else s.run(named);
      }
    });
    const options = { random: Math.random, compress: compressBlob, objectKey: r2 ? payloadObjectKey : undefined };
    const receipts = db.prepare(
      'insert into ingest_receipts (message_id, committed_at) select value, ? from json_each(?)',
    );
    let pending = [];
    const commitPending = () => {
      if (pending.length === 0) return;
      run(buildD1IngestCommit(mergeWorks(pending), options).statements);
      // Receipts only for the messages with sessions, as the consumer writes them.
      const additive = pending.filter(needsReceipt);
      if (additive.length > 0)
        receipts.run(Date.now(), JSON.stringify(additive.map(() => randomBytes(16).toString('hex'))));
      pending = [];
    };
    let stored = 0;
    let requests = 0;
    while (stored < events) {
      const { kind, body } = filler.next();
      const parsed = { kind: 'envelope', envelope: parseEnvelope(new TextEncoder().encode(body)) };
      const { work: w } = buildWork(project, parsed, {
        receivedAt: Date.now(),
        clientIp: null,
        md5Hex: workersIngestRuntime.md5Hex,
      });
      // The queue consumer merges a delivery's works of one project (up to 100 messages).
      if (queue) {
        pending.push(prepareWork(w));
        if (pending.length === 100) commitPending();
      } else run(buildD1IngestCommit(prepareWork(w), options).statements);
      requests++;
      if (kind === 'event') stored++;
    }
    commitPending();
    const tagRows = db.prepare('select count(*) as n from event_tags').get().n;
    const count = db.prepare('select count(*) as n from events').get().n;
    db.close();
    const after = pagesOf(file);
    const byName = [...after.byName]
      .map(([name, bytes]) => ({ name, bytes_per_event: (bytes - (before.byName.get(name) ?? 0)) / count }))
      .filter((r) => r.bytes_per_event !== 0)
      .sort((a, b) => b.bytes_per_event - a.bytes_per_event);
    return {
      events: count,
      requests,
      tag_rows_per_event: tagRows / count,
      bytes_per_event: (after.used - before.used) / count,
      byName,
    };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values: argv } = parseArgs({
    options: {
      events: { type: 'string', default: '5000' },
      fingerprints: { type: 'string', default: '100' },
      r2: { type: 'boolean', default: false },
      queue: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const result = await d1BytesPerEvent({
    events: Number(argv.events),
    fingerprints: Number(argv.fingerprints),
    r2: argv.r2,
    queue: argv.queue,
  });
  if (argv.json) process.stdout.write(`${JSON.stringify(result)}\n`);
  else {
    process.stdout.write(
      `${result.events} events (${result.requests} requests, ${result.tag_rows_per_event.toFixed(1)} tags per event), ${argv.queue ? 'queue path' : 'direct path'}, payloads ${argv.r2 ? 'in R2' : 'in D1'}: ` +
        `${Math.round(result.bytes_per_event)} D1 bytes per event\n\n| table or index | bytes per event |\n| --- | ---: |\n`,
    );
    for (const r of result.byName) process.stdout.write(`| ${r.name} | ${r.bytes_per_event.toFixed(1)} |\n`);
  }
}
