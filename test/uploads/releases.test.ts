// sentry-cli 3.x and 2.x against the real server: `info`, `releases new|finalize|list|info|set-commits`,
// in the organization URL form (3.x) and the project form (2.x), on SQLite and PostgreSQL;
// with the API key and with personal tokens (a member's uploads, a viewer's reads).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { ok, runCli, type CliTarget } from './cli.js';

const KEY = 'upload-test-key-0123456789abcdef';

describe.each(dialects)('sentry-cli releases and info (%s)', (dialect) => {
  let t: TestServer;
  let target: CliTarget;
  let projectId: number;

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
    const p = await createProject(
      t.deps.store.db,
      { ...PROJECT_DEFAULTS, slug: 'mobile', name: 'Mobile' },
      t.clock.now(),
    );
    projectId = Number(p.id);
    target = { url: t.url, token: KEY, project: 'mobile' };
  });
  afterAll(async () => t?.close());

  it.each(['3', '2'] as const)('info succeeds with the API key and fails without (%s.x)', async (v) => {
    const good = ok(await runCli(v, target, ['info']));
    expect(good.stdout).toContain(t.url);
    const bad = await runCli(v, { ...target, token: 'wrong-key' }, ['info']);
    expect(bad.code).not.toBe(0);
  });

  it.each(['3', '2'] as const)(
    'works with a personal token as SENTRY_AUTH_TOKEN: a member uploads, a viewer reads only (%s.x)',
    async (v) => {
      const token = async (email: string, role: string) => {
        const user = await (
          await t.api('/api/users', { method: 'POST', json: { email: `${v}-${email}`, role } })
        ).json();
        return (
          await (await t.api('/api/tokens', { method: 'POST', json: { name: 'sentry-cli', user_id: user.id } })).json()
        ).token as string;
      };
      const member = { ...target, token: await token('member@example.com', 'member') };
      const viewer = { ...target, token: await token('viewer@example.com', 'viewer') };
      ok(await runCli(v, member, ['info']));
      const version = `token@${v}.0.0`;
      ok(await runCli(v, member, ['releases', 'new', version]));
      expect(
        await t.deps.store.db.selectFrom('cli_releases').select('version').where('version', '=', version).execute(),
      ).toHaveLength(1);
      expect(ok(await runCli(v, viewer, ['releases', 'list'])).stdout).toContain(version);
      const refused = await runCli(v, viewer, ['releases', 'new', `viewer@${v}`]);
      expect(refused.code).not.toBe(0);
      expect(
        await t.deps.store.db
          .selectFrom('cli_releases')
          .select('version')
          .where('version', '=', `viewer@${v}`)
          .execute(),
      ).toHaveLength(0);
    },
  );

  it.each(['3', '2'] as const)('releases new, finalize, list and info (%s.x)', async (v) => {
    const version = `app@${v}.0.0`;
    ok(await runCli(v, target, ['releases', 'new', version]));
    let rows = await t.deps.store.db.selectFrom('cli_releases').selectAll().where('version', '=', version).execute();
    expect(rows).toHaveLength(1);
    expect(Number(rows[0].project_id)).toBe(projectId);
    expect(rows[0].date_released).toBeNull();

    ok(await runCli(v, target, ['releases', 'finalize', version]));
    rows = await t.deps.store.db.selectFrom('cli_releases').selectAll().where('version', '=', version).execute();
    expect(rows[0].date_released).not.toBeNull();

    const list = ok(await runCli(v, target, ['releases', 'list']));
    expect(list.stdout).toContain(version);
    const info = ok(await runCli(v, target, ['releases', 'info', version]));
    expect(info.stdout).toContain(version);
    const missing = await runCli(v, target, ['releases', 'info', 'nope@1']);
    expect(missing.code).not.toBe(0);
  });

  it.each(['3', '2'] as const)('releases set-commits --auto is accepted in a git checkout (%s.x)', async (v) => {
    const repo = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-git-'));
    const git = (...args: string[]) => execFileSync('git', args, { cwd: repo, stdio: 'pipe' });
    git('init', '-q');
    git('-c', 'user.name=Dev', '-c', 'user.email=dev@example.com', 'commit', '-q', '--allow-empty', '-m', 'first');
    git('remote', 'add', 'origin', 'https://github.com/acme/mobile.git');
    const version = `commits@${v}`;
    ok(await runCli(v, target, ['releases', 'new', version]));
    ok(await runCli(v, target, ['releases', 'set-commits', '--auto', version], { cwd: repo }));
    fs.rmSync(repo, { recursive: true, force: true });
  });

  it.each(['3', '2'] as const)('send-event stores an event through the DSN (%s.x)', async (v) => {
    const p = await t.deps.store.db
      .selectFrom('projects')
      .selectAll()
      .where('id', '=', projectId)
      .executeTakeFirstOrThrow();
    const dsn = `${new URL(t.url).protocol}//${p.dsn_key}@${new URL(t.url).host}/${projectId}`;
    const message = `hello from sentry-cli ${v}.x`;
    ok(
      await runCli(v, target, ['send-event', '-m', message, '--release', `app@${v}.0.0`], { env: { SENTRY_DSN: dsn } }),
    );
    const list = (await (await t.api(`/api/projects/mobile/events?q=${encodeURIComponent(message)}`)).json()) as {
      events: { release: string }[];
    };
    expect(list.events.map((e) => e.release)).toEqual([`app@${v}.0.0`]);
  });

  it('a numeric project id works like the slug, and an unknown project is refused', async () => {
    ok(await runCli('2', { ...target, project: String(projectId) }, ['releases', 'new', 'byid@1']));
    const rows = await t.deps.store.db.selectFrom('cli_releases').selectAll().where('version', '=', 'byid@1').execute();
    expect(Number(rows[0].project_id)).toBe(projectId);
    const res = await runCli('3', { ...target, project: 'nobody' }, ['releases', 'new', 'x@1']);
    expect(res.code).not.toBe(0);
    const api = await t.api('/api/0/projects/acme/nobody/releases/', { method: 'POST', json: { version: 'x@1' } });
    expect(api.status).toBe(404);
    expect(await api.json()).toEqual({ error: expect.stringContaining('not found') });
  });
});
