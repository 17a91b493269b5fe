// Symbol storage on both databases: files stream in and out in chunks, the
// replacement rule, pending rows stay invisible, deletion removes the chunks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate, type Store } from '../../src/store/database.js';
import { openStore } from '../../src/editions/node/open-store.js';
import {
  commitSymbolFiles,
  copyPendingRange,
  deleteSymbolFile,
  discardSymbolFiles,
  findByDebugId,
  findByRelease,
  listSymbolFiles,
  readSymbolBytes,
  readSymbolFile,
  saveDerivedIndex,
  saveSymbolFile,
  SYMBOL_CHUNK_BYTES,
  SymbolTooLargeError,
  writePendingFile,
  INDEX_PART,
} from '../../src/symbols/storage.js';
import { createTestDatabase, dialects, type TestDatabase } from '../helpers/server.js';

function bytesOf(n: number, seed: number): Uint8Array {
  const out = new Uint8Array(n);
  for (let i = 0; i < n; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

/** Yields the bytes in uneven pieces, as a network stream would. */
async function* pieces(bytes: Uint8Array): AsyncGenerator<Uint8Array> {
  let at = 0;
  let step = 1000;
  while (at < bytes.length) {
    yield bytes.subarray(at, at + step);
    at += step;
    step = step * 3 + 17;
  }
}

/** Byte equality without vitest's per-element diff (slow on megabytes). */
function same(a: Uint8Array | null, b: Uint8Array): boolean {
  return (
    a !== null &&
    Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength))
  );
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  for await (const c of stream as unknown as AsyncIterable<Uint8Array>) parts.push(c);
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

describe.each(dialects)('symbol storage on %s', (dialect) => {
  let database: TestDatabase;
  let store: Store;
  let projectId: number;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    store = await openStore(database.url);
    await migrate(store);
    const row = await store.db
      .insertInto('projects')
      .values({
        slug: 'p',
        name: 'P',
        platform: 'java',
        dsn_key: 'k'.repeat(32),
        sample_keep_first: 10,
        sample_rate: 1,
        daily_quota: 0,
        created_at: 1,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    projectId = Number(row.id);
  });
  afterAll(async () => {
    await store.close();
    await database.drop();
  });

  it('stores a file in chunks and reads it back, whole and as a stream', async () => {
    const bytes = bytesOf(SYMBOL_CHUNK_BYTES * 2 + 12345, 1);
    const row = await saveSymbolFile(
      store.db,
      {
        projectId,
        kind: 'proguard',
        release: 'r1',
        filename: 'mapping.txt',
        debugId: 'AAAAAAAA-0000-0000-0000-000000000001',
      },
      pieces(bytes),
      1000,
    );
    expect(Number(row.size)).toBe(bytes.length);
    expect(row.debug_id).toBe('aaaaaaaa-0000-0000-0000-000000000001');
    const chunks = await store.db.selectFrom('symbol_chunks').select(['seq']).where('file_id', '=', row.id).execute();
    expect(chunks.length).toBe(3);
    expect(same(await readSymbolBytes(store.db, Number(row.id)), bytes)).toBe(true);
    expect(same(await collect(readSymbolFile(store.db, Number(row.id))), bytes)).toBe(true);
    expect((await findByDebugId(store.db, projectId, 'proguard', 'aaaaaaaa-0000-0000-0000-000000000001'))?.id).toBe(
      row.id,
    );
  });

  it('replaces a file with the same kind and debug id, or the same kind, release and name without one', async () => {
    const a = await saveSymbolFile(
      store.db,
      { projectId, kind: 'sourcemap', release: 'r1', filename: 'app.js.map', serves: 'app.js' },
      pieces(bytesOf(10, 2)),
      1,
    );
    const b = await saveSymbolFile(
      store.db,
      { projectId, kind: 'sourcemap', release: 'r2', filename: 'app.js.map', serves: 'app.js' },
      pieces(bytesOf(10, 3)),
      2,
    );
    const c = await saveSymbolFile(
      store.db,
      { projectId, kind: 'sourcemap', release: 'r1', filename: 'app.js.map', serves: 'app.js' },
      pieces(bytesOf(11, 4)),
      3,
    );
    const ids = (await listSymbolFiles(store.db, projectId)).map((r) => r.id);
    expect(ids).not.toContain(a.id);
    expect(ids).toContain(b.id);
    expect(ids).toContain(c.id);
    expect(await store.db.selectFrom('symbol_chunks').select('seq').where('file_id', '=', a.id).execute()).toEqual([]);
    const d1 = await saveSymbolFile(
      store.db,
      {
        projectId,
        kind: 'sourcemap',
        release: 'r3',
        filename: 'x.map',
        debugId: 'bbbbbbbb-0000-0000-0000-000000000001',
      },
      pieces(bytesOf(5, 5)),
      4,
    );
    const d2 = await saveSymbolFile(
      store.db,
      {
        projectId,
        kind: 'sourcemap',
        release: 'r4',
        filename: 'y.map',
        debugId: 'bbbbbbbb-0000-0000-0000-000000000001',
      },
      pieces(bytesOf(5, 6)),
      5,
    );
    const after = (await listSymbolFiles(store.db, projectId)).map((r) => r.id);
    expect(after).not.toContain(d1.id);
    expect(after).toContain(d2.id);
    expect(
      (await findByRelease(store.db, projectId, 'sourcemap', 'r1', { servesBasename: 'app.js', dist: '' })).map(
        (r) => r.id,
      ),
    ).toEqual([c.id]);
  });

  it('keeps pending files out of lists and lookups, copies ranges, and discards them', async () => {
    const bytes = bytesOf(SYMBOL_CHUNK_BYTES + 100, 7);
    const pending = await writePendingFile(
      store.db,
      { projectId, kind: 'dsym', release: '', filename: 'fat', debugId: 'cccccccc-0000-0000-0000-000000000001' },
      pieces(bytes),
      6,
    );
    expect((await listSymbolFiles(store.db, projectId)).map((r) => r.id)).not.toContain(pending.id);
    expect(await findByDebugId(store.db, projectId, 'dsym', 'cccccccc-0000-0000-0000-000000000001')).toBeUndefined();
    const slice = await copyPendingRange(
      store.db,
      pending.id,
      { projectId, kind: 'dsym', release: '', filename: 'fat (arm64)' },
      SYMBOL_CHUNK_BYTES - 50,
      SYMBOL_CHUNK_BYTES + 60,
      6,
    );
    expect(await readSymbolBytes(store.db, slice.id)).toEqual(
      bytes.subarray(SYMBOL_CHUNK_BYTES - 50, SYMBOL_CHUNK_BYTES + 60),
    );
    await saveDerivedIndex(store.db, slice.id, pieces(bytesOf(300, 8)));
    expect(await readSymbolBytes(store.db, slice.id, INDEX_PART)).toEqual(bytesOf(300, 8));
    const [row] = await commitSymbolFiles(store.db, [
      { id: slice.id, final: { debugId: 'DDDDDDDD-0000-0000-0000-000000000001' } },
    ]);
    expect(row.debug_id).toBe('dddddddd-0000-0000-0000-000000000001');
    expect(Number(row.index_size)).toBe(300);
    await discardSymbolFiles(store.db, [pending.id]);
    expect(
      await store.db.selectFrom('symbol_chunks').select('seq').where('file_id', '=', pending.id).execute(),
    ).toEqual([]);
    expect(await deleteSymbolFile(store.db, projectId, slice.id)).toBe(true);
    expect(await deleteSymbolFile(store.db, projectId, slice.id)).toBe(false);
  });

  it('deleting the project removes its files and their chunks', async () => {
    const other = await store.db
      .insertInto('projects')
      .values({
        slug: 'gone',
        name: 'G',
        platform: 'java',
        dsn_key: 'g'.repeat(32),
        sample_keep_first: 10,
        sample_rate: 1,
        daily_quota: 0,
        created_at: 1,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const row = await saveSymbolFile(
      store.db,
      { projectId: Number(other.id), kind: 'proguard', release: 'x', filename: 'm.txt' },
      pieces(bytesOf(SYMBOL_CHUNK_BYTES + 1, 3)),
      8,
    );
    await store.db.deleteFrom('projects').where('id', '=', other.id).execute();
    expect(await store.db.selectFrom('symbol_files').select('id').where('id', '=', row.id).execute()).toEqual([]);
    expect(await store.db.selectFrom('symbol_chunks').select('seq').where('file_id', '=', row.id).execute()).toEqual(
      [],
    );
  });

  it('refuses a file over the limit and leaves nothing behind', async () => {
    const before = await store.db.selectFrom('symbol_files').select('id').execute();
    await expect(
      saveSymbolFile(
        store.db,
        { projectId, kind: 'proguard', release: 'big', filename: 'm.txt' },
        pieces(bytesOf(5000, 9)),
        7,
        4000,
      ),
    ).rejects.toBeInstanceOf(SymbolTooLargeError);
    expect(await store.db.selectFrom('symbol_files').select('id').execute()).toEqual(before);
  });
});
