// `debug-files upload` of a real ELF with the real sentry-cli (3.x and the 2.x alias): an
// executable built with clang -g and a GNU build id (test/fixtures/elf, with readelf's
// build id; `npm run fixtures` rebuilds it) goes through chunk-upload +
// difs/assemble, assembles `ok` (not `error`), and is kept as an `elf` symbol file under
// the debug id sentry-cli derives from the build id: listed by the symbols API and found
// by the legacy debug_id lookup; a split debug file and its stripped object are both
// kept; a Breakpad .sym beside them is stored as kind `breakpad`. SQLite and PostgreSQL.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { debugIdOfBuildId, fixtureDebugId } from './build-id.js';
import { ok, runCli } from './cli.js';

const KEY = 'elf-upload-key-0123456789abcdef';
let dir: string;
let debugId: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-elf-'));
  fs.mkdirSync(path.join(dir, 'build'));
  fs.copyFileSync(path.resolve('test/fixtures/elf/build/crash'), path.join(dir, 'build', 'crash'));
  // An Android-shaped split pair: the stripped .so and its debug file share one build id.
  for (const name of ['aarch64-split.so', 'aarch64-split.so.debug'])
    fs.copyFileSync(path.resolve('test/fixtures/elf-native', name), path.join(dir, 'build', name));
  // A Breakpad symbol file beside them (dump_syms of another build).
  fs.copyFileSync(path.resolve('test/fixtures/breakpad/x86_64-dwarf4.so.sym'), path.join(dir, 'build', 'libx.so.sym'));
  debugId = fixtureDebugId(path.resolve('test/fixtures/elf/build-id.txt'));
});

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe.each(dialects)('debug-files upload of a real ELF (%s)', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
  });
  afterAll(async () => t?.close());

  it.each(['3', '2'] as const)('assembles ok and keeps it as an elf file under its debug id (%s.x)', async (v) => {
    const slug = `linux-${v}`;
    await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug, name: slug, platform: 'native' }, t.clock.now());
    const target = { url: t.url, token: KEY, project: slug };
    const res = ok(await runCli(v, target, ['debug-files', 'upload', '--wait', path.join(dir, 'build')]));
    expect(res.stdout + res.stderr).toContain(debugId);
    expect(res.stdout + res.stderr).not.toMatch(/error/i);
    const listed = ((await (await t.api(`/api/projects/${slug}/symbols`)).json()) as any).symbols;
    const splitId = debugIdOfBuildId(
      fs
        .readFileSync(path.resolve('test/fixtures/elf-native/answers.json'), 'utf8')
        .match(/"aarch64-split.so": "([0-9a-f]+)"/)![1],
    );
    const symId = debugIdOfBuildId(
      fs
        .readFileSync(path.resolve('test/fixtures/elf-native/answers.json'), 'utf8')
        .match(/"x86_64-dwarf4.so": "([0-9a-f]+)"/)![1],
    );
    expect(listed.map((f: any) => [f.kind, f.debug_id, path.basename(f.filename)]).sort()).toEqual(
      [
        ['breakpad', symId, 'libx.so.sym'],
        ['elf', splitId, 'aarch64-split.so'],
        ['elf', splitId, 'aarch64-split.so.debug'],
        ['elf', debugId, 'crash'],
      ].sort(),
    );
    expect(listed.find((f: any) => f.debug_id === debugId).size).toBe(
      fs.statSync(path.join(dir, 'build', 'crash')).size,
    );
    const found = await (await t.api(`/api/0/projects/acme/${slug}/files/dsyms/?debug_id=${debugId}`)).json();
    expect(found.map((d: any) => [d.debugId, d.symbolType])).toEqual([[debugId, 'elf']]);
    // Again: the file is on the server already, nothing new is stored.
    ok(await runCli(v, target, ['debug-files', 'upload', '--wait', path.join(dir, 'build')]));
    expect(((await (await t.api(`/api/projects/${slug}/symbols`)).json()) as any).symbols).toHaveLength(4);
  });
});
