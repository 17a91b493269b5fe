// Chunk upload and assemble over HTTP, with the bad input of issue #30: SHA-1 mismatch,
// too many parts, an oversized chunk, unknown chunks, over the limits, unknown project;
// each a 4xx JSON error with nothing stored. SQLite and PostgreSQL.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { RETENTION_DOMAINS } from '../../src/editions/retention.js';
import { runRetention } from '../../src/store/retention.js';
import {
  CHUNK_SIZE,
  CHUNKS_PER_REQUEST,
  LEGACY_ZIP_LIMIT,
  MAX_REQUEST_SIZE,
  MAX_SYMBOL_FILE_BYTES,
} from '../../src/limits.js';
import { CHUNK_TTL_MS } from '../../src/uploads/chunks.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';

const KEY = 'chunk-test-key-0123456789abcdef';
const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');

/** A chunk-upload body as sentry-cli sends it: one `file_gzip` part per chunk, named by SHA-1. */
function chunkForm(parts: { name?: string; data: Uint8Array; field?: string; gzip?: boolean }[]): FormData {
  const form = new FormData();
  for (const p of parts) {
    const body = p.gzip === false ? p.data : gzipSync(p.data);
    form.append(
      p.field ?? 'file_gzip',
      new Blob([body as Uint8Array<ArrayBuffer>], { type: 'application/octet-stream' }),
      p.name ?? sha1(p.data),
    );
  }
  return form;
}

describe.each(dialects)('chunk upload and assemble (%s)', (dialect) => {
  let t: TestServer;
  const count = async () =>
    Number(
      (
        await t.deps.store.db
          .selectFrom('upload_chunks')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const post = (form: FormData) => t.api('/api/0/organizations/acme/chunk-upload/', { method: 'POST', body: form });

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY, PUBLIC_URL: 'https://crash.example.com' } });
    await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug: 'web', name: 'Web' }, t.clock.now());
  });
  afterAll(async () => t?.close());

  it('answers the options with the upload URL built from PUBLIC_URL', async () => {
    const res = await t.api('/api/0/organizations/acme/chunk-upload/');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const body = await res.json();
    expect(body).toMatchObject({
      url: 'https://crash.example.com/api/0/organizations/acme/chunk-upload/',
      chunkSize: CHUNK_SIZE,
      maxFileSize: MAX_SYMBOL_FILE_BYTES,
      hashAlgorithm: 'sha1',
      compression: ['gzip'],
    });
    expect((await fetch(`${t.url}/api/0/organizations/acme/chunk-upload/`)).status).toBe(401);
  });

  it('stores verified chunks once and answers missing chunks on assemble', async () => {
    const a = new TextEncoder().encode('first chunk '.repeat(100));
    const b = new TextEncoder().encode('second chunk');
    const before = await count();
    const first = await t.api('/api/0/projects/acme/web/files/difs/assemble/', {
      method: 'POST',
      json: { [sha1(Buffer.concat([a, b]))]: { name: 'x.bin', chunks: [sha1(a), sha1(b)] } },
    });
    expect(await first.json()).toEqual({
      [sha1(Buffer.concat([a, b]))]: { state: 'not_found', missingChunks: [sha1(a), sha1(b)], detail: null },
    });
    expect((await post(chunkForm([{ data: a }, { data: b, field: 'file', gzip: false }]))).status).toBe(200);
    expect(await count()).toBe(before + 2);
    expect((await post(chunkForm([{ data: a }]))).status).toBe(200);
    expect(await count()).toBe(before + 2);
  });

  it('accepts a chunk of exactly the chunk size, gzip or plain', async () => {
    const full = new Uint8Array(CHUNK_SIZE).map((_, i) => (i * 7919) % 251);
    expect((await post(chunkForm([{ data: full }]))).status).toBe(200);
    const other = full.map((b) => b ^ 1);
    expect((await post(chunkForm([{ data: other, field: 'file', gzip: false }]))).status).toBe(200);
  });

  it('refuses a chunk whose SHA-1 does not match, storing none of the request', async () => {
    const before = await count();
    const good = new TextEncoder().encode(`good ${Math.random()}`);
    const res = await post(
      chunkForm([
        { data: good },
        { data: new TextEncoder().encode('bad'), name: sha1(new TextEncoder().encode('other')) },
      ]),
    );
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: expect.stringContaining('checksum mismatch') });
    expect(await count()).toBe(before);
  });

  it('refuses more parts than announced', async () => {
    const before = await count();
    const parts = Array.from({ length: CHUNKS_PER_REQUEST + 1 }, (_, i) => ({
      data: new TextEncoder().encode(`part ${i} ${Math.random()}`),
    }));
    const res = await post(chunkForm(parts));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toContain('too many chunks');
    expect(await count()).toBe(before);
  });

  it('refuses a chunk over the chunk size, also as a small gzip bomb', async () => {
    const before = await count();
    const big = new Uint8Array(CHUNK_SIZE + 1);
    const res = await post(chunkForm([{ data: big }]));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toContain('larger than the chunk size');
    const plain = await post(chunkForm([{ data: big, field: 'file', gzip: false }]));
    expect(plain.status).toBe(400);
    expect(await count()).toBe(before);
  });

  it('refuses a request over the request size after storing parts of it, keeping none of them', async () => {
    const before = await count();
    const parts = Array.from({ length: Math.ceil(MAX_REQUEST_SIZE / CHUNK_SIZE) + 5 }, (_, i) => ({
      data: new Uint8Array(CHUNK_SIZE).fill(i),
      field: 'file',
      gzip: false,
    }));
    const res = await post(chunkForm(parts));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toContain('request is larger than');
    expect(await count()).toBe(before);
  });

  it('refuses a legacy ZIP over its limit with 413', async () => {
    const form = new FormData();
    form.append('file', new Blob([new Uint8Array(LEGACY_ZIP_LIMIT + 1)]), 'debug-files.zip');
    const res = await t.api('/api/0/projects/acme/web/files/dsyms/', { method: 'POST', body: form });
    expect(res.status).toBe(413);
    expect((await res.json()).error).toContain('larger than');
  });

  it('refuses a part that is not gzip, and a body that is not multipart', async () => {
    const res = await post(chunkForm([{ data: new TextEncoder().encode('plain'), gzip: false }]));
    expect(res.status).toBe(400);
    expect((await res.json()).error).toContain('gzip');
    const notMultipart = await t.api('/api/0/organizations/acme/chunk-upload/', { method: 'POST', json: {} });
    expect(notMultipart.status).toBe(400);
  });

  it('refuses malformed assemble bodies and unknown projects', async () => {
    const bad = await t.api('/api/0/projects/acme/web/files/difs/assemble/', {
      method: 'POST',
      json: { nothex: { name: 'x', chunks: [] } },
    });
    expect(bad.status).toBe(400);
    const unknown = await t.api('/api/0/projects/acme/nobody/files/difs/assemble/', { method: 'POST', json: {} });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error).toContain('not found');
    const bundle = await t.api('/api/0/organizations/acme/artifactbundle/assemble/', {
      method: 'POST',
      json: { checksum: 'a'.repeat(40), chunks: ['a'.repeat(40)], projects: ['nobody'] },
    });
    expect(bundle.status).toBe(400);
    const huge = await t.api('/api/0/projects/acme/web/files/difs/assemble/', {
      method: 'POST',
      body: 'x'.repeat(9 * 1024 * 1024),
    });
    expect(huge.status).toBe(413);
  });

  it('forgets chunks after an hour: they are missing, and retention deletes them', async () => {
    const data = new TextEncoder().encode(`old ${Math.random()}`);
    expect((await post(chunkForm([{ data }]))).status).toBe(200);
    const checksum = sha1(data);
    const ask = async () =>
      (
        await (
          await t.api('/api/0/projects/acme/web/files/difs/assemble/', {
            method: 'POST',
            json: { ['b'.repeat(40)]: { name: 'y', chunks: [checksum] } },
          })
        ).json()
      )['b'.repeat(40)];
    (t.clock as any).advance(CHUNK_TTL_MS + 1000);
    expect(await ask()).toEqual({ state: 'not_found', missingChunks: [checksum], detail: null });
    // The housekeeping `serve` runs hourly (and `faultline retention`) deletes them.
    expect(
      (await runRetention(t.deps.store, { now: t.clock.now(), retentionDays: 30, ...RETENTION_DOMAINS })).ran,
    ).toBe(true);
    const left = await t.deps.store.db
      .selectFrom('upload_chunks')
      .select('sha1')
      .where('sha1', '=', checksum)
      .execute();
    expect(left).toEqual([]);
  });
});
