// The per-map limits of source maps (docs/api.md "Symbol files") at upload, on each
// database: a map over the segment, line or section limit is a 400 that names the limit,
// and nothing of it stays stored (no row in any state, no chunk). And the half-written
// rows of an upload whose server was killed are gone once the server is back (SQLite: at
// the start; PostgreSQL, where other instances may be writing: once an hour old), and
// those of another instance once an hour old while the server runs.
import http from 'node:http';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/editions/node/open-store.js';
import type { Store } from '../../src/store/database.js';
import type { ProjectRow } from '../../src/store/schema.js';
import pino from 'pino';
import { ManualClock } from '../../src/clock.js';
import { defaultSymbolKinds } from '../../src/symbols/default-kinds.js';
import { SymbolService } from '../../src/symbols/service.js';
import { SOURCE_MAP_LIMITS } from '../../src/symbols/sourcemap-index.js';
import { openPendingFile } from '../../src/symbols/storage.js';
import { CLI, ensureBuilt, startServe, type ServeProcess } from '../helpers/cli.js';
import { createTestDatabase, dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { uploadSymbols } from './helpers.js';
import { nodeIngestRuntime } from '../../src/editions/node/runtime.js';

async function storedRows(t: TestServer): Promise<{ files: number; chunks: number }> {
  const files = await t.deps.store.db
    .selectFrom('symbol_files')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const chunks = await t.deps.store.db
    .selectFrom('symbol_chunks')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  return { files: Number(files.n), chunks: Number(chunks.n) };
}

describe.each(dialects)('source map limits on %s', (dialect) => {
  let t: TestServer;
  let project: ProjectRow;

  beforeAll(async () => {
    t = await startTestServer(dialect);
    project = await makeProject(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  const refused = async (name: string, map: string, message: RegExp) => {
    const res = await uploadSymbols(t, project, { kind: 'sourcemap', release: '1.0', files: [{ name, data: map }] });
    const body = (await res.json()) as { error?: string; detail?: string };
    expect(res.status, JSON.stringify(body)).toBe(400);
    expect(JSON.stringify(body)).toMatch(message);
    expect(await storedRows(t)).toEqual({ files: 0, chunks: 0 });
  };

  it('refuses a map with more generated lines than the limit', async () => {
    const lines = `{"version":3,"sources":[],"names":[],"mappings":"${';'.repeat(SOURCE_MAP_LIMITS.maxLines)}"}`;
    await refused('lines.js.map', lines, new RegExp(`more than ${SOURCE_MAP_LIMITS.maxLines} generated lines`));
  });

  it('refuses a map with more segments than the limit', async () => {
    // One-field segments, the shortest there are (20 MB).
    const segments = `{"version":3,"sources":["a.js"],"names":[],"mappings":"AAAA${',A'.repeat(SOURCE_MAP_LIMITS.maxSegments)}"}`;
    await refused('segments.js.map', segments, new RegExp(`more than ${SOURCE_MAP_LIMITS.maxSegments} mappings`));
  }, 60_000);

  it('refuses an indexed map with more sections than the limit', async () => {
    const section = (i: number) =>
      `{"offset":{"line":${i},"column":0},"map":{"version":3,"sources":[],"names":[],"mappings":""}}`;
    const map = `{"version":3,"sections":[${Array.from({ length: SOURCE_MAP_LIMITS.maxSections + 1 }, (_, i) => section(i)).join(',')}]}`;
    await refused('sections.js.map', map, new RegExp(`more than ${SOURCE_MAP_LIMITS.maxSections} sections`));
  });

  it('stores a map just within the line limit', async () => {
    const lines = `{"version":3,"sources":[],"names":[],"mappings":"${';'.repeat(SOURCE_MAP_LIMITS.maxLines - 1)}"}`;
    const res = await uploadSymbols(t, project, {
      kind: 'sourcemap',
      release: '1.0',
      files: [{ name: 'ok.js.map', data: lines }],
    });
    expect(res.status).toBe(201);
  });
});

describe.each(dialects)('half-written uploads of another instance on %s', (dialect) => {
  it('stay while they may be written, and go once an hour old, without a restart', async () => {
    const t = await startTestServer(dialect);
    const clock = new ManualClock(1_790_000_000_000);
    const service = new SymbolService({
      store: t.deps.store,
      kinds: defaultSymbolKinds(),
      clock,
      logger: pino({ level: 'silent' }),
      md5Hex: nodeIngestRuntime.md5Hex,
      sweepIntervalMs: 50,
    });
    try {
      const project = await makeProject(t);
      // Another instance's upload, half-written (PostgreSQL: several instances share the database).
      const writer = await openPendingFile(
        t.deps.store.db,
        { projectId: project.id, kind: 'sourcemap', release: '1', filename: 'a.js.map' },
        clock.now(),
      );
      await writer.write(new Uint8Array(600 * 1024));
      const writing = async () =>
        (await t.deps.store.db.selectFrom('symbol_files').select('id').where('state', '=', 'writing').execute()).length;
      service.start();
      await new Promise((r) => setTimeout(r, 300));
      expect(await writing()).toBe(1);
      clock.advance(2 * 3_600_000);
      const until = Date.now() + 5_000;
      while ((await writing()) > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(await writing()).toBe(0);
      const chunks = await t.deps.store.db
        .selectFrom('symbol_chunks')
        .select('file_id')
        .where('file_id', '=', writer.id)
        .execute();
      expect(chunks).toEqual([]);
    } finally {
      await service.close();
      await t.close();
    }
  });
});

describe.each(dialects)('half-written uploads of a killed server on %s', (dialect) => {
  let serve: ServeProcess | null = null;

  afterAll(() => {
    if (serve && serve.child.exitCode === null) serve.child.kill('SIGKILL');
  });

  it('are removed when the server is back', async () => {
    ensureBuilt();
    const database = await createTestDatabase(dialect);
    let store: Store | null = null;
    try {
      const env = { DATABASE_URL: database.url, RATE_LIMIT: '0' };
      serve = await startServe({ command: [process.execPath, [CLI, 'serve']], env });
      const created = await fetch(`${serve.url}/api/projects`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ slug: 'sweep' }),
      });
      expect(created.status).toBe(201);
      // An upload that streams 3 MB of a map and then stalls; the server is killed mid-way.
      const boundary = 'sweepboundary';
      const url = new URL(`${serve.url}/api/projects/sweep/symbols`);
      const req = http.request({
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
      });
      req.on('error', () => {});
      req.write(
        `--${boundary}\r\ncontent-disposition: form-data; name="kind"\r\n\r\nsourcemap\r\n--${boundary}\r\ncontent-disposition: form-data; name="release"\r\n\r\n1.0\r\n`,
      );
      req.write(
        `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="big.js.map"\r\ncontent-type: application/json\r\n\r\n`,
      );
      req.write(`{"version":3,"sources":["a.js"],"names":[],"mappings":"AAAA${',CAAC'.repeat(600_000)}`);
      store = await openStore(database.url);
      const db = store.db;
      const writing = async () => {
        const files = await db.selectFrom('symbol_files').select('id').where('state', '=', 'writing').execute();
        const chunks = await sql<{ n: number }>`select count(*) as n from symbol_chunks`.execute(db);
        return { files: files.length, chunks: Number(chunks.rows[0].n) };
      };
      const deadline = Date.now() + 20_000;
      while ((await writing()).chunks < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect((await writing()).files).toBe(1);
      serve.child.kill('SIGKILL');
      await serve.exited;
      req.destroy();
      expect((await writing()).chunks).toBeGreaterThan(0);
      if (dialect === 'postgres') {
        // Other instances may be writing: only an upload begun over an hour ago is theirs no longer.
        await db
          .updateTable('symbol_files')
          .set({ uploaded_at: Date.now() - 2 * 3_600_000 })
          .where('state', '=', 'writing')
          .execute();
      }
      serve = await startServe({ command: [process.execPath, [CLI, 'serve']], env });
      const until = Date.now() + 10_000;
      while ((await writing()).files > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
      expect(await writing()).toEqual({ files: 0, chunks: 0 });
    } finally {
      if (serve && serve.child.exitCode === null) {
        serve.signal('SIGTERM');
        await serve.exited;
      }
      serve = null;
      await store?.close();
      await database.drop();
    }
  }, 90_000);
});
