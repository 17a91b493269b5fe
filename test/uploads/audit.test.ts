// The audit log of sentry-cli's writes under /api/0/, with the real sentry-cli 3.x run as a
// member with a personal token: release create, set-commits, finalize, a deploy, a debug
// file (difs/assemble), a Dart symbol map, an artifact bundle (sourcemaps upload) and a
// release deleted each leave one entry naming that user, seen through GET /api/audit; a
// file uploaded again (assemble answers `ok` from its record) leaves none; the instance API
// key's writes are named by the key. SQLite and PostgreSQL.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { ok, runCli, type CliTarget } from './cli.js';
import { buildBundle } from './js-bundle.js';

const KEY = 'uploads-audit-key-0123456789abcdef';
let dir: string;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-audit-cli-'));
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
  git('remote', 'add', 'origin', 'https://github.com/acme/app.git');
  fs.copyFileSync(path.resolve('test/fixtures/elf/build/crash'), path.join(dir, 'app.so'));
  fs.writeFileSync(path.join(dir, 'map.json'), JSON.stringify(['CartException', 'xB']));
});

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

interface Entry {
  actor: string;
  action: string;
  target: string | null;
  details: Record<string, unknown>;
}

describe.each(dialects)('audit log of sentry-cli writes (%s)', (dialect) => {
  let t: TestServer;
  let member: CliTarget;
  let bundleDir: string;

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: KEY } });
    await createProject(
      t.deps.store.db,
      { ...PROJECT_DEFAULTS, slug: 'app', name: 'app', platform: 'javascript' },
      t.clock.now(),
    );
    const user = await (
      await t.api('/api/users', {
        method: 'POST',
        json: { email: 'ci@example.com', role: 'member', password: 'ci-password-1' },
      })
    ).json();
    const { token } = await (
      await t.api('/api/tokens', { method: 'POST', json: { name: 'sentry-cli', user_id: user.id } })
    ).json();
    member = { url: t.url, token, project: 'app' };
    bundleDir = await buildBundle(path.join(dir, `bundle-${dialect}`));
  }, 60_000);
  afterAll(async () => t?.close());

  /** The audit entries after `since` (an entry id), oldest first. */
  async function entriesAfter(since: number): Promise<(Entry & { id: number })[]> {
    const res = await t.api('/api/audit?limit=200');
    expect(res.status).toBe(200);
    const { entries } = (await res.json()) as { entries: (Entry & { id: number })[] };
    return entries.filter((e) => e.id > since).reverse();
  }
  const lastId = async () => (await entriesAfter(0)).at(-1)?.id ?? 0;

  it("names the token's user for each write, once per file", async () => {
    const since = await lastId();
    const version = `app@1.0.${dialect}`;
    ok(await runCli('3', member, ['releases', 'new', version]));
    ok(await runCli('3', member, ['releases', 'set-commits', '--auto', version], { cwd: dir }));
    ok(await runCli('3', member, ['releases', 'finalize', version]));
    ok(await runCli('3', member, ['deploys', 'new', '--release', version, '-e', 'production', '-n', 'web-7']));
    ok(await runCli('3', member, ['debug-files', 'upload', '--wait', path.join(dir, 'app.so')]));
    ok(await runCli('3', member, ['dart-symbol-map', 'upload', path.join(dir, 'map.json'), path.join(dir, 'app.so')]));
    ok(await runCli('3', member, ['sourcemaps', 'upload', '--release', version, '--wait', bundleDir]));
    // The same debug file again: assemble answers from its record, nothing new is stored.
    ok(await runCli('3', member, ['debug-files', 'upload', '--wait', path.join(dir, 'app.so')]));

    const entries = await entriesAfter(since);
    expect(new Set(entries.map((e) => e.actor))).toEqual(new Set(['ci@example.com']));
    expect(entries.map((e) => e.action)).toEqual([
      'release.create',
      'release.set_commits',
      'release.finalize',
      'deploy.create',
      'symbol.upload',
      'symbol.upload',
      'artifact_bundle.upload',
    ]);
    const [created, commits, finalized, deploy, elf, dart, bundle] = entries;
    expect(created).toMatchObject({ target: version, details: { via: 'sentry-cli', projects: ['app'] } });
    expect(commits.details).toMatchObject({ commits: 1 });
    expect(finalized.target).toBe(version);
    expect(deploy).toMatchObject({
      target: version,
      details: { environment: 'production', name: 'web-7', projects: ['app'] },
    });
    expect(elf).toMatchObject({ target: 'app', details: { via: 'sentry-cli', type: 'elf' } });
    expect(dart).toMatchObject({
      target: 'app',
      details: { via: 'sentry-cli', name: 'map.json', debug_id: elf.details.debug_id },
    });
    expect(bundle).toMatchObject({ target: 'app', details: { via: 'sentry-cli', projects: ['app'], files: 1 } });
  }, 180_000);

  it('names the API key for its writes, and a deleted release', async () => {
    const since = await lastId();
    const version = `key@1.0.${dialect}`;
    const asKey = { ...member, token: KEY };
    ok(await runCli('3', asKey, ['releases', 'new', version]));
    ok(await runCli('3', member, ['releases', 'delete', version]));
    const entries = await entriesAfter(since);
    expect(entries.map((e) => [e.action, e.target])).toEqual([
      ['release.create', version],
      ['release.delete', version],
    ]);
    expect(entries[0].actor).toMatch(/^api key [0-9a-f]{8}$/);
    expect(entries[1].actor).toBe('ci@example.com');
  }, 60_000);
});
