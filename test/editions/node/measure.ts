// Throughput of the group-commit writer alone (no HTTP), for tuning: submits
// one-event works (as SDKs send them) in waves of `--wave` concurrent submits and
// prints processed events/s per dialect. Not a test; build and run with
//   npx tsc -p tsconfig.json --noEmit false --outDir node_modules/.cache/measure
//   node node_modules/.cache/measure/test/editions/node/measure.js [--wave 200] [--events 20000]
//        [--dialect sqlite|postgres] [--sizes 3000,20000] [--statements] [--pragma 'wal_autocheckpoint = 0']
//        [--drop-indexes events_project_user,...] [--wal-pages]
// PostgreSQL runs when TEST_DATABASE_URL is set.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { sql } from 'kysely';
import type { IngestWork, Level } from '../../../src/ingest/types.js';
import {
  createProject,
  fp,
  hex32,
  makeEvent,
  makeSession,
  makeWork,
  newWriter,
  openTestStore,
} from '../../helpers/factory.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : fallback;
}

const waves = Number(arg('wave', '200'));
const total = Number(arg('events', '20000'));
const only = arg('dialect', '');
const timing = process.argv.includes('--statements');
/** SQLite: which tables and indexes the pages each commit writes to the WAL belong to. */
const walPages = process.argv.includes('--wal-pages');
/** Payload sizes in bytes: 70 % small, 30 % large, as the benchmark issue describes. */
const [smallSize, largeSize] = arg('sizes', '3000,20000').split(',').map(Number);

/**
 * Wall time per SQL statement on SQLite, measured at better-sqlite3 (so raw inserts and
 * begin/commit count too). Keyed by the statement's start and target, not its full text.
 */
class StatementTimer {
  readonly totals = new Map<string, { ms: number; n: number }>();
  install(): void {
    const proto = Object.getPrototypeOf(new BetterSqlite3(':memory:').prepare('select 1'));
    for (const method of ['run', 'all', 'get', 'iterate'] as const) {
      const original = proto[method];
      const totals = this.totals;
      proto[method] = function (this: { source: string }, ...args: unknown[]) {
        const at = performance.now();
        try {
          return original.apply(this, args);
        } finally {
          const key = this.source
            .replace(/\s+/g, ' ')
            .replace(/\(.*$/, '')
            .replace(/ values .*$/, '')
            .slice(0, 40);
          const t = totals.get(key) ?? { ms: 0, n: 0 };
          t.ms += performance.now() - at;
          t.n += 1;
          totals.set(key, t);
        }
      };
    }
  }

  /** PostgreSQL: wall time from sending a statement to its answer (round trip included). */
  installPostgres(): void {
    const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    const totals = this.totals;
    proto.query = function (this: unknown, ...args: unknown[]) {
      const text = typeof args[0] === 'string' ? args[0] : ((args[0] as { text?: string })?.text ?? '?');
      const at = performance.now();
      const result = original.apply(this, args);
      if (result && typeof (result as Promise<unknown>).then === 'function') {
        const key = text
          .replace(/\s+/g, ' ')
          .replace(/\(.*$/, '')
          .replace(/ values .*$/, '')
          .slice(0, 40);
        void (result as Promise<unknown>)
          .finally(() => {
            const t = totals.get(key) ?? { ms: 0, n: 0 };
            t.ms += performance.now() - at;
            t.n += 1;
            totals.set(key, t);
          })
          .catch(() => {});
      }
      return result;
    };
  }
}

/** CPU time of the main thread alone (Linux), in microseconds; the process total includes the worker. */
function mainThreadCpuUs(): number {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / 100; // utime + stime, in 1/100 s ticks
  } catch {
    return NaN;
  }
}

function payload(size: number, seed: number): Buffer {
  const breadcrumbs: Record<string, unknown>[] = [];
  const frames = Array.from({ length: 12 }, (_, i) => ({
    filename: `src/module${(seed + i) % 40}.js`,
    function: `handler${i}`,
    lineno: 10 + i,
    colno: 5,
    in_app: i < 6,
  }));
  while (JSON.stringify(breadcrumbs).length < size - 1500) {
    const n = breadcrumbs.length;
    breadcrumbs.push({
      timestamp: 1767000000 + n,
      category: n % 3 ? 'http' : 'ui.click',
      message: `step ${n} of request ${seed}`,
      data: { url: `/api/items/${seed % 97}/${n}`, status_code: 200 },
    });
  }
  return Buffer.from(
    JSON.stringify({
      event_id: hex32(),
      exception: { values: [{ type: 'TypeError', stacktrace: { frames } }] },
      breadcrumbs: { values: breadcrumbs },
    }),
  );
}

/**
 * Reads the WAL (no checkpoint ran: every page each commit wrote is a frame of it) and
 * names the table or index each frame's page belongs to (SQLite's dbstat), per commit.
 */
function printWalPages(file: string): void {
  const wal = fs.readFileSync(`${file}-wal`);
  const pageSize = wal.readUInt32BE(8);
  const pages: number[] = [];
  let commits = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    pages.push(wal.readUInt32BE(at));
    if (wal.readUInt32BE(at + 4) !== 0) commits += 1;
  }
  const db = new BetterSqlite3(file, { readonly: true });
  const owner = new Map(
    (
      db.prepare('select name, pageno, pagetype from dbstat').all() as {
        name: string;
        pageno: number;
        pagetype: string;
      }[]
    ).map((r) => [r.pageno, r.pagetype === 'internal' ? `${r.name} (interior)` : r.name]),
  );
  db.close();
  const counts = new Map<string, number>();
  for (const p of pages) {
    const name = owner.get(p) ?? (p === 1 ? '(header)' : '(free)');
    counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  console.log(
    `  WAL: ${pages.length} pages in ${commits} commits, ${(pages.length / commits).toFixed(1)} per commit; per commit by table or index:`,
  );
  for (const [name, n] of [...counts].sort((a, b) => b[1] - a[1]).slice(0, 25))
    console.log(`    ${name.padEnd(44)} ${(n / commits).toFixed(2)}`);
}

async function run(dialect: 'sqlite' | 'postgres'): Promise<void> {
  const t = await openTestStore(dialect);
  try {
    const project = await createProject(t.store);
    const pragma = arg('pragma', '');
    if (pragma && dialect === 'sqlite') await sql.raw(`pragma ${pragma}`).execute(t.store.db);
    // What an index costs ingest: --drop-indexes a,b runs without them.
    for (const index of arg('drop-indexes', '').split(',').filter(Boolean))
      await sql.raw(`drop index ${index}`).execute(t.store.db);
    const timer = new StatementTimer();
    if (timing) {
      if (dialect === 'sqlite') timer.install();
      else timer.installPostgres();
    }
    const store = t.store;
    // Statements are timed on this thread, and the WAL is kept whole for this connection
    // only, so then batches must run here.
    if (walPages && dialect === 'sqlite') await sql.raw('pragma wal_autocheckpoint = 0').execute(store.db);
    const writer = newWriter(store, {
      maxBatchItems: Math.max(waves * 2, 1000),
      ...(timing || walPages ? { batchThread: false } : {}),
    });
    const levels: Level[] = ['error', 'error', 'error', 'warning', 'fatal', 'info'];
    const payloads = Array.from({ length: 20 }, (_, i) => payload(i < 14 ? smallSize : largeSize, i));
    const now = Date.UTC(2026, 0, 10, 12);
    const works: IngestWork[] = [];
    for (let i = 0; i < total; i++) {
      const level = levels[i % levels.length];
      const e = makeEvent({
        fingerprint: fp(`fp${i % 200}`),
        release: `app@1.${i % 10}.0`,
        level,
        isCrash: level === 'fatal',
        timestamp: now - (i % 3600) * 1000,
        userKey: `u${i % 1000}`,
        tags: {
          os: 'Android 14',
          device: 'Pixel 8',
          release: `app@1.${i % 10}.0`,
          environment: 'production',
          handled: 'yes',
        },
        raw: payloads[i % payloads.length],
      });
      works.push(
        makeWork(project, {
          events: [e],
          receivedAt: now,
          sessions: i % 10 === 0 ? [makeSession({ release: `app@1.${i % 10}.0` })] : [],
        }),
      );
    }
    const started = performance.now();
    const cpu0 = process.cpuUsage();
    const main0 = mainThreadCpuUs();
    let submitMs = 0;
    for (let i = 0; i < works.length; i += waves) {
      const s = performance.now();
      const ps = works.slice(i, i + waves).map((w) => writer.submit(w));
      submitMs += performance.now() - s;
      await Promise.all(ps);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpu0);
    const mainCpu = mainThreadCpuUs() - main0;
    const stats = writer.stats();
    await writer.close();
    if (walPages && dialect === 'sqlite') printWalPages(t.database.url.replace(/^sqlite:/, ''));
    if (dialect === 'sqlite' && pragma.startsWith('wal_autocheckpoint = 0')) {
      // With automatic checkpoints off, the WAL holds every page the run wrote.
      const [row] = (await sql.raw('pragma wal_checkpoint(PASSIVE)').execute(t.store.db)).rows as { log: number }[];
      console.log(`  WAL frames (pages written): ${row.log}, ${(row.log / total).toFixed(2)} per event`);
    }
    console.log(
      `${dialect.padEnd(8)} wave ${String(waves).padStart(5)}: ${Math.round(total / seconds)} events/s ` +
        `(${stats.batchesCommitted} batches, avg ${stats.averageBatchEvents.toFixed(0)} events; ` +
        `submit/prepare ${((submitMs / total) * 1000).toFixed(1)} us/event, ` +
        `commit ${(((seconds * 1000 - submitMs) / total) * 1000).toFixed(1)} us/event; ` +
        `main thread CPU ${(mainCpu / total).toFixed(1)} us/event, ` +
        `process CPU ${((cpu.user + cpu.system) / total).toFixed(1)} us/event)`,
    );
    if (timing) {
      for (const [k, v] of [...timer.totals].sort((a, b) => b[1].ms - a[1].ms)) {
        console.log(
          `  ${k.padEnd(28)} ${String(v.n).padStart(5)}x ${((v.ms / total) * 1000).toFixed(1).padStart(7)} us/event`,
        );
      }
    }
  } finally {
    await t.close();
  }
}

for (const d of ['sqlite', 'postgres'] as const) {
  if (only && only !== d) continue;
  if (d === 'postgres' && !process.env.TEST_DATABASE_URL) continue;
  await run(d);
}
