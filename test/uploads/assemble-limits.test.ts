// The Symbols routes' limits on the sentry-cli routes (#38): an assemble request cannot
// make the server store more than a file may be (one chunk listed many times counts as
// many), artifact bundles and legacy ZIPs unpack within the per-file and unpacked limits,
// and real sentry-cli refuses a debug file past the advertised `maxFileSize`. Refusals are
// `error` with a `detail` (assemble) or a 400, and nothing is stored. Most cases run on a
// server whose limits are lowered so small files reach them; the repeated-chunk case of
// the issue runs at the real 256 MB limit. SQLite and PostgreSQL.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHUNK_SIZE, MAX_SYMBOL_FILE_BYTES } from '../../src/limits.js';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import type { UploadLimits } from '../../src/symbols/upload.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { buildIosFixture, writeIosBundle, type IosFixture } from '../symbols/native/ios-fixture.js';
import { runCli } from './cli.js';

const KEY = 'assemble-limits-key-0123456789abcdef';
const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');
/** Lowered limits: 4 KiB per file, 3 entries and 6 KiB unpacked per ZIP. */
const SMALL: UploadLimits = { maxFileBytes: 4096, maxZipEntries: 3, maxZipUnpackedBytes: 6144 };

let fx: IosFixture;
let dsym: Uint8Array;
let bundleDir: string;

beforeAll(() => {
  fx = buildIosFixture();
  dsym = fx.bundle['App.app.dSYM/Contents/Resources/DWARF/App'];
  bundleDir = writeIosBundle(fx, path.join(fx.dir, 'upload'));
}, 120_000);

afterAll(() => {
  if (fx) fs.rmSync(fx.dir, { recursive: true, force: true });
});

/** A source map of about `size` bytes. */
function mapOf(size: number): string {
  return JSON.stringify({
    version: 3,
    file: 'app.min.js',
    sources: ['a.js'],
    names: [],
    mappings: 'AAAA',
    sourcesContent: ['x'.repeat(size)],
  });
}

/** An artifact bundle (`SYSB` + version 2 + ZIP) of source maps, deflated. */
function bundle(maps: Record<string, string>): Uint8Array {
  const entries: Record<string, Uint8Array> = {};
  const files: Record<string, unknown> = {};
  for (const [name, text] of Object.entries(maps)) {
    entries[`files/_/_/${name}`] = strToU8(text);
    files[`files/_/_/${name}`] = { type: 'source_map', url: `~/${name}` };
  }
  entries['manifest.json'] = strToU8(JSON.stringify({ files }));
  const zip = zipSync(entries);
  const out = new Uint8Array(8 + zip.byteLength);
  out.set(strToU8('SYSB'));
  new DataView(out.buffer).setUint32(4, 2, true);
  out.set(zip, 8);
  return out;
}

describe.each(dialects)('sentry-cli routes keep the symbol-file limits (%s)', (dialect) => {
  let real: TestServer;
  let small: TestServer;
  const count = async (t: TestServer, table: 'symbol_files' | 'symbol_chunks') =>
    Number(
      (
        await t.deps.store.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    real = await startTestServer(dialect, { env: { API_KEYS: KEY } });
    small = await startTestServer(dialect, { env: { API_KEYS: KEY }, symbolUploadLimits: SMALL });
    for (const t of [real, small])
      await createProject(
        t.deps.store.db,
        { ...PROJECT_DEFAULTS, slug: 'app', name: 'App', platform: 'ios' },
        t.clock.now(),
      );
  }, 60_000);
  afterAll(async () => {
    await real?.close();
    await small?.close();
  });

  /** Uploads chunks as sentry-cli does (gzip parts named by SHA-1). */
  async function putChunks(t: TestServer, pieces: Uint8Array[]): Promise<void> {
    const form = new FormData();
    for (const piece of pieces)
      form.append('file_gzip', new Blob([gzipSync(piece) as Uint8Array<ArrayBuffer>]), sha1(piece));
    expect((await t.api('/api/0/organizations/o/chunk-upload/', { method: 'POST', body: form })).status).toBe(200);
  }
  /** A file of `times` copies of `piece`: its checksum and chunk list (the piece listed `times` times). */
  function repeated(piece: Uint8Array, times: number): { checksum: string; chunks: string[] } {
    const hash = createHash('sha1');
    for (let i = 0; i < times; i++) hash.update(piece);
    return { checksum: hash.digest('hex'), chunks: new Array<string>(times).fill(sha1(piece)) };
  }
  const assembleDif = async (t: TestServer, checksum: string, file: Record<string, unknown>) => {
    const res = await t.api('/api/0/projects/o/app/files/difs/assemble/', {
      method: 'POST',
      json: { [checksum]: file },
    });
    expect(res.status).toBe(200);
    return (await res.json())[checksum];
  };
  const assembleBundle = async (t: TestServer, body: Record<string, unknown>) => {
    const res = await t.api('/api/0/organizations/o/artifactbundle/assemble/', {
      method: 'POST',
      json: { projects: ['app'], ...body },
    });
    expect(res.status).toBe(200);
    return res.json();
  };

  it('one 1 MiB dSYM chunk listed 300 times is an error with a detail, and nothing is stored (real limit)', async () => {
    const piece = new Uint8Array(CHUNK_SIZE);
    piece.set(dsym.subarray(0, Math.min(dsym.byteLength, CHUNK_SIZE)));
    await putChunks(real, [piece]);
    const { checksum, chunks } = repeated(piece, 300);
    const started = Date.now();
    const answer = await assembleDif(real, checksum, { name: 'App', debug_id: fx.debugIds.arm64, chunks });
    expect(answer).toEqual({
      state: 'error',
      missingChunks: [],
      detail: `App is larger than ${MAX_SYMBOL_FILE_BYTES} bytes (256 MB per file)`,
    });
    // Refused by arithmetic, before a chunk is read.
    expect(Date.now() - started).toBeLessThan(5000);
    // Polling again (sentry-cli --wait) answers the same.
    expect((await assembleDif(real, checksum, { name: 'App', debug_id: fx.debugIds.arm64, chunks })).state).toBe(
      'error',
    );
    expect(await count(real, 'symbol_files')).toBe(0);
    // The advertised maxFileSize is the per-file limit, so sentry-cli skips a larger file before uploading it.
    expect((await (await real.api('/api/0/organizations/o/chunk-upload/')).json()).maxFileSize).toBe(
      MAX_SYMBOL_FILE_BYTES,
    );
  });

  it('a repeated chunk past the lowered limit is refused while some chunks are still missing, before any is uploaded for nothing', async () => {
    const piece = dsym.slice(0, 2048);
    await putChunks(small, [piece]);
    const missing = 'e'.repeat(40);
    const { checksum } = repeated(piece, 3);
    const answer = await assembleDif(small, checksum, {
      name: 'App',
      chunks: [sha1(piece), sha1(piece), sha1(piece), missing],
    });
    expect(answer).toEqual({
      state: 'error',
      missingChunks: [],
      detail: 'App is larger than 4096 bytes (4096 bytes per file)',
    });
    expect(await count(small, 'symbol_files')).toBe(0);
  });

  it('an artifact bundle listing its chunk past the limit, a map past the per-file limit, maps past the unpacked limit: errors, nothing stored', async () => {
    const ok = bundle({ 'a.js.map': mapOf(100) });
    await putChunks(small, [ok]);
    const hostile = repeated(ok, Math.ceil(4097 / ok.byteLength));
    expect(await assembleBundle(small, hostile)).toEqual({
      state: 'error',
      missingChunks: [],
      detail: 'the artifact bundle is larger than 4096 bytes (4096 bytes per file)',
    });

    // Deflated, the bundle is small; its map unpacks past 4 KiB.
    const big = bundle({ 'big.js.map': mapOf(5000) });
    expect(big.byteLength).toBeLessThan(4096);
    await putChunks(small, [big]);
    expect(await assembleBundle(small, { checksum: sha1(big), chunks: [sha1(big)] })).toEqual({
      state: 'error',
      missingChunks: [],
      detail: 'artifact bundle: ~/big.js.map is larger than 4096 bytes (4096 bytes per file)',
    });

    const two = bundle({ 'a.js.map': mapOf(3500), 'b.js.map': mapOf(3500) });
    await putChunks(small, [two]);
    expect(await assembleBundle(small, { checksum: sha1(two), chunks: [sha1(two)] })).toEqual({
      state: 'error',
      missingChunks: [],
      detail: 'artifact bundle: source maps unpack to more than 6144 bytes (6144 bytes)',
    });
    expect(await count(small, 'symbol_files')).toBe(0);
  });

  it('the legacy ZIP refuses an entry past the per-file limit, more entries than allowed, and more unpacked bytes: 400, nothing stored', async () => {
    const post = async (entries: Record<string, Uint8Array>) => {
      const form = new FormData();
      form.append('file', new Blob([zipSync(entries) as Uint8Array<ArrayBuffer>]), 'upload.zip');
      const res = await small.api('/api/0/projects/o/app/files/dsyms/', { method: 'POST', body: form });
      return { status: res.status, body: await res.json() };
    };
    const mapping = (n: number) => strToU8(`com.example.Foo -> a.a:\n${'    1:1:void run():10:10 -> a\n'.repeat(n)}`);
    const uuid = (i: number) => `proguard/${i}1111111-2222-5333-8444-555555555555.txt`;
    expect(await post({ [uuid(1)]: mapping(200) })).toEqual({
      status: 400,
      body: { error: `the zip entry "${uuid(1)}" is larger than 4096 bytes (4096 bytes per file)` },
    });
    expect(
      await post({ [uuid(1)]: mapping(1), [uuid(2)]: mapping(1), [uuid(3)]: mapping(1), [uuid(4)]: mapping(1) }),
    ).toEqual({
      status: 400,
      body: { error: 'the zip has more than 3 entries' },
    });
    expect(await post({ [uuid(1)]: mapping(120), [uuid(2)]: mapping(120) })).toEqual({
      status: 400,
      body: { error: 'the zip unpacks to more than 6144 bytes (6144 bytes)' },
    });
    expect(await count(small, 'symbol_files')).toBe(0);
  });

  it.each(['3', '2'] as const)(
    'sentry-cli %s.x refuses to upload a dSYM past the advertised maxFileSize; nothing is stored',
    async (v) => {
      expect(dsym.byteLength / 2).toBeGreaterThan(SMALL.maxFileBytes);
      const res = await runCli(v, { url: small.url, token: KEY, project: 'app' }, [
        'debug-files',
        'upload',
        '--wait',
        bundleDir,
      ]);
      expect(res.code).not.toBe(0);
      expect(res.stdout + res.stderr).toContain('exceeds the maximum allowed size (4.00KB)');
      expect(await count(small, 'symbol_files')).toBe(0);
      expect(await count(small, 'symbol_chunks')).toBe(0);
    },
  );
});
