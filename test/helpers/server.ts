// Test harness: starts the real HTTP server (node edition) on a fresh database of
// each dialect. SQLite gets a temp file; PostgreSQL gets a new database created on
// the server named by TEST_DATABASE_URL and dropped afterwards.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { ManualClock, type Clock } from '../../src/clock.js';
import { loadConfig } from '../../src/config.js';
import type { AppDeps } from '../../src/context.js';
import {
  buildNodeDeps,
  startServer,
  type RunningServer,
  type StartServerOptions,
} from '../../src/editions/node/server.js';
import type { UploadLimits } from '../../src/symbols/upload.js';
import pino, { type Logger } from 'pino';

export type DialectName = 'sqlite' | 'postgres';

/**
 * The dialects to run store tests on: SQLite always, PostgreSQL when TEST_DATABASE_URL is set.
 * CI sets FAULTLINE_REQUIRE_POSTGRES=1 so a missing TEST_DATABASE_URL fails loudly instead of
 * silently skipping every PostgreSQL test.
 */
if (process.env.FAULTLINE_REQUIRE_POSTGRES === '1' && !process.env.TEST_DATABASE_URL) {
  throw new Error(
    'FAULTLINE_REQUIRE_POSTGRES=1 but TEST_DATABASE_URL is not set: the PostgreSQL tests would be skipped',
  );
}
export const dialects: DialectName[] = process.env.TEST_DATABASE_URL ? ['sqlite', 'postgres'] : ['sqlite'];

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A new empty database of the dialect; `drop` removes it. */
export async function createTestDatabase(dialect: DialectName): Promise<TestDatabase> {
  if (dialect === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-test-'));
    return {
      url: `sqlite:${path.join(dir, 'faultline.db')}`,
      async drop() {
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const base = process.env.TEST_DATABASE_URL;
  if (!base) throw new Error('TEST_DATABASE_URL is not set');
  const name = `faultline_test_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

export interface TestServer {
  url: string;
  deps: AppDeps;
  clock: Clock;
  database: TestDatabase;
  server: RunningServer;
  /** fetch relative to the server, with the API key when one was configured. */
  api(pathname: string, init?: RequestInit & { json?: unknown }): Promise<Response>;
  close(): Promise<void>;
}

export interface TestServerOptions {
  env?: Record<string, string>;
  clock?: Clock;
  /** Reuse an existing database instead of creating one (its drop is then the caller's). */
  database?: TestDatabase;
  /** A logger to use instead of a silent one (e.g. one writing to a stream the test reads). */
  logger?: Logger;
  /** Options of startServer (e.g. the alert dispatcher's). */
  serverOptions?: StartServerOptions;
  /** Symbol upload limits lower than the real ones, so a test reaches them with small files. */
  symbolUploadLimits?: UploadLimits;
}

export async function startTestServer(dialect: DialectName, options: TestServerOptions = {}): Promise<TestServer> {
  const database = options.database ?? (await createTestDatabase(dialect));
  const env = { LOG_LEVEL: 'silent', PORT: '0', HOST: '127.0.0.1', ...options.env, DATABASE_URL: database.url };
  const config = loadConfig(env);
  const clock = options.clock ?? new ManualClock(Date.now());
  const logger = options.logger ?? pino({ level: config.logLevel });
  const deps = await buildNodeDeps(config, { clock, logger, symbolUploadLimits: options.symbolUploadLimits });
  const server = await startServer(deps, 0, '127.0.0.1', options.serverOptions);
  const apiKey = config.apiKeys[0];
  return {
    url: server.url,
    deps,
    clock,
    database,
    server,
    api(pathname, init = {}) {
      const headers = new Headers(init.headers);
      if (apiKey && !headers.has('authorization')) headers.set('authorization', `Bearer ${apiKey}`);
      let body = init.body;
      if (init.json !== undefined) {
        body = JSON.stringify(init.json);
        headers.set('content-type', 'application/json');
      }
      return fetch(server.url + pathname, { ...init, headers, body });
    },
    async close() {
      await server.close();
      if (!options.database) await database.drop();
    },
  };
}
