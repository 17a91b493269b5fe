// Source bundles from the real sentry-cli (3.x and 2.x): `debug-files upload
// --include-sources` of a small ELF (test/fixtures/source-bundle, its source in
// test/fixtures/elf/src; `npm run fixtures` rebuilds it) uploads the executable and a source bundle of crash.c; `debug-files
// bundle-jvm` + `debug-files upload --type jvm` (what the Android Gradle plugin runs for
// source context) uploads a bundle of .java files. Both assemble `ok` and are kept as
// kind `sourcebundle` under the debug id the bundle's manifest names: listed, found by
// debug id, deleted. The legacy ZIP route keeps one too. SQLite and PostgreSQL.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { strToU8, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { fixtureDebugId } from './build-id.js';
import { ok, runCli, type CliTarget, type CliVersion } from './cli.js';

const KEY = 'source-bundle-key-0123456789abcdef';
const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures');
const ELF_DEBUG_ID = fixtureDebugId(path.join(FIXTURES, 'source-bundle/build-id.txt'));
const JVM_DEBUG_ID = '7f8e3c52-1d4b-4e2a-9b1c-0a1b2c3d4e5f';

let work: string;

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-source-bundles-'));
});
afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

/** A copy of the ELF fixture with its source, to run sentry-cli in (it finds crash.c relative to there). */
function nativeBuild(name: string): string {
  const dir = path.join(work, name);
  fs.mkdirSync(dir);
  fs.copyFileSync(path.join(FIXTURES, 'source-bundle/crash'), path.join(dir, 'crash'));
  fs.copyFileSync(path.join(FIXTURES, 'elf/src/crash.c'), path.join(dir, 'crash.c'));
  return dir;
}

/** A folder of Java sources, as an Android module has them. */
function javaSources(name: string): string {
  const dir = path.join(work, name, 'src/main/java/com/acme/shop');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    path.join(dir, 'Checkout.java'),
    'package com.acme.shop;\n\npublic class Checkout {\n  public void pay() { throw new IllegalStateException("declined"); }\n}\n',
  );
  return path.join(work, name, 'src');
}

describe.each(dialects)('source bundles from sentry-cli (%s)', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
  });
  afterAll(async () => t?.close());

  const project = async (slug: string, platform: string): Promise<CliTarget> => {
    await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug, name: slug, platform }, t.clock.now());
    return { url: t.url, token: KEY, project: slug };
  };
  const symbols = async (slug: string): Promise<any[]> =>
    ((await (await t.api(`/api/projects/${slug}/symbols`)).json()) as any).symbols;

  it.each(['3', '2'] as const)(
    'debug-files upload --include-sources keeps the executable and its source bundle under one debug id (%s.x)',
    async (v: CliVersion) => {
      const slug = `native-${v}`;
      const target = await project(slug, 'native');
      const dir = nativeBuild(`${dialect}-${slug}`);
      const res = ok(
        await runCli(v, target, ['debug-files', 'upload', '--include-sources', '--wait', '.'], { cwd: dir }),
      );
      expect(res.stdout + res.stderr).not.toMatch(/error/i);
      const listed = await symbols(slug);
      expect(listed.map((f) => [f.kind, f.debug_id]).sort()).toEqual([
        ['elf', ELF_DEBUG_ID],
        ['sourcebundle', ELF_DEBUG_ID],
      ]);
      const found = (await (
        await t.api(`/api/0/projects/acme/${slug}/files/dsyms/?debug_id=${ELF_DEBUG_ID}`)
      ).json()) as any[];
      expect(found.map((d) => d.symbolType).sort()).toEqual(['elf', 'sourcebundle']);
      // Again: both are on the server, nothing new is stored.
      ok(await runCli(v, target, ['debug-files', 'upload', '--include-sources', '--wait', '.'], { cwd: dir }));
      expect(await symbols(slug)).toHaveLength(2);
    },
  );

  it.each(['3', '2'] as const)(
    'bundle-jvm then debug-files upload --type jvm keeps the bundle; it can be deleted (%s.x)',
    async (v: CliVersion) => {
      const slug = `android-${v}`;
      const target = await project(slug, 'android');
      const out = path.join(work, `${dialect}-${slug}-bundle`);
      ok(
        await runCli(v, target, [
          'debug-files',
          'bundle-jvm',
          '--output',
          out,
          '--debug-id',
          JVM_DEBUG_ID,
          javaSources(`${dialect}-${slug}`),
        ]),
      );
      const res = ok(await runCli(v, target, ['debug-files', 'upload', '--type', 'jvm', '--wait', out]));
      expect(res.stdout + res.stderr).not.toMatch(/error/i);
      const listed = await symbols(slug);
      expect(listed.map((f) => [f.kind, f.debug_id])).toEqual([['sourcebundle', JVM_DEBUG_ID]]);
      expect(listed[0].size).toBe(fs.statSync(path.join(out, `${JVM_DEBUG_ID}.zip`)).size);
      expect((await t.api(`/api/projects/${slug}/symbols/${listed[0].id}`, { method: 'DELETE' })).status).toBeLessThan(
        300,
      );
      expect(await symbols(slug)).toEqual([]);
    },
  );

  it('the legacy ZIP upload keeps a source bundle under its manifest debug id, and one naming none without', async () => {
    const slug = 'legacy-sources';
    await project(slug, 'native');
    const bundle = (manifest: object) => {
      const zip = zipSync({
        'files/crash.c': strToU8('int crash(int x) { return 10 / x; }\n'),
        'manifest.json': strToU8(JSON.stringify(manifest)),
      });
      const out = new Uint8Array(8 + zip.byteLength);
      out.set(strToU8('SYSB'));
      out[4] = 2;
      out.set(zip, 8);
      return out;
    };
    const outer = zipSync({
      'crash.src.zip': bundle({
        files: { 'files/crash.c': { type: 'source', path: 'crash.c' } },
        debug_id: ELF_DEBUG_ID.toUpperCase(),
        object_name: 'crash',
        arch: 'x86_64',
      }),
      'other.src.zip': bundle({ files: {} }),
    });
    const form = new FormData();
    form.append('file', new Blob([outer as Uint8Array<ArrayBuffer>]), 'upload.zip');
    const res = await t.api(`/api/0/projects/acme/${slug}/files/dsyms/`, { method: 'POST', body: form });
    expect(res.status, await res.clone().text()).toBe(201);
    const difs = (await res.json()) as any[];
    expect(difs.map((d) => [d.objectName, d.symbolType, d.debugId]).sort()).toEqual([
      ['crash.src.zip', 'sourcebundle', ELF_DEBUG_ID],
      ['other.src.zip', 'sourcebundle', null],
    ]);
    expect((await symbols(slug)).map((f) => [f.kind, f.filename]).sort()).toEqual([
      ['sourcebundle', 'crash.src.zip'],
      ['sourcebundle', 'other.src.zip'],
    ]);
  });
});
