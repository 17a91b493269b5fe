// Input hygiene of the sentry-cli routes over the real HTTP server, on SQLite and
// PostgreSQL: a NUL or lone surrogate in a JSON body is a 400 like on the management
// routes (PostgreSQL refuses NUL in text, SQLite stores a release nobody can address),
// and no release or association is stored.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { HYGIENE_CASES, HYGIENE_ERROR, HYGIENE_MAPPING, HYGIENE_PROJECT } from './hygiene-cases.js';

describe.each(dialects)('sentry-cli JSON bodies on %s', (dialect) => {
  let t: TestServer;
  let uuid: string;

  beforeAll(async () => {
    t = await startTestServer(dialect);
    expect((await t.api('/api/projects', { method: 'POST', json: { slug: HYGIENE_PROJECT } })).status).toBe(201);
    const form = new FormData();
    form.set('kind', 'proguard');
    form.set('file', new Blob([HYGIENE_MAPPING]), 'mapping.txt');
    const upload = await t.api(`/api/projects/${HYGIENE_PROJECT}/symbols`, { method: 'POST', body: form });
    expect(upload.status).toBe(201);
    uuid = ((await upload.json()) as { symbols: { debug_id: string }[] }).symbols[0].debug_id;
  });
  afterAll(() => t?.close());

  it.each(HYGIENE_CASES)('$name is 400 and stores nothing', async ({ path, body }) => {
    const res = await t.api(path, { method: 'POST', json: body(uuid) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(HYGIENE_ERROR);
    expect(await t.deps.store.db.selectFrom('cli_releases').select('version').execute()).toEqual([]);
    expect(await t.deps.store.db.selectFrom('proguard_releases').select('release').execute()).toEqual([]);
  });

  it('a clean body still works, and the larger uploader limit still applies', async () => {
    const ok = await t.api('/api/0/organizations/o/releases/', {
      method: 'POST',
      json: { version: 'clean@1', projects: [HYGIENE_PROJECT] },
    });
    expect(ok.status).toBe(201);
    const big = await t.api('/api/0/organizations/o/releases/', {
      method: 'POST',
      json: {
        version: 'big@1',
        projects: [HYGIENE_PROJECT],
        url: `https://example.com/${'x'.repeat(2 * 1024 * 1024)}`,
      },
    });
    expect(big.status).not.toBe(413);
    const tooBig = await t.api('/api/0/organizations/o/releases/', {
      method: 'POST',
      json: { version: 'huge@1', projects: [HYGIENE_PROJECT], url: 'x'.repeat(9 * 1024 * 1024) },
    });
    expect(tooBig.status).toBe(413);
    await t.deps.store.db.deleteFrom('cli_releases').execute();
  });
});

describe.each(dialects)('artifact bundle text on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
    expect((await t.api('/api/projects', { method: 'POST', json: { slug: HYGIENE_PROJECT } })).status).toBe(201);
  });
  afterAll(() => t?.close());

  const MAP = JSON.stringify({ version: 3, file: 'app.min.js', sources: ['src/app.js'], names: [], mappings: 'AAAA' });
  const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');
  const longRelease = Array.from({ length: 40 }, (_, i) =>
    createHash('sha512').update(String(i)).digest('base64url'),
  ).join('');

  /** An artifact bundle as sentry-cli writes one (`SYSB`, version 2, a ZIP), its chunk uploaded; its assemble answer. */
  async function assemble(
    manifest: unknown,
    body: Record<string, unknown> = {},
  ): Promise<{ status: number; json: any }> {
    const zip = zipSync({
      'files/_/_/app.min.js.map': strToU8(MAP),
      'manifest.json': strToU8(JSON.stringify(manifest)),
    });
    const bytes = new Uint8Array(8 + zip.byteLength);
    bytes.set(strToU8('SYSB'));
    new DataView(bytes.buffer).setUint32(4, 2, true);
    bytes.set(zip, 8);
    const form = new FormData();
    form.append('file_gzip', new Blob([gzipSync(bytes) as Uint8Array<ArrayBuffer>]), sha1(bytes));
    expect((await t.api('/api/0/organizations/o/chunk-upload/', { method: 'POST', body: form })).status).toBe(200);
    const res = await t.api('/api/0/organizations/o/artifactbundle/assemble/', {
      method: 'POST',
      json: { checksum: sha1(bytes), chunks: [sha1(bytes)], projects: [HYGIENE_PROJECT], ...body },
    });
    return { status: res.status, json: await res.json() };
  }
  const file = (url: string) => ({ 'files/_/_/app.min.js.map': { type: 'source_map', url } });

  it.each([
    ['NUL in the manifest release', { release: 'r\u0000', files: file('~/app.min.js.map') }],
    ['a lone surrogate in a manifest url', { release: 'r1', files: file('~/app\ud800.min.js.map') }],
    ['a manifest release longer than a release may be', { release: longRelease, files: file('~/app.min.js.map') }],
  ])('%s is an error naming it, and stores nothing', async (_name, manifest) => {
    const answer = await assemble(manifest);
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ state: 'error', detail: expect.stringMatching(/manifest\.json/) });
    expect(await t.deps.store.db.selectFrom('symbol_files').select('id').execute()).toEqual([]);
  });

  it('a request version longer than a release may be is 400', async () => {
    const answer = await assemble({ files: file('~/app.min.js.map') }, { version: longRelease });
    expect(answer.status).toBe(400);
    expect(answer.json.error).toMatch(/version/);
    expect(await t.deps.store.db.selectFrom('symbol_files').select('id').execute()).toEqual([]);
  });
});
