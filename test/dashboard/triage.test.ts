// The dashboard's triage (docs/api.md "Issue activity", "Comments", "Issue search") on
// each database: comments from the issue page's form render as text (the XSS corpus),
// the timeline shows the snooze the page's form asked for and who did it, a comment can
// be deleted, and the issues list's search box takes the search syntax (a bad token is
// a 400 page naming it).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, type TestServer } from '../helpers/server.js';
import { API_KEY, Client, XSS, seedDemo, sendXssEvent, startDashboardServer } from './fixture.js';

const escapeHtml = (s: string) =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

describe.each(dialects)('dashboard triage on %s', (dialect) => {
  let t: TestServer;
  let demo: ProjectRow;
  let fingerprint: string;

  beforeAll(async () => {
    t = await startDashboardServer(dialect);
    demo = await seedDemo(t);
    const id = await sendXssEvent(t, demo);
    fingerprint = (await (await t.api(`/api/projects/demo/events/${id}`)).json()).fingerprint;
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('adds comments from the issue page and renders them, and the timeline, as text', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const path = `/demo/issues/${fingerprint}`;
    const csrf = await c.csrf(path);
    const text = `Reproduced.\n${XSS.join('\n')}`;
    const added = await c.post(`${path}/comments`, { _csrf: csrf, text });
    expect(added.status).toBe(303);
    expect(added.headers.get('location')).toContain('#activity');
    const snoozed = await c.post(`${path}/status`, { _csrf: csrf, status: 'ignored', snooze: 'count:10' });
    expect(snoozed.status).toBe(303);
    const page = await (await c.request(path)).text();
    for (const payload of XSS) {
      expect(page, payload).not.toContain(payload);
      expect(page, payload).toContain(escapeHtml(payload));
    }
    expect(page).toContain('<h2>Activity</h2>');
    expect(page).toMatch(/status unresolved → <b>ignored<\/b> until 10 more events/);
    expect(page).toContain('Snoozed until 10 more events');
    // The signed-in API key is the actor.
    expect(page).toMatch(/api key [0-9a-f]{8}/);

    const { activity } = await (await t.api(`/api/projects/demo/issues/${fingerprint}/activity`)).json();
    const comment = activity.find((e: any) => e.type === 'comment');
    expect(comment.data.text).toBe(text);
    expect(activity.at(-1)).toMatchObject({
      type: 'status',
      data: { from: 'unresolved', to: 'ignored', ignore_count: 10 },
    });

    expect((await c.post(`${path}/comments`, { _csrf: csrf, text: 'x'.repeat(10_001) })).status).toBe(400);
    const deleted = await c.post(`${path}/comments/${comment.id}/delete`, { _csrf: csrf });
    expect(deleted.status).toBe(303);
    const after = (await (await t.api(`/api/projects/demo/issues/${fingerprint}/activity`)).json()).activity;
    expect(after.some((e: any) => e.type === 'comment')).toBe(false);
  });

  it('takes the search syntax in the issues list, and names a bad token', async () => {
    const c = new Client(t.url);
    await c.signIn(API_KEY);
    const ok = await c.request(`/demo/issues?q=${encodeURIComponent('is:ignored level:error')}&days=30`);
    expect(ok.status).toBe(200);
    const html = await ok.text();
    expect(html).toContain(fingerprint);
    expect(html).toContain('value="is:ignored level:error"');
    const env = await c.request(`/demo/issues?environment=nowhere&days=30`);
    expect(await env.text()).toContain('No issues match.');
    const bad = await c.request(`/demo/issues?q=${encodeURIComponent('is:open')}`);
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain('unknown search token &quot;is:open&quot;');
  });
  it('assigns an issue from its page to a user by email, lists it under "Assigned to me", and refuses an unknown user', async () => {
    // The last test of the file: once a user exists, people sign in with email and password.
    const user = await (
      await t.api('/api/users', {
        method: 'POST',
        json: { email: 'dana@example.com', name: '<i>Dana</i>', role: 'member', password: 'correct horse battery' },
      })
    ).json();
    expect(user.id).toBeGreaterThan(0);
    const c = new Client(t.url);
    expect(
      (await c.post('/login', { email: 'dana@example.com', password: 'correct horse battery', next: '/' })).status,
    ).toBe(303);
    const path = `/demo/issues/${fingerprint}`;
    const csrf = await c.csrf(path);
    const res = await c.post(`${path}/assign`, { _csrf: csrf, assignee: 'Dana@Example.com' });
    expect(res.status).toBe(303);
    const page = await (await c.request(path)).text();
    expect(page).toContain('Assigned to <b>&lt;i&gt;Dana&lt;/i&gt;</b> (dana@example.com)');
    const mine = await (await c.request('/demo/issues?assignee=me&days=30')).text();
    expect(mine).toContain(fingerprint);
    expect(mine).toContain('Assigned to me');
    expect((await c.post(`${path}/assign`, { _csrf: csrf, assignee: 'nobody@example.com' })).status).toBe(400);
    const unassigned = await c.post(`${path}/assign`, { _csrf: csrf, assignee: '' });
    expect(unassigned.status).toBe(303);
    expect(await (await c.request(path)).text()).toContain('Unassigned');
    expect(await (await c.request('/demo/issues?assignee=me&days=30')).text()).toContain('No issues match.');
    const { activity } = await (await t.api(`/api/projects/demo/issues/${fingerprint}/activity`)).json();
    expect(
      activity.filter((e: any) => e.type === 'assigned').map((e: any) => [e.actor, e.data.assignee?.email ?? null]),
    ).toEqual([
      ['dana@example.com', 'dana@example.com'],
      ['dana@example.com', null],
    ]);
  });
});
