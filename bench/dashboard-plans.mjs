#!/usr/bin/env node
// The queries behind the dashboard's measured pages (bench/dashboard.mjs), each with its
// plan and time on a loaded database: the issues list with a three-token search and an
// environment filter, an issue's page reads (detail, activity, events, feedback) and an
// event's detail. PostgreSQL: EXPLAIN (ANALYZE, BUFFERS); SQLite: EXPLAIN QUERY PLAN and
// the time of a second run. Usage: node bench/dashboard-plans.mjs URL [fingerprint]
// with URL a cached dataset (sqlite:bench/.cache/sqlite-1m-10k/faultline.db or
// postgres://…/faultline_bench_1m); needs dist/.
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { Kysely, PostgresDialect, SqliteDialect } from 'kysely';
import { listIssues, parseIssueListQuery, issueDetail, findIssue } from '../dist/read/issues.js';
import { listEvents, parseEventListQuery, eventDetail } from '../dist/read/events.js';
import { listActivity } from '../dist/triage/activity.js';
import { listFeedback } from '../dist/feedback/storage.js';
import { decompress } from '../dist/editions/node/codec.js';

const [url, fingerprintArg] = process.argv.slice(2);
if (!url) throw new Error('usage: node bench/dashboard-plans.mjs URL [fingerprint]');
const isPg = url.startsWith('postgres');
const log = [];
const dialect = isPg
  ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 4 }) })
  : new SqliteDialect({ database: new BetterSqlite3(url.replace(/^sqlite:/, ''), { readonly: true }) });
const db = new Kysely({ dialect, log: (e) => e.level === 'query' && log.push(e.query) });
const raw = isPg
  ? new pg.Client({ connectionString: url })
  : new BetterSqlite3(url.replace(/^sqlite:/, ''), { readonly: true });
if (isPg) await raw.connect();

async function explain(q) {
  if (isPg) {
    const rows = (await raw.query(`explain (analyze, buffers) ${q.sql}`, q.parameters)).rows.map(
      (r) => r['QUERY PLAN'],
    );
    return rows;
  }
  const stmt = raw.prepare(`explain query plan ${q.sql}`);
  const plan = stmt.all(...q.parameters.map((p) => (typeof p === 'boolean' ? Number(p) : p))).map((r) => r.detail);
  const run = raw.prepare(q.sql);
  const t = performance.now();
  if (run.reader) run.all(...q.parameters.map((p) => (typeof p === 'boolean' ? Number(p) : p)));
  else run.run(...q.parameters);
  return [...plan, `(ran in ${(performance.now() - t).toFixed(2)} ms)`];
}

async function show(title, fn) {
  log.length = 0;
  const t = performance.now();
  await fn();
  const ms = performance.now() - t;
  console.log(`\n=== ${title}: ${log.length} queries, ${ms.toFixed(1)} ms`);
  for (const q of [...log]) {
    console.log(`\n-- ${q.sql.replace(/\s+/g, ' ').slice(0, 400)}`);
    for (const line of await explain(q)) console.log(`   ${line}`);
  }
}

const project = await db.selectFrom('projects').select(['id']).where('slug', '=', 'query').executeTakeFirstOrThrow();
const pid = Number(project.id);
const now = Date.now();
await show('issues list, q=is:unresolved level:error timeout, environment=production', () =>
  listIssues(
    db,
    pid,
    parseIssueListQuery({ q: 'is:unresolved level:error timeout', environment: 'production' }, now),
    now,
  ),
);
await show('issues list, default', () => listIssues(db, pid, parseIssueListQuery({}, now), now));
const fp =
  fingerprintArg ??
  (
    await db
      .selectFrom('issues')
      .select('fingerprint')
      .where('project_id', '=', pid)
      .orderBy('event_count', 'desc')
      .limit(1)
      .executeTakeFirstOrThrow()
  ).fingerprint;
const found = await findIssue(db, pid, fp);
let latest = null;
await show(`issue ${fp}: detail`, async () => {
  latest = (await issueDetail(db, pid, fp, {}, now, { found })).latest_event_id;
});
await show('issue: activity, events, feedback', () =>
  Promise.all([
    listActivity(db, Number(found.row.id)),
    listEvents(db, pid, parseEventListQuery({ fingerprint: fp, limit: '10' }, now)),
    listFeedback(db, pid, { issueId: Number(found.row.id), limit: 20 }),
  ]),
);
await show(`event ${latest}: detail`, () => eventDetail(db, pid, String(latest), decompress));
await db.destroy();
if (isPg) await raw.end();
else raw.close();
