// Bringing a database's schema to the latest version with Kysely's Migrator. Web APIs
// only, so the serverless edition migrates D1 with the same code (src/store/d1.ts).
import { Migrator, sql } from 'kysely';
import type { Store } from './database.js';
import { StaticMigrationProvider, migrations } from './migrations.js';

export class SchemaTooNewError extends Error {}

const MIGRATION_LOCK_KEY = 726_153_001; // arbitrary constant shared by every faultline instance

/**
 * Brings the schema to the latest version. Refuses a database migrated by a newer
 * faultline. On PostgreSQL a session advisory lock makes concurrent starts safe:
 * the second instance waits, then finds nothing left to do.
 */
export async function migrate(store: Store): Promise<{ applied: string[]; version: string }> {
  const known = Object.keys(migrations(store.dialect));
  const run = async (): Promise<string[]> => {
    const existing = await appliedMigrations(store);
    const unknown = existing.filter((name) => !known.includes(name));
    if (unknown.length > 0) {
      throw new SchemaTooNewError(
        `the database schema is newer than this version of faultline (it has migration ${unknown[unknown.length - 1]}, ` +
          `this build knows up to ${known[known.length - 1]}); upgrade faultline or point DATABASE_URL at another database`,
      );
    }
    // Up to date: nothing for the Migrator, whose table introspection costs a query per
    // table (on D1, at every isolate's start, a round trip each).
    if (known.every((name) => existing.includes(name))) return [];
    const migrator = new Migrator({ db: store.db, provider: new StaticMigrationProvider(store.dialect) });
    const { error, results } = await migrator.migrateToLatest();
    if (error) throw error instanceof Error ? error : new Error(String(error));
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  };
  let applied: string[];
  if (store.dialect === 'postgres') {
    applied = await store.db.connection().execute(async (conn) => {
      await sql`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`.execute(conn);
      try {
        return await run();
      } finally {
        await sql`select pg_advisory_unlock(${MIGRATION_LOCK_KEY})`.execute(conn);
      }
    });
  } else {
    applied = await run();
  }
  return { applied, version: known[known.length - 1] };
}

async function appliedMigrations(store: Store): Promise<string[]> {
  try {
    const rows = await sql<{ name: string }>`select name from kysely_migration order by name`.execute(store.db);
    return rows.rows.map((r) => r.name);
  } catch {
    return []; // no migration table yet: a new database
  }
}
