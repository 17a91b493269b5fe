// OIDC sign-in against a real OpenID provider (the certified `oidc-provider`) started in
// the test, driven over HTTP as a browser would (cookies per host, redirects followed) and
// once in Chromium:
// a first sign-in creates the user (an admin group makes an admin), an existing user is
// linked, and the refusals: unverified email, a domain not allowed, a tampered or
// replayed state, a code issued to another client, an ID token for another audience, an
// ID token from another issuer. Nothing is created by a refusal.
import { createPrivateKey, generateKeyPairSync, sign } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chromium } from 'playwright-core';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { CHROMIUM, lacks } from '../helpers/tools.js';
import { Client } from '../dashboard/fixture.js';

const API_KEY = 'oidc-test-key';
/** The provider's signing key, known to the test so it can sign ID tokens of its own. */
const SIGNING = {
  ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
  kid: 'test-signing',
  alg: 'RS256',
  use: 'sig',
};
interface Person {
  email: string;
  email_verified: boolean;
  name: string;
  groups: string[];
}
const PEOPLE: Record<string, Person> = {
  ana: { email: 'Ana@Example.com', email_verified: true, name: 'Ana Admin', groups: ['ops'] },
  bo: { email: 'bo@example.com', email_verified: true, name: 'Bo', groups: [] },
  carl: { email: 'carl@example.com', email_verified: true, name: 'Carl', groups: [] },
  unverified: { email: 'dee@example.com', email_verified: false, name: 'Dee', groups: [] },
  outsider: { email: 'eve@evil.example', email_verified: true, name: 'Eve', groups: ['ops'] },
};

/** A minimal cookie jar per host, for the provider's own session cookies. */
class Browser {
  private jar = new Map<string, Map<string, string>>();
  async get(url: string): Promise<Response> {
    const u = new URL(url);
    const cookies = this.jar.get(u.host) ?? new Map<string, string>();
    const res = await fetch(url, {
      redirect: 'manual',
      headers: cookies.size ? { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {},
    });
    for (const line of res.headers.getSetCookie()) {
      const pair = line.split(';')[0];
      const name = pair.slice(0, pair.indexOf('='));
      const value = pair.slice(pair.indexOf('=') + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(line)) cookies.delete(name);
      else cookies.set(name, value);
    }
    this.jar.set(u.host, cookies);
    return res;
  }
}

describe.each(dialects)('OIDC sign-in on %s', (dialect) => {
  let s: TestServer;
  let other: TestServer;
  let op: http.Server;
  let issuer: string;
  let signingIn = 'ana';
  let lastIdToken: string | null = null;
  let forgedIdToken: string | null = null;

  beforeAll(async () => {
    // The provider's port first: the server's settings name it.
    op = http.createServer();
    await new Promise<void>((r) => op.listen(0, '127.0.0.1', () => r()));
    issuer = `http://127.0.0.1:${(op.address() as AddressInfo).port}`;
    const env = (clientId: string) => ({
      API_KEYS: API_KEY,
      OIDC_ISSUER: issuer,
      OIDC_CLIENT_ID: clientId,
      OIDC_CLIENT_SECRET: `${clientId}-secret`,
      OIDC_ALLOWED_DOMAINS: 'example.com',
      OIDC_ADMIN_GROUPS: 'ops',
    });
    s = await startTestServer(dialect, { env: env('faultline'), clock: { now: () => Date.now() } });
    other = await startTestServer(dialect, {
      env: env('other-app'),
      database: s.database,
      clock: { now: () => Date.now() },
    });
    const provider = new Provider(issuer, {
      clients: ['faultline', 'other-app'].map((id) => ({
        client_id: id,
        client_secret: `${id}-secret`,
        redirect_uris: [`${id === 'faultline' ? s.url : other.url}/login/sso/callback`],
        token_endpoint_auth_method: 'client_secret_post',
      })),
      claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name', 'groups'] },
      conformIdTokenClaims: false,
      jwks: { keys: [SIGNING] },
      features: { devInteractions: { enabled: false } },
      interactions: { url: (_ctx: unknown, interaction: { uid: string }) => `/interaction/${interaction.uid}` },
      async findAccount(_ctx: unknown, id: string) {
        const p = PEOPLE[id];
        return { accountId: id, claims: async () => ({ sub: id, ...p }) };
      },
      // Consent is given: the test is about the relying party.
      async loadExistingGrant(ctx: any) {
        const grant = new ctx.oidc.provider.Grant({
          clientId: ctx.oidc.client.clientId,
          accountId: ctx.oidc.session.accountId,
        });
        grant.addOIDCScope('openid email profile');
        await grant.save();
        return grant;
      },
    } as any);
    const callback = provider.callback();
    const handle = async (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.method === 'POST' && req.url === '/token') {
        if (forgedIdToken) {
          // A token endpoint answering with an ID token issued to another client.
          res.setHeader('content-type', 'application/json');
          res.end(
            JSON.stringify({ access_token: 'forged', token_type: 'Bearer', expires_in: 60, id_token: forgedIdToken }),
          );
          return;
        }
        const end = res.end.bind(res);
        res.end = ((chunk: unknown, ...rest: unknown[]) => {
          if (chunk) lastIdToken = JSON.parse(String(chunk)).id_token ?? lastIdToken;
          return (end as (...a: unknown[]) => http.ServerResponse)(chunk, ...rest);
        }) as typeof res.end;
      }
      if (req.url?.startsWith('/interaction/')) {
        // The person "types their password": the account the test is signing in.
        await provider.interactionFinished(
          req,
          res,
          { login: { accountId: signingIn } },
          { mergeWithLastSubmission: false },
        );
        return;
      }
      void callback(req, res);
    };
    // A failure in the handler ends the connection, so the sign-in under test fails.
    op.on('request', (req, res) => void handle(req, res).catch((e: Error) => res.destroy(e)));
  });
  afterAll(async () => {
    await other?.close();
    await s?.close();
    await new Promise((r) => op?.close(r));
  });

  /** Runs the browser's part up to the redirect back to a Faultline callback; returns that URL. */
  async function toCallback(
    server: TestServer,
    who: string,
    next = '/',
  ): Promise<{ client: Client; callback: string; nonce: string }> {
    signingIn = who;
    const client = new Client(server.url);
    const start = await client.request(`/login/sso?next=${encodeURIComponent(next)}`);
    expect(start.status).toBe(303);
    let location = start.headers.get('location')!;
    expect(location.startsWith(`${issuer}/auth?`)).toBe(true);
    const auth = new URL(location);
    expect(auth.searchParams.get('code_challenge_method')).toBe('S256');
    expect(auth.searchParams.get('state')).toBeTruthy();
    const nonce = auth.searchParams.get('nonce')!;
    expect(nonce).toBeTruthy();
    const browser = new Browser();
    for (let hops = 0; hops < 10 && location.startsWith(issuer); hops++) {
      const res = await browser.get(location);
      expect([302, 303], await res.clone().text()).toContain(res.status);
      location = new URL(res.headers.get('location')!, location).toString();
    }
    expect(location.startsWith(`${server.url}/login/sso/callback?`)).toBe(true);
    return { client, callback: location, nonce };
  }

  async function signIn(who: string, next = '/') {
    const { client, callback } = await toCallback(s, who, next);
    const res = await client.request(callback.slice(s.url.length));
    return { client, res, callback };
  }

  it.skipIf(lacks('chromium') || dialect !== 'sqlite')('signs in through the provider in Chromium', async () => {
    signingIn = 'bo';
    const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
    try {
      const page = await browser.newPage();
      await page.goto(`${s.url}/settings`);
      expect(new URL(page.url()).pathname).toBe('/login');
      await page.getByRole('link', { name: 'Sign in with SSO' }).click();
      await page.waitForURL(`${s.url}/settings`);
      await expect(page.getByText('bo@example.com').first().isVisible()).resolves.toBe(true);
      const cookie = (await page.context().cookies()).find((k) => k.name === 'faultline_session');
      expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    } finally {
      await browser.close();
    }
  });

  it('offers SSO on the sign-in page', async () => {
    expect(await (await new Client(s.url).request('/login')).text()).toContain('Sign in with SSO');
  });

  it('creates the user at the first sign-in, an admin when in an admin group, and signs them in', async () => {
    const { client, res } = await signIn('ana', '/admin/users');
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('content="0;url=/admin/users"');
    expect((await client.request('/admin/users')).status).toBe(200);
    const users = await (await s.api('/api/users')).json();
    expect(users.filter((u: { email: string }) => u.email.startsWith('ana'))).toEqual([
      expect.objectContaining({ email: 'ana@example.com', name: 'Ana Admin', role: 'admin' }),
    ]);
    const signIns = await (await s.api('/api/audit?action=user.sign_in')).json();
    expect(signIns.entries[0]).toMatchObject({ actor: 'ana@example.com', details: { via: 'sso' } });
    // Without a group: the default role.
    expect((await signIn('bo')).res.status).toBe(200);
    expect(
      (await (await s.api('/api/users')).json()).find((u: { email: string }) => u.email === 'bo@example.com').role,
    ).toBe('viewer');
  });

  it('links an existing user with that email', async () => {
    const created = await (
      await s.api('/api/users', {
        method: 'POST',
        json: { email: 'carl@example.com', role: 'member', password: 'carl-password' },
      })
    ).json();
    const { client, res } = await signIn('carl');
    expect(res.status).toBe(200);
    const me = await client.request('/settings');
    expect(await me.text()).toContain('carl@example.com');
    const carl = (await (await s.api('/api/users')).json()).filter(
      (u: { email: string }) => u.email === 'carl@example.com',
    );
    expect(carl).toEqual([expect.objectContaining({ id: created.id, role: 'member' })]);
  });

  it('refuses an unverified email and a domain not allowed, creating no one', async () => {
    const before = (await (await s.api('/api/users')).json()).length;
    const unverified = await signIn('unverified');
    expect(unverified.res.status).toBe(400);
    expect(await unverified.res.text()).toContain('has not verified dee@example.com');
    const outsider = await signIn('outsider');
    expect(outsider.res.status).toBe(400);
    expect(await outsider.res.text()).toContain('not in a domain allowed');
    expect(outsider.client.cookies.has('faultline_session')).toBe(false);
    expect((await (await s.api('/api/users')).json()).length).toBe(before);
  });

  it('refuses a tampered or replayed state, and a code issued to another client', async () => {
    const { client, callback } = await toCallback(s, 'bo');
    const tampered = new URL(callback);
    tampered.searchParams.set('state', `${tampered.searchParams.get('state')}x`);
    expect((await client.request(tampered.pathname + tampered.search)).status).toBe(400);
    // The real state still works once, then never again.
    expect((await client.request(callback.slice(s.url.length))).status).toBe(200);
    expect(client.cookies.has('faultline_session')).toBe(true);
    const replay = await new Client(s.url).request(callback.slice(s.url.length));
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain('unknown, used or expired');

    // A sign-in started on this server (client "faultline") finished on one registered as
    // another client on the same database: the provider refuses the exchange.
    const started = await toCallback(s, 'bo');
    const elsewhere = new URL(started.callback);
    const res = await new Client(other.url).request(`/login/sso/callback${elsewhere.search}`);
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('could not be verified');
  });

  it('refuses an ID token issued to another client (wrong audience)', async () => {
    // A real sign-in on the instance registered as "other-app" yields its ID token...
    const theirs = await toCallback(other, 'bo');
    expect((await theirs.client.request(theirs.callback.slice(other.url.length))).status).toBe(200);
    expect(lastIdToken).toBeTruthy();
    // ...which the provider's token endpoint now hands to this server's sign-in.
    forgedIdToken = lastIdToken;
    try {
      const { client, callback } = await toCallback(s, 'bo');
      const res = await client.request(callback.slice(s.url.length));
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(/unexpected JWT &quot;aud&quot; \(audience\) claim value/);
      expect(client.cookies.has('faultline_session')).toBe(false);
    } finally {
      forgedIdToken = null;
    }
  });

  it("refuses an ID token from another issuer, signed with the provider's own key", async () => {
    /** An ID token as the provider signs them, for the sign-in whose nonce is given. */
    const idToken = (iss: string, nonce: string) => {
      const now = Math.floor(Date.now() / 1000);
      const part = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
      const body = `${part({ alg: 'RS256', kid: SIGNING.kid, typ: 'JWT' })}.${part({ iss, aud: 'faultline', sub: 'bo', iat: now, exp: now + 300, nonce, email: 'bo@example.com', email_verified: true, name: 'Bo' })}`;
      return `${body}.${sign('sha256', Buffer.from(body), createPrivateKey({ key: SIGNING, format: 'jwk' })).toString('base64url')}`;
    };
    const users = async () => JSON.stringify(await (await s.api('/api/users')).json());
    const signIns = async () => (await (await s.api('/api/audit?action=user.sign_in')).json()).entries.length;
    const usersBefore = await users();
    const signInsBefore = await signIns();
    // The provider's issuer on a neighbouring port: the same signature, client and nonce.
    const stranger = issuer.replace(/:(\d+)$/, (_m, port) => `:${Number(port) + 1}`);
    try {
      const wrong = await toCallback(s, 'bo');
      forgedIdToken = idToken(stranger, wrong.nonce);
      const res = await wrong.client.request(wrong.callback.slice(s.url.length));
      expect(res.status).toBe(400);
      expect(await res.text()).toMatch(/unexpected JWT &quot;iss&quot; \(issuer\) claim value/);
      expect(wrong.client.cookies.has('faultline_session')).toBe(false);
      expect(await users()).toBe(usersBefore);
      expect(await signIns()).toBe(signInsBefore);

      // The same token with the provider's issuer is taken: only the issuer was wrong.
      const right = await toCallback(s, 'bo');
      forgedIdToken = idToken(issuer, right.nonce);
      expect((await right.client.request(right.callback.slice(s.url.length))).status).toBe(200);
      expect(right.client.cookies.has('faultline_session')).toBe(true);
      expect(await signIns()).toBe(signInsBefore + 1);
    } finally {
      forgedIdToken = null;
    }
  });
});
