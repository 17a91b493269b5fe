// What every CLI command shares: the version, settings from the environment,
// opening and migrating the database, and CliError for failures that should end
// the command with a plain message (no stack trace) and exit code 1. Kept light:
// commands import the server and its dependencies only when they run, so
// `faultline --help` starts fast.
import { createRequire } from 'node:module';
import type { Logger } from '../logger.js';
import { ConfigError, loadConfig, type Config } from '../config.js';
import { DatabaseConfigError, SchemaTooNewError, migrate, type Store } from '../store/database.js';
import { openStore } from '../editions/node/open-store.js';

/** A failure the user can act on: printed as `faultline: <message>`, exit code 1. */
export class CliError extends Error {}

/** The package version (package.json sits two levels up from both src/cli and dist/cli). */
export const VERSION: string = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;

export interface CliContext {
  version: string;
  /** Settings from the environment; a bad value throws ConfigError naming the setting. */
  config(): Config;
  /** Opens DATABASE_URL and brings its schema up to date (refusing a newer schema). */
  openMigratedStore(config: Config, logger?: Logger): Promise<Store>;
}

export const cliContext: CliContext = {
  version: VERSION,
  config: () => loadConfig(process.env),
  async openMigratedStore(config, logger) {
    const store = await openStore(config.databaseUrl);
    try {
      const { applied, version } = await migrate(store);
      if (applied.length > 0)
        logger?.info({ applied, version, database: store.description }, 'database schema migrated');
    } catch (err) {
      await store.close();
      throw err;
    }
    return store;
  },
};

/** The management API key a command uses unless told another: the first of API_KEYS. */
export function firstApiKey(env: Record<string, string | undefined> = process.env): string | undefined {
  return (env.API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .find((k) => k !== '');
}

/** One line a person can act on, for any failure of a command. */
export function describeFailure(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  if (
    err instanceof CliError ||
    err instanceof ConfigError ||
    err instanceof DatabaseConfigError ||
    err instanceof SchemaTooNewError
  ) {
    return err.message;
  }
  const code = (err as NodeJS.ErrnoException).code;
  // PostgreSQL failing after the first connection (wrong password, missing database, server gone).
  if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === '28P01' || code === '28000' || code === '3D000') {
    return `cannot use the database: ${err.message}`;
  }
  return err.message || err.name;
}
