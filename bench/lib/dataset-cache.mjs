// Loaded benchmark databases kept between runs: a SQLite file under the cache folder and
// a PostgreSQL database named after the dataset's size, each described by a JSON file in
// the cache folder (what was loaded, when, by which dataset version, and the project's id),
// so a rerun measures the same data without loading it again (bench/dashboard.mjs).
import fs from 'node:fs';
import path from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { postgresBaseUrl } from './db.mjs';

/** Bumped when the generator, its templates or the load's shape change what a cached dataset holds. */
export const DATASET_VERSION = 1;

export function sizeLabel(events) {
  return events % 1_000_000 === 0
    ? `${events / 1_000_000}m`
    : events % 1000 === 0
      ? `${events / 1000}k`
      : String(events);
}

/**
 * The cached database of `kind` for `events`/`issues`: { url, fresh, stale reason, counter(),
 * markLoaded(info), drop() }. `fresh` is true when it has to be loaded; the caller loads it and
 * then calls markLoaded.
 */
export async function cachedDatabase(
  kind,
  { dir, events, issues, amplify = 1, knownMigrations, maxAgeHours, rebuild },
) {
  fs.mkdirSync(dir, { recursive: true });
  const label = `${sizeLabel(events)}-${sizeLabel(issues)}`;
  const metaFile = path.join(dir, `${kind}-${label}.json`);
  const meta = readJson(metaFile);
  const db = kind === 'sqlite' ? sqliteDatabase(dir, label) : await postgresDatabase(events, issues);
  const reason = rebuild
    ? 'asked to rebuild'
    : !meta
      ? 'not built yet'
      : meta.version !== DATASET_VERSION || meta.events !== events || meta.issues !== issues
        ? `built by dataset version ${meta.version}`
        : (meta.amplify ?? 1) !== amplify
          ? `built with --amplify ${meta.amplify ?? 1}`
          : Date.now() - Date.parse(meta.built_at) > maxAgeHours * 3600_000
            ? `older than ${maxAgeHours} h`
            : await db.check(events, knownMigrations);
  if (reason) {
    await db.drop();
    await db.create();
    fs.rmSync(metaFile, { force: true });
  }
  return {
    kind,
    url: db.url,
    fresh: Boolean(reason),
    reason,
    meta,
    counter: () => db.counter(),
    markLoaded(info) {
      fs.writeFileSync(
        metaFile,
        `${JSON.stringify({ version: DATASET_VERSION, events, issues, amplify, url: db.url, built_at: new Date().toISOString(), ...info }, null, 2)}\n`,
      );
    },
    drop: async () => {},
  };
}

function readJson(file) {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch {
    return null;
  }
}

function sqliteDatabase(dir, label) {
  const folder = path.join(dir, `sqlite-${label}`);
  const file = path.join(folder, 'faultline.db');
  return {
    url: `sqlite:${file}`,
    async check(events, knownMigrations) {
      if (!fs.existsSync(file)) return 'the file is missing';
      const db = new BetterSqlite3(file, { readonly: true });
      try {
        return verdict(
          db
            .prepare('select name from kysely_migration')
            .all()
            .map((r) => r.name),
          Number(db.prepare('select coalesce(sum(event_count), 0) as n from issues').get().n),
          events,
          knownMigrations,
        );
      } catch (err) {
        return `unreadable (${err.message})`;
      } finally {
        db.close();
      }
    },
    async create() {
      fs.mkdirSync(folder, { recursive: true });
    },
    async drop() {
      fs.rmSync(folder, { recursive: true, force: true });
    },
    async counter() {
      return sqliteCounter(file);
    },
  };
}

async function postgresDatabase(events, issues) {
  const base = postgresBaseUrl();
  if (!base) throw new Error('PostgreSQL benchmark needs BENCH_DATABASE_URL or TEST_DATABASE_URL');
  const name = `faultline_bench_${sizeLabel(events)}${issues === 10_000 ? '' : `_${sizeLabel(issues)}`}`;
  const url = new URL(base);
  url.pathname = `/${name}`;
  const admin = async (fn) => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    try {
      return await fn(c);
    } finally {
      await c.end();
    }
  };
  return {
    url: url.toString(),
    async check(expected, knownMigrations) {
      const exists = await admin(
        async (c) => (await c.query('select 1 from pg_database where datname = $1', [name])).rowCount > 0,
      );
      if (!exists) return 'the database is missing';
      const c = new pg.Client({ connectionString: url.toString() });
      await c.connect();
      try {
        const names = (await c.query('select name from kysely_migration')).rows.map((r) => r.name);
        const n = Number((await c.query('select coalesce(sum(event_count), 0) as n from issues')).rows[0].n);
        return verdict(names, n, expected, knownMigrations);
      } catch (err) {
        return `unreadable (${err.message})`;
      } finally {
        await c.end();
      }
    },
    async create() {
      await admin((c) => c.query(`create database ${name}`));
    },
    async drop() {
      await admin((c) => c.query(`drop database if exists ${name} with (force)`));
    },
    async counter() {
      return postgresCounter(url.toString());
    },
  };
}

/** Why a cached database cannot be measured as it is, or null when it can. */
function verdict(applied, counted, events, knownMigrations) {
  const unknown = applied.filter((m) => !knownMigrations.includes(m));
  if (unknown.length) return `it has migrations this build does not know (${unknown.join(', ')})`;
  if (counted < events) return `it counts ${counted} events, not ${events}`;
  return null;
}

// Counters in the shape bench/lib/db.mjs's have, for the load's wait and vacuum.
function sqliteCounter(file) {
  let db = null;
  const open = () => (db ??= new BetterSqlite3(file, { readonly: true, fileMustExist: true }));
  return {
    async count(_what, projectId) {
      return Number(
        open().prepare('select coalesce(sum(event_count), 0) as n from issues where project_id = ?').get(projectId).n,
      );
    },
    async vacuumIfAutovacuumOff() {
      return false;
    },
    async close() {
      db?.close();
    },
  };
}

async function postgresCounter(url) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  return {
    async count(_what, projectId) {
      return Number(
        (await client.query('select coalesce(sum(event_count), 0) as n from issues where project_id = $1', [projectId]))
          .rows[0].n,
      );
    },
    // A kept dataset is measured for a day: analysed once, as autovacuum would soon after the load.
    async vacuumIfAutovacuumOff() {
      await client.query('vacuum analyze');
      return true;
    },
    async close() {
      await client.end();
    },
  };
}
