// Triage on each database, through the real routes (docs/api.md "Issue activity",
// "Comments", "Snoozing"): the activity timeline with the service's own changes (first
// seen, regression, snooze ended: no actor) and people's (status, comment, merge, with
// the API key that did it), comments with their limits and the author-or-admin rule,
// snoozes by event count, by users and by time ending exactly when met, and bad input
// answered 400 with nothing changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { endTimeSnoozes } from '../../src/triage/snooze.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, makeProject, post } from '../ingest/helpers.js';

const NOW = Date.UTC(2026, 2, 10, 14, 25, 30, 250);
const MINUTE = 60_000;
const API_KEY = 'triage-test-key-0123456789abcdef';

describe.each(dialects)('triage on %s', (dialect) => {
  let t: TestServer;
  let clock: ManualClock;
  let n = 0;

  beforeAll(async () => {
    clock = new ManualClock(NOW);
    t = await startTestServer(dialect, { clock, env: { RATE_LIMIT: '0', API_KEYS: API_KEY } });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** Sends events of function `fn` (one issue per function), from the given users, at the clock's time. */
  async function send(
    project: ProjectRow,
    fn: string,
    users: (string | undefined)[],
    release = 'app@1.0.0',
  ): Promise<void> {
    const events = users.map((user) =>
      errorEvent({ timestamp: clock.now() - 1000 + n++, fn, value: fn, user, release }),
    );
    const res = await post(
      t,
      project,
      envelope(
        {},
        events.map((payload) => ({ type: 'event', payload })),
      ),
    );
    expect(res.status, await res.clone().text()).toBe(200);
  }
  async function json(path: string, init?: Parameters<TestServer['api']>[1]): Promise<{ status: number; body: any }> {
    const res = await t.api(path, init);
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  }
  async function issueOf(project: ProjectRow, fn: string): Promise<any> {
    const list = (await json(`/api/projects/${project.slug}/issues?days=1`)).body.issues as any[];
    const found = list.find((i) => i.title === `TypeError: ${fn}`);
    expect(found, fn).toBeDefined();
    return found;
  }
  const issueUrl = (project: ProjectRow, fp: string, rest = '') => `/api/projects/${project.slug}/issues/${fp}${rest}`;
  const activity = async (project: ProjectRow, fp: string) =>
    (await json(issueUrl(project, fp, '/activity'))).body.activity as any[];
  const keyLabel = async () => {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(API_KEY)));
    return `api key ${Array.from(digest.subarray(0, 4), (b) => b.toString(16).padStart(2, '0')).join('')}`;
  };

  it('lists the activity oldest first: first seen, status changes with who made them, a regression, comments and a merge', async () => {
    const project = await makeProject(t);
    await send(project, 'alpha', ['u1']);
    const { fingerprint: fp } = await issueOf(project, 'alpha');
    clock.set(NOW + MINUTE);
    expect((await json(issueUrl(project, fp), { method: 'PATCH', json: { status: 'resolved' } })).status).toBe(200);
    clock.set(NOW + 2 * MINUTE);
    // A release the issue had not been seen on: ingest turns it into a regression.
    await send(project, 'alpha', ['u1'], 'app@2.0.0');
    clock.set(NOW + 3 * MINUTE);
    const comment = await json(issueUrl(project, fp, '/comments'), {
      method: 'POST',
      json: { text: 'Looking into it' },
    });
    expect(comment.status).toBe(201);
    await send(project, 'beta', ['u2']);
    const other = await issueOf(project, 'beta');
    clock.set(NOW + 4 * MINUTE);
    expect(
      (
        await json(`/api/projects/${project.slug}/issues/merge`, {
          method: 'POST',
          json: { fingerprints: [other.fingerprint], into: fp },
        })
      ).status,
    ).toBe(200);

    const label = await keyLabel();
    const entries = await activity(project, fp);
    expect(entries.map((e) => [e.type, e.actor, e.data])).toEqual([
      ['first_seen', null, { release: 'app@1.0.0' }],
      // beta's first_seen moved here with the merge (oldest first: at NOW + 3 min).
      ['status', label, { from: 'unresolved', to: 'resolved' }],
      ['status', null, { from: 'resolved', to: 'regression', reason: 'regression', release: 'app@2.0.0' }],
      ['comment', label, { text: 'Looking into it' }],
      ['first_seen', null, { release: 'app@1.0.0' }],
      ['merged', label, { fingerprints: [other.fingerprint] }],
    ]);
    expect(entries.map((e) => e.created_at)).toEqual([...entries.map((e) => e.created_at)].sort());
    expect(entries[3]).toMatchObject({ id: comment.body.id, created_at: new Date(NOW + 3 * MINUTE).toISOString() });
    // The merged fingerprint answers the target's activity.
    expect((await json(issueUrl(project, other.fingerprint, '/activity'))).body).toMatchObject({
      merged_into: fp,
      activity: entries,
    });
    // PATCH of a merged fingerprint acts on the target and says so.
    const patched = await json(issueUrl(project, other.fingerprint), { method: 'PATCH', json: { status: 'triaged' } });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ fingerprint: fp, status: 'triaged', merged_into: fp });
    expect((await activity(project, fp)).at(-1)).toMatchObject({
      type: 'status',
      data: { from: 'regression', to: 'triaged' },
    });
    expect((await json(issueUrl(project, 'f'.repeat(32), '/activity'))).status).toBe(404);
  });

  it('edits and deletes comments; refuses empty or over-long text and unknown comments, changing nothing', async () => {
    const project = await makeProject(t);
    await send(project, 'gamma', ['u1']);
    const { fingerprint: fp } = await issueOf(project, 'gamma');
    const url = issueUrl(project, fp, '/comments');
    const longest = 'é'.repeat(10_000);
    const created = await json(url, { method: 'POST', json: { text: longest } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ type: 'comment', data: { text: longest } });
    const before = await activity(project, fp);

    for (const body of [{ text: 'x'.repeat(10_001) }, { text: '   ' }, { text: 42 }, {}, []]) {
      const res = await json(url, { method: 'POST', json: body });
      expect(res.status, JSON.stringify(body).slice(0, 40)).toBe(400);
      expect(res.body.error).toMatch(/text/);
    }
    expect(
      (await json(`${url}/${created.body.id}`, { method: 'PATCH', json: { text: 'y'.repeat(10_001) } })).status,
    ).toBe(400);
    expect(await activity(project, fp)).toEqual(before);

    clock.set(NOW + 10 * MINUTE);
    const edited = await json(`${url}/${created.body.id}`, { method: 'PATCH', json: { text: '<b>fixed</b> in 2.0' } });
    expect(edited.status).toBe(200);
    expect(edited.body).toMatchObject({
      id: created.body.id,
      created_at: created.body.created_at,
      data: { text: '<b>fixed</b> in 2.0', edited_at: new Date(NOW + 10 * MINUTE).toISOString() },
    });
    expect((await json(`${url}/999999999`, { method: 'PATCH', json: { text: 'x' } })).status).toBe(404);
    expect((await json(`${url}/nope`, { method: 'DELETE' })).status).toBe(404);
    // A status entry is no comment.
    const first = (await activity(project, fp))[0];
    expect((await json(`${url}/${first.id}`, { method: 'DELETE' })).status).toBe(404);
    expect((await json(`${url}/${created.body.id}`, { method: 'DELETE' })).status).toBe(204);
    expect((await activity(project, fp)).map((e) => e.type)).toEqual(['first_seen']);
  });

  it('ends a snooze by event count at the ingest commit that reaches it', async () => {
    const project = await makeProject(t);
    await send(project, 'delta', ['u1', 'u1']);
    const { fingerprint: fp } = await issueOf(project, 'delta');
    const snoozed = await json(issueUrl(project, fp), {
      method: 'PATCH',
      json: { status: 'ignored', ignore_count: 3 },
    });
    expect(snoozed.status).toBe(200);
    expect(snoozed.body).toMatchObject({ status: 'ignored', ignore_count: 3, ignore_until: null, ignore_users: null });
    await send(project, 'delta', ['u1', 'u1']);
    expect((await json(issueUrl(project, fp))).body).toMatchObject({ status: 'ignored', event_count: 4 });
    clock.set(NOW + 20 * MINUTE);
    await send(project, 'delta', ['u1']);
    const after = (await json(issueUrl(project, fp))).body;
    expect(after).toMatchObject({ status: 'unresolved', event_count: 5, ignore_count: null });
    expect((await activity(project, fp)).slice(-2).map((e) => [e.type, e.actor, e.data])).toEqual([
      ['status', await keyLabel(), { from: 'unresolved', to: 'ignored', ignore_count: 3 }],
      ['status', null, { from: 'ignored', to: 'unresolved', reason: 'snooze_ended' }],
    ]);
    // Once ended, more events change nothing.
    await send(project, 'delta', ['u1']);
    expect((await activity(project, fp)).length).toBe(3);
  });

  it('ends a snooze by users when that many new users have seen it, counting each user once', async () => {
    const project = await makeProject(t);
    await send(project, 'epsilon', ['u1', 'u2']);
    const { fingerprint: fp } = await issueOf(project, 'epsilon');
    expect(
      (await json(issueUrl(project, fp), { method: 'PATCH', json: { status: 'ignored', ignore_users: 2 } })).status,
    ).toBe(200);
    // Users it had before, and one new user twice: one more user.
    await send(project, 'epsilon', ['u1', 'u2', 'u3', 'u3', undefined]);
    expect((await json(issueUrl(project, fp))).body).toMatchObject({ status: 'ignored', users: 3, ignore_users: 2 });
    await send(project, 'epsilon', ['u3', 'u4']);
    expect((await json(issueUrl(project, fp))).body).toMatchObject({ status: 'unresolved', users: 4 });
    expect((await activity(project, fp)).at(-1)).toMatchObject({
      type: 'status',
      actor: null,
      data: { reason: 'snooze_ended' },
    });
  });

  it('ends a snooze by time through the periodic job, not before', async () => {
    const project = await makeProject(t);
    await send(project, 'zeta', ['u1']);
    const { fingerprint: fp } = await issueOf(project, 'zeta');
    const until = new Date(clock.now() + 60 * MINUTE).toISOString();
    const res = await json(issueUrl(project, fp), {
      method: 'PATCH',
      json: { status: 'ignored', ignore_until: until },
    });
    expect(res.body).toMatchObject({ status: 'ignored', ignore_until: until });
    clock.set(clock.now() + 59 * MINUTE);
    expect(await endTimeSnoozes(t.deps.store, clock.now())).toBe(0);
    expect((await json(issueUrl(project, fp))).body.status).toBe('ignored');
    clock.set(Date.parse(until));
    expect(await endTimeSnoozes(t.deps.store, clock.now())).toBeGreaterThanOrEqual(1);
    expect((await json(issueUrl(project, fp))).body).toMatchObject({ status: 'unresolved', ignore_until: null });
    expect((await activity(project, fp)).at(-1)).toMatchObject({
      type: 'status',
      actor: null,
      created_at: until,
      data: { from: 'ignored', to: 'unresolved', reason: 'snooze_ended' },
    });
    expect(await endTimeSnoozes(t.deps.store, clock.now())).toBe(0);
  });

  it('refuses a snooze with two conditions, a past time, a bad count or another status: 400, nothing changed', async () => {
    const project = await makeProject(t);
    await send(project, 'eta', ['u1']);
    const { fingerprint: fp } = await issueOf(project, 'eta');
    const before = (await json(issueUrl(project, fp))).body;
    const bad: [unknown, RegExp][] = [
      [{ status: 'ignored', ignore_count: 5, ignore_users: 2 }, /one condition/],
      [{ status: 'ignored', ignore_until: new Date(clock.now() - 1000).toISOString() }, /future/],
      [{ status: 'ignored', ignore_until: 'tomorrow' }, /RFC 3339/],
      [{ status: 'ignored', ignore_count: 0 }, /ignore_count/],
      [{ status: 'ignored', ignore_users: 1.5 }, /ignore_users/],
      [{ status: 'resolved', ignore_count: 5 }, /needs status "ignored"/],
    ];
    for (const [body, message] of bad) {
      const res = await json(issueUrl(project, fp), { method: 'PATCH', json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatch(message);
      const bulk = await json(`/api/projects/${project.slug}/issues/bulk`, {
        method: 'POST',
        json: { fingerprints: [fp], ...(body as object) },
      });
      expect(bulk.status).toBe(400);
    }
    expect((await json(issueUrl(project, fp))).body).toEqual(before);
    expect((await activity(project, fp)).length).toBe(1);
  });

  it('refuses merging across projects with 400', async () => {
    const a = await makeProject(t);
    const b = await makeProject(t);
    await send(a, 'theta', ['u1']);
    await send(b, 'iota', ['u1']);
    const ia = await issueOf(a, 'theta');
    const ib = await issueOf(b, 'iota');
    const res = await json(`/api/projects/${a.slug}/issues/merge`, {
      method: 'POST',
      json: { fingerprints: [ib.fingerprint], into: ia.fingerprint },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/another project/);
    expect((await json(issueUrl(b, ib.fingerprint))).body.event_count).toBe(1);
  });
  it('filters the list by environment within the window, searches with q, sorts by users; bad tokens are 400 naming them', async () => {
    const project = await makeProject(t);
    const at = clock.now();
    const event = (
      fn: string,
      environment: string,
      user: string,
      extra: Record<string, unknown> = {},
      timestamp = at - 1000,
    ) => ({
      ...errorEvent({ timestamp: timestamp + n++, fn, value: fn, user, release: 'app@1.0.0' }),
      environment,
      ...extra,
    });
    const events = [
      event('one', 'production', 'u1', { tags: { region: 'eu' } }),
      event('one', 'production', 'u2'),
      event('one', 'production', 'u3'),
      event('two', 'staging', 'u1', { level: 'warning' }),
      event('two', 'staging', 'u1', { release: 'app@2.0.0' }),
      // Three days old: outside a one-day window.
      event('three', 'production', 'u1', {}, at - 3 * 86_400_000),
      event('three', 'staging', 'ana@example.com', { user: { email: 'ana@example.com' } }),
    ];
    const res = await post(
      t,
      project,
      envelope(
        {},
        events.map((payload) => ({ type: 'event', payload })),
      ),
    );
    expect(res.status).toBe(200);
    const list = async (query: string) => {
      const r = await json(`/api/projects/${project.slug}/issues?${query}`);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (r.body.issues as any[]).map((i) => i.title.replace('TypeError: ', ''));
    };
    expect(await list('days=1&environment=production')).toEqual(['one']);
    expect(await list('days=7&environment=production&sort=events')).toEqual(['one', 'three']);
    expect(await list('days=1&environment=staging&sort=first_seen')).toEqual(['two', 'three']);
    expect(await list('days=1&environment=nowhere')).toEqual([]);
    expect((await json(`/api/projects/${project.slug}/issues?days=1&environment=production`)).body.total).toBe(1);
    expect(await list('days=7&sort=users')).toEqual(['one', 'three', 'two']);
    const q = (text: string, extra = 'days=7') => list(`${extra}&q=${encodeURIComponent(text)}&sort=users`);
    expect(await q('env:staging is:unresolved')).toEqual(['three', 'two']);
    expect(await q('environment:production level:error')).toEqual(['one', 'three']);
    expect(await q('release:app@2.0.0')).toEqual(['two']);
    expect(await q('first-release:app@1.0.0 user:u2')).toEqual(['one']);
    expect(await q('user:ana@example.com')).toEqual(['three']);
    expect(await q('region:eu')).toEqual(['one']);
    expect(await q('region:us')).toEqual([]);
    expect(await q('is:unassigned env:production')).toEqual(['one', 'three']);
    expect(await q('is:assigned')).toEqual([]);
    expect(await q('is:resolved')).toEqual([]);
    // Bare words are one text in the title or location.
    expect(await q('is:unresolved level:error "two"')).toEqual(['two']);
    expect(await list('days=7&assignee=none&sort=users')).toEqual(['one', 'three', 'two']);
    expect(await list('days=7&assignee=me')).toEqual([]);

    for (const [query, message] of [
      ['q=is:open', /unknown search token "is:open"/],
      ['q=level:loud', /unknown search token "level:loud"/],
      ['q=release:', /malformed search token "release:"/],
      ['q=%22open', /unterminated quote/],
      ['assignee=someone', /assignee must be me, none or a user's email/],
      ['sort=popularity', /sort/],
    ] as const) {
      const r = await json(`/api/projects/${project.slug}/issues?${query}`);
      expect(r.status, query).toBe(400);
      expect(r.body.error).toMatch(message);
    }
  });
  it('assigns enabled users by id or email (PATCH and bulk), filters by assignee, and refuses unknown or disabled users', async () => {
    const project = await makeProject(t);
    await send(project, 'kappa', ['u1']);
    await send(project, 'lambda', ['u1']);
    const k = await issueOf(project, 'kappa');
    const l = await issueOf(project, 'lambda');
    const ana = (
      await json('/api/users', {
        method: 'POST',
        json: {
          email: `ana-${project.slug}@example.com`,
          name: 'Ana',
          role: 'member',
          password: 'correct horse battery',
        },
      })
    ).body;
    const bo = (
      await json('/api/users', {
        method: 'POST',
        json: {
          email: `bo-${project.slug}@example.com`,
          name: 'Bo',
          role: 'member',
          password: 'correct horse battery',
        },
      })
    ).body;
    expect(ana.id).toBeGreaterThan(0);
    expect((await json(`/api/users/${bo.id}`, { method: 'PATCH', json: { disabled: true } })).status).toBe(200);

    const assigned = await json(issueUrl(project, k.fingerprint), {
      method: 'PATCH',
      json: { assignee: ana.email.toUpperCase() },
    });
    expect(assigned.status, JSON.stringify(assigned.body)).toBe(200);
    expect(assigned.body).toMatchObject({
      status: 'unresolved',
      assignee: { id: ana.id, email: ana.email, name: 'Ana' },
    });
    const label = await keyLabel();
    expect((await activity(project, k.fingerprint)).at(-1)).toMatchObject({
      type: 'assigned',
      actor: label,
      data: { assignee: { id: ana.id, email: ana.email, name: 'Ana' } },
    });

    const before = (await json(issueUrl(project, l.fingerprint))).body;
    for (const [body, message] of [
      [{ assignee: bo.id }, /disabled/],
      [{ assignee: 'nobody@example.com' }, /is no user/],
      [{ assignee: 999_999_999 }, /is no user/],
      [{ assignee: { id: 1 } }, /user id, a user’s email or null/],
      [{ assignee: ana.id, ignore_count: 3 }, /needs status "ignored"/],
    ] as const) {
      const res = await json(issueUrl(project, l.fingerprint), { method: 'PATCH', json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatch(message);
      expect(
        (
          await json(`/api/projects/${project.slug}/issues/bulk`, {
            method: 'POST',
            json: { fingerprints: [l.fingerprint], ...body },
          })
        ).status,
      ).toBe(400);
    }
    expect((await json(issueUrl(project, l.fingerprint))).body).toEqual(before);

    const bulk = await json(`/api/projects/${project.slug}/issues/bulk`, {
      method: 'POST',
      json: { fingerprints: [k.fingerprint, l.fingerprint], assignee: ana.id, status: 'triaged' },
    });
    expect(bulk.body).toMatchObject({ updated: 2, status: 'triaged', assignee: { id: ana.id } });
    // k had Ana already: only l records an assignment.
    expect((await activity(project, k.fingerprint)).filter((e) => e.type === 'assigned')).toHaveLength(1);
    expect((await activity(project, l.fingerprint)).filter((e) => e.type === 'assigned')).toHaveLength(1);

    const titles = async (query: string, init?: Parameters<TestServer['api']>[1]) =>
      (
        (await json(`/api/projects/${project.slug}/issues?days=1&sort=first_seen&${query}`, init)).body.issues as any[]
      ).map((i) => i.title.replace('TypeError: ', ''));
    expect(await titles(`assignee=${encodeURIComponent(ana.email)}`)).toEqual(['lambda', 'kappa']);
    expect(await titles(`q=${encodeURIComponent(`assigned:${ana.email} is:triaged`)}`)).toEqual(['lambda', 'kappa']);
    expect(
      (await json(issueUrl(project, k.fingerprint), { method: 'PATCH', json: { assignee: null } })).body.assignee,
    ).toBeNull();
    expect((await activity(project, k.fingerprint)).at(-1)).toMatchObject({
      type: 'assigned',
      data: { assignee: null },
    });
    expect(await titles('assignee=none')).toEqual(['kappa']);
    expect(await titles('q=is:assigned')).toEqual(['lambda']);
    expect(await titles('q=is:unassigned')).toEqual(['kappa']);
    // "me" is the user a personal token belongs to; an API key is nobody.
    const token = (await json('/api/tokens', { method: 'POST', json: { name: 'cli', user_id: ana.id } })).body.token;
    expect(await titles('assignee=me', { headers: { authorization: `Bearer ${token}` } })).toEqual(['lambda']);
    expect(await titles('q=assigned:me', { headers: { authorization: `Bearer ${token}` } })).toEqual(['lambda']);
    expect(await titles('assignee=me')).toEqual([]);
  });
});
