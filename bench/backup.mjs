#!/usr/bin/env node
// `faultline backup` on a large SQLite database (BENCHMARKS.md "Backup"): builds a
// database with N events (default 1 000 000) straight through SQL (issues, events with
// two tags each, payload chunks of 40 events holding 16 KB of stored blob, as ingest
// writes them), then runs the real command (`node dist/cli/main.js backup`) under
// /usr/bin/time and reports its wall time, peak memory (max RSS) and the sizes.
// Usage: node bench/backup.mjs [events] (run `npm run build` first).
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import BetterSqlite3 from 'better-sqlite3';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const N = Number(process.argv[2] ?? 1_000_000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-backup-bench-'));
const file = path.join(dir, 'faultline.db');
const url = `sqlite:${file}`;

try {
  execFileSync(process.execPath, [path.join(root, 'dist/cli/main.js'), 'migrate'], {
    env: { ...process.env, DATABASE_URL: url },
  });
  const seedStart = Date.now();
  const db = new BetterSqlite3(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = OFF');
  const now = Date.UTC(2026, 10, 1);
  db.prepare(
    `insert into projects (slug, name, platform, dsn_key, sample_keep_first, sample_rate, daily_quota, created_at) values ('big', 'big', 'backend', ?, 100, 1, 0, ?)`,
  ).run(randomBytes(16).toString('hex'), now);
  const ISSUES = 1000;
  const insIssue = db.prepare(
    `insert into issues (project_id, fingerprint, title, level, error_type, screen, location, platform, status, event_count, stored_count, users, first_seen, last_seen, first_release, last_release, created_at, updated_at)
     values (1, ?, ?, 'error', 'TypeError', '', 'app.js:1', 'node', 'unresolved', ?, ?, 10, ?, ?, 'app@1', 'app@1', ?, ?)`,
  );
  const insChunk = db.prepare('insert into payload_chunks (project_id, received_at, data) values (1, ?, ?)');
  const insEvent = db.prepare(
    `insert into events (project_id, issue_id, event_id, fingerprint, timestamp, received_at, level, platform, release, dist, environment, user_id, screen, error_type, error_location, title, message, is_crash, sdk_name, tags, detail, raw, payload_chunk, payload_start, payload_length)
     values (1, ?, ?, ?, ?, ?, 'error', 'node', 'app@1', '', 'production', ?, '', 'TypeError', 'app.js:1', ?, ?, 0, 'sentry.javascript.node', ?, x'', x'', ?, ?, 400)`,
  );
  const insTag = db.prepare('insert into event_tags (project_id, event_id, key, value) values (1, ?, ?, ?)');
  const per = Math.ceil(N / ISSUES);
  db.transaction(() => {
    for (let i = 0; i < ISSUES; i++)
      insIssue.run(i.toString(16).padStart(32, '0'), `TypeError: issue ${i}`, per, per, now, now, now, now);
  })();
  const blob = randomBytes(16 * 1024);
  let chunk = 0;
  for (let start = 0; start < N; start += 10_000) {
    db.transaction(() => {
      for (let i = start; i < Math.min(N, start + 10_000); i++) {
        const at = now + i * 10;
        if (i % 40 === 0) chunk = Number(insChunk.run(at + 390, blob).lastInsertRowid);
        const issue = (i % ISSUES) + 1;
        const id = Number(
          insEvent.run(
            issue,
            randomBytes(16).toString('hex'),
            (issue - 1).toString(16).padStart(32, '0'),
            at,
            at,
            `user-${i % 5000}`,
            `TypeError: issue ${issue - 1}`,
            `cannot read property of undefined (request ${i})`,
            `{"region":"eu-west-1","customer":"c${i % 997}"}`,
            chunk,
            (i % 40) * 400,
          ).lastInsertRowid,
        );
        insTag.run(id, 'region', 'eu-west-1');
        insTag.run(id, 'customer', `c${i % 997}`);
      }
    })();
  }
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  const seedSeconds = (Date.now() - seedStart) / 1000;
  const sourceBytes = fs.statSync(file).size;

  const target = path.join(dir, 'copy.db');
  const run = spawnSync(
    '/usr/bin/time',
    ['-f', 'TIME %e %M', process.execPath, path.join(root, 'dist/cli/main.js'), 'backup', target],
    {
      env: { ...process.env, DATABASE_URL: url },
      encoding: 'utf8',
    },
  );
  if (run.status !== 0) throw new Error(`backup failed: ${run.stderr}`);
  const stderr = run.stderr;
  const summary = run.stdout.trim();
  const m = /TIME ([\d.]+) (\d+)/.exec(stderr);
  console.log(
    JSON.stringify(
      {
        events: N,
        seed_seconds: seedSeconds,
        source_mb: Math.round(sourceBytes / 1048576),
        copy_mb: Math.round(fs.statSync(target).size / 1048576),
        backup_seconds: m ? Number(m[1]) : null,
        backup_peak_rss_mb: m ? Math.round(Number(m[2]) / 1024) : null,
        summary,
      },
      null,
      2,
    ),
  );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
