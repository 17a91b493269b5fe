// Import on D1 from inside workerd: each batch of lines is one atomic db.batch()
// (src/transfer/d1-write.ts). When another writer takes an id between a batch's reads
// and its commit, the batch fails whole (no event without its payload, tags or
// seen_events row) and is planned again; the import ends with every row exactly once.
// Two imports of the same file at once add a row without a unique key (alert channel,
// issue change, symbol file) once: its INSERT checks again as it commits.
import { env } from 'cloudflare:workers';
import { CompiledQuery, type QueryResult } from 'kysely';
import { beforeAll, describe, expect, it } from 'vitest';
import { workersTransferRuntime } from '../../../../src/editions/workers/transfer-runtime.js';
import { openD1Store, type D1Binding } from '../../../../src/store/d1.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { splitInsert } from '../../../../src/transfer/d1-write.js';
import { prepareExport } from '../../../../src/transfer/export.js';
import { importNdjson } from '../../../../src/transfer/import.js';

const binding = (env as unknown as { DB: D1Binding }).DB;
let store: Store;

beforeAll(async () => {
  store = openD1Store(binding);
  await migrate(store);
});

const T0 = Date.parse('2026-11-20T10:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();

/** The activity fields of an issue_change line. */
const NO_ACTOR = { actor: null, actor_user_id: null, data: null };
/** The snooze fields of an issue line (export writes them; files before them leave them out). */
const NO_SNOOZE = {
  ignore_until: null,
  ignore_count: null,
  ignore_users: null,
  ignored_event_count: null,
  ignored_users: null,
};

/** The meta line and the project line that open an export file; `keyFill` pads the DSN key. */
function fileHead(slug: string, id: number, keyFill: string): Record<string, unknown>[] {
  return [
    { type: 'meta', format: 1, exported_at: iso(T0), source: { faultline: 'test', database: 'sqlite', project: null } },
    {
      type: 'project',
      slug,
      id,
      dsn_key: `${slug}`.padEnd(32, keyFill),
      name: slug,
      platform: 'backend',
      sample_keep_first: 100,
      sample_rate: 1,
      daily_quota: 0,
      created_at: iso(T0),
      scrub_defaults: true,
      scrub_ip_addresses: false,
      scrub_fields: [],
      safe_fields: [],
      storage_budget_mb: 0,
    },
  ];
}

/** An export file: a project, an issue and `n` events with tags, each with its payload. */
function exportFile(slug: string, n: number): string {
  const lines: Record<string, unknown>[] = [
    ...fileHead(slug, 900 + slug.length, '0'),
    {
      type: 'issue',
      project: slug,
      fingerprint: 'f'.repeat(32),
      status: 'unresolved',
      title: 'TypeError: boom',
      level: 'error',
      error_type: 'TypeError',
      screen: '',
      location: 'app.js',
      platform: 'node',
      event_count: n,
      stored_count: n,
      users: 1,
      first_seen: iso(T0),
      last_seen: iso(T0 + n),
      first_release: 'r1',
      last_release: 'r1',
      resolved_release: null,
      resolved_at: null,
      regressed_at: null,
      ...NO_SNOOZE,
      created_at: iso(T0),
      updated_at: iso(T0 + n),
    },
  ];
  for (let i = 0; i < n; i++) {
    const eventId = (i + 1).toString(16).padStart(32, 'e');
    lines.push({
      type: 'event',
      project: slug,
      event_id: eventId,
      fingerprint: 'f'.repeat(32),
      timestamp: iso(T0 + i),
      received_at: iso(T0 + i),
      level: 'error',
      platform: 'node',
      release: 'r1',
      dist: '',
      environment: 'production',
      user_id: 'u1',
      user_email: null,
      user_username: null,
      user_ip: null,
      device_id: null,
      device_model: null,
      os_name: null,
      os_version: null,
      screen: '',
      error_type: 'TypeError',
      error_location: 'app.js',
      title: 'TypeError: boom',
      message: 'boom',
      is_crash: false,
      sdk_name: 'sentry.javascript.node',
      tags: { release: 'r1', n: String(i) },
      symbolicated: null,
      payload: JSON.stringify({ event_id: eventId, message: `boom ${i}`, padding: 'p'.repeat(500) }),
      ...(i === 0 ? { first_of_issue: true } : {}),
      ...(i === n - 1 ? { last_of_issue: true } : {}),
    });
  }
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

async function* bytesOf(text: string) {
  yield new TextEncoder().encode(text);
}

/** The file's lines after the meta line, as an export writes them. */
function bodyOf(file: string): string[] {
  return file
    .split('\n')
    .filter((l) => l !== '')
    .slice(1)
    .map((l) => JSON.stringify(JSON.parse(l)));
}

/**
 * The D1 store, with another writer acting between a batch's reads and its commit:
 * `interfere` runs once before the first batch holding a statement that starts with each
 * of `statements` (those left in `pending` never came). What it returns or throws, if
 * anything, stands for the batch's result.
 */
function interferingStore(
  statements: string[],
  interfere: (statement: string, queries: CompiledQuery[]) => Promise<QueryResult<unknown>[] | void>,
): { store: Store; pending: Set<string> } {
  const pending = new Set(statements);
  return {
    pending,
    store: {
      ...store,
      async atomic(queries) {
        for (const statement of [...pending]) {
          if (!queries.some((q) => q.sql.startsWith(statement))) continue;
          pending.delete(statement);
          const result = await interfere(statement, queries);
          if (result) return result;
        }
        return store.atomic(queries);
      },
    },
  };
}

async function exported(project: string): Promise<string[]> {
  const prepared = await prepareExport(store, workersTransferRuntime, { version: 'test', project, snapshot: false });
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of prepared.chunks()) text += decoder.decode(chunk, { stream: true });
  return text
    .split('\n')
    .filter((l) => l !== '')
    .slice(1);
}

describe('import on D1', () => {
  it('splits a many-row INSERT within 100 bound parameters, keeping its conflict clause or its where not exists', () => {
    const params = Array.from({ length: 7 * 40 }, (_, i) => i);
    const text = `insert into "t" ("a", "b", "c", "d", "e", "f", "g") values ${new Array(40).fill('(?, ?, ?, ?, ?, ?, ?)').join(', ')} on conflict ("a") do nothing returning 1 as one`;
    const parts = splitInsert(CompiledQuery.raw(text, params));
    expect(parts.map((p) => p.parameters.length)).toEqual([98, 98, 84]);
    expect(parts.every((p) => p.sql.endsWith('on conflict ("a") do nothing returning 1 as one'))).toBe(true);
    expect(parts.flatMap((p) => p.parameters)).toEqual(params);

    const guarded = `insert into "t" ("a", "b", "c", "d", "e", "f", "g") select * from (values ${new Array(40).fill('(?, ?, ?, ?, ?, ?, ?)').join(', ')}) as v where not exists (select 1 from "t" e where e."a" is v.column1) returning 1 as one`;
    const guardedParts = splitInsert(CompiledQuery.raw(guarded, params));
    expect(guardedParts.map((p) => p.parameters.length)).toEqual([98, 98, 84]);
    expect(
      guardedParts.every((p) =>
        p.sql.startsWith(
          'insert into "t" ("a", "b", "c", "d", "e", "f", "g") select * from (values (?, ?, ?, ?, ?, ?, ?), ',
        ),
      ),
    ).toBe(true);
    expect(
      guardedParts.every((p) =>
        p.sql.endsWith(') as v where not exists (select 1 from "t" e where e."a" is v.column1) returning 1 as one'),
      ),
    ).toBe(true);
    expect(guardedParts.flatMap((p) => p.parameters)).toEqual(params);
  });

  it('writes a batch whole or not at all, plans it again after another writer took its ids, and counts nothing twice', async () => {
    const file = exportFile('atomic', 60);
    // Another writer takes the payload chunk id the first event batch planned, between
    // that batch's reads and its commit.
    const racing = interferingStore(['insert into "events"'], async (_statement, queries) => {
      const top = await binding.prepare('select max(id) as m from payload_chunks').all();
      const next = Number((top.results?.[0] as { m: number | null }).m ?? 0) + 1;
      await binding
        .prepare('insert into payload_chunks (id, project_id, received_at, data) values (?, ?, 0, ?)')
        .bind(next, 1, new Uint8Array([0x78, 0x9c]).buffer)
        .all();
      const failed = store.atomic(queries);
      await expect(failed).rejects.toThrow(/UNIQUE constraint failed/);
      // Nothing of the failed batch is there: no event, tag or seen_events row.
      for (const table of ['events', 'event_tags', 'seen_events']) {
        const { results } = await binding.prepare(`select count(*) as n from ${table}`).all();
        expect((results?.[0] as { n: number }).n, table).toBe(0);
      }
      return failed;
    });
    const summary = await importNdjson(racing.store, workersTransferRuntime, bytesOf(file), { batchLines: 25 });
    expect(racing.pending.size).toBe(0);
    expect(summary.problems).toEqual([]);
    expect(summary.types.event).toEqual({ added: 60, kept: 0, failed: 0 });
    expect(summary.types.issue).toEqual({ added: 1, kept: 0, failed: 0 });

    const again = await importNdjson(store, workersTransferRuntime, bytesOf(file), { batchLines: 25 });
    expect(again.types.event).toEqual({ added: 0, kept: 60, failed: 0 });
    expect(again.types.issue).toEqual({ added: 0, kept: 1, failed: 0 });
    const lines = await exported('atomic');
    expect(lines).toEqual(bodyOf(file));
  });

  it("stores an event another writer stored between the batch's reads and its commit once", async () => {
    const file = exportFile('racing', 30);
    const racing = interferingStore(['insert into "events"'], async () => {
      // As ingest would: the SDK resent event 5 to the new instance meanwhile.
      const project = await binding.prepare("select id from projects where slug = 'racing'").all();
      const projectId = (project.results?.[0] as { id: number }).id;
      await binding
        .prepare('insert into seen_events (project_id, event_id, received_at, stored_id) values (?, ?, 0, null)')
        .bind(projectId, (5).toString(16).padStart(32, 'e'))
        .all();
    });
    const summary = await importNdjson(racing.store, workersTransferRuntime, bytesOf(file), { batchLines: 100 });
    expect(racing.pending.size).toBe(0);
    expect(summary.types.event).toEqual({ added: 29, kept: 1, failed: 0 });
    const { results } = await binding
      .prepare("select count(*) as n from events e join projects p on p.id = e.project_id where p.slug = 'racing'")
      .all();
    expect((results?.[0] as { n: number }).n).toBe(29);
  });
});

/**
 * An export file of the rows import finds by reading rather than by a unique key: an
 * alert channel, an issue's history and a symbol file with its chunk.
 */
function keylessFile(slug: string): string {
  const map = JSON.stringify({ version: 3, sources: ['app.ts'], names: [], mappings: 'AAAA' });
  const fingerprint = 'c'.repeat(32);
  const symbolKey = { kind: 'sourcemap', release: 'r1', dist: '', debug_id: '', filename: '~/app.js.map' };
  const lines: Record<string, unknown>[] = [
    ...fileHead(slug, 950 + slug.length, '1'),
    {
      type: 'alert_channel',
      project: slug,
      kind: 'webhook',
      config: { url: 'https://hooks.example.com/x', secret: 's3cret' },
      created_at: iso(T0),
    },
    {
      type: 'symbol',
      project: slug,
      ...symbolKey,
      serves: '~/app.js',
      serves_basename: 'app.js',
      size: map.length,
      index_size: 0,
      meta: {},
      uploaded_at: iso(T0),
    },
    { type: 'symbol_chunk', project: slug, ...symbolKey, part: 0, seq: 0, data: btoa(map) },
    {
      type: 'issue',
      project: slug,
      fingerprint,
      status: 'unresolved',
      title: 'TypeError: boom',
      level: 'error',
      error_type: 'TypeError',
      screen: '',
      location: 'app.js',
      platform: 'node',
      event_count: 2,
      stored_count: 0,
      users: 1,
      first_seen: iso(T0),
      last_seen: iso(T0 + 5),
      first_release: 'r1',
      last_release: 'r1',
      resolved_release: null,
      resolved_at: null,
      regressed_at: iso(T0 + 5),
      ...NO_SNOOZE,
      created_at: iso(T0),
      updated_at: iso(T0 + 5),
    },
    { type: 'issue_change', project: slug, fingerprint, kind: 'new', at: iso(T0), release: 'r1', ...NO_ACTOR },
    {
      type: 'issue_change',
      project: slug,
      fingerprint,
      kind: 'regressed',
      at: iso(T0 + 5),
      release: 'r1',
      ...NO_ACTOR,
    },
  ];
  return lines.map((l) => JSON.stringify(l)).join('\n') + '\n';
}

/** The file up to and including its last line of `type`. */
function prefixThrough(file: string, type: string): string {
  const lines = file.split('\n');
  let last = 0;
  lines.forEach((l, i) => {
    if (l.startsWith(`{"type":"${type}"`)) last = i;
  });
  return lines.slice(0, last + 1).join('\n') + '\n';
}

async function symbolStates(slug: string): Promise<unknown[]> {
  const { results } = await binding
    .prepare('select state from symbol_files t join projects p on p.id = t.project_id where p.slug = ?')
    .bind(slug)
    .all();
  return results ?? [];
}

async function countOf(table: string, slug: string): Promise<number> {
  const { results } = await binding
    .prepare(`select count(*) as n from ${table} t join projects p on p.id = t.project_id where p.slug = ?`)
    .bind(slug)
    .all();
  return (results?.[0] as { n: number }).n;
}

describe('two imports of the same file at once on D1', () => {
  it("adds an alert channel, an issue change and a symbol file once when another import wrote it between a batch's reads and its commit", async () => {
    const file = keylessFile('twice');
    // Another import of the same file (`faultline import --to` resent, or a second person)
    // commits the same rows while this import's batch is planned but not yet committed.
    const typeOf: Record<string, string> = {
      'insert into "alert_channels"': 'alert_channel',
      'insert into "symbol_files"': 'symbol',
      'insert into "issue_changes"': 'issue_change',
    };
    const racing = interferingStore(Object.keys(typeOf), async (statement) => {
      await importNdjson(store, workersTransferRuntime, bytesOf(prefixThrough(file, typeOf[statement])));
    });
    const summary = await importNdjson(racing.store, workersTransferRuntime, bytesOf(file));
    expect(racing.pending.size).toBe(0);
    expect(summary.problems).toEqual([]);
    expect.soft(summary.types.alert_channel).toEqual({ added: 0, kept: 1, failed: 0 });
    expect.soft(summary.types.issue_change).toEqual({ added: 0, kept: 2, failed: 0 });
    expect.soft(summary.types.symbol).toEqual({ added: 0, kept: 1, failed: 0 });

    expect.soft(await countOf('alert_channels', 'twice')).toBe(1);
    expect.soft(await countOf('issue_changes', 'twice')).toBe(2);
    expect.soft(await countOf('symbol_files', 'twice')).toBe(1);
    expect(await symbolStates('twice')).toEqual([{ state: 'ready' }]);
    expect(await exported('twice')).toEqual(bodyOf(file));
  });

  it('keeps a symbol file another import made ready while this one was finishing it', async () => {
    const file = keylessFile('finish');
    const withoutChunk = file
      .split('\n')
      .filter((l) => !l.startsWith('{"type":"symbol_chunk"'))
      .join('\n');
    await importNdjson(store, workersTransferRuntime, bytesOf(withoutChunk));
    expect.soft(await countOf('symbol_files', 'finish')).toBe(1);
    // This import reads the file as importing with all its chunks; then, before it looks
    // for a ready equal, another import of the same file makes it ready.
    const real = store.db;
    let raced = false;
    const db = new Proxy(real, {
      get(target, name) {
        const value = Reflect.get(target, name, target);
        if (name !== 'executeQuery') return typeof value === 'function' ? value.bind(target) : value;
        return async (query: CompiledQuery) => {
          if (!raced && /^select "id" from "symbol_files"/.test(query.sql)) {
            raced = true;
            await importNdjson(store, workersTransferRuntime, bytesOf(file));
            expect(await symbolStates('finish')).toEqual([{ state: 'ready' }]);
          }
          return target.executeQuery(query);
        };
      },
    });
    await importNdjson({ ...store, db } as Store, workersTransferRuntime, bytesOf(file));
    expect(raced).toBe(true);
    expect(await symbolStates('finish')).toEqual([{ state: 'ready' }]);
    const chunks = await binding
      .prepare(
        "select count(*) as n from symbol_chunks c join symbol_files t on t.id = c.file_id join projects p on p.id = t.project_id where p.slug = 'finish'",
      )
      .all();
    expect((chunks.results?.[0] as { n: number }).n).toBe(1);
  });
});
