// `faultline users …` as real processes on a SQLite file and PostgreSQL: create (password
// from standard input, or an invite), list, set-role, disable, reset-password, with bad
// input refused by a plain message and exit code 1; the server then signs the user in.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, dialects, startTestServer, type TestDatabase } from '../helpers/server.js';
import { ensureBuilt, runCli, startServe } from '../helpers/cli.js';
import { Client } from '../dashboard/fixture.js';

describe.each(dialects)('faultline users on %s', (dialect) => {
  let database: TestDatabase;
  const run = (args: string[], input?: string) =>
    runCli(
      ['users', ...args],
      { DATABASE_URL: database.url, PUBLIC_URL: 'https://errors.example.com' },
      undefined,
      input,
    );

  beforeAll(async () => {
    ensureBuilt();
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    await database?.drop();
  });

  it('creates the first admin from standard input and refuses bad input', async () => {
    const created = await run(
      ['create', '--email', 'Root@Example.com', '--role', 'admin', '--password-stdin'],
      'root-password-1\n',
    );
    expect(created.stderr).toContain('Created admin root@example.com');
    expect(created.code).toBe(0);
    expect(created.stdout + created.stderr).not.toContain('root-password-1');
    const refusals: [string[], string | undefined, RegExp][] = [
      [['create', '--email', 'root@example.com', '--password-stdin'], 'another-password', /already exists/],
      [['create', '--email', 'x@example.com', '--password-stdin'], 'short', /at least 10 characters/],
      [['create', '--email', 'not-an-email', '--password-stdin'], 'long-enough-pw', /not a valid address/],
      [
        ['create', '--email', 'x@example.com', '--role', 'owner', '--password-stdin'],
        'long-enough-pw',
        /role must be one of/,
      ],
      [['create', '--email', 'x@example.com'], undefined, /--password-stdin/],
      [['set-role', 'root@example.com', 'viewer'], undefined, /last enabled admin/],
      [['disable', 'nobody@example.com'], undefined, /there is no user nobody@example.com/],
    ];
    for (const [args, input, message] of refusals) {
      const res = await run(args, input);
      expect(res.code, args.join(' ')).toBe(1);
      expect(res.stderr, args.join(' ')).toMatch(message);
    }
  });

  it('invites, lists, sets roles, disables and resets passwords', async () => {
    const invited = await run(['create', '--email', 'bo@example.com', '--role', 'member', '--invite']);
    expect(invited.code).toBe(0);
    expect(invited.stdout.trim()).toMatch(/^https:\/\/errors\.example\.com\/login\/invite\/[A-Za-z0-9]{40}$/);
    expect((await run(['set-role', 'bo@example.com', 'viewer'])).code).toBe(0);
    expect((await run(['disable', 'bo@example.com'])).code).toBe(0);
    const list = await run(['list', '--json']);
    expect(list.stderr).toContain('2 users');
    const users = list.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(users.map((u) => [u.email, u.role, u.disabled])).toEqual([
      ['root@example.com', 'admin', false],
      ['bo@example.com', 'viewer', true],
    ]);
    expect((await run(['reset-password', 'root@example.com', '--password-stdin'], 'root-password-2\n')).code).toBe(0);
  });

  it('leaves users the server signs in, with the changes audited as system', async () => {
    const s = await startTestServer(dialect, { database });
    try {
      const c = new Client(s.url);
      expect((await c.post('/login', { email: 'root@example.com', password: 'root-password-1' })).status).toBe(401);
      expect((await c.post('/login', { email: 'root@example.com', password: 'root-password-2' })).status).toBe(303);
      expect((await c.request('/admin/audit')).status).toBe(200);
      const rows = await s.deps.store.db.selectFrom('audit_log').select(['actor', 'action']).orderBy('id').execute();
      expect(rows.slice(0, 5)).toEqual([
        { actor: 'system', action: 'user.create' },
        { actor: 'system', action: 'user.create' },
        { actor: 'system', action: 'user.update' },
        { actor: 'system', action: 'user.update' },
        { actor: 'system', action: 'user.password' },
      ]);
    } finally {
      await s.close();
    }
  });
});

describe('faultline serve without users', () => {
  it('logs a one-time setup token that the setup page of the server takes', async () => {
    const database = await createTestDatabase('sqlite');
    ensureBuilt();
    const serve = await startServe({ env: { DATABASE_URL: database.url } });
    try {
      const line = serve.lines.find((l) => typeof l.msg === 'string' && l.msg.includes('setup token'));
      expect(line?.setup_url).toBe(`${serve.url}/login/setup`);
      const token = /setup token ([A-Za-z0-9]{32})/.exec(line!.msg)![1];
      const c = new Client(serve.url);
      const res = await c.post('/login/setup', {
        setup_token: token,
        email: 'first@example.com',
        password: 'first-password',
      });
      expect(res.status).toBe(303);
      expect((await c.request('/admin/users')).status).toBe(200);
    } finally {
      serve.signal('SIGTERM');
      await serve.exited;
      await database.drop();
    }
  });
});
