// The event detail API and the event page on both databases, through the real server,
// replaying real SDK payload shapes: a sentry-java crash with threads and a two-exception
// chain, remapped by the ProGuard fixture's mapping (test/fixtures/event-shapes), the
// Python SDK's event with context lines and frame variables, and the Node SDK's event
// (test/fixtures/sdk-captures). Checks threads (crashed first), the remapped type beside
// the received one, prev/next within the issue, numbered context lines, collapsed library
// frames, the raw trace in each platform's form, breadcrumbs, readable byte sizes, and
// that empty fields are left out.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { eventId, post } from '../ingest/helpers.js';
import { JAVA_FIXTURES } from '../symbols/java-fixture.js';
import { sendEvent, uploadOk } from '../symbols/helpers.js';
import { API_KEY, Client, XSS, sendXssEvent } from './fixture.js';

const FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures');
const NOW = Date.parse('2026-11-21T14:00:00.000Z');
const javaEvent = (): Record<string, unknown> =>
  JSON.parse(fs.readFileSync(path.join(FIXTURES, 'event-shapes/java-threads-event.json'), 'utf8'));

/** Text of the page between two markers (a section of the event view). */
function section(html: string, from: string, to: string): string {
  const start = html.indexOf(from);
  expect(start, from).toBeGreaterThanOrEqual(0);
  const end = html.indexOf(to, start + from.length);
  return html.slice(start + from.length, end < 0 ? undefined : end);
}

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
const decode = (s: string) =>
  s
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');

describe.each(dialects)('event detail and event page on %s', (dialect) => {
  let t: TestServer;
  let java: ProjectRow;
  let python: ProjectRow;
  let node: ProjectRow;
  let browser: Client;
  const javaIds: string[] = [];

  beforeAll(async () => {
    t = await startTestServer(dialect, { env: { API_KEYS: API_KEY, RATE_LIMIT: '0' }, clock: new ManualClock(NOW) });
    const db = t.deps.store.db;
    java = await createProject(db, { ...PROJECT_DEFAULTS, slug: 'android', name: 'Android', platform: 'android' }, NOW);
    python = await createProject(db, { ...PROJECT_DEFAULTS, slug: 'py', name: 'Python', platform: 'python' }, NOW);
    node = await createProject(db, { ...PROJECT_DEFAULTS, slug: 'node', name: 'Node', platform: 'node' }, NOW);
    await uploadOk(t, java, {
      kind: 'proguard',
      release: 'com.example.app@1.0.0+1',
      files: [{ name: 'mapping.txt', data: fs.readFileSync(path.join(JAVA_FIXTURES, 'mapping.txt')) }],
    });
    for (let i = 0; i < 3; i++) javaIds.push(await sendEvent(t, java, { ...javaEvent(), event_id: eventId() }));
    const store = await post(t, python, fs.readFileSync(path.join(FIXTURES, 'sdk-captures/python-store-event.json')), {
      endpoint: 'store',
      headers: { 'Content-Type': 'application/json' },
    });
    expect(store.status).toBe(200);
    expect((await post(t, node, fs.readFileSync(path.join(FIXTURES, 'sdk-captures/node-event.envelope')))).status).toBe(
      200,
    );
    browser = new Client(t.url);
    await browser.signIn(API_KEY);
  });
  afterAll(async () => {
    await t?.close();
  });

  async function detail(project: ProjectRow, id: string) {
    const res = await t.api(`/api/projects/${project.slug}/events/${id}`);
    expect(res.status).toBe(200);
    return res.json();
  }

  async function pageOf(project: ProjectRow, id: number): Promise<string> {
    const res = await browser.request(`/${project.slug}/events/${id}`);
    expect(res.status).toBe(200);
    return res.text();
  }

  it('lists threads crashed first and keeps the type as received beside the ProGuard-remapped one', async () => {
    const e = await detail(java, javaIds[1]);
    expect(e.threads.map((th: { name: string }) => th.name)).toEqual([
      'main',
      'FinalizerDaemon',
      'OkHttp ConnectionPool',
    ]);
    expect(e.threads[0]).toMatchObject({ id: '1', crashed: true, current: true, main: true, state: 'RUNNABLE' });
    expect(e.threads[1]).toMatchObject({ id: '2', crashed: false, state: 'WAITING' });
    expect(e.threads[1].frames.map((f: { function: string }) => f.function)).toEqual(['run', 'runInternal', 'wait']);
    const [cause, main] = e.exceptions;
    expect(main).toMatchObject({
      type: 'InvalidInputException',
      module: 'com.example.app',
      obfuscated_type: 'com.example.app.a',
    });
    expect(main.mechanism).toEqual({ type: 'UncaughtExceptionHandler', handled: false });
    expect(cause).toMatchObject({
      type: 'FileNotFoundException',
      module: 'java.io',
      mechanism: { type: 'chained', handled: false },
    });
    expect(cause.obfuscated_type).toBeUndefined();
    expect(e.raw_size).toBeGreaterThan(1000);
  });

  it('names the issue’s older and newer events', async () => {
    const [first, second, third] = await Promise.all(javaIds.map((id) => detail(java, id)));
    expect([first.previous_id, first.next_id]).toEqual([null, second.id]);
    expect([second.previous_id, second.next_id]).toEqual([first.id, third.id]);
    expect([third.previous_id, third.next_id]).toEqual([second.id, null]);
    const html = await pageOf(java, second.id);
    expect(html).toContain(`href="/android/events/${third.id}">← Newer event`);
    expect(html).toContain(`href="/android/events/${first.id}">Older event →`);
    const newest = await pageOf(java, third.id);
    expect(newest).not.toContain('← Newer event');
    expect(newest).toContain('Older event →');
  });

  it('shows the JVM chain, its raw trace, classes, collapsed library frames and threads', async () => {
    const e = await detail(java, javaIds[0]);
    const html = await pageOf(java, e.id);
    const text = decode(html);
    // The raw trace as the JVM prints it, from the remapped frames, cause after the main exception.
    const trace = decode(section(html, '<summary>Raw stack trace</summary><pre>', '</pre>'));
    expect(trace).toContain(
      'com.example.app.InvalidInputException: bad input: item-1\n\tat com.example.app.Parser.validate(Parser.java:34)\n\tat com.example.app.Parser.parse(Parser.java:29)',
    );
    expect(trace).toContain(
      '\tat com.example.app.Main.main(Main.java:5)\n\tat android.os.Handler.dispatchMessage(Handler.java:99)',
    );
    expect(trace).toContain(
      'Caused by: java.io.FileNotFoundException: /data/user/0/com.example.app/files/items.json (No such file or directory)\n\tat java.io.FileInputStream.open0(FileInputStream.java)',
    );
    expect(trace.indexOf('Caused by')).toBeGreaterThan(trace.indexOf('InvalidInputException'));
    expect(text).toContain('Received as <code>com.example.app.a</code> (remapped with ProGuard)');
    // Each JVM frame names its class; the three library frames under the app's are one expander.
    expect(text).toContain('com.example.app.Parser.validate');
    expect(html).toMatch(/<li class="lib-run"><details><summary>3 library frames<\/summary>/);
    expect(html).toContain('<span class="badge l-fatal">unhandled</span>');
    // Threads: the crashed one first and open, the others closed.
    const threads = section(html, '<h3>Threads (3)</h3>', '<h3>Breadcrumbs</h3>');
    const names = [...threads.matchAll(/<summary><strong>([^<]+)<\/strong>/g)].map((m) => m[1]);
    expect(names).toEqual(['main', 'FinalizerDaemon', 'OkHttp ConnectionPool']);
    expect(threads.match(/<details class="thread" open>/g)).toHaveLength(1);
    expect(threads).toMatch(/<details class="thread" open><summary><strong>main<\/strong>/);
  });

  it('formats breadcrumbs, byte sizes, extra and hides empty fields', async () => {
    const e = await detail(java, javaIds[0]);
    const html = await pageOf(java, e.id);
    const crumbs = decode(section(html, '<h3>Breadcrumbs</h3>', '</ol>'));
    expect(crumbs).toContain(
      'GET https://api.example.com/v1/items?page=2&filter=category%3Dhousehold-and-kitchen-appliances-with-a-very-long-name → 500',
    );
    expect(crumbs).toMatch(/13:45:31\.250<\/span>\s*<span class="badge">http<\/span>/);
    expect(crumbs).toContain('<span class="l-error">error</span>');
    expect(crumbs).toContain('<dt>view.id</dt><dd><code>load_items_button</code></dd>');
    // 8083230720 bytes = 7.53 GiB; the exact count on hover.
    expect(html).toContain('<dt>memory_size</dt><dd><span title="8,083,230,720 bytes">7.53 GiB</span></dd>');
    expect(html).toContain('<dt>app_memory</dt><dd><span title="134,217,728 bytes">128 MiB</span></dd>');
    const extra = section(html, '<h3>Extra</h3>', '</table>');
    expect(extra).toContain('<th scope="row">build_flavor</th><td>prod</td>');
    expect(extra).toContain('<th scope="row">items_loaded</th><td>0</td>');
    expect(extra).not.toContain('>empty<');
    expect(extra).not.toContain('>none<');
    // Empty device fields and absent sections are left out.
    expect(html).not.toContain('<dt>orientation</dt>');
    expect(html).not.toContain('<h3>Request</h3>');
    expect(html).not.toContain('<dt>Screen</dt>');
  });

  it('numbers five lines of context around a Python frame, shows its vars and a Python traceback', async () => {
    const list = await (await t.api('/api/projects/py/events')).json();
    const html = await pageOf(python, list.events[0].id);
    const ctx = section(html, '<table class="ctx">', '</table>');
    const rows = [...ctx.matchAll(/<tr( class="cur")?><td class="ln">(\d*)<\/td><td><code>([^<]*)<\/code>/g)].map(
      (m) => [Number(m[2]), decode(m[3]), m[1] !== undefined],
    );
    // The innermost frame (boom, line 7) is listed first.
    expect(rows).toEqual([
      [2, 'import sys, sentry_sdk', false],
      [3, 'port = sys.argv[1]', false],
      [
        4,
        'sentry_sdk.init(dsn=f"http://publickey@127.0.0.1:{port}/1", release="app@1.0.0", environment="test",',
        false,
      ],
      [5, '                auto_session_tracking=True, default_integrations=True)', false],
      [6, 'def boom():', false],
      [7, '    raise ValueError("py depcheck boom")', true],
      [8, 'hub = sentry_sdk.Hub.current', false],
      [9, 'hub.start_session(session_mode="application")', false],
      [10, 'try:', false],
      [11, '    boom()', false],
      [12, 'except Exception:', false],
    ]);
    const text = decode(html);
    expect(text).toContain('<summary>Variables (9)</summary>');
    expect(text).toContain("<dt>__file__</dt><dd>'/srv/app/app-py.py'</dd>");
    const trace = decode(section(html, '<summary>Raw stack trace</summary><pre>', '</pre>'));
    expect(trace).toBe(
      [
        'Traceback (most recent call last):',
        '  File "/srv/app/app-py.py", line 11, in <module>',
        '    boom()',
        '  File "/srv/app/app-py.py", line 7, in boom',
        '    raise ValueError("py depcheck boom")',
        'ValueError: py depcheck boom',
      ].join('\n'),
    );
    // No breadcrumbs, threads or tags were sent: no empty sections.
    expect(html).not.toContain('<h3>Breadcrumbs</h3>');
    expect(html).not.toContain('<h3>Threads');
    expect(html).not.toContain('<h3>Tags</h3>');
    expect(text).toContain('<h3>Extra</h3>');
  });

  it('prints a Node trace in JavaScript’s form and collapses node: internals', async () => {
    const list = await (await t.api('/api/projects/node/events')).json();
    const html = await pageOf(node, list.events[0].id);
    const trace = decode(section(html, '<summary>Raw stack trace</summary><pre>', '</pre>'));
    expect(trace.split('\n').slice(0, 3)).toEqual([
      'TypeError: depcheck boom: cannot read foo of undefined',
      '    at boom (/srv/app/app-a.mjs:9:25)',
      '    at /srv/app/app-a.mjs:11:7',
    ]);
    expect(trace).toContain('    at ModuleJob.run (node:internal/modules/esm/module_job:325:25)');
    expect(html).toMatch(/<summary>\d+ library frames<\/summary>/);
    expect(html).toContain('<dt>memory_size</dt><dd><span title="25,276,502,016 bytes">23.5 GiB</span></dd>');
  });

  it('ends a title ingest cut with an ellipsis and keeps the whole title on hover', async () => {
    const value = `${'a'.repeat(40)} ${'b'.repeat(120)}`;
    const frames = [{ function: 'f', filename: 'f.js', lineno: 1, colno: 2, in_app: true }];
    const id = await sendEvent(t, node, {
      platform: 'node',
      exception: { values: [{ type: 'TypeError', value, stacktrace: { frames } }] },
    });
    const e = await detail(node, id);
    const full = `TypeError: ${value}`;
    expect(e.title).toBe(full.slice(0, 100));
    expect(await pageOf(node, e.id)).toContain(`<h1 title="${full}">${full.slice(0, 100)}…</h1>`);
    // The events list too.
    const list = await (await browser.request('/node/events')).text();
    expect(list).toContain(`<a class="title" href="/node/events/${e.id}" title="${full}">${full.slice(0, 100)}…</a>`);
    // A title that was not cut has neither.
    expect(list).toMatch(
      /<a class="title" href="\/node\/events\/\d+">TypeError: depcheck boom: cannot read foo of undefined<\/a>/,
    );
  });

  it('renders the XSS corpus as text in context lines, vars, threads, breadcrumbs, request, extra and the raw trace', async () => {
    const project = await createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug: 'xss', name: 'XSS' }, NOW);
    const e = await detail(project, await sendXssEvent(t, project));
    const html = await pageOf(project, e.id);
    for (const payload of XSS) expect(html, payload).not.toContain(payload);
    const parts: [string, string, string, number[]][] = [
      ['context lines', '<table class="ctx">', '</table>', [0, 1, 2, 3, 4]],
      ['vars', '<summary>Variables (2)</summary>', '</details>', [0, 2, 5]],
      ['threads', '<h3>Threads (1)</h3>', '<h3>Breadcrumbs</h3>', [0, 1, 2, 3, 4]],
      ['breadcrumbs', '<h3>Breadcrumbs</h3>', '</ol>', [0, 1, 2, 3, 4, 5]],
      ['request', '<h3>Request</h3>', '<h3>Extra</h3>', [0, 1, 2, 3, 4, 5]],
      ['extra', '<h3>Extra</h3>', '</table>', [0, 3]],
      ['raw trace', '<summary>Raw stack trace</summary>', '</details>', [0, 1, 2, 3, 4]],
      ['collapsed frames', '<li class="lib-run">', '</details>', [2, 4]],
    ];
    for (const [name, from, to, which] of parts) {
      const part = section(html, from, to);
      for (const i of which) expect(part, `${name}: ${XSS[i]}`).toContain(escapeHtml(XSS[i]));
    }
  });

  it('answers an event of another project with 404 and an unknown one too', async () => {
    const e = await detail(java, javaIds[0]);
    expect((await browser.request(`/py/events/${e.id}`)).status).toBe(404);
    expect((await t.api(`/api/projects/py/events/${e.id}`)).status).toBe(404);
  });
});
