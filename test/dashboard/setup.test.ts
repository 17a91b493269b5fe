// An empty project's pages: the DSN and the set-up snippet of the project's platform
// instead of empty charts (the other SDKs behind an expander), on every project page,
// until the first event or session arrives; the snippet rules without a database.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { setupsFor, SDK_SETUPS } from '../../src/dashboard/setup.js';
import { PLATFORMS } from '../../src/store/projects.js';
import { dialects, type TestServer } from '../helpers/server.js';
import { API_KEY, Client, sendStoreEvent, startDashboardServer } from './fixture.js';
import { createProject, findProjectBySlug, PROJECT_DEFAULTS } from '../../src/store/projects.js';

describe('SDK set-up snippets', () => {
  it('covers the ten SDKs, each with the DSN in its code', () => {
    expect(SDK_SETUPS.map((s) => s.label)).toEqual([
      'Android',
      'iOS',
      'React Native',
      'Flutter',
      'JavaScript',
      'Node',
      'Python',
      'Go',
      'Ruby',
      'Java',
    ]);
    for (const s of SDK_SETUPS) expect(s.code('http://k@h/1'), s.label).toContain('http://k@h/1');
  });

  it('puts the project platform’s SDKs first and every other one after, once', () => {
    const first = (p: string) => setupsFor(p).first.map((s) => s.label);
    expect(first('android')).toEqual(['Android']);
    expect(first('ios')).toEqual(['iOS']);
    expect(first('react-native')).toEqual(['React Native']);
    expect(first('flutter')).toEqual(['Flutter']);
    expect(first('web')).toEqual(['JavaScript']);
    expect(first('backend')).toEqual(['Node', 'Python', 'Go', 'Ruby', 'Java']);
    expect(first('other')).toEqual([]);
    for (const p of PLATFORMS) {
      const { first: a, others: b } = setupsFor(p);
      expect([...a, ...b].map((s) => s.id).sort(), p).toEqual(SDK_SETUPS.map((s) => s.id).sort());
    }
  });
});

describe.each(dialects)('an empty project’s pages on %s', (dialect) => {
  let t: TestServer;
  let browser: Client;

  beforeAll(async () => {
    t = await startDashboardServer(dialect);
    browser = new Client(t.url);
    await browser.signIn(API_KEY);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('shows the DSN and the platform’s snippet instead of charts, on every page, until data arrives', async () => {
    const p = await createProject(
      t.deps.store.db,
      { ...PROJECT_DEFAULTS, slug: 'fresh', name: 'Fresh', platform: 'android' },
      Date.now(),
    );
    const dsn = (await (await t.api('/api/projects/fresh')).json()).dsn as string;
    const overview = await (await browser.request('/fresh')).text();
    expect(overview).toContain('No events yet: send the first one');
    expect(overview).toContain(`value="${dsn}"`);
    expect(overview).toContain(
      `&lt;meta-data android:name=&quot;io.sentry.dsn&quot; android:value=&quot;${dsn}&quot; /&gt;`,
    );
    // The Android snippet is shown; the others wait behind the expander.
    expect(overview.indexOf('<h3>Android</h3>')).toBeLessThan(overview.indexOf('<summary>Other SDKs'));
    expect(overview.indexOf('<h3>Flutter</h3>')).toBeGreaterThan(overview.indexOf('<summary>Other SDKs'));
    expect(overview).not.toContain('<svg');
    expect(overview).not.toContain('Events per hour by release');
    for (const path of ['/fresh/issues', '/fresh/events', '/fresh/releases']) {
      const html = await (await browser.request(path)).text();
      expect(html, path).toContain('No events yet: send the first one');
    }

    await sendStoreEvent(t, (await findProjectBySlug(t.deps.store.db, 'fresh'))!, {
      message: 'first',
      level: 'error',
      platform: 'java',
    });
    for (const path of ['/fresh', '/fresh/issues', '/fresh/events', '/fresh/releases']) {
      const html = await (await browser.request(path)).text();
      expect(html, path).not.toContain('No events yet');
    }
    expect(await (await browser.request('/fresh')).text()).toContain('Events per hour by release');
    expect(p.id).toBeGreaterThan(0);
  });

  it('names the server SDKs first for a backend project and opens the whole list for other', async () => {
    await createProject(
      t.deps.store.db,
      { ...PROJECT_DEFAULTS, slug: 'server', name: 'Server', platform: 'backend' },
      Date.now(),
    );
    const backend = await (await browser.request('/server')).text();
    for (const label of ['Node', 'Python', 'Go', 'Ruby', 'Java'])
      expect(backend.indexOf(`<h3>${label}</h3>`), label).toBeLessThan(backend.indexOf('<summary>Other SDKs'));
    expect(backend).toContain('pip install sentry-sdk');
    await createProject(
      t.deps.store.db,
      { ...PROJECT_DEFAULTS, slug: 'misc', name: 'Misc', platform: 'other' },
      Date.now(),
    );
    const other = await (await browser.request('/misc')).text();
    expect(other).toContain(
      '<details open><summary>SDK set-up: Android, iOS, React Native, Flutter, JavaScript, Node, Python, Go, Ruby, Java</summary>',
    );
  });
});
