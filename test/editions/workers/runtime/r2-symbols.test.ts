// Symbol files and sentry-cli upload chunks in R2 inside workerd (src/store/blobs.ts): with
// the bucket `BLOBS` bound, a source map and a Breakpad file (with its derived index)
// uploaded through the Symbols API, and a ProGuard mapping sent as sentry-cli chunks and
// assembled, leave chunk rows with a key and no bytes in D1; events are symbolicated from
// the objects; deleting a file or its project deletes its objects, an upload's chunks lose
// theirs once assembled, a replaced file's are swept by retention; export → import →
// export gives the same lines, and an import with the bucket puts its chunks there. (The real sentry-cli's uploads, dSYM included, against the
// Worker with the bucket: test/editions/workers/sentry-cli.test.ts.)
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS } from '../../../../src/clock.js';
import type { AppDeps } from '../../../../src/context.js';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { workersTransferRuntime } from '../../../../src/editions/workers/transfer-runtime.js';
import { createApp } from '../../../../src/editions/app.js';
import { symbolicationInputOf } from '../../../../src/ingest/normalize.js';
import { SYMBOL_PREFIX, UPLOAD_PREFIX, type BlobBucket } from '../../../../src/store/blobs.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import { runRetention } from '../../../../src/store/retention.js';
import { readSymbolBytes } from '../../../../src/symbols/storage.js';
import { importNdjson } from '../../../../src/transfer/import.js';
import type { TransferRuntime } from '../../../../src/transfer/line-type.js';
import armSym from '../../../fixtures/breakpad/aarch64-dwarf4.so.sym?raw';
import { withBlobs, withoutQueue } from './direct-path.js';
import { bucketKeys, bytesOf, comparable, exported } from './r2-helpers.js';

const KEY = 'workers-r2-symbols-key';
const settings = { RATE_LIMIT: '0', LOG_LEVEL: 'silent', API_KEYS: KEY };
const workerEnv = env as unknown as WorkerEnv;
const bucket = withBlobs(workerEnv).BLOBS as BlobBucket;
const encoder = new TextEncoder();

let deps: AppDeps;
let app: Hono;
let store: Store;
let plain: { app: Hono; store: Store };

beforeAll(async () => {
  deps = buildWorkerDeps({ ...withBlobs(workerEnv), ...settings });
  store = deps.store;
  app = createApp(deps);
  const d1 = buildWorkerDeps({ ...withoutQueue(workerEnv), ...settings });
  plain = { app: createApp(d1), store: d1.store };
  await migrate(store);
});

let n = 0;
async function project() {
  n += 1;
  return createProject(
    store.db,
    { ...PROJECT_DEFAULTS, slug: `r2-sym-${n}-${Date.now()}`, name: `r2 symbols ${n}` },
    Date.now(),
  );
}
type Project = Awaited<ReturnType<typeof project>>;

const api = (target: Hono, path: string, init: RequestInit = {}) =>
  Promise.resolve(
    target.fetch(
      new Request(`http://worker${path}`, {
        ...init,
        headers: { authorization: `Bearer ${KEY}`, ...(init.headers ?? {}) },
      }),
    ),
  );

const objectKeys = (prefix: string) => bucketKeys(bucket, prefix);

/** POST /api/projects/{slug}/symbols with one file. */
async function uploadSymbol(
  target: Hono,
  p: Project,
  kind: string,
  release: string,
  name: string,
  bytes: Uint8Array,
): Promise<{ id: number; size: number }[]> {
  const form = new FormData();
  form.append('kind', kind);
  form.append('release', release);
  form.append('file', new Blob([bytes as Uint8Array<ArrayBuffer>]), name);
  const res = await api(target, `/api/projects/${p.slug}/symbols`, { method: 'POST', body: form });
  expect(res.status, await res.clone().text()).toBe(201);
  return ((await res.json()) as { symbols: { id: number; size: number }[] }).symbols;
}

async function chunkRows(db: Store['db'], fileId: number) {
  return db
    .selectFrom('symbol_chunks')
    .select(['part', 'seq', 'data', 'r2_key'])
    .where('file_id', '=', fileId)
    .orderBy('part')
    .orderBy('seq')
    .execute();
}

/** Every chunk of the file is an object of the bucket, with no bytes in D1; their keys. */
async function expectInBucket(fileId: number, parts: number[]): Promise<string[]> {
  const rows = await chunkRows(store.db, fileId);
  expect([...new Set(rows.map((r) => Number(r.part)))]).toEqual(parts);
  const present = await objectKeys(SYMBOL_PREFIX);
  for (const r of rows) {
    expect(r.data.byteLength).toBe(0);
    expect(r.r2_key).toMatch(/^symbols\/\d{4}-\d{2}-\d{2}\/[0-9a-f-]{36}$/);
    expect(present).toContain(r.r2_key);
  }
  return rows.map((r) => r.r2_key as string);
}

/** A source map of about 1.5 MB (three chunks): the sources' text carries the bulk. */
function bigSourceMap(): Uint8Array {
  const map = {
    version: 3,
    file: 'app.min.js',
    sources: ['src/app.ts'],
    names: ['main'],
    mappings: 'AAAAA,SAASA',
    sourcesContent: ['export function main() {}\n' + '// padding\n'.repeat(140_000)],
  };
  return encoder.encode(JSON.stringify(map));
}

const MAPPING =
  ['com.example.shop.Checkout -> a.b:', '    void pay(int) -> c', 'com.example.shop.PaymentFailed -> a.d:'].join('\n') +
  '\n';
const PROGUARD_UUID = '6c3ed1e4-8a1b-5c2d-9e0f-112233445566';

async function sha1Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-1', bytes as Uint8Array<ArrayBuffer>));
  return [...digest].map((b) => b.toString(16).padStart(2, '0')).join('');
}

async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

/** sentry-cli's chunk upload: each piece as a `file_gzip` part named by its SHA-1. */
async function uploadChunks(target: Hono, pieces: Uint8Array[]): Promise<Response> {
  const form = new FormData();
  for (const piece of pieces)
    form.append('file_gzip', new Blob([(await gzip(piece)) as Uint8Array<ArrayBuffer>]), await sha1Hex(piece));
  return api(target, '/api/0/organizations/faultline/chunk-upload/', { method: 'POST', body: form });
}

/** sentry-cli's `difs/assemble/` of one file made of `pieces` (uploaded before). */
async function assembleDif(target: Hono, p: Project, name: string, pieces: Uint8Array[]) {
  const whole = new Uint8Array(pieces.reduce((s, c) => s + c.byteLength, 0));
  let at = 0;
  for (const c of pieces) {
    whole.set(c, at);
    at += c.byteLength;
  }
  const checksum = await sha1Hex(whole);
  const body = { [checksum]: { name, chunks: await Promise.all(pieces.map(sha1Hex)) } };
  const res = await api(target, `/api/0/projects/faultline/${p.slug}/files/difs/assemble/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  expect(res.status).toBe(200);
  return ((await res.json()) as Record<string, { state: string; dif?: { id: string } }>)[checksum];
}

const javaInput = () =>
  symbolicationInputOf({
    platform: 'java',
    debug_meta: { images: [{ type: 'proguard', uuid: PROGUARD_UUID }] },
    exception: {
      values: [
        {
          type: 'd',
          module: 'a',
          value: 'declined',
          stacktrace: { frames: [{ module: 'a.b', function: 'c', filename: 'SourceFile', lineno: 7, in_app: true }] },
        },
      ],
    },
  });

describe('symbol files in R2', () => {
  it('stores a source map uploaded through the Symbols API as objects and symbolicates an ingested event with it', async () => {
    const p = await project();
    const bytes = bigSourceMap();
    const [file] = await uploadSymbol(app, p, 'sourcemap', 'web@1.0', 'app.min.js.map', bytes);
    expect(file.size).toBe(bytes.byteLength);
    expect((await expectInBucket(file.id, [0])).length).toBe(Math.ceil(bytes.byteLength / (512 * 1024)));
    const stored = await readSymbolBytes(store.db, file.id);
    expect(new TextDecoder().decode(stored!)).toBe(new TextDecoder().decode(bytes));

    const eventId = 'a'.repeat(32);
    const event = {
      event_id: eventId,
      platform: 'javascript',
      release: 'web@1.0',
      exception: {
        values: [
          {
            type: 'Error',
            value: 'boom',
            stacktrace: {
              frames: [
                {
                  filename: 'https://shop.example/app.min.js',
                  abs_path: 'https://shop.example/app.min.js',
                  lineno: 1,
                  colno: 1,
                  function: 'a',
                },
              ],
            },
          },
        ],
      },
    };
    const envelope = `${JSON.stringify({ event_id: eventId })}\n${JSON.stringify({ type: 'event' })}\n${JSON.stringify(event)}\n`;
    const sent = await app.fetch(
      new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-sentry-envelope' },
        body: envelope,
      }),
    );
    expect(sent.status).toBe(200);
    const detail = (await (await api(app, `/api/projects/${p.slug}/events/${eventId}`)).json()) as {
      symbolicated: boolean;
      exceptions: { symbolicated_frames: { filename: string; lineno: number }[] | null }[];
    };
    expect(detail.symbolicated).toBe(true);
    expect(detail.exceptions[0].symbolicated_frames?.[0]).toMatchObject({ filename: 'src/app.ts', lineno: 1 });
  });

  it('keeps a Breakpad file and its derived lookup index as objects and symbolicates with them', async () => {
    const p = await project();
    const [file] = await uploadSymbol(app, p, 'breakpad', 'ndk@1', 'libapp.so.sym', encoder.encode(armSym));
    await expectInBucket(file.id, [0, 1]);
    // A fresh isolate's service (nothing cached) loads the index from its object.
    const fresh = buildWorkerDeps({ ...withBlobs(workerEnv), ...settings });
    const input = symbolicationInputOf({
      platform: 'native',
      release: 'ndk@1',
      exception: {
        values: [{ type: 'SIGSEGV', value: 'x', stacktrace: { frames: [{ instruction_addr: '0x7000010708' }] } }],
      },
      debug_meta: {
        images: [
          {
            type: 'elf',
            debug_id: '451c4bf6-3bff-84e8-56e0-8e63217f680d',
            image_addr: '0x7000000000',
            image_size: 0x20000,
          },
        ],
      },
    });
    const out = await fresh.symbols!.symbolicate(p.id, input);
    expect(out?.frames[0]?.map((f) => f.function)).toEqual(['main', 'twice_clamped', 'clamp_add']);
  });

  it('keeps sentry-cli chunks as objects until assembled, then the assembled ProGuard mapping as objects', async () => {
    const p = await project();
    const pieces = [encoder.encode(MAPPING.slice(0, 40)), encoder.encode(MAPPING.slice(40))];
    const res = await uploadChunks(app, pieces);
    expect(res.status).toBe(200);
    const sha1s = await Promise.all(pieces.map(sha1Hex));
    const rows = await store.db
      .selectFrom('upload_chunks')
      .select(['sha1', 'data', 'r2_key', 'batch'])
      .where('sha1', 'in', sha1s)
      .execute();
    expect(rows).toHaveLength(2);
    const uploadKeys = rows.map((r) => r.r2_key as string);
    for (const r of rows) {
      expect(r.data.byteLength).toBe(0);
      expect(r.batch).toBeNull();
      expect(r.r2_key).toMatch(/^uploads\/\d{4}-\d{2}-\d{2}\//);
    }
    expect(await objectKeys(UPLOAD_PREFIX)).toEqual(expect.arrayContaining(uploadKeys));
    // The same chunk again keeps its first object and leaves no second one.
    expect((await uploadChunks(app, [pieces[0]])).status).toBe(200);
    expect((await objectKeys(UPLOAD_PREFIX)).filter((k) => !uploadKeys.includes(k))).toEqual([]);

    const answer = await assembleDif(app, p, `proguard/${PROGUARD_UUID}.txt`, pieces);
    expect(answer.state).toBe('ok');
    // Assembled: the chunks and their objects are gone.
    expect(await store.db.selectFrom('upload_chunks').select('sha1').where('sha1', 'in', sha1s).execute()).toEqual([]);
    const left = await objectKeys(UPLOAD_PREFIX);
    for (const k of uploadKeys) expect(left).not.toContain(k);

    const file = await store.db
      .selectFrom('symbol_files')
      .select('id')
      .where('project_id', '=', p.id)
      .where('kind', '=', 'proguard')
      .executeTakeFirstOrThrow();
    await expectInBucket(Number(file.id), [0]);
    const out = await buildWorkerDeps({ ...withBlobs(workerEnv), ...settings }).symbols!.symbolicate(p.id, javaInput());
    expect(out?.frames[0]?.[0]).toMatchObject({ module: 'com.example.shop.Checkout', function: 'pay' });
  });

  it('leaves no row and no object of a chunk request that failed', async () => {
    const before = await objectKeys(UPLOAD_PREFIX);
    const good = encoder.encode('a chunk that passes');
    const form = new FormData();
    form.append('file', new Blob([good]), await sha1Hex(good));
    form.append('file', new Blob([encoder.encode('a chunk whose name lies')]), 'f'.repeat(40));
    const res = await api(app, '/api/0/organizations/faultline/chunk-upload/', { method: 'POST', body: form });
    expect(res.status).toBe(400);
    expect(
      await store.db
        .selectFrom('upload_chunks')
        .select('sha1')
        .where('sha1', '=', await sha1Hex(good))
        .execute(),
    ).toEqual([]);
    expect(await objectKeys(UPLOAD_PREFIX)).toEqual(before);
  });

  it('removes the objects of a deleted file and of a deleted project; retention sweeps those of a replaced file', async () => {
    const p = await project();
    const [map] = await uploadSymbol(app, p, 'sourcemap', 'web@2', 'app.min.js.map', bigSourceMap());
    const mapKeys = await expectInBucket(map.id, [0]);
    expect((await api(app, `/api/projects/${p.slug}/symbols/${map.id}`, { method: 'DELETE' })).status).toBe(204);
    let left = await objectKeys(SYMBOL_PREFIX);
    for (const k of mapKeys) expect(left).not.toContain(k);

    // A second mapping with the same debug id replaces the first; the first's objects are
    // named by no row once it is gone, and retention's sweep takes them a day later.
    const [first] = await uploadSymbol(
      app,
      p,
      'proguard',
      '',
      `proguard/${PROGUARD_UUID}.txt`,
      encoder.encode(MAPPING),
    );
    const firstKeys = await expectInBucket(first.id, [0]);
    const [second] = await uploadSymbol(
      app,
      p,
      'proguard',
      '',
      `proguard/${PROGUARD_UUID}.txt`,
      encoder.encode(`${MAPPING}# again\n`),
    );
    const secondKeys = await expectInBucket(second.id, [0]);
    expect(await chunkRows(store.db, first.id)).toEqual([]);
    // The sweep takes only objects of days before the one before `now`.
    await runRetention(store, { now: Date.now(), retentionDays: 30, blobs: bucket });
    left = await objectKeys(SYMBOL_PREFIX);
    expect(left).toEqual(expect.arrayContaining([...firstKeys, ...secondKeys]));
    await runRetention(store, { now: Date.now() + 2 * DAY_MS, retentionDays: 30, blobs: bucket });
    left = await objectKeys(SYMBOL_PREFIX);
    for (const k of firstKeys) expect(left).not.toContain(k);
    expect(left).toEqual(expect.arrayContaining(secondKeys));

    expect((await api(app, `/api/projects/${p.slug}`, { method: 'DELETE' })).status).toBe(204);
    left = await objectKeys(SYMBOL_PREFIX);
    for (const k of secondKeys) expect(left).not.toContain(k);
  });
});

describe('export and import with symbol files in R2', () => {
  it('exports the objects’ bytes, and export → import → export gives the same lines with the bucket and without it', async () => {
    const p = await project();
    const mapBytes = bigSourceMap();
    await uploadSymbol(app, p, 'sourcemap', 'web@3', 'app.min.js.map', mapBytes);
    await uploadSymbol(app, p, 'breakpad', 'ndk@3', 'libapp.so.sym', encoder.encode(armSym));
    const runtime: TransferRuntime = { ...workersTransferRuntime, blobs: bucket };
    const first = await exported(store, runtime, p.slug);
    const chunkLines = first
      .filter((l) => l.startsWith('{"type":"symbol_chunk"'))
      .map((l) => JSON.parse(l) as { data: string; part: number });
    // The map's three chunks, the .sym file's and its index's, each with its bytes.
    expect(chunkLines.length).toBeGreaterThanOrEqual(5);
    for (const c of chunkLines) expect(c.data.length).toBeGreaterThan(0);
    const file = (slug: string) =>
      [
        JSON.stringify({
          type: 'meta',
          format: 1,
          exported_at: new Date(0).toISOString(),
          source: { faultline: 'test', database: 'd1', project: slug },
        }),
        ...first,
      ]
        .map((l) => l.replaceAll(`"${p.slug}"`, `"${slug}"`))
        .join('\n') + '\n';

    const intoR2 = `${p.slug}-r2`;
    await importNdjson(store, runtime, bytesOf(file(intoR2)));
    expect(comparable(await exported(store, runtime, intoR2), intoR2, p.slug)).toEqual(
      comparable(first, p.slug, p.slug),
    );
    // The import put the chunks' bytes into the bucket, as the upload does: D1 keeps keys.
    const importedChunks = await store.db
      .selectFrom('symbol_chunks as c')
      .innerJoin('symbol_files as f', 'f.id', 'c.file_id')
      .innerJoin('projects as p', 'p.id', 'f.project_id')
      .select(['c.data', 'c.r2_key', 'c.object_bytes'])
      .where('p.slug', '=', intoR2)
      .execute();
    expect(importedChunks.length).toBe(chunkLines.length);
    for (const c of importedChunks) {
      expect(new Uint8Array(c.data).byteLength).toBe(0);
      expect(c.r2_key).toMatch(new RegExp(`^${SYMBOL_PREFIX}`));
      expect(Number(c.object_bytes)).toBeGreaterThan(0);
    }
    // A second import adds no row and no object.
    const objectsBefore = (await objectKeys(SYMBOL_PREFIX)).length;
    await importNdjson(store, runtime, bytesOf(file(intoR2)));
    expect((await objectKeys(SYMBOL_PREFIX)).length).toBe(objectsBefore);

    const intoD1 = `${p.slug}-d1`;
    await importNdjson(plain.store, workersTransferRuntime, bytesOf(file(intoD1)));
    expect(comparable(await exported(plain.store, workersTransferRuntime, intoD1), intoD1, p.slug)).toEqual(
      comparable(first, p.slug, p.slug),
    );
    const d1Chunks = await plain.store.db
      .selectFrom('symbol_chunks as c')
      .innerJoin('symbol_files as f', 'f.id', 'c.file_id')
      .innerJoin('projects as p', 'p.id', 'f.project_id')
      .select(['c.r2_key'])
      .where('p.slug', '=', intoD1)
      .execute();
    expect(d1Chunks.length).toBe(chunkLines.length);
    for (const c of d1Chunks) expect(c.r2_key).toBeNull();
  });
});
