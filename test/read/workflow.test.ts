// The issue workflow: PATCH with each of the five statuses (resolved keeps the
// release it was resolved in, unresolved clears it), bulk updates, 400/404s, the
// /issues/bulk route never taken for a fingerprint, and a resolved issue turning
// into a regression that the overview counts in its window; every status change
// (not a repeat of the same status) is recorded in issue_changes, and a manual
// regression counts in the overview too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import {
  DAY,
  GROUPS,
  HOUR,
  NOW,
  createProject,
  getJson,
  iso,
  newEventId,
  sendEvents,
  type EventSpec,
  type TestProject,
} from './support.js';

describe.each(dialects)('issue workflow on %s', (dialect) => {
  let t: TestServer;
  let clock: ManualClock;
  let p: TestProject;
  const fp = new Map<string, string>();

  const spec = (group: (typeof GROUPS)[number], timestamp: number, release: string): EventSpec => ({
    eventId: newEventId(),
    group,
    timestamp,
    release,
    environment: 'production',
    userId: 'u1',
    deviceModel: null,
    deviceId: null,
    osName: 'iOS',
    osVersion: '17.4',
    screen: 'Cart',
    tags: {},
  });

  beforeAll(async () => {
    clock = new ManualClock(NOW - 3 * DAY);
    t = await startTestServer(dialect, { clock, env: { RATE_LIMIT: '0' } });
    p = await createProject(t);
    const sent = GROUPS.slice(0, 4).map((g, i) => spec(g, NOW - 3 * DAY - (i + 1) * HOUR, 'app@1.0.0'));
    await sendEvents(t, p, sent);
    for (const e of sent)
      fp.set(e.group.key, (await getJson(t, `/api/projects/${p.slug}/events/${e.eventId}`)).body.fingerprint);
    clock.set(NOW);
  });

  afterAll(async () => {
    await t?.close();
  });

  const url = (path: string) => `/api/projects/${p.slug}${path}`;
  /** The issue_changes rows of an issue, oldest first. */
  const changes = async (fingerprint: string) =>
    (
      await t.deps.store.db
        .selectFrom('issue_changes')
        .innerJoin('issues', 'issues.id', 'issue_changes.issue_id')
        .select(['issue_changes.kind', 'issue_changes.at', 'issue_changes.release', 'issue_changes.project_id'])
        .where('issues.fingerprint', '=', fingerprint)
        .orderBy('issue_changes.id')
        .execute()
    ).map((r) => ({ kind: r.kind, at: Number(r.at), release: r.release, project_id: Number(r.project_id) }));
  const patch = (fingerprint: string, body: unknown) =>
    t.api(url(`/issues/${fingerprint}`), {
      method: 'PATCH',
      body: typeof body === 'string' ? body : JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });

  it('sets each status with PATCH and answers with the issue', async () => {
    const f = fp.get('cart')!;
    const before = (await getJson(t, url(`/issues/${f}`))).body;
    expect(before.resolved_release).toBeNull();
    // Each status, and the resolution release it must leave: resolved sets it, unresolved
    // clears it, the others keep what was there.
    const steps = [
      ['triaged', null],
      ['resolved', 'app@1.0.0'],
      ['ignored', 'app@1.0.0'],
      ['regression', 'app@1.0.0'],
      ['unresolved', null],
      ['resolved', 'app@1.0.0'],
      ['unresolved', null],
      ['unresolved', null], // no change: nothing recorded
    ] as const;
    for (const [i, [status, resolvedRelease]] of steps.entries()) {
      clock.set(NOW + (i + 1) * 60_000);
      const res = await patch(f, { status });
      expect(res.status).toBe(200);
      const issue = await res.json();
      const { timeline, breakdown, latest_event_id, oldest_event_id, from, to, ...plain } = before;
      expect(issue, `step ${i + 1}`).toEqual({
        ...plain,
        status,
        resolved_release: resolvedRelease,
        updated_at: iso(NOW + (i + 1) * 60_000),
      });
      expect((await getJson(t, url(`/issues/${f}`))).body.status).toBe(status);
    }
    // Every change of status is recorded, at the time of the PATCH, with the issue's last release.
    const recorded = steps
      .slice(0, 7)
      .map(([kind], i) => ({ kind, at: NOW + (i + 1) * 60_000, release: 'app@1.0.0', project_id: p.id }));
    expect(await changes(f)).toEqual([
      { kind: 'new_issue', at: NOW - 3 * DAY, release: 'app@1.0.0', project_id: p.id },
      ...recorded,
    ]);
  });

  it('refuses bad statuses and bodies with 400 and unknown issues or projects with 404', async () => {
    const f = fp.get('cart')!;
    for (const body of [{ status: 'closed' }, { status: 'RESOLVED' }, {}, { status: 1 }, [], 'not json', '']) {
      const res = await patch(f, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(Object.keys(await res.json())).toEqual(['error']);
    }
    const unknown = await patch('ffffffffffffffffffffffffffffffff', { status: 'resolved' });
    expect(unknown.status).toBe(404);
    expect((await unknown.json()).error).toMatch(/not found/);
    const noProject = await t.api('/api/projects/no-such-project/issues/abc', {
      method: 'PATCH',
      json: { status: 'resolved' },
    });
    expect(noProject.status).toBe(404);
    expect((await getJson(t, url(`/issues/${f}`))).body.status).toBe('unresolved');
  });

  it('updates many issues with bulk and counts only the known ones', async () => {
    const fps = [fp.get('cart')!, fp.get('db')!, 'ffffffffffffffffffffffffffffffff'];
    clock.set(NOW + HOUR);
    const res = await t.api(url('/issues/bulk'), { method: 'POST', json: { fingerprints: fps, status: 'ignored' } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ updated: 2, status: 'ignored' });
    // One change row per issue whose status changed (both were unresolved).
    for (const f of fps.slice(0, 2))
      expect((await changes(f)).at(-1)).toEqual({
        kind: 'ignored',
        at: NOW + HOUR,
        release: 'app@1.0.0',
        project_id: p.id,
      });
    const dbChanges = (await changes(fps[1])).length;
    const list = (await getJson(t, url('/issues?status=ignored'))).body;
    expect(list.total).toBe(2);
    expect(new Set(list.issues.map((i: any) => i.fingerprint))).toEqual(new Set(fps.slice(0, 2)));
    for (const i of list.issues) expect(i.updated_at).toBe(iso(NOW + HOUR));

    const resolved = await t.api(url('/issues/bulk'), {
      method: 'POST',
      json: { fingerprints: [fp.get('db'), fp.get('db')], status: 'resolved' },
    });
    expect(await resolved.json()).toEqual({ updated: 1, status: 'resolved' });
    expect((await getJson(t, url(`/issues/${fp.get('db')}`))).body.resolved_release).toBe('app@1.0.0');
    expect((await changes(fps[1])).slice(dbChanges)).toEqual([
      { kind: 'resolved', at: NOW + HOUR, release: 'app@1.0.0', project_id: p.id },
    ]);
    // Setting the status an issue already has records nothing.
    await t.api(url('/issues/bulk'), { method: 'POST', json: { fingerprints: [fp.get('db')], status: 'resolved' } });
    expect(await changes(fps[1])).toHaveLength(dbChanges + 1);
    expect(
      await (
        await t.api(url('/issues/bulk'), { method: 'POST', json: { fingerprints: [], status: 'triaged' } })
      ).json(),
    ).toEqual({
      updated: 0,
      status: 'triaged',
    });

    for (const body of [
      { fingerprints: fps, status: 'done' },
      { fingerprints: 'x', status: 'ignored' },
      { fingerprints: [1], status: 'ignored' },
      { status: 'ignored' },
    ]) {
      const bad = await t.api(url('/issues/bulk'), { method: 'POST', json: body });
      expect(bad.status, JSON.stringify(body)).toBe(400);
    }
    // "bulk" is never read as a fingerprint.
    for (const method of ['GET', 'PATCH', 'DELETE']) {
      const res = await t.api(url('/issues/bulk'), {
        method,
        json: method === 'GET' ? undefined : { status: 'ignored' },
      });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('POST');
    }
    // Nothing changed: cart is still the only ignored issue (db was resolved above).
    expect((await getJson(t, url('/issues?status=ignored'))).body.issues.map((i: any) => i.fingerprint)).toEqual([
      fp.get('cart'),
    ]);
    expect(
      (
        await t.api('/api/projects/no-such-project/issues/bulk', {
          method: 'POST',
          json: { fingerprints: [], status: 'ignored' },
        })
      ).status,
    ).toBe(404);
  });

  it('counts a resolved issue that recurs on a new release as a regression in the overview window', async () => {
    const f = fp.get('unhandled')!;
    clock.set(NOW + 2 * HOUR);
    expect((await patch(f, { status: 'resolved' })).status).toBe(200);
    const before = (await getJson(t, url('/overview?days=1'))).body;
    // The first test set cart to regression by hand (at NOW + 4 min): a manual regression counts.
    expect(before.regressions).toBe(1);

    clock.set(NOW + 3 * HOUR);
    await sendEvents(t, p, [spec(GROUPS[3], NOW + 3 * HOUR - 1000, 'app@1.1.0')]);
    // The change is recorded at the receive time; a window ending "now" excludes that very millisecond.
    clock.advance(1000);
    const issue = (await getJson(t, url(`/issues/${f}`))).body;
    expect(issue.status).toBe('regression');
    expect(issue.event_count).toBe(2);
    expect(issue.last_release).toBe('app@1.1.0');
    const after = (await getJson(t, url('/overview?days=1'))).body;
    expect(after.regressions).toBe(2);
    expect(after.new_issues).toBe(0);
    expect((await getJson(t, url(`/overview?from=${iso(NOW - 10 * DAY)}&to=${iso(NOW)}`))).body.regressions).toBe(0);
    expect((await getJson(t, url('/issues?status=regression'))).body.issues.map((i: any) => i.fingerprint)).toEqual([
      f,
    ]);

    // An ignored issue stays ignored when events arrive; its counts still grow.
    const ignored = fp.get('cart')!;
    await sendEvents(t, p, [spec(GROUPS[0], NOW + 3 * HOUR - 500, 'app@1.2.0')]);
    const cart = (await getJson(t, url(`/issues/${ignored}`))).body;
    expect(cart.status).toBe('ignored');
    expect(cart.event_count).toBe(2);
  });
});
