// Every role against every route class through the real server, on each database: a
// role below what the class needs is 403 naming the role, any other answer is the
// route's own. Also the credentials themselves: API key, personal tokens (expired,
// of a disabled user, unknown), and the open-API rule.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAY_MS } from '../../src/clock.js';
import { type Role, ROUTE_CLASS_ROLE, type RouteClass, roleAtLeast } from '../../src/accounts/rules.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';

const NOW = Date.UTC(2026, 10, 25, 12);
const API_KEY = 'roles-test-api-key';

/** One request per route class; `n` makes bodies unique per caller. */
const REQUESTS: Record<RouteClass, (n: string) => { method: string; path: string; json?: unknown }> = {
  read: () => ({ method: 'GET', path: '/api/projects' }),
  self: () => ({ method: 'GET', path: '/api/users/me' }),
  triage: () => ({
    method: 'PATCH',
    path: '/api/projects/web/issues/0123456789abcdef0123456789abcdef',
    json: { status: 'resolved' },
  }),
  alerts: () => ({ method: 'PATCH', path: '/api/projects/web/alerts/new_issue', json: { enabled: true } }),
  symbols: () => ({ method: 'DELETE', path: '/api/projects/web/symbols/999999' }),
  uploads: (n) => ({
    method: 'POST',
    path: '/api/0/organizations/o/releases/',
    json: { version: `v-${n}`, projects: ['web'] },
  }),
  projects: () => ({ method: 'PATCH', path: '/api/projects/web', json: { name: 'Web' } }),
  users: (n) => ({ method: 'POST', path: '/api/users', json: { email: `new-${n}@example.com`, role: 'viewer' } }),
  audit: () => ({ method: 'GET', path: '/api/audit' }),
  transfer: () => ({ method: 'GET', path: '/api/export' }),
};

describe.each(dialects)('roles on %s', (dialect) => {
  let s: TestServer;
  const tokens: Record<Role, string> = { viewer: '', member: '', admin: '' };
  const ids: Record<Role, number> = { viewer: 0, member: 0, admin: 0 };

  beforeAll(async () => {
    s = await startTestServer(dialect, {
      env: { API_KEYS: API_KEY },
      clock: new (await import('../../src/clock.js')).ManualClock(NOW),
    });
    expect((await s.api('/api/projects', { method: 'POST', json: { slug: 'web' } })).status).toBe(201);
    for (const role of ['admin', 'member', 'viewer'] as Role[]) {
      const res = await s.api('/api/users', {
        method: 'POST',
        json: { email: `${role}@example.com`, role, password: `${role}-password-1` },
      });
      expect(res.status).toBe(201);
      ids[role] = (await res.json()).id;
      const t = await s.api('/api/tokens', { method: 'POST', json: { name: 'test', user_id: ids[role] } });
      expect(t.status).toBe(201);
      tokens[role] = (await t.json()).token;
    }
  });
  afterAll(async () => {
    await s?.close();
  });

  const callers: (Role | 'api key')[] = ['viewer', 'member', 'admin', 'api key'];
  const classes = Object.keys(REQUESTS) as RouteClass[];
  const table = callers.flatMap((caller) => classes.map((cls) => [caller, cls] as const));

  it.each(table)('%s on %s', async (caller, cls) => {
    const req = REQUESTS[cls](`${caller.replace(' ', '-')}-${cls}`);
    const bearer = caller === 'api key' ? API_KEY : tokens[caller];
    const res = await s.api(req.path, {
      method: req.method,
      json: req.json,
      headers: { authorization: `Bearer ${bearer}` },
    });
    const needed = ROUTE_CLASS_ROLE[cls];
    const allowed = caller === 'api key' || roleAtLeast(caller, needed);
    if (allowed) {
      expect([401, 403]).not.toContain(res.status);
      expect(res.status).toBeLessThan(500);
    } else {
      expect(res.status).toBe(403);
      expect((await res.json()).error).toMatch(new RegExp(`needs the ${needed} role$`));
    }
  });

  it('refuses missing, unknown, expired and disabled-user tokens with 401', async () => {
    const get = (auth?: string) => fetch(`${s.url}/api/projects`, { headers: auth ? { authorization: auth } : {} });
    expect((await get()).status).toBe(401);
    expect((await get(`Bearer flt_${'a'.repeat(40)}`)).status).toBe(401);
    expect((await get('Bearer wrong-key')).status).toBe(401);
    // An expiring token works until its time, then never again.
    const t = await s.api('/api/tokens', {
      method: 'POST',
      json: { name: 'short', user_id: ids.viewer, expires_at: new Date(NOW + DAY_MS).toISOString() },
    });
    const short = (await t.json()).token as string;
    expect((await get(`Bearer ${short}`)).status).toBe(200);
    (s.clock as import('../../src/clock.js').ManualClock).set(NOW + DAY_MS);
    expect((await get(`Bearer ${short}`)).status).toBe(401);
    (s.clock as import('../../src/clock.js').ManualClock).set(NOW);
    // Disabling a user stops their tokens at once; enabling them again restores them.
    expect((await s.api(`/api/users/${ids.member}`, { method: 'PATCH', json: { disabled: true } })).status).toBe(200);
    expect((await get(`Bearer ${tokens.member}`)).status).toBe(401);
    expect((await s.api(`/api/users/${ids.member}`, { method: 'PATCH', json: { disabled: false } })).status).toBe(200);
    expect((await get(`Bearer ${tokens.member}`)).status).toBe(200);
  });

  it('names the actor of each credential', async () => {
    const me = async (bearer: string) =>
      (await (await s.api('/api/users/me', { headers: { authorization: `Bearer ${bearer}` } })).json()) as {
        email: string | null;
        name: string;
        role: string;
      };
    expect(await me(tokens.member)).toMatchObject({ email: 'member@example.com', role: 'member' });
    expect((await me(API_KEY)).name).toMatch(/^api key [0-9a-f]{8}$/);
  });
});

describe.each(dialects)('the open API on %s', (dialect) => {
  it('is open while API_KEYS is empty and no user exists, closed from the first user on', async () => {
    const s = await startTestServer(dialect);
    try {
      expect((await s.api('/api/projects')).status).toBe(200);
      const created = await s.api('/api/users', {
        method: 'POST',
        json: { email: 'first@example.com', role: 'admin', password: 'first-password' },
      });
      expect(created.status).toBe(201);
      expect((await s.api('/api/projects')).status).toBe(401);
      expect((await s.api('/api/projects', { method: 'POST', json: { slug: 'late' } })).status).toBe(401);
    } finally {
      await s.close();
    }
  });
});
