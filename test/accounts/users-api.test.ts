// The accounts API through the real server on each database: users (create, invite,
// patch, delete, the last-admin rule, bad input), personal tokens (shown once, owner
// checks), and the audit log (an entry per change, newest first, the `before` cursor).
// No secret reaches a response other than the one creating it, the audit log or the log.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { captureLogger } from '../helpers/log-capture.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';

const NOW = Date.UTC(2026, 10, 25, 12);
const API_KEY = 'users-api-test-key';

describe.each(dialects)('accounts API on %s', (dialect) => {
  let s: TestServer;
  const { logger, lines } = captureLogger('debug');
  const as = (bearer: string) => ({ authorization: `Bearer ${bearer}` });

  beforeAll(async () => {
    s = await startTestServer(dialect, {
      env: { API_KEYS: API_KEY, PUBLIC_URL: 'https://errors.example.com' },
      clock: new ManualClock(NOW),
      logger,
    });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('creates users, refusing bad input with 4xx and changing nothing', async () => {
    const ok = await s.api('/api/users', {
      method: 'POST',
      json: { email: ' Ana@Example.com ', name: 'Ana', role: 'admin', password: 'ana-password-1' },
    });
    expect(ok.status).toBe(201);
    const ana = await ok.json();
    expect(ana).toMatchObject({
      email: 'ana@example.com',
      name: 'Ana',
      role: 'admin',
      disabled: false,
      last_login_at: null,
    });
    expect(ana).not.toHaveProperty('password_hash');
    expect(JSON.stringify(ana)).not.toContain('ana-password-1');
    const bad: [unknown, number, RegExp][] = [
      [{ email: 'ANA@example.com', role: 'viewer' }, 409, /already exists/],
      [{ email: 'not-an-email', role: 'viewer' }, 400, /not a valid address/],
      [{ email: 'bo@example.com', role: 'owner' }, 400, /role must be one of viewer, member, admin/],
      [{ email: 'bo@example.com', password: 'short' }, 400, /at least 10 characters/],
      [{ email: 'bo@example.com', admin: true }, 400, /unknown field "admin"/],
      [[], 400, /JSON object/],
    ];
    for (const [json, status, message] of bad) {
      const res = await s.api('/api/users', { method: 'POST', json });
      expect(res.status, JSON.stringify(json)).toBe(status);
      expect((await res.json()).error).toMatch(message);
    }
    expect((await (await s.api('/api/users')).json()).map((u: { email: string }) => u.email)).toEqual([
      'ana@example.com',
    ]);
  });

  it('gives a one-time invite link, valid 7 days, to a user created without a password', async () => {
    const res = await s.api('/api/users', { method: 'POST', json: { email: 'bo@example.com', role: 'member' } });
    expect(res.status).toBe(201);
    const bo = await res.json();
    expect(bo.invite_url).toMatch(/^https:\/\/errors\.example\.com\/login\/invite\/[A-Za-z0-9]{40}$/);
    expect(bo.invite_expires_at).toBe(new Date(NOW + 7 * 86_400_000).toISOString());
    expect(JSON.stringify(await (await s.api(`/api/users/${bo.id}`)).json())).not.toContain('invite');
  });

  it('protects the last enabled admin with 409', async () => {
    const users = await (await s.api('/api/users')).json();
    const ana = users.find((u: { email: string }) => u.email === 'ana@example.com');
    const bo = users.find((u: { email: string }) => u.email === 'bo@example.com');
    for (const [method, json] of [
      ['PATCH', { role: 'member' }],
      ['PATCH', { disabled: true }],
      ['DELETE', undefined],
    ] as const) {
      const res = await s.api(`/api/users/${ana.id}`, { method, json });
      expect(res.status).toBe(409);
      expect((await res.json()).error).toMatch(/last enabled admin/);
    }
    // With a second admin, the first can step down.
    expect((await s.api(`/api/users/${bo.id}`, { method: 'PATCH', json: { role: 'admin' } })).status).toBe(200);
    expect((await s.api(`/api/users/${ana.id}`, { method: 'PATCH', json: { role: 'member' } })).status).toBe(200);
    expect((await s.api(`/api/users/${ana.id}`, { method: 'PATCH', json: { role: 'admin' } })).status).toBe(200);
    expect((await s.api(`/api/users/${bo.id}`, { method: 'PATCH', json: { role: 'member' } })).status).toBe(200);
    expect((await s.api('/api/users/999999', { method: 'PATCH', json: { name: 'x' } })).status).toBe(404);
    expect((await s.api('/api/users/abc', { method: 'DELETE' })).status).toBe(404);
  });

  it('shows a token once, lets its owner list and delete it, and hides others’ from non-admins', async () => {
    const users = await (await s.api('/api/users')).json();
    const bo = users.find((u: { email: string }) => u.email === 'bo@example.com');
    const created = await s.api('/api/tokens', { method: 'POST', json: { name: 'ci', user_id: bo.id } });
    expect(created.status).toBe(201);
    const { token, id } = await created.json();
    expect(token).toMatch(/^flt_[A-Za-z0-9]{40}$/);
    // Bo creates one for himself with his token; the list never shows a token again.
    const own = await s.api('/api/tokens', { method: 'POST', json: { name: 'laptop' }, headers: as(token) });
    expect(own.status).toBe(201);
    const list = await (await s.api('/api/tokens', { headers: as(token) })).json();
    expect(list.map((t: { name: string }) => t.name)).toEqual(['ci', 'laptop']);
    expect(JSON.stringify(list)).not.toMatch(/flt_/);
    // A member cannot make a token for someone else, nor see an admin's.
    const anaToken = await (
      await s.api('/api/tokens', { method: 'POST', json: { name: 'ana', user_id: users[0].id } })
    ).json();
    expect(
      (await s.api('/api/tokens', { method: 'POST', json: { name: 'x', user_id: users[0].id }, headers: as(token) }))
        .status,
    ).toBe(403);
    expect((await s.api(`/api/tokens/${anaToken.id}`, { method: 'DELETE', headers: as(token) })).status).toBe(404);
    expect(
      (
        await s.api('/api/tokens', {
          method: 'POST',
          json: { name: 'x', expires_at: '2001-01-01T00:00:00Z' },
          headers: as(token),
        })
      ).status,
    ).toBe(400);
    expect((await s.api('/api/tokens', { method: 'POST', json: { name: 'x' } })).status).toBe(400);
    // Deleting it ends it at once.
    expect((await s.api(`/api/tokens/${id}`, { method: 'DELETE', headers: as(token) })).status).toBe(204);
    expect((await s.api('/api/projects', { headers: as(token) })).status).toBe(401);
  });

  it('lets a user change their own name and password, but not their role', async () => {
    const users = await (await s.api('/api/users')).json();
    const bo = users.find((u: { email: string }) => u.email === 'bo@example.com');
    const { token } = await (
      await s.api('/api/tokens', { method: 'POST', json: { name: 'self', user_id: bo.id } })
    ).json();
    expect(
      (
        await s.api(`/api/users/${bo.id}`, {
          method: 'PATCH',
          json: { name: 'Bo', password: 'bo-new-password' },
          headers: as(token),
        })
      ).status,
    ).toBe(200);
    expect(
      (await s.api(`/api/users/${bo.id}`, { method: 'PATCH', json: { role: 'admin' }, headers: as(token) })).status,
    ).toBe(403);
    expect(
      (await s.api(`/api/users/${users[0].id}`, { method: 'PATCH', json: { name: 'x' }, headers: as(token) })).status,
    ).toBe(403);
    expect(await (await s.api('/api/users/me', { headers: as(token) })).json()).toMatchObject({
      email: 'bo@example.com',
      name: 'Bo',
      role: 'member',
    });
  });

  it('records every change in the audit log, newest first, with a before cursor', async () => {
    expect((await s.api('/api/projects', { method: 'POST', json: { slug: 'web' } })).status).toBe(201);
    expect((await s.api('/api/projects/web', { method: 'PATCH', json: { sample_rate: 0.5 } })).status).toBe(200);
    expect((await s.api('/api/projects/web/rotate-key', { method: 'POST' })).status).toBe(200);
    expect(
      (await s.api('/api/projects/web/alerts/new_issue', { method: 'PATCH', json: { enabled: false } })).status,
    ).toBe(200);
    const page = await (await s.api('/api/audit?limit=3')).json();
    expect(page.entries.map((e: { action: string }) => e.action)).toEqual([
      'alert_rule.update',
      'project.rotate_key',
      'project.update',
    ]);
    expect(page.entries[0]).toMatchObject({
      actor: expect.stringMatching(/^api key [0-9a-f]{8}$/),
      target: 'web/new_issue',
      at: new Date(NOW).toISOString(),
    });
    expect(page.more).toBe(true);
    const rest = await (await s.api(`/api/audit?before=${page.next_before}&limit=500`)).json();
    const actions = rest.entries.map((e: { action: string }) => e.action);
    expect(actions).toContain('project.create');
    expect(actions).toContain('user.create');
    expect(actions).toContain('token.create');
    expect(actions).toContain('token.delete');
    expect(actions).toContain('user.update');
    const byBo = await (await s.api('/api/audit?actor=bo%40example.com')).json();
    expect(byBo.entries.map((e: { action: string }) => e.action)).toContain('user.update');
    expect((await s.api('/api/audit?before=x')).status).toBe(400);
    expect((await s.api('/api/audit?colour=red')).status).toBe(400);
    // Secrets: none in the audit log, none in the server's log.
    const all = JSON.stringify(await (await s.api('/api/audit?limit=500')).json()) + JSON.stringify(lines);
    expect(all).not.toMatch(/flt_[A-Za-z0-9]{40}/);
    expect(all).not.toContain('password-1');
    expect(all).not.toContain(API_KEY);
  });
});

describe.each(dialects)('accounts housekeeping on %s', (dialect) => {
  it('keeps audit entries 400 days and drops ended sessions and invites', async () => {
    const s = await startTestServer(dialect, { env: { API_KEYS: API_KEY }, clock: new ManualClock(NOW) });
    try {
      const { retentionWork } = await import('../../src/store/retention.js');
      const { createSession, createInvite } = await import('../../src/accounts/store.js');
      const user = await (await s.api('/api/users', { method: 'POST', json: { email: 'old@example.com' } })).json();
      await createSession(
        s.deps.store,
        { userId: user.id, apiKeyId: null, ip: null, userAgent: null },
        NOW - 8 * 86_400_000,
      );
      const live = await createSession(
        s.deps.store,
        { userId: user.id, apiKeyId: null, ip: null, userAgent: null },
        NOW,
      );
      await createInvite(s.deps.store.db, user.id, NOW - 8 * 86_400_000);
      const db = s.deps.store.db;
      await db
        .insertInto('audit_log')
        .values({
          uid: 'old1',
          at: NOW - 401 * 86_400_000,
          actor: 'system',
          action: 'x',
          target: null,
          details: '{}',
          ip: null,
        })
        .execute();
      await db
        .insertInto('audit_log')
        .values({
          uid: 'kept1',
          at: NOW - 399 * 86_400_000,
          actor: 'system',
          action: 'x',
          target: null,
          details: '{}',
          ip: null,
        })
        .execute();
      await retentionWork(db, { now: NOW, retentionDays: 30 });
      const uids = (await db.selectFrom('audit_log').select('uid').execute()).map((r) => r.uid);
      expect(uids).toContain('kept1');
      expect(uids).not.toContain('old1');
      expect(await db.selectFrom('user_sessions').select('id_hash').execute()).toHaveLength(1);
      expect(live).toMatch(/^[A-Za-z0-9]{43}$/);
      // The user's own invite (from the API) is 7 days from NOW: it stays; the 8-day-old one is gone.
      expect(await db.selectFrom('user_invites').select('expires_at').execute()).toEqual([
        { expires_at: expect.anything() },
      ]);
    } finally {
      await s.close();
    }
  });
});
