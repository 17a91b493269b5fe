// Dashboard sign-in with accounts through two real server instances on one database
// (a SQLite file, and PostgreSQL when configured): password sign-in, sessions that
// sign-out, disabling, a password change and "end sessions" end at once on the other
// instance, idle and absolute expiry, the throttle, the setup page, invites, and the
// role checks of dashboard actions.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSetupToken } from '../../src/accounts/store.js';
import { DAY_MS, ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { Client } from '../dashboard/fixture.js';

const NOW = Date.UTC(2026, 10, 25, 12);
const API_KEY = 'sessions-test-key';

describe.each(dialects)('dashboard sessions on %s', (dialect) => {
  let a: TestServer;
  let b: TestServer;
  const clock = new ManualClock(NOW);
  const ids: Record<string, number> = {};

  beforeAll(async () => {
    a = await startTestServer(dialect, { env: { API_KEYS: API_KEY }, clock });
    b = await startTestServer(dialect, { env: { API_KEYS: API_KEY }, clock, database: a.database });
    expect((await a.api('/api/projects', { method: 'POST', json: { slug: 'web' } })).status).toBe(201);
    for (const [email, role] of [
      ['ana@example.com', 'admin'],
      ['bo@example.com', 'member'],
      ['cy@example.com', 'viewer'],
    ]) {
      const res = await a.api('/api/users', { method: 'POST', json: { email, role, password: `${email}-pw` } });
      ids[email] = (await res.json()).id;
    }
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
  });

  async function signIn(
    server: TestServer,
    email: string,
    password = `${email}-pw`,
  ): Promise<{ client: Client; res: Response }> {
    const client = new Client(server.url);
    const res = await client.post('/login', { email, password, next: '/web' });
    return { client, res };
  }

  /** A client of instance B holding the cookie A gave. */
  function onB(client: Client): Client {
    const other = new Client(b.url);
    other.cookies.set('faultline_session', client.cookies.get('faultline_session')!);
    return other;
  }

  it('signs in with email and password into a new server-side session each time, valid on every instance', async () => {
    const first = await signIn(a, 'BO@example.com ', 'bo@example.com-pw');
    expect(first.res.status).toBe(303);
    expect(first.res.headers.get('location')).toBe('/web');
    const cookie = first.res.headers.getSetCookie().find((l) => l.startsWith('faultline_session='))!;
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Strict/i);
    expect(cookie).toMatch(/Max-Age=2592000/);
    expect((await onB(first.client).request('/web')).status).toBe(200);
    const second = await signIn(a, 'bo@example.com');
    expect(second.client.cookies.get('faultline_session')).not.toBe(first.client.cookies.get('faultline_session'));
    // The session id is never stored as it is.
    const stored = await a.deps.store.db.selectFrom('user_sessions').select('id_hash').execute();
    expect(stored.map((r) => r.id_hash)).not.toContain(first.client.cookies.get('faultline_session'));
    // Wrong passwords, unknown emails and the API key (users exist now) are 401 and audited.
    expect((await signIn(a, 'bo@example.com', 'wrong-password')).res.status).toBe(401);
    expect((await signIn(a, 'nobody@example.com')).res.status).toBe(401);
    expect((await new Client(a.url).signIn(API_KEY)).status).toBe(401);
    const audit = await (await a.api('/api/audit?action=user.sign_in_failed')).json();
    expect(audit.entries.map((e: { target: string }) => e.target)).toEqual(
      expect.arrayContaining(['bo@example.com', 'nobody@example.com']),
    );
    expect((await (await a.api('/api/audit?action=user.sign_in')).json()).entries[0]).toMatchObject({
      actor: 'bo@example.com',
      target: 'bo@example.com',
    });
  });

  it('ends sessions at once on the other instance: sign-out, disable, password change, end sessions', async () => {
    const { client } = await signIn(a, 'bo@example.com');
    const there = onB(client);
    expect((await there.request('/web')).status).toBe(200);
    expect((await client.post('/logout', { _csrf: await client.csrf('/web') })).status).toBe(303);
    expect((await there.request('/web')).status).toBe(303);

    const s2 = onB((await signIn(a, 'bo@example.com')).client);
    expect(
      (await a.api(`/api/users/${ids['bo@example.com']}`, { method: 'PATCH', json: { disabled: true } })).status,
    ).toBe(200);
    expect((await s2.request('/web')).status).toBe(303);
    expect((await signIn(a, 'bo@example.com')).res.status).toBe(401);
    expect(
      (await a.api(`/api/users/${ids['bo@example.com']}`, { method: 'PATCH', json: { disabled: false } })).status,
    ).toBe(200);

    const s3 = onB((await signIn(a, 'bo@example.com')).client);
    expect(
      (
        await a.api(`/api/users/${ids['bo@example.com']}`, {
          method: 'PATCH',
          json: { password: 'bo-second-password' },
        })
      ).status,
    ).toBe(200);
    expect((await s3.request('/web')).status).toBe(303);

    const s4 = onB((await signIn(a, 'bo@example.com', 'bo-second-password')).client);
    expect((await s4.request('/web')).status).toBe(200);
    expect((await a.api(`/api/users/${ids['bo@example.com']}/sessions`, { method: 'DELETE' })).status).toBe(204);
    expect((await s4.request('/web')).status).toBe(303);
    expect(
      (await a.api(`/api/users/${ids['bo@example.com']}`, { method: 'PATCH', json: { password: 'bo@example.com-pw' } }))
        .status,
    ).toBe(200);
  });

  it('expires a session after 7 idle days, and 30 days after sign-in whatever the use', async () => {
    const { client } = await signIn(a, 'cy@example.com');
    clock.set(NOW + 6 * DAY_MS);
    expect((await client.request('/web')).status).toBe(200);
    clock.set(NOW + 12 * DAY_MS);
    expect((await client.request('/web')).status).toBe(200);
    clock.set(NOW + 19 * DAY_MS + 1);
    expect((await client.request('/web')).status).toBe(303);

    clock.set(NOW);
    const busy = (await signIn(a, 'cy@example.com')).client;
    for (let day = 5; day < 30; day += 5) {
      clock.set(NOW + day * DAY_MS);
      expect((await busy.request('/web')).status).toBe(200);
    }
    clock.set(NOW + 30 * DAY_MS);
    expect((await busy.request('/web')).status).toBe(303);
    clock.set(NOW);
  });

  it('checks the role of each dashboard action', async () => {
    const viewer = (await signIn(a, 'cy@example.com')).client;
    const member = (await signIn(a, 'bo@example.com')).client;
    const admin = (await signIn(a, 'ana@example.com')).client;
    const rename = async (c: Client) => c.post('/web/settings', { _csrf: await c.csrf('/web'), name: 'Web app' });
    const rule = async (c: Client) =>
      c.post('/web/alerts/rules/new_issue', { _csrf: await c.csrf('/web'), enabled: 'true', cooldown_minutes: '30' });
    expect((await rename(viewer)).status).toBe(403);
    expect((await rename(member)).status).toBe(403);
    expect((await rename(admin)).status).toBe(303);
    const refused = await rule(viewer);
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('needs the member role');
    expect((await rule(member)).status).toBe(303);
    expect((await viewer.request('/admin/users')).status).toBe(403);
    expect((await member.request('/admin/audit')).status).toBe(403);
    expect((await admin.request('/admin/users')).status).toBe(200);
    const auditPage = await (await admin.request('/admin/audit?actor=bo%40example.com')).text();
    expect(auditPage).toContain('alert_rule.update');
    expect(auditPage).not.toContain('project.update');
  });

  it('lets a user create a personal token on their page and see their sessions', async () => {
    const { client } = await signIn(a, 'bo@example.com');
    const res = await client.post('/settings/tokens', { _csrf: await client.csrf('/settings'), name: 'cli' });
    expect(res.status).toBe(201);
    const token = /id="new-token">(flt_[A-Za-z0-9]{40})</.exec(await res.text())![1];
    const me = await (await fetch(`${a.url}/api/users/me`, { headers: { authorization: `Bearer ${token}` } })).json();
    expect(me).toMatchObject({ email: 'bo@example.com', role: 'member' });
    const page = await (await client.request('/settings')).text();
    expect(page).toContain('(this one)');
    expect(page).not.toContain(token);
  });

  it('throttles 10 failures per account in 15 minutes with 429 and Retry-After, on either instance', async () => {
    // The earlier tests' failures (same client address) are past the window.
    const start = NOW + 60 * 60_000;
    clock.set(start);
    for (let i = 0; i < 10; i++)
      expect((await signIn(i % 2 ? a : b, 'ana@example.com', `wrong-${i}-password`)).res.status).toBe(401);
    const refused = (await signIn(b, 'ana@example.com')).res;
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(14 * 60);
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(16 * 60);
    clock.set(start + 16 * 60_000);
    expect((await signIn(a, 'ana@example.com')).res.status).toBe(303);
    clock.set(NOW);
  });
});

describe.each(dialects)('first admin and invites on %s', (dialect) => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer(dialect, { clock: new ManualClock(NOW) });
  });
  afterAll(async () => {
    await s?.close();
  });

  it('creates the first admin with the setup token, once; then the API closes', async () => {
    const token = await createSetupToken(s.deps.store.db, NOW);
    const c = new Client(s.url);
    expect((await c.request('/login/setup')).status).toBe(200);
    const wrong = await c.post('/login/setup', {
      setup_token: 'x'.repeat(32),
      email: 'root@example.com',
      password: 'root-password',
    });
    expect(wrong.status).toBe(401);
    const short = await c.post('/login/setup', { setup_token: token, email: 'root@example.com', password: 'short' });
    expect(short.status).toBe(400);
    const ok = await c.post('/login/setup', {
      setup_token: token,
      email: 'root@example.com',
      password: 'root-password',
    });
    expect(ok.status).toBe(303);
    expect((await c.request('/')).status).toBe(200);
    expect((await c.request('/login/setup')).status).toBe(303);
    const again = await new Client(s.url).post('/login/setup', {
      setup_token: token,
      email: 'evil@example.com',
      password: 'evil-password',
    });
    expect(again.status).toBe(303);
    expect((await fetch(`${s.url}/api/projects`)).status).toBe(401);
    expect(await s.deps.store.db.selectFrom('users').select('email').execute()).toEqual([
      { email: 'root@example.com' },
    ]);
  });

  it('lets an invited user set a password once, within 7 days', async () => {
    const admin = new Client(s.url);
    await admin.post('/login', { email: 'root@example.com', password: 'root-password' });
    const created = await admin.post('/admin/users', {
      _csrf: await admin.csrf('/admin/users'),
      email: 'new@example.com',
      role: 'member',
    });
    expect(created.status).toBe(201);
    const url = /id="invite-url">([^<]+)</.exec(await created.text())![1];
    const path = new URL(url).pathname;
    const invited = new Client(s.url);
    expect((await invited.request(path)).status).toBe(200);
    expect((await invited.post(path, { password: 'short' })).status).toBe(400);
    expect((await invited.post(path, { password: 'new-user-password' })).status).toBe(303);
    expect((await invited.request('/')).status).toBe(200);
    expect((await new Client(s.url).request(path)).status).toBe(410);
    expect((await new Client(s.url).request(`/login/invite/${'a'.repeat(40)}`)).status).toBe(410);
    // An invite is good for 7 days.
    const late = await admin.post('/admin/users', {
      _csrf: await admin.csrf('/admin/users'),
      email: 'late@example.com',
      role: 'viewer',
    });
    const latePath = new URL(/id="invite-url">([^<]+)</.exec(await late.text())![1]).pathname;
    (s.clock as ManualClock).set(NOW + 7 * DAY_MS);
    expect((await new Client(s.url).request(latePath)).status).toBe(410);
    expect((await new Client(s.url).post(latePath, { password: 'late-password' })).status).toBe(410);
    (s.clock as ManualClock).set(NOW);
  });
});
