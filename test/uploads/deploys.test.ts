// A CI pipeline's release steps with the real sentry-cli (3.x and 2.x): `deploys new|list`
// (2.x `releases deploys`), and `releases new` + `set-commits` (from a git checkout made
// here) + `finalize` + a deploy, then the release as our releases API and the dashboard
// show it before any event arrives: zero counts, its dates, commits and deploys; the
// @sentry/cli JS API's `newDeploy` that the bundler plugins call. An unknown release is
// 404 on the deploy routes. SQLite and PostgreSQL.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SentryCli } from '@sentry/cli';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ManualClock } from '../../src/clock.js';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { Client } from '../dashboard/fixture.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { ok, runCli, type CliTarget, type CliVersion } from './cli.js';

const KEY = 'deploys-test-key-0123456789abcdef';

/** `deploys new` in each CLI's spelling (2.x keeps only `releases deploys V new` among the forms both take). */
function deployArgs(v: CliVersion, version: string, args: string[]): string[] {
  return v === '3'
    ? ['deploys', 'new', '--release', version, ...args]
    : ['releases', 'deploys', version, 'new', ...args];
}
function deployListArgs(v: CliVersion, version: string): string[] {
  return v === '3' ? ['deploys', 'list', '--release', version] : ['releases', 'deploys', version, 'list'];
}

/** A git checkout with two commits by two authors and an `origin` remote; its commit ids, newest first. */
function gitCheckout(): { dir: string; shas: string[] } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-ci-git-'));
  const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe', encoding: 'utf8' });
  git('init', '-q');
  fs.writeFileSync(path.join(dir, 'app.js'), 'console.log(1);\n');
  git('add', 'app.js');
  git(
    '-c',
    'user.name=Ada Dev',
    '-c',
    'user.email=ada@example.com',
    'commit',
    '-q',
    '-m',
    'Add the app',
    '--date',
    '2026-11-01T10:00:00Z',
  );
  fs.writeFileSync(path.join(dir, 'app.js'), 'console.log(2);\n');
  git(
    '-c',
    'user.name=Bo Dev',
    '-c',
    'user.email=bo@example.com',
    'commit',
    '-q',
    '-am',
    'Fix the checkout crash\n\nDetails here.',
    '--date',
    '2026-11-02T11:00:00Z',
  );
  git('remote', 'add', 'origin', 'https://github.com/acme/web.git');
  return { dir, shas: git('log', '--format=%H').trim().split('\n') };
}

describe.each(dialects)('sentry-cli deploys and CI releases (%s)', (dialect) => {
  let t: TestServer;
  let checkout: { dir: string; shas: string[] };

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
    for (const slug of ['web-3', 'web-2'])
      await createProject(
        t.deps.store.db,
        { ...PROJECT_DEFAULTS, slug, name: slug, platform: 'javascript' },
        t.clock.now(),
      );
    checkout = gitCheckout();
  });
  afterAll(async () => {
    await t?.close();
    if (checkout) fs.rmSync(checkout.dir, { recursive: true, force: true });
  });
  const target = (v: CliVersion): CliTarget => ({ url: t.url, token: KEY, project: `web-${v}` });
  const json = async (pathname: string) => {
    const res = await t.api(pathname);
    expect(res.status, pathname).toBe(200);
    return (await res.json()) as any;
  };

  it.each(['3', '2'] as const)('deploys new and list; an unknown release fails as on Sentry (%s.x)', async (v) => {
    const version = `deploy@${v}.0`;
    const missing = await runCli(v, target(v), deployArgs(v, version, ['-e', 'production']));
    expect(missing.code).not.toBe(0);
    expect(missing.stdout + missing.stderr).toMatch(/release not found/i);

    ok(await runCli(v, target(v), ['releases', 'new', version]));
    const created = ok(
      await runCli(
        v,
        target(v),
        deployArgs(v, version, [
          '-e',
          'production',
          '-n',
          'web-41',
          '--url',
          'https://ci.example.com/41',
          '--started',
          '2026-11-20T10:00:00Z',
          '--finished',
          '2026-11-20T10:04:00Z',
        ]),
      ),
    );
    expect(created.stdout).toContain("Created new deploy web-41 for 'production'");
    ok(await runCli(v, target(v), deployArgs(v, version, ['-e', 'staging', '-t', '30'])));

    const listed = ok(await runCli(v, target(v), deployListArgs(v, version)));
    expect(listed.stdout).toMatch(/production\s*\|\s*web-41/);
    expect(listed.stdout).toMatch(/staging\s*\|\s*unnamed/);

    const deploys = await json(`/api/0/organizations/acme/releases/${encodeURIComponent(version)}/deploys/`);
    expect(deploys).toHaveLength(2);
    const production = deploys.find((d: any) => d.environment === 'production');
    expect(production).toEqual({
      id: expect.any(String),
      environment: 'production',
      name: 'web-41',
      url: 'https://ci.example.com/41',
      dateStarted: '2026-11-20T10:00:00.000Z',
      dateFinished: '2026-11-20T10:04:00.000Z',
    });
    const staging = deploys.find((d: any) => d.environment === 'staging');
    expect(Date.parse(staging.dateFinished) - Date.parse(staging.dateStarted)).toBe(30_000);
    expect(staging.name).toBeNull();

    const release = await json(`/api/0/organizations/acme/releases/${encodeURIComponent(version)}/`);
    expect(release).toMatchObject({ version, deployCount: 2, lastDeploy: { environment: expect.any(String) } });
    const ours = await json(`/api/projects/web-${v}/releases/${encodeURIComponent(version)}`);
    expect(ours.release.deploy_count).toBe(2);
    expect(ours.release.deploys.find((d: any) => d.environment === 'production')).toEqual({
      id: production.id,
      environment: 'production',
      name: 'web-41',
      url: 'https://ci.example.com/41',
      date_started: '2026-11-20T10:00:00.000Z',
      date_finished: '2026-11-20T10:04:00.000Z',
    });
  });

  it.each(['3', '2'] as const)(
    'releases new, set-commits and finalize: our releases list, detail and dashboard show it before any event (%s.x)',
    async (v) => {
      const version = `ci@${v}.1`;
      const slug = `web-${v}`;
      ok(await runCli(v, target(v), ['releases', 'new', version]));
      ok(await runCli(v, target(v), ['releases', 'set-commits', '--auto', version], { cwd: checkout.dir }));
      ok(await runCli(v, target(v), ['releases', 'finalize', version]));
      ok(await runCli(v, target(v), deployArgs(v, version, ['-e', 'production', '-n', 'ship-1'])));
      // The releases list's window ends now, exclusive: read a minute after the release was created.
      (t.clock as ManualClock).advance(60_000);

      const list = await json(`/api/projects/${slug}/releases`);
      const item = list.releases.find((r: any) => r.release === version);
      expect(item).toMatchObject({
        release: version,
        events: 0,
        crashes: 0,
        errors: 0,
        sessions: { total: 0, crashed: 0, errored: 0 },
        crash_free_rate: null,
        new_issues: 0,
        first_seen: null,
        date_created: expect.any(String),
        date_released: expect.any(String),
        commit_count: 2,
        deploy_count: 1,
      });
      expect(item.commits.map((c: any) => c.id)).toEqual(checkout.shas);
      expect(item.deploys.map((d: any) => [d.environment, d.name])).toEqual([['production', 'ship-1']]);

      const detail = await json(`/api/projects/${slug}/releases/${encodeURIComponent(version)}`);
      expect(detail.release.events).toBe(0);
      expect(detail.release.commits).toEqual([
        {
          id: checkout.shas[0],
          repository: expect.any(String),
          message: 'Fix the checkout crash\n\nDetails here.\n',
          author_name: 'Bo Dev',
          author_email: 'bo@example.com',
          date: '2026-11-02T11:00:00.000Z',
        },
        {
          id: checkout.shas[1],
          repository: expect.any(String),
          message: 'Add the app\n',
          author_name: 'Ada Dev',
          author_email: 'ada@example.com',
          date: '2026-11-01T10:00:00.000Z',
        },
      ]);
      expect(detail.release.deploys).toHaveLength(1);

      // Sentry's shapes on the uploader routes (`releases info`, `releases list`).
      const sentry = await json(`/api/0/organizations/acme/releases/${encodeURIComponent(version)}/`);
      expect(sentry).toMatchObject({
        commitCount: 2,
        lastCommit: { id: checkout.shas[0] },
        deployCount: 1,
        dateReleased: expect.any(String),
      });
      const commits = await json(`/api/0/organizations/acme/releases/${encodeURIComponent(version)}/commits/`);
      expect(commits.map((c: any) => c.id)).toEqual(checkout.shas);
      expect(ok(await runCli(v, target(v), ['releases', 'info', version])).stdout).toContain(version);

      // The dashboard's releases pages (server-rendered).
      const browser = new Client(t.url);
      await browser.signIn(KEY);
      const page = await (await browser.request(`/${slug}/releases`)).text();
      expect(page).toContain(version);
      expect(page).toContain('deployed to production');
      const releasePage = await (await browser.request(`/${slug}/releases/${encodeURIComponent(version)}`)).text();
      expect(releasePage).toContain('Fix the checkout crash');
      expect(releasePage).toContain('Bo Dev');
      expect(releasePage).toContain('ship-1');

      // set-commits again replaces the list; deleting the release takes its commits and deploys along.
      ok(
        await runCli(v, target(v), ['releases', 'set-commits', '--auto', '--initial-depth', '1', version], {
          cwd: checkout.dir,
        }),
      );
      expect(
        (await json(`/api/projects/${slug}/releases/${encodeURIComponent(version)}`)).release.commits.map(
          (c: any) => c.id,
        ),
      ).toEqual([checkout.shas[0]]);
      ok(await runCli(v, target(v), ['releases', 'delete', version]));
      expect((await t.api(`/api/projects/${slug}/releases/${encodeURIComponent(version)}`)).status).toBe(404);
      for (const table of ['release_commits', 'release_deploys'] as const) {
        expect(await t.deps.store.db.selectFrom(table).selectAll().where('version', '=', version).execute()).toEqual(
          [],
        );
      }
    },
  );

  it("the @sentry/cli JS API's newDeploy with projects, as the bundler plugins' release.deploy calls it", async () => {
    const version = 'plugin@1.0';
    ok(await runCli('3', target('3'), ['releases', 'new', version]));
    const cli = new SentryCli(null, { url: t.url, authToken: KEY, org: 'acme', project: 'web-3', silent: true });
    await cli.releases.newDeploy(version, { env: 'production', name: 'vite-build', projects: ['web-3'] });
    const deploys = await json(`/api/0/organizations/acme/releases/${encodeURIComponent(version)}/deploys/`);
    expect(deploys.map((d: any) => [d.environment, d.name])).toEqual([['production', 'vite-build']]);
    // A project that does not have the release is refused, as Sentry refuses it.
    await expect(cli.releases.newDeploy(version, { env: 'production', projects: ['web-2'] })).rejects.toThrow();
  });

  it('deploy routes: 404 for an unknown release, 400 for a body sentry-cli never sends', async () => {
    const base = '/api/0/organizations/acme/releases';
    const unknown = await t.api(`${base}/nope@1/deploys/`, { method: 'POST', json: { environment: 'production' } });
    expect(unknown.status).toBe(404);
    expect((await t.api(`${base}/nope@1/deploys/`)).status).toBe(404);
    expect(
      (await t.api(`${base}/`, { method: 'POST', json: { version: 'bodies@1', projects: ['web-3'] } })).status,
    ).toBe(201);
    for (const body of [
      {},
      { environment: '' },
      { environment: 'a/b' },
      { environment: 'x'.repeat(65) },
      { environment: 'p', dateFinished: 'yesterday' },
      { environment: 'p\u0000' },
      { environment: 'p', projects: ['web-2'] },
    ]) {
      const res = await t.api(`${base}/bodies@1/deploys/`, { method: 'POST', json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    for (const commits of [
      [{ repository: 'r' }],
      [{ id: 'x'.repeat(65), repository: 'r' }],
      'abc',
      [{ id: 'abc', repository: 'r', timestamp: 'soon' }],
    ]) {
      const res = await t.api(`${base}/bodies@1/`, { method: 'PUT', json: { commits } });
      expect(res.status, JSON.stringify(commits)).toBe(400);
    }
    // refs (a repository integration's heads) keep the head commit.
    expect(
      (
        await t.api(`${base}/bodies@1/`, {
          method: 'PUT',
          json: { refs: [{ repository: 'acme/web', commit: 'abc123', previousCommit: 'abc000' }] },
        })
      ).status,
    ).toBe(200);
    const detail = await json('/api/projects/web-3/releases/bodies@1');
    expect(detail.release.commits).toEqual([
      { id: 'abc123', repository: 'acme/web', message: null, author_name: null, author_email: null, date: null },
    ]);
    expect(await json(`${base}/bodies@1/deploys/`)).toEqual([]);
    // A deploy URL that is no web address is shown as text on the dashboard, never as a link.
    const script = await t.api(`${base}/bodies@1/deploys/`, {
      method: 'POST',
      json: { environment: 'production', name: 'x', url: 'javascript:alert(1)' },
    });
    expect(script.status).toBe(201);
    const browser = new Client(t.url);
    await browser.signIn(KEY);
    const page = await (await browser.request('/web-3/releases/bodies@1')).text();
    expect(page).toContain('production');
    expect(page).not.toContain('javascript:');
  });
});
