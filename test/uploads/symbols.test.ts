// The real sentry-cli 3.x and 2.x upload real symbol files to the real server: the
// ProGuard mapping of a real obfuscated Java program (test/symbols/java-fixture.ts:
// javac + proguard, its real stack and retrace.jar's answer) through `proguard upload` /
// `upload-proguard`, and an esbuild bundle through `sourcemaps inject` + `sourcemaps
// upload` and `sourcemaps upload --release` (no debug ids). Each upload is listed by
// GET /api/projects/{slug}/symbols, and a real event of the built program sent through
// ingest comes out symbolicated as after a management-API upload. SQLite and PostgreSQL.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { eventDetail, eventually, sendEvent } from '../symbols/helpers.js';
import { buildJavaFixture, javaEvent, type JavaFixture } from '../symbols/java-fixture.js';
import { CLIS, ok, runCli, type CliTarget, type CliVersion } from './cli.js';
import { buildBundle, bundleCopy, jsEvent, throwSite, type ThrowSite } from './js-bundle.js';

const KEY = 'symbols-upload-key-0123456789abcdef';
let work: string;
let java: JavaFixture;
let mapping: string;
let mappingUuid: string;
/** Where the minified bundle threw: line and column of `validate`'s throw, from node's stack. */
let thrownAt: ThrowSite;

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-uploads-'));
  java = buildJavaFixture();
  mapping = path.join(java.dir, 'mapping.txt');
  mappingUuid = execFileSync(CLIS['3'], ['proguard', 'uuid', mapping], { encoding: 'utf8' }).trim();
  // The real stack of the minified program: where the bundle throws.
  thrownAt = throwSite(path.join(await buildBundle(path.join(work, 'web')), 'app.min.js'));
}, 60_000);

afterAll(() => {
  fs.rmSync(work, { recursive: true, force: true });
  if (java) fs.rmSync(java.dir, { recursive: true, force: true });
});

/** A fresh copy of the built bundle (inject rewrites files in place). */
function copyOfBundle(name: string): string {
  return bundleCopy(path.join(work, 'web/dist'), path.join(work, name));
}

/** The symbolicated frames innermost first, in the fields retrace prints. */
function innermostFirst(frames: any[]) {
  return [...frames]
    .reverse()
    .map((f) => ({ module: f.module, function: f.function, filename: f.filename, lineno: f.lineno }));
}

describe.each(dialects)('sentry-cli uploads of real symbol files (%s)', (dialect) => {
  let t: TestServer;
  const projects: Record<string, ProjectRow> = {};

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
    for (const slug of ['android-3', 'android-2', 'web-3', 'web-2', 'web-release-3', 'web-release-2']) {
      projects[slug] = await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug, name: slug }, t.clock.now());
    }
  });
  afterAll(async () => t?.close());

  const target = (project: string): CliTarget => ({ url: t.url, token: KEY, project });
  /** The project's symbol files as the symbols API lists them. */
  const files = async (project: string): Promise<any[]> => {
    const res = await t.api(`/api/projects/${project}/symbols`);
    expect(res.status).toBe(200);
    return ((await res.json()) as any).symbols;
  };

  it.each([
    ['3', ['proguard', 'upload']],
    ['2', ['upload-proguard']],
  ] as [CliVersion, string[]][])(
    'a ProGuard mapping uploads and a real Java event is retraced as retrace.jar does (%s.x)',
    async (v, command) => {
      const slug = `android-${v}`;
      const res = ok(await runCli(v, target(slug), [...command, mapping]));
      expect(res.stdout + res.stderr).toContain(mappingUuid);
      expect((await files(slug)).map((f) => [f.kind, f.debug_id, f.size])).toEqual([
        ['proguard', mappingUuid, java.mapping.length],
      ]);
      // Uploading again keeps one file.
      ok(await runCli(v, target(slug), [...command, mapping]));
      expect(await files(slug)).toHaveLength(1);

      const detail = await eventDetail(
        t,
        projects[slug],
        await sendEvent(t, projects[slug], javaEvent(java, { release: 'app@1', proguardUuid: mappingUuid })),
      );
      expect(detail.symbolicated).toBe(true);
      expect(innermostFirst(detail.exceptions[0].symbolicated_frames)).toEqual(java.retracedFrames);
    },
  );

  it('upload-proguard --app-id associates the mapping with the release (2.x, build plugins)', async () => {
    ok(
      await runCli('2', target('android-2'), [
        'upload-proguard',
        '--app-id',
        'com.example.app',
        '--version',
        '1.2',
        '--version-code',
        '12',
        mapping,
      ]),
    );
    const rows = await t.deps.store.db
      .selectFrom('proguard_releases')
      .selectAll()
      .where('project_id', '=', projects['android-2'].id)
      .execute();
    expect(rows.map((r) => [r.release, r.proguard_uuid])).toEqual([['com.example.app@1.2+12', mappingUuid]]);
  });

  it.each(['3', '2'] as const)(
    'sourcemaps inject + upload stores the map under its debug id and a real event is mapped (%s.x)',
    async (v) => {
      const slug = `web-${v}`;
      const dir = copyOfBundle(`inject-${v}-${dialect}`);
      ok(await runCli(v, target(slug), ['sourcemaps', 'inject', dir]));
      const injected = fs.readFileSync(path.join(dir, 'app.min.js'), 'utf8');
      const debugId = /\/\/# debugId=([0-9a-f-]{36})/.exec(injected)![1];
      // --wait polls the assemble state until it is final.
      ok(await runCli(v, target(slug), ['sourcemaps', 'upload', '--wait', dir]));
      expect((await files(slug)).map((f) => [f.kind, f.debug_id, f.filename])).toEqual([
        ['sourcemap', debugId, '~/app.min.js.map'],
      ]);

      // The injected snippet shifts the code: the real throw of the injected file.
      const url = 'https://shop.example.com/assets/app.min.js';
      const detail = await eventDetail(
        t,
        projects[slug],
        await sendEvent(t, projects[slug], jsEvent(url, throwSite(path.join(dir, 'app.min.js')), { debugId })),
      );
      expect(detail.symbolicated).toBe(true);
      const [frame] = detail.exceptions[0].symbolicated_frames;
      expect(frame.lineno).toBe(3);
      expect(String(frame.abs_path ?? frame.filename)).toContain('cart.js');
    },
  );

  it.each(['3', '2'] as const)(
    'sourcemaps upload --release without debug ids matches a real event by release and file name (%s.x)',
    async (v) => {
      const slug = `web-release-${v}`;
      const release = `shop@${v}.1.0`;
      ok(await runCli(v, target(slug), ['releases', 'new', release]));
      // An event that arrives before its maps is symbolicated again after the upload.
      const early = await sendEvent(
        t,
        projects[slug],
        jsEvent('https://shop.example.com/app.min.js', thrownAt, { release }),
      );
      expect((await eventDetail(t, projects[slug], early)).symbolicated).toBe(false);
      ok(
        await runCli(v, target(slug), [
          'sourcemaps',
          'upload',
          '--release',
          release,
          copyOfBundle(`release-${v}-${dialect}`),
        ]),
      );
      const resymbolicated = await eventually(async () => {
        const d = await eventDetail(t, projects[slug], early);
        return d.symbolicated ? d : null;
      });
      expect(resymbolicated.exceptions[0].symbolicated_frames[0].lineno).toBe(3);
      expect((await files(slug)).map((f) => [f.kind, f.release, f.debug_id, f.filename])).toEqual([
        ['sourcemap', release, '', '~/app.min.js.map'],
      ]);
      const detail = await eventDetail(
        t,
        projects[slug],
        await sendEvent(t, projects[slug], jsEvent('https://shop.example.com/app.min.js', thrownAt, { release })),
      );
      expect(detail.symbolicated).toBe(true);
      expect(detail.exceptions[0].symbolicated_frames[0].lineno).toBe(3);
    },
  );
});
