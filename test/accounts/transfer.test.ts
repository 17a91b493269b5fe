// Accounts through export and import on each database: users with their password
// hashes, tokens as hashes, the audit log; never sessions, invites or setup tokens,
// never a password or a token in clear. The imported instance signs the same people
// in and takes the same tokens; a second import adds nothing; export → import →
// export gives the same lines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSetupToken } from '../../src/accounts/store.js';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { Client } from '../dashboard/fixture.js';
import { added, bodyLines, exportText, importText, typeCounts } from '../transfer/support.js';

const NOW = Date.UTC(2026, 10, 25, 12);
const API_KEY = 'transfer-accounts-key';

describe.each(dialects)('accounts in export and import on %s', (dialect) => {
  let source: TestServer;
  let target: TestServer;
  let token: string;
  let file: string;

  beforeAll(async () => {
    source = await startTestServer(dialect, { env: { API_KEYS: API_KEY }, clock: new ManualClock(NOW) });
    target = await startTestServer(dialect, { env: { API_KEYS: API_KEY }, clock: new ManualClock(NOW) });
    const ana = await (
      await source.api('/api/users', {
        method: 'POST',
        json: { email: 'ana@example.com', role: 'admin', password: 'ana-password-1' },
      })
    ).json();
    await source.api('/api/users', { method: 'POST', json: { email: 'bo@example.com', role: 'member' } });
    token = (
      await (
        await source.api('/api/tokens', {
          method: 'POST',
          json: { name: 'ci', user_id: ana.id, expires_at: '2030-01-01T00:00:00Z' },
        })
      ).json()
    ).token;
    await source.api('/api/projects', { method: 'POST', json: { slug: 'web' } });
    await createSetupToken(source.deps.store.db, NOW);
    await new Client(source.url).post('/login', { email: 'ana@example.com', password: 'ana-password-1' });
    file = await exportText(source.deps.store);
  });
  afterAll(async () => {
    await target?.close();
    await source?.close();
  });

  it('carries users, token hashes and the audit log, and no secret', async () => {
    const counts = typeCounts(file);
    expect(counts).toMatchObject({ user: 2, personal_token: 1 });
    expect(counts.audit).toBeGreaterThanOrEqual(5);
    expect(Object.keys(counts).filter((t) => /session|invite|setup/.test(t) && t !== 'session')).toEqual([]);
    const users = bodyLines(file)
      .map((l) => JSON.parse(l))
      .filter((l) => l.type === 'user');
    expect(users[0]).toMatchObject({
      email: 'ana@example.com',
      role: 'admin',
      disabled: false,
      password_hash: expect.stringMatching(/^pbkdf2-sha256\$600000\$/),
    });
    expect(users[1].password_hash).toBeNull();
    expect(file).not.toContain('ana-password-1');
    expect(file).not.toContain(token);
    expect(file).not.toContain(API_KEY);
    // One project's export is that project's, not the instance's accounts.
    expect(typeCounts(await exportText(source.deps.store, { project: 'web' }))).not.toHaveProperty('user');
  });

  it('imports them so the same people sign in with the same password and token, once', async () => {
    const summary = await importText(target.deps.store, file);
    expect(added(summary)).toMatchObject({ user: 2, personal_token: 1 });
    expect(added(summary).audit).toBe(typeCounts(file).audit);
    const again = await importText(target.deps.store, file);
    expect(added(again)).toMatchObject({ user: 0, personal_token: 0, audit: 0 });
    expect(bodyLines(await exportText(target.deps.store))).toEqual(bodyLines(file));
    expect((await fetch(`${target.url}/api/users/me`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(
      200,
    );
    expect(
      (await new Client(target.url).post('/login', { email: 'ana@example.com', password: 'ana-password-1' })).status,
    ).toBe(303);
  });

  it('refuses malformed account lines by line number and writes nothing of them', async () => {
    const bad = [
      JSON.stringify({ type: 'meta', format: 1, exported_at: '2026-11-25T12:00:00.000Z', source: {} }),
      JSON.stringify({
        type: 'user',
        email: 'Upper@Example.com',
        name: 'x',
        role: 'admin',
        disabled: false,
        password_hash: null,
        created_at: '2026-11-25T12:00:00.000Z',
        last_login_at: null,
      }),
      JSON.stringify({
        type: 'user',
        email: 'x@example.com',
        name: 'x',
        role: 'owner',
        disabled: false,
        password_hash: null,
        created_at: '2026-11-25T12:00:00.000Z',
        last_login_at: null,
      }),
      JSON.stringify({
        type: 'user',
        email: 'y@example.com',
        name: 'y',
        role: 'viewer',
        disabled: false,
        password_hash: 'plain-text',
        created_at: '2026-11-25T12:00:00.000Z',
        last_login_at: null,
      }),
      JSON.stringify({
        type: 'personal_token',
        user: 'nobody@example.com',
        name: 't',
        token_hash: 'a'.repeat(64),
        created_at: '2026-11-25T12:00:00.000Z',
        expires_at: null,
        last_used_at: null,
      }),
      '',
    ].join('\n');
    const summary = await importText(target.deps.store, bad);
    expect(summary.problems.map((p) => p.line)).toEqual([2, 3, 4, 5]);
    expect(summary.problems[1].message).toMatch(/role/);
    expect(summary.problems[3].message).toMatch(/nobody@example.com/);
    const emails = (await target.deps.store.db.selectFrom('users').select('email').execute()).map((r) => r.email);
    expect(emails).not.toContain('x@example.com');
    expect(emails).not.toContain('y@example.com');
  });
});
