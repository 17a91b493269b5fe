// The hostile assemble requests of #38 against the Worker (workerd, local D1), as against
// the Node server in test/uploads/assemble-limits.test.ts: one 1 MiB Mach-O chunk listed
// past the isolate's per-file limit, an artifact bundle whose map unpacks past the
// source-map limit, a legacy ZIP of more entries than a zip may have. Each is refused with
// a detail (or a 400) and nothing is stored in D1.
import { createHash } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CHUNK_SIZE,
  MAX_ZIP_ENTRIES,
  WORKER_MAX_SOURCE_MAP_BYTES,
  WORKER_MAX_SYMBOL_FILE_BYTES,
} from '../../../src/limits.js';
import { startTestWorker, type TestWorker } from './harness.js';

const KEY = 'worker-assemble-limits-key-0123456789';
const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');

describe('hostile assemble requests against the Worker', () => {
  let w: TestWorker;
  const stored = async () =>
    (await (await w.d1()).prepare('select count(*) as n from symbol_files').first<{ n: number }>())?.n;

  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: KEY, RATE_LIMIT: '0' });
    expect((await w.api('/api/projects', { method: 'POST', json: { slug: 'app', platform: 'ios' } })).status).toBe(201);
  }, 120_000);
  afterAll(async () => {
    await w?.close();
  });

  async function putChunk(piece: Uint8Array): Promise<void> {
    const form = new FormData();
    form.append('file_gzip', new Blob([gzipSync(piece) as Uint8Array<ArrayBuffer>]), sha1(piece));
    expect((await w.api('/api/0/organizations/o/chunk-upload/', { method: 'POST', body: form })).status).toBe(200);
  }

  it('a 1 MiB Mach-O chunk listed past the per-file limit is an error with a detail', async () => {
    const piece = new Uint8Array(CHUNK_SIZE);
    piece.set([0xcf, 0xfa, 0xed, 0xfe]);
    await putChunk(piece);
    const times = WORKER_MAX_SYMBOL_FILE_BYTES / CHUNK_SIZE + 1;
    const hash = createHash('sha1');
    for (let i = 0; i < times; i++) hash.update(piece);
    const checksum = hash.digest('hex');
    const res = await w.api('/api/0/projects/o/app/files/difs/assemble/', {
      method: 'POST',
      json: { [checksum]: { name: 'App', chunks: new Array(times).fill(sha1(piece)) } },
    });
    expect(res.status).toBe(200);
    expect((await res.json())[checksum]).toEqual({
      state: 'error',
      missingChunks: [],
      detail: `App is larger than ${WORKER_MAX_SYMBOL_FILE_BYTES} bytes (32 MB per file)`,
    });
    expect(await stored()).toBe(0);
  });

  it('an artifact bundle whose map unpacks past the source-map limit is an error with a detail', async () => {
    const map = JSON.stringify({
      version: 3,
      sources: ['a.js'],
      names: [],
      mappings: 'AAAA',
      sourcesContent: ['x'.repeat(WORKER_MAX_SOURCE_MAP_BYTES)],
    });
    const zip = zipSync({
      'files/_/_/big.js.map': strToU8(map),
      'manifest.json': strToU8(
        JSON.stringify({ files: { 'files/_/_/big.js.map': { type: 'source_map', url: '~/big.js.map' } } }),
      ),
    });
    const bundle = new Uint8Array(8 + zip.byteLength);
    bundle.set(strToU8('SYSB'));
    new DataView(bundle.buffer).setUint32(4, 2, true);
    bundle.set(zip, 8);
    expect(bundle.byteLength).toBeLessThan(CHUNK_SIZE);
    await putChunk(bundle);
    const res = await w.api('/api/0/organizations/o/artifactbundle/assemble/', {
      method: 'POST',
      json: { checksum: sha1(bundle), chunks: [sha1(bundle)], projects: ['app'] },
    });
    expect(await res.json()).toEqual({
      state: 'error',
      missingChunks: [],
      detail: expect.stringContaining(
        `~/big.js.map is larger than ${WORKER_MAX_SOURCE_MAP_BYTES} bytes (8 MB per file)`,
      ),
    });
    expect(await stored()).toBe(0);
  });

  it('a legacy ZIP of more entries than a zip may have is a 400', async () => {
    const entries = Object.fromEntries(
      Array.from({ length: MAX_ZIP_ENTRIES + 1 }, (_, i) => [`f${i}.txt`, strToU8('x')]),
    );
    const form = new FormData();
    form.append('file', new Blob([zipSync(entries) as Uint8Array<ArrayBuffer>]), 'upload.zip');
    const res = await w.api('/api/0/projects/o/app/files/dsyms/', { method: 'POST', body: form });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: `the zip has more than ${MAX_ZIP_ENTRIES} entries` });
    expect(await stored()).toBe(0);
  });
});
