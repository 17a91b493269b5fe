// Benchmark databases: a fresh SQLite file or a fresh PostgreSQL database per run
// (created on the server named by BENCH_DATABASE_URL / TEST_DATABASE_URL and
// dropped afterwards), and read-only counters that measure what the server has
// durably committed, straight from the tables.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';

export function postgresBaseUrl() {
  return process.env.BENCH_DATABASE_URL || process.env.TEST_DATABASE_URL || null;
}

export async function createBenchDatabase(kind, { dataDir } = {}) {
  if (kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(dataDir ?? os.tmpdir(), 'faultline-bench-'));
    const file = path.join(dir, 'faultline.db');
    return {
      kind,
      url: `sqlite:${file}`,
      file,
      async counter() {
        return sqliteCounter(file);
      },
      async drop() {
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const base = postgresBaseUrl();
  if (!base) throw new Error('PostgreSQL benchmark needs BENCH_DATABASE_URL or TEST_DATABASE_URL');
  const name = `faultline_bench_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    kind,
    url: url.toString(),
    name,
    async counter() {
      return postgresCounter(url.toString(), name);
    },
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

const QUERIES = {
  counted: 'select coalesce(sum(event_count), 0) as n from issues where project_id = $1',
  stored: 'select count(*) as n from events where project_id = $1',
  issues: 'select count(*) as n from issues where project_id = $1',
  sessions: 'select count(*) as n from sessions where project_id = $1',
};

function sqliteCounter(file) {
  const db = new BetterSqlite3(file, { readonly: true, fileMustExist: true });
  const stmts = Object.fromEntries(Object.entries(QUERIES).map(([k, q]) => [k, db.prepare(q.replace('$1', '?'))]));
  return {
    async count(what, projectId) {
      return Number(stmts[what].get(projectId).n);
    },
    async all(projectId) {
      const out = {};
      for (const k of Object.keys(QUERIES)) out[k] = Number(stmts[k].get(projectId).n);
      return out;
    },
    async version() {
      return db.prepare('select sqlite_version() as v').get().v;
    },
    async vacuumIfAutovacuumOff() {
      return false;
    },
    async size() {
      let total = 0;
      for (const f of [file, `${file}-wal`]) {
        try {
          total += fs.statSync(f).size;
        } catch {}
      }
      return total;
    },
    async close() {
      db.close();
    },
  };
}

async function postgresCounter(url, name) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const q = async (text, params = []) => (await client.query(text, params)).rows[0];
  return {
    async count(what, projectId) {
      return Number((await q(QUERIES[what], [projectId])).n);
    },
    async all(projectId) {
      const out = {};
      for (const k of Object.keys(QUERIES)) out[k] = Number((await q(QUERIES[k], [projectId])).n);
      return out;
    },
    async version() {
      return (await q('show server_version')).server_version;
    },
    async size() {
      return Number((await q('select pg_database_size($1) as n', [name])).n);
    },
    /**
     * With the server's autovacuum off (some CI set-ups turn it off), nothing removes the
     * dead rows every upsert of an issue or hourly counter leaves; runs VACUUM ANALYZE, as
     * autovacuum would have, and says whether it had to.
     */
    async vacuumIfAutovacuumOff() {
      if ((await q('show autovacuum')).autovacuum === 'on') return false;
      await client.query('vacuum analyze');
      return true;
    },
    async close() {
      await client.end();
    },
  };
}
