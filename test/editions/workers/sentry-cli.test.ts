// The real sentry-cli 3.x and 2.x against the Worker (workerd, local D1), as against the
// Node server in test/uploads: `info`, `releases new|finalize|list|info`, `sourcemaps
// inject` + `sourcemaps upload` of an esbuild bundle (artifact bundle through
// chunk-upload + assemble), `sourcemaps upload --release`, the ProGuard mapping of a real
// obfuscated Java program through `proguard upload` (3.x, chunked) and `upload-proguard`
// (2.x), and `debug-files upload` of a real fat dSYM. What was stored is read back through
// the Worker's API (symbol files, releases), and real events sent afterwards come out
// symbolicated, native frames with the Node server's demangled names. One Worker for the
// file, with wrangler.jsonc's R2 bucket: symbol and upload chunks are objects.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../../src/store/schema.js';
import type { TestServer } from '../../helpers/server.js';
import { buildIosFixture, expectLlvmFrames, iosEvent, type IosFixture } from '../../symbols/native/ios-fixture.js';
import { eventDetail, sendEvent } from '../../symbols/helpers.js';
import { buildJavaFixture, javaEvent, type JavaFixture } from '../../symbols/java-fixture.js';
import { CLIS, ok, runCli, type CliTarget, type CliVersion } from '../../uploads/cli.js';
import { buildBundle, bundleCopy, jsEvent, throwSite, type ThrowSite } from '../../uploads/js-bundle.js';
import { startTestWorker, type TestWorker } from './harness.js';

const KEY = 'worker-cli-key-0123456789abcdef';
let work: string;
let java: JavaFixture;
let mapping: string;
let mappingUuid: string;
let ios: IosFixture;
let dsymDir: string;
let thrownAt: ThrowSite;

/** A fresh copy of the built bundle (inject rewrites files in place). */
function copyOfBundle(name: string): string {
  return bundleCopy(path.join(work, 'web/dist'), path.join(work, name));
}

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-cli-'));
  java = buildJavaFixture();
  mapping = path.join(java.dir, 'mapping.txt');
  mappingUuid = execFileSync(CLIS['3'], ['proguard', 'uuid', mapping], { encoding: 'utf8' }).trim();
  thrownAt = throwSite(path.join(await buildBundle(path.join(work, 'web')), 'app.min.js'));
  ios = buildIosFixture();
  dsymDir = path.join(ios.dir, 'upload');
  for (const [name, bytes] of Object.entries(ios.bundle)) {
    fs.mkdirSync(path.dirname(path.join(dsymDir, name)), { recursive: true });
    fs.writeFileSync(path.join(dsymDir, name), bytes);
  }
}, 180_000);

afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
  if (java) fs.rmSync(java.dir, { recursive: true, force: true });
  if (ios) fs.rmSync(ios.dir, { recursive: true, force: true });
});

describe('sentry-cli against the Worker', () => {
  let w: TestWorker;
  /** Projects as the helpers of test/symbols take them (the fields ingest and reads use). */
  const projects: Record<string, ProjectRow> = {};
  /** The helpers take the Node test server; they use its url and api only, which the Worker's harness has. */
  const server = () => w as unknown as TestServer;

  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: KEY, RATE_LIMIT: '0' });
    for (const [slug, platform] of [
      ['mobile', 'other'],
      ['android-3', 'android'],
      ['android-2', 'android'],
      ['web-3', 'web'],
      ['web-2', 'web'],
      ['web-release-3', 'web'],
      ['web-release-2', 'web'],
      ['ios-3', 'ios'],
      ['ios-2', 'ios'],
      ['big', 'web'],
    ]) {
      const res = await w.api('/api/projects', { method: 'POST', json: { slug, platform } });
      const created = (await res.json()) as { id: number; slug: string; dsn: string };
      expect(res.status, JSON.stringify(created)).toBe(201);
      projects[slug] = { id: created.id, slug, dsn_key: new URL(created.dsn).username } as unknown as ProjectRow;
    }
  }, 120_000);
  afterAll(async () => {
    await w?.close();
  });

  const target = (project: string): CliTarget => ({ url: w.url, token: KEY, project });
  const files = async (project: string): Promise<any[]> => {
    const res = await w.api(`/api/projects/${project}/symbols`);
    expect(res.status).toBe(200);
    return ((await res.json()) as any).symbols;
  };

  it.each(['3', '2'] as const)('info succeeds with the API key and fails without (%s.x)', async (v) => {
    const good = ok(await runCli(v, target('mobile'), ['info']));
    expect(good.stdout).toContain(w.url);
    expect((await runCli(v, { ...target('mobile'), token: 'wrong-key' }, ['info'])).code).not.toBe(0);
  });

  it.each(['3', '2'] as const)('releases new, finalize, list and info (%s.x)', async (v) => {
    const version = `app@${v}.0.0`;
    ok(await runCli(v, target('mobile'), ['releases', 'new', version]));
    const d1 = await w.d1();
    const row = () =>
      d1
        .prepare('select project_id, date_released from cli_releases where version = ?')
        .bind(version)
        .all<{ project_id: number; date_released: number | null }>();
    let { results } = await row();
    expect(results).toEqual([{ project_id: Number(projects.mobile.id), date_released: null }]);

    ok(await runCli(v, target('mobile'), ['releases', 'finalize', version]));
    ({ results } = await row());
    expect(results[0].date_released).toEqual(expect.any(Number));

    expect(ok(await runCli(v, target('mobile'), ['releases', 'list'])).stdout).toContain(version);
    expect(ok(await runCli(v, target('mobile'), ['releases', 'info', version])).stdout).toContain(version);
    expect((await runCli(v, target('mobile'), ['releases', 'info', 'nope@1'])).code).not.toBe(0);
    // The release as the Worker answers it to the uploaders' API.
    const res = await w.api(`/api/0/organizations/acme/releases/${encodeURIComponent(version)}/`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      version,
      dateReleased: expect.any(String),
      projects: [{ slug: 'mobile' }],
    });

    // set-commits --auto in a git checkout (no repository integrations: the local history).
    const repo = fs.mkdtempSync(path.join(work, `git-${v}-`));
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'pipe' });
    git('init', '-q');
    git('-c', 'user.name=Dev', '-c', 'user.email=dev@example.com', 'commit', '-q', '--allow-empty', '-m', 'first');
    git('remote', 'add', 'origin', 'https://github.com/acme/mobile.git');
    ok(await runCli(v, target('mobile'), ['releases', 'set-commits', '--auto', version], { cwd: repo }));
  });

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
      ok(await runCli(v, target(slug), [...command, mapping]));
      expect(await files(slug)).toHaveLength(1);

      const detail = await eventDetail(
        server(),
        projects[slug],
        await sendEvent(server(), projects[slug], javaEvent(java, { release: 'app@1', proguardUuid: mappingUuid })),
      );
      expect(detail.symbolicated).toBe(true);
      const frames = [...detail.exceptions[0].symbolicated_frames]
        .reverse()
        .map((f: any) => ({ module: f.module, function: f.function, filename: f.filename, lineno: f.lineno }));
      expect(frames).toEqual(java.retracedFrames);
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
    const d1 = await w.d1();
    const { results } = await d1
      .prepare('select release, proguard_uuid from proguard_releases where project_id = ?')
      .bind(Number(projects['android-2'].id))
      .all();
    expect(results).toEqual([{ release: 'com.example.app@1.2+12', proguard_uuid: mappingUuid }]);
  });

  it.each(['3', '2'] as const)(
    'sourcemaps inject + upload stores the map under its debug id and a real event is mapped (%s.x)',
    async (v) => {
      const slug = `web-${v}`;
      const dir = copyOfBundle(`inject-${v}`);
      ok(await runCli(v, target(slug), ['sourcemaps', 'inject', dir]));
      const debugId = /\/\/# debugId=([0-9a-f-]{36})/.exec(fs.readFileSync(path.join(dir, 'app.min.js'), 'utf8'))![1];
      ok(await runCli(v, target(slug), ['sourcemaps', 'upload', '--wait', dir]));
      expect((await files(slug)).map((f) => [f.kind, f.debug_id, f.filename])).toEqual([
        ['sourcemap', debugId, '~/app.min.js.map'],
      ]);

      const url = 'https://shop.example.com/assets/app.min.js';
      const detail = await eventDetail(
        server(),
        projects[slug],
        await sendEvent(server(), projects[slug], jsEvent(url, throwSite(path.join(dir, 'app.min.js')), { debugId })),
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
      ok(await runCli(v, target(slug), ['sourcemaps', 'upload', '--release', release, copyOfBundle(`release-${v}`)]));
      expect((await files(slug)).map((f) => [f.kind, f.release, f.debug_id, f.filename])).toEqual([
        ['sourcemap', release, '', '~/app.min.js.map'],
      ]);
      const releases = (await (await w.api(`/api/0/projects/acme/${slug}/releases/`)).json()) as { version: string }[];
      expect(releases.map((r) => r.version)).toEqual([release]);
      const detail = await eventDetail(
        server(),
        projects[slug],
        await sendEvent(
          server(),
          projects[slug],
          jsEvent('https://shop.example.com/app.min.js', thrownAt, { release }),
        ),
      );
      expect(detail.symbolicated).toBe(true);
      expect(detail.exceptions[0].symbolicated_frames[0].lineno).toBe(3);
    },
  );

  it.each(['3', '2'] as const)(
    'debug-files upload of a real fat dSYM stores each slice and symbolicates a real iOS crash (%s.x)',
    async (v) => {
      const slug = `ios-${v}`;
      const res = ok(await runCli(v, target(slug), ['debug-files', 'upload', '--wait', dsymDir]));
      expect(res.stdout + res.stderr).toContain(ios.debugIds.arm64);
      expect((await files(slug)).map((f) => [f.kind, f.debug_id]).sort()).toEqual(
        [
          ['dsym', ios.debugIds.arm64],
          ['dsym', ios.debugIds.x86_64],
        ].sort(),
      );
      const again = ok(await runCli(v, target(slug), ['debug-files', 'upload', dsymDir]));
      expect(again.stdout + again.stderr).toMatch(/Nothing to upload|already|OK/i);
      expect(await files(slug)).toHaveLength(2);
      // The Worker has wrangler.jsonc's R2 bucket: the slices and their lookup indexes are
      // objects, D1 keeps their keys only (src/store/blobs.ts).
      const { results } = await (await w.d1())
        .prepare(
          'select c.part, length(c.data) as n, c.r2_key from symbol_chunks c join symbol_files f on f.id = c.file_id join projects p on p.id = f.project_id where p.slug = ?',
        )
        .bind(slug)
        .all<{ part: number; n: number; r2_key: string | null }>();
      expect(results.map((r) => r.part)).toContain(1);
      for (const r of results) expect([r.n, r.r2_key?.startsWith('symbols/')]).toEqual([0, true]);

      // llvm-symbolizer's frames, C++ names demangled, as the Node server gives them (test/uploads/dsym.test.ts).
      for (const crashAddr of [ios.crashAddr, ios.cxxCrashAddr]) {
        const detail = await eventDetail(
          server(),
          projects[slug],
          await sendEvent(server(), projects[slug], iosEvent(ios, 'app@1.0', crashAddr)),
        );
        expect(detail.symbolicated).toBe(true);
        expectLlvmFrames(ios, detail.exceptions[0].symbolicated_frames, crashAddr);
      }
    },
  );

  it('refuses through sentry-cli what the Symbols routes refuse: a source map over 8 MB, a mapping over 32 MB (3.x, 2.x)', async () => {
    // Advertised, so that sentry-cli can skip a larger file before uploading it.
    expect((await (await w.api('/api/0/organizations/o/chunk-upload/')).json()).maxFileSize).toBe(32 * 1024 * 1024);
    const dir = path.join(work, 'big-map');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'app.min.js'), 'x();\n//# sourceMappingURL=app.min.js.map\n');
    const source = Array.from({ length: 250_000 }, (_, i) => `export const value${i} = ${i};`).join('\n');
    fs.writeFileSync(
      path.join(dir, 'app.min.js.map'),
      JSON.stringify({
        version: 3,
        file: 'app.min.js',
        sources: ['a.js'],
        names: [],
        mappings: 'AAAA',
        sourcesContent: [source],
      }),
    );
    expect(fs.statSync(path.join(dir, 'app.min.js.map')).size).toBeGreaterThan(8 * 1024 * 1024);
    const map = await runCli('3', target('big'), ['sourcemaps', 'upload', '--release', 'big@1', '--wait', dir]);
    expect(map.code, map.stdout + map.stderr).not.toBe(0);
    expect(map.stdout + map.stderr).toContain('~/app.min.js.map is larger than 8388608 bytes (8 MB per file)');

    // 33 MB of a valid mapping: chunked (`proguard upload`) and the legacy ZIP route (`upload-proguard`).
    const big = path.join(work, 'big-mapping.txt');
    const classes = Array.from(
      { length: 20_000 },
      (_, i) => `com.example.generated.Class${i} -> a${i}:\n    1:1:void method${i}(int):10:10 -> a\n`,
    ).join('');
    fs.writeFileSync(big, classes.repeat(Math.ceil((33 * 1024 * 1024) / classes.length)));
    for (const [v, command] of [
      ['3', ['proguard', 'upload']],
      ['2', ['upload-proguard']],
    ] as [CliVersion, string[]][]) {
      const res = await runCli(v, target('big'), [...command, big]);
      expect(res.code, res.stdout + res.stderr).not.toBe(0);
      expect(res.stdout + res.stderr).toMatch(/is larger than 33554432 bytes \(32 MB per file\)/);
    }
    expect(await files('big')).toEqual([]);
    const d1 = await w.d1();
    expect(
      (
        await d1
          .prepare('select count(*) as n from symbol_files where project_id = ?')
          .bind(Number(projects.big.id))
          .first<{ n: number }>()
      )?.n,
    ).toBe(0);
  }, 120_000);
});
