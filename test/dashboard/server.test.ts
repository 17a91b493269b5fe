// The dashboard's server side on both databases, through the real HTTP server:
// what answers without a session, sign-in and its cookie, sessions valid on
// another instance, CSRF and origin checks on every action, the actions
// themselves (checked in the database and through the JSON API), escaping of
// event data, and that the JSON API's own auth and 404s are unchanged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findProjectBySlug } from '../../src/store/projects.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  API_KEY,
  Client,
  OTHER_KEY,
  XSS,
  seedDemo,
  sendStoreEvent,
  sendXssEvent,
  startDashboardServer,
} from './fixture.js';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

describe.each(dialects)('dashboard server side on %s', (dialect) => {
  let t: TestServer;
  let demo: ProjectRow;
  let fingerprints: string[];
  let xssEventId: string;

  beforeAll(async () => {
    t = await startDashboardServer(dialect);
    demo = await seedDemo(t);
    xssEventId = await sendXssEvent(t, demo);
    const list = await (await t.api('/api/projects/demo/issues?limit=500')).json();
    fingerprints = list.issues.map((i: { fingerprint: string }) => i.fingerprint);
  });
  afterAll(async () => {
    await t?.close();
  });

  const pages = () => [
    '/',
    '/demo',
    '/demo/issues',
    `/demo/issues/${fingerprints[0]}`,
    '/demo/events',
    '/demo/releases',
    '/demo/releases/com.example.shop@1.2.0+120',
    '/demo/settings',
    '/no-such-project',
  ];

  it('leaves the JSON API and /health as they were: bearer key, 401 and 404 in JSON', async () => {
    const anonymous = await fetch(`${t.url}/api/projects`);
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ error: 'unauthorized' });
    expect((await t.api('/api/projects')).status).toBe(200);
    const missing = await t.api('/api/nothing-here');
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: 'not found' });
    expect((await fetch(`${t.url}/health`)).status).toBe(200);
    // A dashboard session does not open the API.
    const browser = new Client(t.url);
    await browser.signIn(API_KEY);
    expect((await browser.request('/api/projects')).status).toBe(401);
  });

  it('sends every page to sign-in and refuses every action without a session', async () => {
    const anonymous = new Client(t.url);
    for (const path of pages()) {
      const res = await anonymous.request(path);
      expect(res.status, path).toBe(303);
      const location = res.headers.get('location')!;
      expect(location.startsWith('/login'), path).toBe(true);
      if (path !== '/') expect(new URL(location, t.url).searchParams.get('next')).toBe(path);
    }
    const before = await findProjectBySlug(t.deps.store.db, 'demo');
    const actions: [string, Record<string, string | string[]>][] = [
      ['/new', { slug: 'sneaky' }],
      ['/demo/settings', { name: 'owned', sample_rate: '0' }],
      ['/demo/rotate-key', {}],
      ['/demo/delete', { confirm: 'demo' }],
      ['/demo/issues/bulk', { fingerprints, status: 'ignored' }],
      [`/demo/issues/${fingerprints[0]}/status`, { status: 'resolved' }],
      ['/logout', {}],
    ];
    for (const [path, fields] of actions) {
      const res = await anonymous.post(path, fields);
      expect(res.status, path).toBe(401);
    }
    const after = await findProjectBySlug(t.deps.store.db, 'demo');
    expect(after).toEqual(before);
    expect(await findProjectBySlug(t.deps.store.db, 'sneaky')).toBeUndefined();
    const statuses = await t.deps.store.db
      .selectFrom('issues')
      .select('status')
      .where('project_id', '=', demo.id)
      .execute();
    expect(statuses.every((s) => s.status === 'unresolved')).toBe(true);
    // The assets need no session.
    expect((await anonymous.request('/static/dashboard.css')).status).toBe(200);
  });

  it('signs in with any configured API key into an HttpOnly, SameSite=Strict cookie, Secure over https', async () => {
    const wrong = new Client(t.url);
    const refused = await wrong.signIn('not-a-key');
    expect(refused.status).toBe(401);
    expect(await refused.text()).toContain('not one of this server');
    expect(wrong.cookies.size).toBe(0);

    for (const key of [API_KEY, OTHER_KEY]) {
      const c = new Client(t.url);
      const res = await c.signIn(key);
      expect(res.status).toBe(303);
      const cookie = res.headers.getSetCookie().find((l) => l.startsWith('faultline_session='))!;
      expect(cookie).toMatch(/HttpOnly/i);
      expect(cookie).toMatch(/SameSite=Strict/i);
      expect(cookie).not.toMatch(/Secure/i);
      expect(cookie).not.toContain(key);
      expect((await c.request('/demo/issues')).status).toBe(200);
    }
    const https = new Client(t.url);
    const res = await https.post(
      '/login',
      { key: API_KEY, next: '/demo' },
      { 'x-forwarded-proto': 'https', origin: `https://${new URL(t.url).host}` },
    );
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/demo');
    expect(res.headers.getSetCookie().find((l) => l.startsWith('faultline_session='))).toMatch(/; Secure/i);
    // `next` never leads to another host.
    const away = await new Client(t.url).post('/login', { key: API_KEY, next: '//evil.example/x' });
    expect(away.headers.get('location')).toBe('/');
  });

  it('keeps sessions in the database: another instance on it accepts them, one without the key or a forged cookie does not', async () => {
    const c = new Client(t.url);
    await c.signIn(OTHER_KEY);
    const session = c.cookies.get('faultline_session')!;
    expect(session).toMatch(/^[A-Za-z0-9]{43}$/);
    const other = await startTestServer(dialect, {
      env: { API_KEYS: `${OTHER_KEY},${API_KEY}` },
      database: t.database,
      clock: { now: () => Date.now() },
    });
    const withoutKey = await startTestServer(dialect, {
      env: { API_KEYS: API_KEY },
      database: t.database,
      clock: { now: () => Date.now() },
    });
    try {
      const there = new Client(other.url);
      there.cookies.set('faultline_session', session);
      expect((await there.request('/')).status).toBe(200);
      const gone = new Client(withoutKey.url);
      gone.cookies.set('faultline_session', session);
      expect((await gone.request('/')).status).toBe(303);
    } finally {
      await other.close();
      await withoutKey.close();
    }
    for (const forged of [
      session.replace(/^./, (ch) => (ch === 'a' ? 'b' : 'a')),
      session.slice(0, -1),
      `${session}x`,
      'x'.repeat(43),
    ]) {
      const tampered = new Client(t.url);
      tampered.cookies.set('faultline_session', forged);
      expect((await tampered.request('/')).status).toBe(303);
    }
  });

  it('refuses actions without the session’s CSRF token or from another origin', async () => {
    const a = new Client(t.url);
    await a.signIn(API_KEY);
    const tokenA = await a.csrf('/demo/settings');
    const b = new Client(t.url);
    await b.signIn(API_KEY);
    const tokenB = await b.csrf('/demo/settings');
    expect(tokenA).not.toBe(tokenB);
    const key = (await findProjectBySlug(t.deps.store.db, 'demo'))!.dsn_key;
    const attempts: [string, Response][] = [
      ['no token', await a.post('/demo/rotate-key', {})],
      ['wrong token', await a.post('/demo/rotate-key', { _csrf: 'x'.repeat(43) })],
      ['another session’s token', await a.post('/demo/rotate-key', { _csrf: tokenB })],
      ['cross-site origin', await a.post('/demo/rotate-key', { _csrf: tokenA }, { origin: 'https://evil.example' })],
      ['cross-site fetch', await a.post('/demo/rotate-key', { _csrf: tokenA }, { 'sec-fetch-site': 'cross-site' })],
      [
        'foreign referer',
        await a.request('/demo/rotate-key', {
          method: 'POST',
          body: new URLSearchParams({ _csrf: tokenA }),
          headers: { referer: 'http://evil.example/page' },
        }),
      ],
    ];
    for (const [why, res] of attempts) {
      expect(res.status, why).toBe(403);
      expect(await res.text(), why).toContain('reload the page');
    }
    expect((await findProjectBySlug(t.deps.store.db, 'demo'))!.dsn_key).toBe(key);
    const ok = await a.post('/demo/rotate-key', { _csrf: tokenA });
    expect(ok.status).toBe(303);
    expect((await findProjectBySlug(t.deps.store.db, 'demo'))!.dsn_key).not.toBe(key);
  });

  it('renders every field of attacker-controlled event data as text', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const detail = await (await t.api(`/api/projects/demo/events/${xssEventId}`)).json();
    const paths = [
      `/demo/events/${detail.id}`,
      `/demo/issues/${detail.fingerprint}`,
      '/demo/events',
      '/demo/issues?q=XssError',
      '/demo/releases',
      '/demo',
    ];
    for (const path of paths) {
      const res = await c.request(path);
      expect(res.status, path).toBe(200);
      expect(res.headers.get('content-security-policy')).toContain("script-src 'self'");
      const html = await res.text();
      for (const payload of XSS) expect(html, `${path}: ${payload}`).not.toContain(payload);
    }
    const page = await (await c.request(`/demo/events/${detail.id}`)).text();
    for (const payload of XSS) expect(page, payload).toContain(escapeHtml(payload));
  });

  it('shows an exception without a type (a message with its stack) by its value alone', async () => {
    const eventId = 'c'.repeat(32);
    const event = {
      event_id: eventId,
      timestamp: Date.now() / 1000,
      level: 'warning',
      platform: 'node',
      message: 'Payment provider slow',
      exception: {
        values: [
          {
            value: 'Payment provider slow',
            stacktrace: { frames: [{ function: 'pay', filename: 'pay.js', lineno: 3, in_app: true }] },
          },
        ],
      },
    };
    await sendStoreEvent(t, (await findProjectBySlug(t.deps.store.db, 'demo'))!, event);
    const detail = await (await t.api(`/api/projects/demo/events/${eventId}`)).json();
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const page = await (await c.request(`/demo/events/${detail.id}`)).text();
    expect(page).toContain('<p>Payment provider slow');
    expect(page).not.toContain('<strong></strong>');
  });

  it('runs the actions through the same domain code as the API', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const csrf = await c.csrf();

    const reserved = await c.post('/new', { _csrf: csrf, slug: 'api', platform: 'web' });
    expect(reserved.status).toBe(400);
    expect(await reserved.text()).toContain('slug &quot;api&quot; is reserved');
    const created = await c.post('/new', { _csrf: csrf, slug: 'shop-web', name: 'Shop web', platform: 'web' });
    expect(created.status).toBe(303);
    expect(created.headers.get('location')).toBe('/shop-web/settings?created=1');
    const json = await (await t.api('/api/projects/shop-web')).json();
    expect(json).toMatchObject({ name: 'Shop web', platform: 'web', sample_rate: 1, sample_keep_first: 100 });
    const settings = await (await c.request('/shop-web/settings')).text();
    expect(settings).toContain(escapeHtml(json.dsn));
    expect((await c.post('/new', { _csrf: csrf, slug: 'shop-web' })).status).toBe(409);

    const bad = await c.post('/shop-web/settings', {
      _csrf: csrf,
      name: 'Shop web',
      platform: 'web',
      sample_keep_first: '5',
      sample_rate: '2',
      daily_quota: '0',
    });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('sample_rate must be between 0 and 1');
    const saved = await c.post('/shop-web/settings', {
      _csrf: csrf,
      name: 'Shop web 2',
      platform: 'web',
      sample_keep_first: '5',
      sample_rate: '0.25',
      daily_quota: '1000',
    });
    expect(saved.status).toBe(303);
    expect(await (await t.api('/api/projects/shop-web')).json()).toMatchObject({
      name: 'Shop web 2',
      sample_keep_first: 5,
      sample_rate: 0.25,
      daily_quota: 1000,
    });

    const keep = await c.post('/shop-web/delete', { _csrf: csrf, confirm: 'shop' });
    expect(keep.status).toBe(400);
    expect((await t.api('/api/projects/shop-web')).status).toBe(200);
    const gone = await c.post('/shop-web/delete', { _csrf: csrf, confirm: 'shop-web' });
    expect(gone.status).toBe(303);
    expect((await t.api('/api/projects/shop-web')).status).toBe(404);

    const [one, two, three] = fingerprints;
    const bulk = await c.post('/demo/issues/bulk', {
      _csrf: csrf,
      fingerprints: [one, two],
      status: 'ignored',
      back: '/demo/issues?level=fatal',
    });
    expect(bulk.status).toBe(303);
    expect(bulk.headers.get('location')).toBe('/demo/issues?level=fatal&updated=2&updated_to=ignored');
    const resolved = await c.post(`/demo/issues/${three}/status`, { _csrf: csrf, status: 'resolved' });
    expect(resolved.status).toBe(303);
    const rows = await (await t.api('/api/projects/demo/issues?limit=500')).json();
    const status = new Map(rows.issues.map((i: { fingerprint: string; status: string }) => [i.fingerprint, i.status]));
    expect([status.get(one), status.get(two), status.get(three)]).toEqual(['ignored', 'ignored', 'resolved']);
    expect((await c.post('/demo/issues/bulk', { _csrf: csrf, fingerprints: [one], status: 'closed' })).status).toBe(
      400,
    );
    // Put them back for the other cases.
    await t.api('/api/projects/demo/issues/bulk', {
      method: 'POST',
      json: { fingerprints: [one, two, three], status: 'unresolved' },
    });
  });

  it('passes filters from the URL to the read functions and shows their errors as pages', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const fatal = await (await t.api('/api/projects/demo/issues?level=fatal')).json();
    const html = await (await c.request('/demo/issues?level=fatal&status=')).text();
    expect(fatal.total).toBeGreaterThan(0);
    expect(html).toContain(`${fatal.total} in the window`);
    for (const issue of fatal.issues) expect(html).toContain(issue.fingerprint);
    const bad = await c.request('/demo/issues?days=1000');
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('days must be an integer from 1 to 90');
    expect((await c.request('/demo/issues/ffffffffffffffffffffffffffffffff')).status).toBe(404);
    expect((await c.request('/no-such-project/issues')).status).toBe(404);
    const events = await (await c.request('/demo/events?level=fatal&tag=device_class:high&crash=1')).text();
    const api = await (await t.api('/api/projects/demo/events?level=fatal&tag.device_class=high&crash=1')).json();
    for (const e of api.events) expect(events).toContain(`/demo/events/${e.id}"`);
  });

  it('shows only the messages it chose: notice parameters in a URL cannot put words on a page', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const forged = [
      ['/demo/issues?updated=2&updated_to=Call+0800+now', 'Call 0800 now'],
      [`/demo/issues/${fingerprints[0]}?set=Call+0800+now`, 'Call 0800 now'],
      ['/?deleted=Your+account+is+locked', 'Your account is locked'],
    ];
    for (const [path, words] of forged) expect(await (await c.request(path)).text(), path).not.toContain(words);
    expect(await (await c.request('/demo/issues?updated=2&updated_to=ignored')).text()).toContain(
      '2 issues set to ignored.',
    );
  });

  it('signs out: the cookie is cleared and pages ask for sign-in again', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const csrf = await c.csrf();
    const copied = new Client(t.url);
    copied.cookies.set('faultline_session', c.cookies.get('faultline_session')!);
    const res = await c.post('/logout', { _csrf: csrf });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/login');
    expect(c.cookies.has('faultline_session')).toBe(false);
    expect((await c.request('/demo')).status).toBe(303);
    // A copy of the cookie taken before signing out is worth nothing after.
    expect((await copied.request('/demo')).status).toBe(303);
  });
});

describe('dashboard without API_KEYS (open, like the API)', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startDashboardServer('sqlite', {});
    await seedDemo(t, undefined);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('serves pages without sign-in and still refuses forms without the CSRF cookie’s token or from another origin', async () => {
    const c = new Client(t.url);
    expect((await c.request('/demo/issues')).status).toBe(200);
    expect((await c.request('/login')).status).toBe(303);
    const csrf = await c.csrf('/demo/settings');
    const key = (await findProjectBySlug(t.deps.store.db, 'demo'))!.dsn_key;
    expect((await new Client(t.url).post('/demo/rotate-key', { _csrf: csrf })).status).toBe(403);
    expect((await c.post('/demo/rotate-key', {})).status).toBe(403);
    expect((await c.post('/demo/rotate-key', { _csrf: csrf }, { origin: 'http://evil.example' })).status).toBe(403);
    expect((await findProjectBySlug(t.deps.store.db, 'demo'))!.dsn_key).toBe(key);
    expect((await c.post('/demo/rotate-key', { _csrf: csrf })).status).toBe(303);
    expect((await findProjectBySlug(t.deps.store.db, 'demo'))!.dsn_key).not.toBe(key);
  });

  it('sends the page of a merged issue to the page of the issue it was merged into', async () => {
    const list = (await (await t.api('/api/projects/demo/issues?limit=2')).json()) as {
      issues: { fingerprint: string }[];
    };
    const [into, merged] = list.issues.map((i) => i.fingerprint);
    expect(
      (await t.api('/api/projects/demo/issues/merge', { method: 'POST', json: { fingerprints: [merged], into } }))
        .status,
    ).toBe(200);
    const c = new Client(t.url);
    const res = await c.request(`/demo/issues/${merged}?days=14`);
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe(`/demo/issues/${into}?days=14`);
    expect((await c.request(`/demo/issues/${into}?days=14`)).status).toBe(200);
  });
});
