// `sentry-cli dart-symbol-map upload` (sentry-cli 3.x) of a Flutter obfuscation map with the
// debug file it belongs to (a real ELF: test/fixtures/elf): the map goes through
// chunk-upload and difs/assemble and is kept as a `dartsymbolmap` file under the debug
// file's debug id, which then deobfuscates the exception type of an event whose image
// carries that debug id. SQLite and PostgreSQL.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { eventDetail, sendEvent } from '../symbols/helpers.js';
import { fixtureDebugId } from './build-id.js';
import { ok, runCli } from './cli.js';

const KEY = 'dart-map-upload-key-0123456789ab';
const MAP = ['CartException', 'xB', 'CartService', 'Yq'];
let dir: string;
let debugId: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-dart-'));
  fs.copyFileSync(path.resolve('test/fixtures/elf/build/crash'), path.join(dir, 'app.so'));
  fs.writeFileSync(path.join(dir, 'map.json'), JSON.stringify(MAP));
  debugId = fixtureDebugId(path.resolve('test/fixtures/elf/build-id.txt'));
});

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe.each(dialects)('dart-symbol-map upload with the real sentry-cli (%s)', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
  });
  afterAll(async () => t?.close());

  it("keeps the map as a dartsymbolmap under the debug file's debug id, and it deobfuscates", async () => {
    const slug = 'flutter-app';
    const project = await createProject(
      t.deps.store.db,
      { ...PROJECT_DEFAULTS, slug, name: slug, platform: 'dart' },
      t.clock.now(),
    );
    const res = ok(
      await runCli('3', { url: t.url, token: KEY, project: slug }, [
        'dart-symbol-map',
        'upload',
        path.join(dir, 'map.json'),
        path.join(dir, 'app.so'),
      ]),
    );
    expect(res.stdout + res.stderr).not.toMatch(/error/i);
    const listed = ((await (await t.api(`/api/projects/${slug}/symbols`)).json()) as any).symbols;
    expect(listed.map((f: any) => [f.kind, f.debug_id])).toEqual([['dartsymbolmap', debugId]]);
    const id = await sendEvent(t, project, {
      platform: 'dart',
      release: 'unrelated@1',
      exception: { values: [{ type: 'xB', value: "Instance of 'xB'" }] },
      debug_meta: { images: [{ type: 'elf', debug_id: debugId, code_file: 'libapp.so' }] },
    });
    expect((await eventDetail(t, project, id)).exceptions[0].type).toBe('CartException');
  });
});
