#!/usr/bin/env node
// Issue merge benchmark (`node bench/merge.mjs`): on a fresh SQLite database (then
// PostgreSQL when BENCH_DATABASE_URL or TEST_DATABASE_URL is set), two issues of
// --events stored events each (rows written straight into the tables, 24 hourly
// buckets and 1 000 users per issue, half of them shared), then one merge through the
// code the merge route runs (dist/read/merge.js): the time it takes, and the counts
// after it. Needs dist/ (npx tsc -p tsconfig.build.json). Writes JSON to
// bench/results/. Never asserts on speed.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createBenchDatabase, postgresBaseUrl } from './lib/db.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const { openStore } = await import(path.join(root, 'dist/editions/node/open-store.js'));
const { migrate } = await import(path.join(root, 'dist/store/migrate.js'));
const { mergeIssues } = await import(path.join(root, 'dist/read/merge.js'));

const { values: argv } = parseArgs({
  options: { db: { type: 'string' }, events: { type: 'string', default: '100000' } },
});
const N = Number(argv.events);
const kinds = argv.db ? argv.db.split(',') : ['sqlite', ...(postgresBaseUrl() ? ['postgres'] : [])];
const HOUR = 3_600_000;

async function measure(kind) {
  const database = await createBenchDatabase(kind);
  const store = await openStore(database.url);
  try {
    await migrate(store);
    const db = store.db;
    const now = Date.now();
    const project = await db
      .insertInto('projects')
      .values({
        slug: 'bench',
        name: 'bench',
        platform: 'node',
        dsn_key: 'bench',
        sample_keep_first: 1000,
        sample_rate: 1,
        daily_quota: 0,
        created_at: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const pid = Number(project.id);
    const fingerprints = ['a'.repeat(32), 'b'.repeat(32)];
    for (const [k, fp] of fingerprints.entries()) {
      const issue = await db
        .insertInto('issues')
        .values({
          project_id: pid,
          fingerprint: fp,
          title: `Error ${k}`,
          level: 'error',
          error_type: 'Error',
          screen: '',
          location: 'app.js:1',
          platform: 'node',
          status: 'unresolved',
          event_count: N,
          stored_count: N,
          users: 1000,
          first_seen: now - 24 * HOUR + k,
          last_seen: now - k,
          first_seen_id: null,
          last_seen_id: null,
          first_release: 'r',
          last_release: 'r',
          resolved_release: null,
          resolved_at: null,
          regressed_at: null,
          created_at: now,
          updated_at: now,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      const iid = Number(issue.id);
      const rows = [];
      for (let i = 0; i < N; i++) {
        rows.push({
          project_id: pid,
          issue_id: iid,
          event_id: `${k}-${i}`,
          fingerprint: fp,
          timestamp: now - (i % 24) * HOUR,
          received_at: now,
          level: 'error',
          platform: 'node',
          release: 'r',
          dist: '',
          environment: 'production',
          user_id: `u${(i % 1000) + k * 500}`,
          user_email: null,
          user_username: null,
          user_ip: null,
          device_id: null,
          device_model: null,
          os_name: null,
          os_version: null,
          screen: '',
          error_type: 'Error',
          error_location: 'app.js:1',
          title: `Error ${k}`,
          message: '',
          is_crash: 0,
          sdk_name: 'sentry.javascript.node',
          tags: '{}',
          detail: new Uint8Array(0),
          raw: new Uint8Array(0),
          payload_chunk: null,
          payload_start: null,
          payload_length: null,
          symbolicated: null,
        });
      }
      for (let i = 0; i < rows.length; i += 500)
        await db
          .insertInto('events')
          .values(rows.slice(i, i + 500))
          .execute();
      const bucket = Math.floor(now / HOUR) * HOUR;
      await db
        .insertInto('issue_hourly')
        .values(
          Array.from({ length: 24 }, (_, h) => ({
            issue_id: iid,
            bucket: bucket - h * HOUR,
            events: Math.floor(N / 24),
          })),
        )
        .execute();
      await db
        .insertInto('issue_users')
        .values(Array.from({ length: 1000 }, (_, u) => ({ issue_id: iid, user_key: `id:u${u + k * 500}` })))
        .execute();
    }
    const started = performance.now();
    const merged = await mergeIssues(store, pid, { fingerprints: [fingerprints[1]], into: fingerprints[0] }, now);
    const ms = performance.now() - started;
    return {
      db: kind,
      events_per_issue: N,
      merge_ms: Math.round(ms),
      event_count: merged.event_count,
      users: merged.users,
    };
  } finally {
    await store.close();
    await database.drop();
  }
}

const results = [];
for (const kind of kinds) {
  const r = await measure(kind);
  console.log(JSON.stringify(r));
  results.push(r);
}
const dir = path.join(here, 'results');
fs.mkdirSync(dir, { recursive: true });
fs.writeFileSync(
  path.join(dir, `merge-${new Date().toISOString().replace(/[:.]/g, '-')}.json`),
  JSON.stringify({ results }, null, 2),
);
