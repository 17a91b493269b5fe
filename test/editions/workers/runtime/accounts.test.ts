// Accounts on D1 inside workerd, through the shared app as the Worker serves it: an
// admin created with the API key, a personal token acting with its user's role (403
// below it), password sign-in to the dashboard (PBKDF2 through workerd's Web Crypto)
// into a session kept in D1, and sign-out ending it; the uploader routes' writes audited
// as the token's user.
import { env } from 'cloudflare:workers';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { withoutQueue } from './direct-path.js';
import { createApp } from '../../../../src/editions/app.js';
import { migrate } from '../../../../src/store/migrate.js';

const API_KEY = 'workers-accounts-key';
let app: ReturnType<typeof createApp>;

beforeAll(async () => {
  const deps = buildWorkerDeps({
    ...withoutQueue(env as unknown as WorkerEnv),
    LOG_LEVEL: 'silent',
    API_KEYS: API_KEY,
  });
  await migrate(deps.store);
  app = createApp(deps);
});

const call = (path: string, init: RequestInit & { json?: unknown; bearer?: string } = {}) => {
  const headers = new Headers(init.headers);
  if (init.bearer) headers.set('authorization', `Bearer ${init.bearer}`);
  if (init.json !== undefined) headers.set('content-type', 'application/json');
  return app.fetch(
    new Request(`https://errors.example.com${path}`, {
      ...init,
      headers,
      body: init.json === undefined ? init.body : JSON.stringify(init.json),
    }),
    env,
  );
};

describe('accounts on D1', () => {
  it('signs in with a password and a token, and checks roles', async () => {
    const admin = await call('/api/users', {
      method: 'POST',
      bearer: API_KEY,
      json: { email: 'ana@example.com', role: 'admin', password: 'ana-password-1' },
    });
    expect(admin.status).toBe(201);
    const viewer = await (
      await call('/api/users', {
        method: 'POST',
        bearer: API_KEY,
        json: { email: 'cy@example.com', role: 'viewer', password: 'cy-password-1' },
      })
    ).json();
    const { token } = await (
      await call('/api/tokens', { method: 'POST', bearer: API_KEY, json: { name: 'ci', user_id: viewer.id } })
    ).json();
    expect(token).toMatch(/^flt_[A-Za-z0-9]{40}$/);
    expect((await call('/api/projects', { bearer: token })).status).toBe(200);
    const refused = await call('/api/projects', { method: 'POST', bearer: token, json: { slug: 'web' } });
    expect(refused.status).toBe(403);
    expect((await refused.json()).error).toMatch(/needs the admin role/);
    expect((await call('/api/projects')).status).toBe(401);

    const form = new URLSearchParams({ email: 'ana@example.com', password: 'ana-password-1', next: '/' });
    const signIn = await call('/login', {
      method: 'POST',
      body: form,
      headers: { origin: 'https://errors.example.com', 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers
      .getSetCookie()
      .find((l) => l.startsWith('faultline_session='))!
      .split(';')[0];
    expect(cookie).toMatch(/^faultline_session=[A-Za-z0-9]{43}$/);
    const page = await call('/admin/users', { headers: { cookie } });
    expect(page.status).toBe(200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1];
    const out = await call('/logout', {
      method: 'POST',
      body: new URLSearchParams({ _csrf: csrf }),
      headers: { cookie, origin: 'https://errors.example.com', 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(out.status).toBe(303);
    expect((await call('/admin/users', { headers: { cookie } })).status).toBe(303);

    const wrong = new URLSearchParams({ email: 'ana@example.com', password: 'not-the-password' });
    expect(
      (
        await call('/login', {
          method: 'POST',
          body: wrong,
          headers: { origin: 'https://errors.example.com', 'content-type': 'application/x-www-form-urlencoded' },
        })
      ).status,
    ).toBe(401);
    const audit = await (await call('/api/audit', { bearer: API_KEY })).json();
    expect(audit.entries.map((e: { action: string }) => e.action)).toEqual(
      expect.arrayContaining(['user.sign_in', 'user.sign_out', 'user.sign_in_failed', 'token.create', 'user.create']),
    );
  });

  it('audits a release created and finalized with a personal token under /api/0/', async () => {
    expect(
      (await call('/api/projects', { method: 'POST', bearer: API_KEY, json: { slug: 'ios-app', name: 'iOS app' } }))
        .status,
    ).toBe(201);
    const ci = await (
      await call('/api/users', {
        method: 'POST',
        bearer: API_KEY,
        json: { email: 'ci@example.com', role: 'member', password: 'ci-password-1' },
      })
    ).json();
    const { token } = await (
      await call('/api/tokens', { method: 'POST', bearer: API_KEY, json: { name: 'sentry-cli', user_id: ci.id } })
    ).json();
    const created = await call('/api/0/organizations/acme/releases/', {
      method: 'POST',
      bearer: token,
      json: { version: 'ios@2.0', projects: ['ios-app'] },
    });
    expect(created.status).toBe(201);
    // Sent again with nothing new (as sentry-cli does): no second entry.
    expect(
      (
        await call('/api/0/organizations/acme/releases/', {
          method: 'POST',
          bearer: token,
          json: { version: 'ios@2.0', projects: ['ios-app'] },
        })
      ).status,
    ).toBe(200);
    const finalized = await call('/api/0/organizations/acme/releases/ios@2.0/', {
      method: 'PUT',
      bearer: token,
      json: { dateReleased: '2026-11-28T10:00:00Z' },
    });
    expect(finalized.status).toBe(200);
    const audit = await (await call('/api/audit?target=ios@2.0', { bearer: API_KEY })).json();
    expect(
      audit.entries.map((e: { action: string; actor: string; details: unknown }) => [e.action, e.actor, e.details]),
    ).toEqual([
      [
        'release.finalize',
        'ci@example.com',
        { via: 'sentry-cli', projects: ['ios-app'], released_at: '2026-11-28T10:00:00.000Z' },
      ],
      ['release.create', 'ci@example.com', { via: 'sentry-cli', projects: ['ios-app'] }],
    ]);
  });
});
