// The dashboard behind a reverse proxy that serves it under a path (PUBLIC_URL
// https://host/faultline) and strips that path before passing requests on: every
// link, form action, asset URL and redirect the browser gets must carry the path, or
// it leaves the proxy's mount. Requests here go to the server as the proxy sends them
// (without the path). SQLite only: nothing here depends on the database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { html, locationUnderBasePath, pathWithoutBasePath, underBasePath } from '../../src/dashboard/html.js';
import { API_KEY, Client, seedDemo } from './fixture.js';

const PREFIX = '/faultline';

/** Every root-relative URL in href, action and src attributes of a page. */
function rootRelativeUrls(page: string): string[] {
  return [...page.matchAll(/\b(?:href|action|src)="(\/[^"]*)"/g)].map((m) => m[1]);
}

describe('dashboard under a PUBLIC_URL path', () => {
  let t: TestServer;
  let demo: ProjectRow;
  let fingerprint: string;
  let client: Client;

  beforeAll(async () => {
    t = await startTestServer('sqlite', {
      env: { API_KEYS: API_KEY, PUBLIC_URL: `https://errors.example.com${PREFIX}` },
      clock: { now: () => Date.now() },
    });
    demo = await seedDemo(t);
    const list = await (await t.api('/api/projects/demo/issues?limit=1')).json();
    fingerprint = list.issues[0].fingerprint;
    client = new Client(t.url);
    await client.signIn(API_KEY);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('sends a visitor without a session to the sign-in page under the path, and back after signing in', async () => {
    const visitor = new Client(t.url);
    const anonymous = await visitor.request('/demo/issues?status=unresolved');
    expect(anonymous.status).toBe(303);
    const login = anonymous.headers.get('location')!;
    expect(login.startsWith(`${PREFIX}/login?`)).toBe(true);
    expect(new URL(login, t.url).searchParams.get('next')).toBe('/demo/issues?status=unresolved');

    const form = await (await visitor.request('/login?next=%2Fdemo')).text();
    expect(form).toContain(`action="${PREFIX}/login"`);
    expect(form).toContain(`href="${PREFIX}/static/dashboard.css"`);
    expect(form).toContain(`src="${PREFIX}/static/dashboard.js"`);
    expect(form).toContain(`href="${PREFIX}/static/favicon.svg"`);
    // The icon is served without a session, as the stylesheet is (the sign-in page shows it).
    const icon = await visitor.request('/static/favicon.svg');
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(await icon.text()).toMatch(/^<svg /);

    const signedIn = await visitor.post('/login', { key: API_KEY, next: '/demo' });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe(`${PREFIX}/demo`);
  });

  it('writes every link, form action and asset URL of every page under the path', async () => {
    const pages = [
      '/',
      '/demo',
      '/demo/issues',
      `/demo/issues/${fingerprint}`,
      '/demo/events',
      '/demo/releases',
      '/demo/alerts',
      '/demo/monitors',
      '/demo/monitors/invoice-sync',
      '/demo/symbols',
      '/demo/settings',
      '/no-such-project',
    ];
    for (const path of pages) {
      const res = await client.request(path);
      expect([200, 404], path).toContain(res.status);
      const urls = rootRelativeUrls(await res.text());
      expect(urls.length, path).toBeGreaterThan(3);
      const outside = urls.filter((u) => u !== PREFIX && !u.startsWith(`${PREFIX}/`) && !u.startsWith(`${PREFIX}?`));
      expect(outside, path).toEqual([]);
      // What the links name is still served where the proxy sends it.
      expect((await client.request('/static/dashboard.css')).status).toBe(200);
    }
  });

  it('redirects after an action under the path', async () => {
    const csrf = await client.csrf('/demo/settings');
    const rotated = await client.post('/demo/rotate-key', { _csrf: csrf });
    expect(rotated.status).toBe(303);
    expect(rotated.headers.get('location')).toBe(`${PREFIX}/demo/settings?rotated=1`);

    const bulk = await client.post('/demo/issues/bulk', {
      _csrf: csrf,
      fingerprints: [fingerprint],
      status: 'resolved',
      back: '/demo/issues?level=error',
    });
    expect(bulk.status).toBe(303);
    expect(bulk.headers.get('location')).toBe(`${PREFIX}/demo/issues?level=error&updated=1&updated_to=resolved`);
    expect(demo.slug).toBe('demo');

    const out = await client.post('/logout', { _csrf: csrf });
    expect(out.headers.get('location')).toBe(`${PREFIX}/login`);
  });
});

describe('underBasePath', () => {
  it('moves the templates’ root-relative URLs and leaves event text, other hosts and the root alone', async () => {
    const page =
      await html`<a href="/demo">x</a><form action="/demo/delete"></form><script src="/static/dashboard.js"></script>
<a href="//cdn.example/x">y</a><a href="https://example.com/">z</a><p>${'<a href="/evil">'}</p><input value="/demo/issues">`;
    expect(
      underBasePath(String(page), PREFIX),
    ).toBe(`<a href="/faultline/demo">x</a><form action="/faultline/demo/delete"></form><script src="/faultline/static/dashboard.js"></script>
<a href="//cdn.example/x">y</a><a href="https://example.com/">z</a><p>&lt;a href=&quot;/evil&quot;&gt;</p><input value="/demo/issues">`);
    expect(underBasePath(String(page), '')).toBe(String(page));
    expect(locationUnderBasePath('/login?next=%2F', PREFIX)).toBe('/faultline/login?next=%2F');
    expect(locationUnderBasePath('https://elsewhere.example/', PREFIX)).toBe('https://elsewhere.example/');
    expect(pathWithoutBasePath('/faultline/demo/issues', PREFIX)).toBe('/demo/issues');
    expect(pathWithoutBasePath('/faultline', PREFIX)).toBe('/');
    expect(pathWithoutBasePath('/faultlines/x', PREFIX)).toBe('/faultlines/x');
  });
});
