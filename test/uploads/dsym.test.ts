// `debug-files upload` of a real dSYM with the real sentry-cli 3.x and 2.x: a fat
// (arm64 + x86_64) dSYM bundle built with clang, ld64.lld and dsymutil
// (test/symbols/native/ios-fixture.ts). sentry-cli splits it into one upload per slice
// through chunk-upload + difs/assemble; each slice is listed by the symbols API under
// its debug id, and real iOS crashes sent through ingest (in C and in C++ code) come out
// symbolicated as llvm-symbolizer answers, C++ names demangled. SQLite and PostgreSQL.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  buildIosFixture,
  expectLlvmFrames,
  iosEvent,
  writeIosBundle,
  type IosFixture,
} from '../symbols/native/ios-fixture.js';
import { eventDetail, sendEvent } from '../symbols/helpers.js';
import { ok, runCli } from './cli.js';

const KEY = 'dsym-upload-key-0123456789abcdef';
let fx: IosFixture;
let bundleDir: string;

beforeAll(() => {
  fx = buildIosFixture();
  bundleDir = writeIosBundle(fx, path.join(fx.dir, 'upload'));
}, 120_000);

afterAll(() => {
  if (fx) fs.rmSync(fx.dir, { recursive: true, force: true });
});

describe.each(dialects)('debug-files upload of a real dSYM (%s)', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
  });
  afterAll(async () => t?.close());

  it.each(['3', '2'] as const)(
    'stores each slice under its debug id and symbolicates a real iOS crash (%s.x)',
    async (v) => {
      const slug = `ios-${v}`;
      const project = await createProject(
        t.deps.store.db,
        { ...PROJECT_DEFAULTS, slug, name: slug, platform: 'ios' },
        t.clock.now(),
      );
      const target = { url: t.url, token: KEY, project: slug };
      const res = ok(await runCli(v, target, ['debug-files', 'upload', '--wait', bundleDir]));
      expect(res.stdout + res.stderr).toContain(fx.debugIds.arm64);
      const listed = ((await (await t.api(`/api/projects/${slug}/symbols`)).json()) as any).symbols;
      expect(listed.map((f: any) => [f.kind, f.debug_id]).sort()).toEqual(
        [
          ['dsym', fx.debugIds.arm64],
          ['dsym', fx.debugIds.x86_64],
        ].sort(),
      );
      // Again: every file is on the server already.
      const again = ok(await runCli(v, target, ['debug-files', 'upload', bundleDir]));
      expect(again.stdout + again.stderr).toMatch(/Nothing to upload|already|OK/i);
      expect(((await (await t.api(`/api/projects/${slug}/symbols`)).json()) as any).symbols).toHaveLength(2);

      // A crash in C code, and one in C++ code whose names are demangled (the Worker's test expects the same).
      for (const crashAddr of [fx.crashAddr, fx.cxxCrashAddr]) {
        const detail = await eventDetail(t, project, await sendEvent(t, project, iosEvent(fx, 'app@1.0', crashAddr)));
        expect(detail.symbolicated).toBe(true);
        expectLlvmFrames(fx, detail.exceptions[0].symbolicated_frames, crashAddr);
      }
    },
  );
});
