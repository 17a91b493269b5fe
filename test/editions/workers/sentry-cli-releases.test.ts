// A CI pipeline's release steps and source bundles with the real sentry-cli 3.x and 2.x
// against the Worker (workerd, local D1), as test/uploads/deploys.test.ts and
// source-bundles.test.ts run them against the Node server: `deploys new|list` (2.x
// `releases deploys`), `releases new` + `set-commits` + `finalize` read back through our
// releases API before any event, and `--include-sources` / `bundle-jvm` + `upload --type
// jvm` kept as `sourcebundle` files. One Worker for the file.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fixtureDebugId } from '../../uploads/build-id.js';
import { ok, runCli, type CliTarget, type CliVersion } from '../../uploads/cli.js';
import { startTestWorker, type TestWorker } from './harness.js';

const KEY = 'worker-releases-key-0123456789abcdef';
const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../fixtures');
const ELF_DEBUG_ID = fixtureDebugId(path.join(FIXTURES, 'source-bundle/build-id.txt'));
const JVM_DEBUG_ID = '2c9d6e1a-8b7f-4c3d-a2e1-f0e9d8c7b6a5';
let work: string;
let shas: string[];

beforeAll(() => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-releases-'));
  const repo = path.join(work, 'repo');
  fs.mkdirSync(repo);
  const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'pipe', encoding: 'utf8' });
  git('init', '-q');
  git(
    '-c',
    'user.name=Ada Dev',
    '-c',
    'user.email=ada@example.com',
    'commit',
    '-q',
    '--allow-empty',
    '-m',
    'First',
    '--date',
    '2026-11-01T10:00:00Z',
  );
  git(
    '-c',
    'user.name=Bo Dev',
    '-c',
    'user.email=bo@example.com',
    'commit',
    '-q',
    '--allow-empty',
    '-m',
    'Second',
    '--date',
    '2026-11-02T10:00:00Z',
  );
  git('remote', 'add', 'origin', 'https://github.com/acme/web.git');
  shas = git('log', '--format=%H').trim().split('\n');
}, 60_000);
afterAll(() => {
  if (work) fs.rmSync(work, { recursive: true, force: true });
});

describe('sentry-cli releases, deploys and source bundles against the Worker', () => {
  let w: TestWorker;
  beforeAll(async () => {
    w = await startTestWorker({ API_KEYS: KEY, RATE_LIMIT: '0' });
    for (const slug of ['web-3', 'web-2', 'native-3', 'native-2']) {
      const res = await w.api('/api/projects', { method: 'POST', json: { slug, platform: 'other' } });
      expect(res.status).toBe(201);
    }
  }, 120_000);
  afterAll(async () => {
    await w?.close();
  });
  const target = (project: string): CliTarget => ({ url: w.url, token: KEY, project });
  const json = async (pathname: string) => {
    const res = await w.api(pathname);
    expect(res.status, pathname).toBe(200);
    return (await res.json()) as any;
  };

  it.each(['3', '2'] as const)(
    'releases new, set-commits, finalize and deploys: our releases API shows it before any event (%s.x)',
    async (v: CliVersion) => {
      const slug = `web-${v}`;
      const version = `ci@${v}.0`;
      const deploy = (args: string[]) =>
        v === '3'
          ? ['deploys', 'new', '--release', version, ...args]
          : ['releases', 'deploys', version, 'new', ...args];
      expect((await runCli(v, target(slug), deploy(['-e', 'production']))).code).not.toBe(0);
      ok(await runCli(v, target(slug), ['releases', 'new', version]));
      ok(
        await runCli(v, target(slug), ['releases', 'set-commits', '--auto', version], { cwd: path.join(work, 'repo') }),
      );
      ok(await runCli(v, target(slug), ['releases', 'finalize', version]));
      ok(
        await runCli(
          v,
          target(slug),
          deploy([
            '-e',
            'production',
            '-n',
            'ship-1',
            '--started',
            '2026-11-20T10:00:00Z',
            '--finished',
            '2026-11-20T10:04:00Z',
          ]),
        ),
      );
      ok(await runCli(v, target(slug), deploy(['-e', 'staging'])));
      const listed = ok(
        await runCli(
          v,
          target(slug),
          v === '3' ? ['deploys', 'list', '--release', version] : ['releases', 'deploys', version, 'list'],
        ),
      );
      expect(listed.stdout).toMatch(/production\s*\|\s*ship-1/);

      const deploys = await json(`/api/0/organizations/acme/releases/${encodeURIComponent(version)}/deploys/`);
      expect(deploys.map((d: any) => d.environment).sort()).toEqual(['production', 'staging']);
      const list = await json(`/api/projects/${slug}/releases`);
      const item = list.releases.find((r: any) => r.release === version);
      expect(item).toMatchObject({
        events: 0,
        first_seen: null,
        date_released: expect.any(String),
        commit_count: 2,
        deploy_count: 2,
      });
      const detail = await json(`/api/projects/${slug}/releases/${encodeURIComponent(version)}`);
      expect(detail.release.commits.map((c: any) => [c.id, c.message, c.author_name])).toEqual([
        [shas[0], 'Second\n', 'Bo Dev'],
        [shas[1], 'First\n', 'Ada Dev'],
      ]);
      expect(detail.release.deploys.find((d: any) => d.environment === 'production')).toMatchObject({
        name: 'ship-1',
        date_started: '2026-11-20T10:00:00.000Z',
        date_finished: '2026-11-20T10:04:00.000Z',
      });
    },
  );

  it.each(['3', '2'] as const)(
    'debug-files upload --include-sources and bundle-jvm + upload --type jvm keep source bundles (%s.x)',
    async (v: CliVersion) => {
      const slug = `native-${v}`;
      const build = path.join(work, `build-${v}`);
      fs.mkdirSync(build);
      fs.copyFileSync(path.join(FIXTURES, 'source-bundle/crash'), path.join(build, 'crash'));
      fs.copyFileSync(path.join(FIXTURES, 'elf/src/crash.c'), path.join(build, 'crash.c'));
      ok(await runCli(v, target(slug), ['debug-files', 'upload', '--include-sources', '--wait', '.'], { cwd: build }));

      const sources = path.join(work, `java-${v}`, 'src/main/java/com/acme');
      fs.mkdirSync(sources, { recursive: true });
      fs.writeFileSync(path.join(sources, 'App.java'), 'package com.acme;\npublic class App {}\n');
      const out = path.join(work, `jvm-${v}`);
      ok(
        await runCli(v, target(slug), [
          'debug-files',
          'bundle-jvm',
          '--output',
          out,
          '--debug-id',
          JVM_DEBUG_ID,
          path.join(work, `java-${v}`, 'src'),
        ]),
      );
      ok(await runCli(v, target(slug), ['debug-files', 'upload', '--type', 'jvm', '--wait', out]));

      const symbols = (await json(`/api/projects/${slug}/symbols`)).symbols;
      expect(symbols.map((f: any) => [f.kind, f.debug_id]).sort()).toEqual([
        ['elf', ELF_DEBUG_ID],
        ['sourcebundle', JVM_DEBUG_ID],
        ['sourcebundle', ELF_DEBUG_ID],
      ]);
    },
  );
});
