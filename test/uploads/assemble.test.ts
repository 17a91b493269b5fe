// Assemble over HTTP with hand-made uploads: the states sentry-cli's --wait reads, and
// the bad input of #30 that only shows at assembly (bundle without manifest, `../`
// paths, a file that is not what it claims, a wrong checksum, formats not symbolicated,
// a broken legacy ZIP): answered with the state `error` and a detail (or a 4xx), and
// nothing stored. SQLite and PostgreSQL.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { zipSync, strToU8 } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { symbolKindsOf } from '../../src/symbols/storage.js';
import { CHUNK_SIZE } from '../../src/limits.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';

const KEY = 'assemble-test-key-0123456789abcdef';
const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');

const MAP = JSON.stringify({
  version: 3,
  file: 'app.min.js',
  sources: ['src/app.js'],
  names: ['boom'],
  mappings: 'AAAAA',
});

/** An artifact bundle as sentry-cli writes one: `SYSB` + version 2, then a ZIP. */
function bundle(files: Record<string, string>, manifest?: unknown): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  for (const [name, text] of Object.entries(files)) entries[name] = strToU8(text);
  if (manifest !== undefined) entries['manifest.json'] = strToU8(JSON.stringify(manifest));
  const zip = zipSync(entries);
  const out = new Uint8Array(8 + zip.byteLength);
  out.set(strToU8('SYSB'));
  new DataView(out.buffer).setUint32(4, 2, true);
  out.set(zip, 8);
  return out;
}

function mapManifest(path = 'files/_/_/app.min.js.map', extra: Record<string, unknown> = {}) {
  return { files: { [path]: { type: 'source_map', url: '~/app.min.js.map' }, ...extra } };
}

describe.each(dialects)('assemble (%s)', (dialect) => {
  let t: TestServer;
  let projectId: number;
  const symbolCount = async () =>
    Number(
      (
        await t.deps.store.db
          .selectFrom('symbol_files')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .where('project_id', '=', projectId)
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
    projectId = Number(
      (await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug: 'app', name: 'App' }, t.clock.now())).id,
    );
  });
  afterAll(async () => t?.close());

  /** Uploads a file's chunks (of `chunkSize`) as sentry-cli does; returns checksum and chunk list. */
  async function upload(bytes: Uint8Array, chunkSize = CHUNK_SIZE): Promise<{ checksum: string; chunks: string[] }> {
    const chunks: string[] = [];
    const form = new FormData();
    for (let at = 0; at < bytes.byteLength; at += chunkSize) {
      const piece = bytes.subarray(at, Math.min(bytes.byteLength, at + chunkSize));
      chunks.push(sha1(piece));
      form.append('file_gzip', new Blob([gzipSync(piece) as Uint8Array<ArrayBuffer>]), sha1(piece));
    }
    const res = await t.api('/api/0/organizations/o/chunk-upload/', { method: 'POST', body: form });
    expect(res.status).toBe(200);
    return { checksum: sha1(bytes), chunks };
  }

  const assembleBundle = async (body: Record<string, unknown>) =>
    (
      await t.api('/api/0/organizations/o/artifactbundle/assemble/', {
        method: 'POST',
        json: { projects: ['app'], ...body },
      })
    ).json();
  const assembleDif = async (checksum: string, file: Record<string, unknown>) => {
    const res = await t.api(`/api/0/projects/o/${projectId}/files/difs/assemble/`, {
      method: 'POST',
      json: { [checksum]: file },
    });
    expect(res.status).toBe(200);
    return (await res.json())[checksum];
  };

  it('a bundle spread over several chunks assembles, then answers ok again without chunks', async () => {
    const bytes = bundle({ 'files/_/_/app.min.js.map': MAP }, mapManifest());
    const { checksum, chunks } = await upload(bytes, 64);
    expect(chunks.length).toBeGreaterThan(3);
    expect(await assembleBundle({ checksum, chunks, version: 'v1', dist: 'd1' })).toEqual({
      state: 'ok',
      missingChunks: [],
      detail: null,
    });
    expect(await assembleBundle({ checksum, chunks: [] })).toEqual({ state: 'ok', missingChunks: [], detail: null });
    const [file] = await t.deps.store.db
      .selectFrom('symbol_files')
      .selectAll()
      .where('project_id', '=', projectId)
      .execute();
    expect([file.kind, file.filename, file.release, file.dist]).toEqual(['sourcemap', '~/app.min.js.map', 'v1', 'd1']);
    // Assembled chunks are gone.
    const left = await t.deps.store.db.selectFrom('upload_chunks').select('sha1').where('sha1', 'in', chunks).execute();
    expect(left).toEqual([]);
    await t.deps.store.db.deleteFrom('symbol_files').where('project_id', '=', projectId).execute();
  });

  it('a source map is stored under the debug id its bundle manifest names, not the one inside the map (as Sentry indexes bundles)', async () => {
    const named = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    const own = 'ffffffff-0000-4000-8000-000000000001';
    const map = JSON.stringify({ ...JSON.parse(MAP), debug_id: own });
    const manifest = {
      files: {
        'files/_/_/app.min.js.map': { type: 'source_map', url: '~/app.min.js.map', headers: { 'debug-id': named } },
      },
    };
    const { checksum, chunks } = await upload(bundle({ 'files/_/_/app.min.js.map': map }, manifest));
    expect(await assembleBundle({ checksum, chunks, version: 'v-ids' })).toEqual({
      state: 'ok',
      missingChunks: [],
      detail: null,
    });
    const rows = await t.deps.store.db
      .selectFrom('symbol_files')
      .select(['kind', 'debug_id'])
      .where('project_id', '=', projectId)
      .execute();
    expect(rows).toEqual([{ kind: 'sourcemap', debug_id: named }]);
    await t.deps.store.db.deleteFrom('symbol_files').where('project_id', '=', projectId).execute();
  });

  it.each([
    ['without a manifest', bundle({ 'files/_/_/app.min.js.map': MAP }), 'manifest.json is missing'],
    [
      'with a ../ entry',
      bundle({ 'files/_/_/app.min.js.map': MAP, '../evil.js.map': MAP }, mapManifest()),
      'unsafe path',
    ],
    [
      'with a ../ manifest path',
      bundle({ 'files/_/_/app.min.js.map': MAP }, mapManifest('files/../../evil.map')),
      'unsafe path',
    ],
    [
      'with a broken second map',
      bundle(
        { 'files/_/_/app.min.js.map': MAP, 'files/_/_/b.js.map': '{"version":3,"mappings":"!!"' },
        mapManifest(undefined, { 'files/_/_/b.js.map': { type: 'source_map', url: '~/b.js.map' } }),
      ),
      'b.js.map',
    ],
    ['that is not a ZIP', strToU8('SYSB not a zip at all'), 'not a valid ZIP'],
  ])('a bundle %s is an error with a detail and stores nothing', async (_name, bytes, detail) => {
    const { checksum, chunks } = await upload(bytes);
    const answer = await assembleBundle({ checksum, chunks });
    expect(answer).toEqual({ state: 'error', missingChunks: [], detail: expect.stringContaining(detail) });
    expect(await symbolCount()).toBe(0);
    // Polling again gives the same error (sentry-cli --wait).
    expect((await assembleBundle({ checksum, chunks: [] })).state).toBe('error');
  });

  it('a checksum that does not match the chunks is an error', async () => {
    const bytes = bundle({ 'files/_/_/app.min.js.map': MAP }, mapManifest());
    const { chunks } = await upload(bytes);
    const answer = await assembleBundle({ checksum: 'c'.repeat(40), chunks });
    expect(answer).toEqual({ state: 'error', missingChunks: [], detail: expect.stringContaining('checksum mismatch') });
    expect(await symbolCount()).toBe(0);
  });

  it('an assemble naming unknown chunks answers not_found with them, for bundles and DIFs', async () => {
    const unknown = ['d'.repeat(40), 'e'.repeat(40)];
    expect(await assembleBundle({ checksum: 'f'.repeat(40), chunks: unknown })).toEqual({
      state: 'not_found',
      missingChunks: unknown,
      detail: null,
    });
    expect(await assembleDif('f'.repeat(40), { name: 'App', chunks: unknown })).toEqual({
      state: 'not_found',
      missingChunks: unknown,
      detail: null,
    });
  });

  it('a ProGuard name over a file that is no mapping, and a file of no debug format, are errors with details', async () => {
    const notMapping = strToU8('this is not a mapping\n');
    const a = await upload(notMapping);
    const answer = await assembleDif(a.checksum, {
      name: '/proguard/94c27f7d-8662-5067-8afb-ee462e1c9b7a.txt',
      chunks: a.chunks,
    });
    expect(answer).toEqual({
      state: 'error',
      missingChunks: [],
      detail: expect.stringContaining('not a ProGuard mapping'),
    });
    const c = await upload(strToU8('neither a debug file nor anything else'));
    expect((await assembleDif(c.checksum, { name: 'README', chunks: c.chunks })).state).toBe('error');
    expect(await symbolCount()).toBe(0);
  });

  it('an ELF header with nothing to name it by is an error with a detail (ELF files symbolicate, so they must parse)', async () => {
    const { checksum, chunks } = await upload(
      new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, ...new Array(56).fill(0)]),
    );
    const answer = await assembleDif(checksum, {
      name: 'libapp.so',
      debug_id: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
      chunks,
    });
    expect(answer).toEqual({
      state: 'error',
      missingChunks: [],
      detail: expect.stringContaining('not a readable ELF file'),
    });
    expect(await symbolCount()).toBe(0);
  });

  it('a Breakpad file symbolicates: it is named by its MODULE line, whatever debug id is sent', async () => {
    const { checksum, chunks } = await upload(
      strToU8('MODULE Linux x86_64 0123456789ABCDEF0123456789ABCDEF0 app\nFUNC 10 4 0 f\n'),
    );
    const answer = await assembleDif(checksum, {
      name: 'app.sym',
      debug_id: '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d',
      chunks,
    });
    expect(answer).toMatchObject({
      state: 'ok',
      dif: { debugId: '01234567-89ab-cdef-0123-456789abcdef', symbolType: 'breakpad' },
    });
    expect(await symbolKindsOf(t.deps.store.db, projectId)).toEqual(new Set(['breakpad']));
    expect((await t.api(`/api/projects/app/symbols/${answer.dif.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it('a source bundle whose manifest cannot be read is kept under the debug id sent (never refused)', async () => {
    const { checksum, chunks } = await upload(strToU8('SYSB\x02\0\0\0 no ZIP after the header'));
    const debugId = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    const answer = await assembleDif(checksum, { name: 'app.src.zip', debug_id: debugId, chunks });
    expect(answer).toMatchObject({ state: 'ok', dif: { debugId, symbolType: 'sourcebundle' } });
    expect((await t.api(`/api/projects/app/symbols/${answer.dif.id}`, { method: 'DELETE' })).status).toBe(204);
  });

  it.each([
    ['pe', 'app.exe', strToU8('MZ\x90\0 a PE image')],
    ['pdb', 'app.pdb', strToU8('Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0')],
    ['wasm', 'app.wasm', new Uint8Array([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0])],
  ])('a %s file is kept under the debug id sent, listed, found and deletable', async (kind, name, bytes) => {
    const jobs = () =>
      t.deps.store.db.selectFrom('symbol_jobs').selectAll().where('project_id', '=', projectId).execute();
    const jobsBefore = await jobs();
    const { checksum, chunks } = await upload(bytes);
    const debugId = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    const answer = await assembleDif(checksum, { name, debug_id: debugId.toUpperCase(), chunks });
    expect(answer).toMatchObject({
      state: 'ok',
      missingChunks: [],
      dif: { debugId, symbolType: kind, sha1: checksum },
    });
    const listed = ((await (await t.api('/api/projects/app/symbols')).json()) as any).symbols;
    expect(listed.map((f: any) => [f.kind, f.debug_id, f.filename])).toEqual([[kind, debugId, name]]);
    const found = await (await t.api(`/api/0/projects/o/app/files/dsyms/?debug_id=${debugId}`)).json();
    expect(found.map((d: { debugId: string; symbolType: string }) => [d.debugId, d.symbolType])).toEqual([
      [debugId, kind],
    ]);
    // Nothing to symbolicate with: ingest skips the project, and no event is re-symbolicated.
    expect(await symbolKindsOf(t.deps.store.db, projectId)).toEqual(new Set());
    expect(await jobs()).toEqual(jobsBefore);
    expect((await t.api(`/api/projects/app/symbols/${answer.dif.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await symbolCount()).toBe(0);
  });

  it('the management upload keeps refusing the kept-only kinds', async () => {
    const form = new FormData();
    form.append('kind', 'pe');
    form.append('file', new Blob([strToU8('MZ\x90\0 a PE image')]), 'app.exe');
    const res = await t.api('/api/projects/app/symbols', { method: 'POST', body: form });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: 'kind must be one of proguard, sourcemap, dsym, elf, breakpad, dartsymbolmap, sourcebundle',
    });
    expect(await symbolCount()).toBe(0);
  });

  it('a ProGuard mapping assembles with the dif sentry-cli prints, and is found by debug_id', async () => {
    const text = strToU8('com.example.Foo -> a.a:\n    1:1:void run():10:10 -> a\n');
    const { checksum, chunks } = await upload(text);
    const uuid = '11111111-2222-5333-8444-555555555555';
    const answer = await assembleDif(checksum, { name: `/proguard/${uuid}.txt`, chunks });
    expect(answer).toMatchObject({
      state: 'ok',
      missingChunks: [],
      dif: { debugId: uuid, objectName: 'proguard-mapping', cpuName: 'any', sha1: checksum, symbolType: 'proguard' },
    });
    const found = await (await t.api(`/api/0/projects/o/app/files/dsyms/?debug_id=${uuid}`)).json();
    expect(found.map((d: { debugId: string }) => d.debugId)).toEqual([uuid]);
    // The build plugins' release association: 201, then 409 for the same pair, 400 for an unknown mapping.
    const assoc = (body: unknown) =>
      t.api('/api/0/projects/o/app/files/proguard-artifact-releases', { method: 'POST', json: body });
    expect((await assoc({ release_name: 'com.example@1.0+1', proguard_uuid: uuid })).status).toBe(201);
    expect((await assoc({ release_name: 'com.example@1.0+1', proguard_uuid: uuid })).status).toBe(409);
    expect(
      (await assoc({ release_name: 'com.example@1.0+1', proguard_uuid: '99999999-2222-5333-8444-555555555555' }))
        .status,
    ).toBe(400);
    expect((await assoc({ release_name: 'x' })).status).toBe(400);
    // sentry-cli 1.x's dSYM association (--app-id): nothing to associate here, the answer it expects.
    const dsyms = await t.api('/api/0/projects/o/app/files/dsyms/associate/', {
      method: 'POST',
      json: { checksums: [checksum], platform: 'ios', name: 'App', appId: 'com.example', version: '1.0', build: '1' },
    });
    expect(dsyms.status).toBe(200);
    expect(await dsyms.json()).toEqual({ associatedDsymFiles: [] });
    expect(
      (await t.api('/api/0/projects/o/nope-missing/files/dsyms/associate/', { method: 'POST', json: {} })).status,
    ).toBe(404);
    // Once the file is deleted through the symbols API, the same upload is new again.
    expect((await t.api(`/api/projects/app/symbols/${answer.dif.id}`, { method: 'DELETE' })).status).toBe(204);
    expect(await assembleDif(checksum, { name: `/proguard/${uuid}.txt`, chunks })).toEqual({
      state: 'not_found',
      missingChunks: chunks,
      detail: null,
    });
    await upload(text);
    expect((await assembleDif(checksum, { name: `/proguard/${uuid}.txt`, chunks })).state).toBe('ok');
    expect(await symbolCount()).toBe(1);
    await t.deps.store.db.deleteFrom('symbol_files').where('project_id', '=', projectId).execute();
  });

  it('the legacy ZIP upload refuses a broken ZIP and ../ entries, storing nothing', async () => {
    const post = (zip: Uint8Array) => {
      const form = new FormData();
      form.append('file', new Blob([zip as Uint8Array<ArrayBuffer>]), 'upload.zip');
      return t.api('/api/0/projects/o/app/files/dsyms/', { method: 'POST', body: form });
    };
    const broken = await post(strToU8('PK not really'));
    expect(broken.status).toBe(400);
    expect((await broken.json()).error).toContain('ZIP');
    const evil = await post(zipSync({ 'proguard/../../x.txt': strToU8('com.example.Foo -> a.a:\n') }));
    expect(evil.status).toBe(400);
    const mixed = await post(
      zipSync({
        'proguard/11111111-2222-5333-8444-555555555555.txt': strToU8('com.example.Foo -> a.a:\n'),
        'proguard/21111111-2222-5333-8444-555555555555.txt': strToU8('garbage\n'),
      }),
    );
    expect(mixed.status).toBe(400);
    expect(await symbolCount()).toBe(0);
  });
});

describe.skipIf(!dialects.includes('postgres'))('two instances on one PostgreSQL database', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer('postgres', { env: { API_KEYS: KEY } });
    b = await startTestServer('postgres', { env: { API_KEYS: KEY }, database: a.database });
    await createProject(a.deps.store.db, { ...PROJECT_DEFAULTS, slug: 'shared', name: 'Shared' }, a.clock.now());
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  it('chunks uploaded to one instance are assembled by the other, which both then answer ok', async () => {
    const bytes = bundle({ 'files/_/_/app.min.js.map': MAP }, mapManifest());
    const form = new FormData();
    const chunks: string[] = [];
    for (let at = 0; at < bytes.byteLength; at += 100) {
      const piece = bytes.subarray(at, Math.min(bytes.byteLength, at + 100));
      chunks.push(sha1(piece));
      form.append('file_gzip', new Blob([gzipSync(piece) as Uint8Array<ArrayBuffer>]), sha1(piece));
    }
    expect((await a.api('/api/0/organizations/o/chunk-upload/', { method: 'POST', body: form })).status).toBe(200);
    const assemble = (t: TestServer) =>
      t
        .api('/api/0/organizations/o/artifactbundle/assemble/', {
          method: 'POST',
          json: { checksum: sha1(bytes), chunks, projects: ['shared'] },
        })
        .then((r) => r.json());
    expect(await assemble(b)).toEqual({ state: 'ok', missingChunks: [], detail: null });
    expect(await assemble(a)).toEqual({ state: 'ok', missingChunks: [], detail: null });
    expect(((await (await a.api('/api/projects/shared/symbols')).json()) as any).symbols).toHaveLength(1);
  });
});
