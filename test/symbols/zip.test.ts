// ZIP and multipart input every upload route refuses (#38): an entry whose bytes do not
// match its CRC-32, an entry flagged encrypted, a compression method other than stored
// and deflated (named in the answer), and a multipart part header past 16 KB that arrives
// in one read. On the Symbols route (zips streamed in) and the sentry-cli routes
// (artifact bundles and legacy ZIPs read from their end): 400 or an assemble `error`
// with a detail, nothing stored. SQLite and PostgreSQL.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { bytesSource } from '../../src/bytes.js';
import { MultipartError, parseMultipart } from '../../src/symbols/multipart.js';
import { readZipDirectory, readZipEntryBytes } from '../../src/symbols/zip.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { uploadSymbols } from './helpers.js';

const KEY = 'zip-rules-key-0123456789abcdef';
const MAP = JSON.stringify({
  version: 3,
  file: 'app.min.js',
  sources: ['src/app.js'],
  names: ['boom'],
  mappings: 'AAAAA',
});
const sha1 = (b: Uint8Array) => createHash('sha1').update(b).digest('hex');

/**
 * Rewrites the local and central headers of the entry `name`: a consistent lie, as a
 * hostile uploader writes it.
 */
function patchZip(zip: Uint8Array, name: string, patch: { crc?: number; flags?: number; method?: number }): Uint8Array {
  const out = zip.slice();
  const v = new DataView(out.buffer);
  const text = new TextDecoder();
  for (let i = 0; i + 46 <= out.length; i++) {
    const sig = v.getUint32(i, true);
    // Local header: flags +6, method +8, CRC +14, name +30; central header: flags +8, method +10, CRC +16, name +46.
    const at = sig === 0x04034b50 ? 6 : sig === 0x02014b50 ? 8 : -1;
    if (at < 0) continue;
    const nameAt = sig === 0x04034b50 ? 30 : 46;
    const nameLength = v.getUint16(i + (sig === 0x04034b50 ? 26 : 28), true);
    if (text.decode(out.subarray(i + nameAt, i + nameAt + nameLength)) !== name) continue;
    if (patch.flags !== undefined) v.setUint16(i + at, v.getUint16(i + at, true) | patch.flags, true);
    if (patch.method !== undefined) v.setUint16(i + at + 2, patch.method, true);
    if (patch.crc !== undefined) v.setUint32(i + at + 8, patch.crc, true);
  }
  return out;
}

const zipOf = (files: Record<string, string>, level: 0 | 6) =>
  zipSync(Object.fromEntries(Object.entries(files).map(([k, t]) => [k, strToU8(t)])), { level });

/** Each hostile case for an entry `name` holding `content` (beside `others`): what it is, the zip, the refusal. */
function hostile(name: string, content: string, others: Record<string, string> = {}): [string, Uint8Array, string][] {
  const files = { [name]: content, ...others };
  const n = JSON.stringify(name);
  return [
    [
      'a deflated entry with a wrong CRC-32',
      patchZip(zipOf(files, 6), name, { crc: 0x12345678 }),
      `the zip entry ${n} is corrupt: its bytes do not match its CRC-32`,
    ],
    [
      'a stored entry with a wrong CRC-32',
      patchZip(zipOf(files, 0), name, { crc: 0x12345678 }),
      `the zip entry ${n} is corrupt: its bytes do not match its CRC-32`,
    ],
    [
      'an entry flagged encrypted',
      patchZip(zipOf(files, 0), name, { flags: 1 }),
      `the zip entry ${n} is encrypted; upload it unencrypted`,
    ],
    [
      'an entry compressed with bzip2',
      patchZip(zipOf(files, 0), name, { method: 12 }),
      `the zip entry ${n} uses compression method 12 (bzip2); only stored (0) and deflated (8) entries are supported`,
    ],
    [
      'an entry of an unknown method',
      patchZip(zipOf(files, 0), name, { method: 77 }),
      `the zip entry ${n} uses compression method 77; only stored (0) and deflated (8) entries are supported`,
    ],
    [
      'an AES-encrypted entry',
      patchZip(zipOf(files, 0), name, { method: 99 }),
      `the zip entry ${n} is encrypted; upload it unencrypted`,
    ],
  ];
}
const CASES = hostile('app.min.js.map', MAP).map(([what]) => what);
const caseOf = (list: [string, Uint8Array, string][], what: string) => list.find(([w]) => w === what)!;

/** A multipart body whose `file` part carries a 20 KB header line. */
function longHeaderBody(
  boundary: string,
  fields: Record<string, string>,
  file: { field: string; name: string; data: Uint8Array },
): Uint8Array<ArrayBuffer> {
  const parts: Uint8Array[] = [];
  for (const [name, value] of Object.entries(fields))
    parts.push(strToU8(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  parts.push(
    strToU8(
      `--${boundary}\r\nContent-Disposition: form-data; name="${file.field}"; filename="${file.name}"\r\nX-Padding: ${'p'.repeat(20 * 1024)}\r\n\r\n`,
    ),
  );
  parts.push(file.data, strToU8(`\r\n--${boundary}--\r\n`));
  return Buffer.concat(parts) as Uint8Array<ArrayBuffer>;
}

/**
 * A source map zipped by Info-ZIP from stdin (`cat a.map | zip out.zip -`): a ZIP64 end
 * record beside the ordinary one, whose fields are not saturated.
 */
const STDIN_ZIP64 = new Uint8Array(
  fs.readFileSync(path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/zip/stdin-zip64.zip')),
);
const STDIN_MAP = '{"version":3,"sources":["a.js"],"names":[],"mappings":"AAAA"}';

describe('the ZIP directory reader', () => {
  it('finds the directory of a zip with a ZIP64 end record beside an ordinary one', async () => {
    const source = bytesSource(STDIN_ZIP64);
    const entries = await readZipDirectory(source);
    expect(entries.map((e) => [e.name, e.size, e.crc32])).toEqual([['-', STDIN_MAP.length, 0xc72a4ca8]]);
    expect(new TextDecoder().decode(await readZipEntryBytes(source, entries[0], 1024))).toBe(STDIN_MAP);
  });
});

describe('the multipart reader', () => {
  it('refuses part headers past 16 KB that arrive in one read', async () => {
    const body = longHeaderBody('b0undary', {}, { field: 'file', name: 'a.map', data: strToU8(MAP) });
    const parts = async () => {
      for await (const part of parseMultipart(new Blob([body as Uint8Array<ArrayBuffer>]).stream(), 'b0undary'))
        await part.bytes(1 << 20);
    };
    await expect(parts()).rejects.toThrow(new MultipartError("a multipart part's headers are longer than 16384 bytes"));
  });
});

describe.each(dialects)('ZIP and multipart rules on every upload route (%s)', (dialect) => {
  let t: TestServer;
  let project: ProjectRow;
  const storedFiles = async () =>
    Number(
      (
        await t.deps.store.db
          .selectFrom('symbol_files')
          .select((eb) => eb.fn.countAll<number>().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
    project = await createProject(
      t.deps.store.db,
      { ...PROJECT_DEFAULTS, slug: 'web', name: 'Web', platform: 'javascript' },
      t.clock.now(),
    );
  });
  afterAll(async () => t?.close());

  it('the Symbols route takes a sound zip (the cases below differ from it in one field)', async () => {
    for (const zip of [zipOf({ 'app.min.js.map': MAP }, 6), zipOf({ 'app.min.js.map': MAP }, 0)]) {
      const res = await uploadSymbols(t, project, {
        kind: 'sourcemap',
        release: 'ok',
        files: [{ name: 'maps.zip', data: zip }],
      });
      expect(res.status).toBe(201);
    }
    await t.deps.store.db.deleteFrom('symbol_files').execute();
  });

  it('the Symbols route takes a zip with a ZIP64 end record (Info-ZIP from stdin)', async () => {
    const res = await uploadSymbols(t, project, {
      kind: 'sourcemap',
      release: 'zip64',
      files: [{ name: 'maps.zip', data: STDIN_ZIP64 }],
    });
    expect(res.status).toBe(201);
    await t.deps.store.db.deleteFrom('symbol_files').execute();
  });

  it.each(CASES)('the Symbols route refuses %s with a 400 naming it, storing nothing', async (what) => {
    const [, zip, message] = caseOf(hostile('app.min.js.map', MAP), what);
    const res = await uploadSymbols(t, project, {
      kind: 'sourcemap',
      release: 'bad',
      files: [{ name: 'maps.zip', data: zip }],
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: message });
    expect(await storedFiles()).toBe(0);
  });

  it('the Symbols route refuses a 20 KB part header sent in one piece', async () => {
    const body = longHeaderBody(
      'b0undary',
      { kind: 'sourcemap', release: 'long' },
      { field: 'file', name: 'app.min.js.map', data: strToU8(MAP) },
    );
    const res = await t.api('/api/projects/web/symbols', {
      method: 'POST',
      body,
      headers: { 'content-type': 'multipart/form-data; boundary=b0undary' },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "a multipart part's headers are longer than 16384 bytes" });
    expect(await storedFiles()).toBe(0);
  });

  it.each(CASES)('an artifact bundle with %s is an assemble error naming it, storing nothing', async (what) => {
    const path = 'files/_/_/app.min.js.map';
    const manifest = JSON.stringify({ files: { [path]: { type: 'source_map', url: '~/app.min.js.map' } } });
    const [, zip, message] = caseOf(hostile(path, MAP, { 'manifest.json': manifest }), what);
    const bundle = Buffer.concat([strToU8('SYSB'), new Uint8Array([2, 0, 0, 0]), zip]);
    const form = new FormData();
    form.append('file_gzip', new Blob([gzipSync(bundle) as Uint8Array<ArrayBuffer>]), sha1(bundle));
    expect((await t.api('/api/0/organizations/o/chunk-upload/', { method: 'POST', body: form })).status).toBe(200);
    const res = await t.api('/api/0/organizations/o/artifactbundle/assemble/', {
      method: 'POST',
      json: { checksum: sha1(bundle), chunks: [sha1(bundle)], projects: ['web'] },
    });
    expect(await res.json()).toEqual({ state: 'error', missingChunks: [], detail: message });
    expect(await storedFiles()).toBe(0);
  });

  it.each(CASES)('the legacy ZIP route refuses %s with a 400 naming it, storing nothing', async (what) => {
    // A ProGuard mapping, so that the entry is read.
    const name = 'proguard/11111111-2222-5333-8444-555555555555.txt';
    const [, zip, message] = caseOf(hostile(name, 'com.example.Foo -> a.a:\n    1:1:void run():10:10 -> a\n'), what);
    const form = new FormData();
    form.append('file', new Blob([zip as Uint8Array<ArrayBuffer>]), 'upload.zip');
    const res = await t.api('/api/0/projects/o/web/files/dsyms/', { method: 'POST', body: form });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: message });
    expect(await storedFiles()).toBe(0);
  });

  it('the chunk upload refuses a 20 KB part header sent in one piece', async () => {
    const chunk = strToU8('chunk data');
    const body = longHeaderBody('b0undary', {}, { field: 'file', name: sha1(chunk), data: chunk });
    const res = await t.api('/api/0/organizations/o/chunk-upload/', {
      method: 'POST',
      body,
      headers: { 'content-type': 'multipart/form-data; boundary=b0undary' },
    });
    expect(res.status).toBe(400);
    expect((await res.json()).error).toContain("a multipart part's headers are longer than 16384 bytes");
    const left = await t.deps.store.db
      .selectFrom('upload_chunks')
      .select('sha1')
      .where('sha1', '=', sha1(chunk))
      .execute();
    expect(left).toEqual([]);
  });
});
