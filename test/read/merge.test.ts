// Merging issues (docs/api.md "Merging issues") on each database, through the real
// routes: the target takes the others' counts, users, hourly buckets, releases and
// events; totals elsewhere (overview, release health) do not move; a later event of a
// merged fingerprint counts in the target; GET of a merged fingerprint answers the
// target with `merged_into`; bad requests (another project's issue too) are 400/404 and
// change nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, makeProject, post, rowCounts, sessionUpdate } from '../ingest/helpers.js';

const HOUR = 3_600_000;

async function send(t: TestServer, project: ProjectRow, events: Record<string, unknown>[]): Promise<void> {
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

async function json(
  t: TestServer,
  path: string,
  init?: Parameters<TestServer['api']>[1],
): Promise<{ status: number; body: any }> {
  const res = await t.api(path, init);
  return { status: res.status, body: await res.json() };
}

describe.each(dialects)('issue merge on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('adds counts, users, aggregates and events of the others to the target, and routes later events there', async () => {
    const project = await makeProject(t);
    const now = t.clock.now();
    // Ten minutes into an hour five hours ago, so the events fall into the hours named below.
    const base = Math.floor(now / HOUR) * HOUR - 5 * HOUR + 600_000;
    // Three issues (different functions): a in hours 0 and 1, b in hours 1 and 2, c in hour 3.
    await send(t, project, [
      errorEvent({ timestamp: base, fn: 'a', user: 'u1', release: 'r1' }),
      errorEvent({ timestamp: base + HOUR, fn: 'a', user: 'u2', release: 'r1' }),
      errorEvent({ timestamp: base + HOUR + 60_000, fn: 'b', user: 'u2', release: 'r2' }),
      errorEvent({ timestamp: base + 2 * HOUR, fn: 'b', user: 'u3', release: 'r2', value: 'later' }),
      errorEvent({ timestamp: base + 3 * HOUR, fn: 'c', release: 'r3' }),
    ]);
    const list = (await json(t, `/api/projects/${project.slug}/issues?sort=first_seen`)).body.issues as any[];
    expect(list).toHaveLength(3);
    const byFirst = [...list].sort((x, y) => x.first_seen.localeCompare(y.first_seen));
    const [a, b, c] = byFirst;
    // Release health: a crashed and a healthy session on r1.
    const sessions = [
      sessionUpdate({ started: base, status: 'crashed', errors: 1, release: 'r1' }),
      sessionUpdate({ started: base, status: 'exited', release: 'r1' }),
    ];
    expect(
      (
        await post(
          t,
          project,
          envelope(
            {},
            sessions.map((payload) => ({ type: 'session', payload })),
          ),
        )
      ).status,
    ).toBe(200);
    const overviewBefore = (await json(t, `/api/projects/${project.slug}/overview`)).body;
    const releasesBefore = (await json(t, `/api/projects/${project.slug}/releases`)).body;
    // Every breakdown's total over the three issues, per key.
    const breakdownTotals = async (fingerprints: string[]) => {
      const totals: Record<string, number> = {};
      for (const f of fingerprints) {
        const detail = (await json(t, `/api/projects/${project.slug}/issues/${f}?days=1`)).body;
        for (const [key, items] of Object.entries(detail.breakdown as Record<string, { count: number }[]>))
          totals[key] = (totals[key] ?? 0) + items.reduce((n, i) => n + i.count, 0);
      }
      return totals;
    };
    const totalsBefore = await breakdownTotals([a.fingerprint, b.fingerprint, c.fingerprint]);

    const merged = await json(t, `/api/projects/${project.slug}/issues/merge`, {
      method: 'POST',
      json: { fingerprints: [b.fingerprint, c.fingerprint], into: a.fingerprint },
    });
    expect(merged.status, JSON.stringify(merged.body)).toBe(200);
    expect(merged.body).toMatchObject({
      fingerprint: a.fingerprint,
      event_count: 5,
      stored_count: 5,
      users: 3,
      merged: [b.fingerprint, c.fingerprint],
    });
    // First from a, latest from c.
    expect(merged.body).toMatchObject({
      first_seen: a.first_seen,
      first_release: 'r1',
      last_seen: c.last_seen,
      last_release: 'r3',
      title: c.title,
      location: c.location,
    });

    const after = (await json(t, `/api/projects/${project.slug}/issues`)).body;
    expect(after.issues.map((i: any) => i.fingerprint)).toEqual([a.fingerprint]);
    const detail = (await json(t, `/api/projects/${project.slug}/issues/${a.fingerprint}?days=1`)).body;
    expect(detail.merged_into).toBeUndefined();
    const hours = detail.timeline.filter((h: any) => h.events > 0).map((h: any) => h.events);
    expect(hours).toEqual([1, 2, 1, 1]);
    expect(detail.breakdown.release).toEqual([
      { value: 'r1', count: 2 },
      { value: 'r2', count: 2 },
      { value: 'r3', count: 1 },
    ]);
    const events = (await json(t, `/api/projects/${project.slug}/events?fingerprint=${a.fingerprint}&days=1`)).body
      .events as any[];
    expect(events).toHaveLength(5);
    // Event totals outside the issues do not move; the merged issues are one issue now.
    expect((await json(t, `/api/projects/${project.slug}/overview`)).body).toEqual({
      ...overviewBefore,
      new_issues: 1,
    });
    const releasesAfter = (await json(t, `/api/projects/${project.slug}/releases`)).body;
    expect(releasesAfter.releases.map((r: any) => [r.release, r.events])).toEqual(
      releasesBefore.releases.map((r: any) => [r.release, r.events]),
    );
    // Release health and everything else per release but the count of issues new in it.
    const withoutNewIssues = (body: any) => body.releases.map(({ new_issues: _n, ...r }: any) => r);
    expect(withoutNewIssues(releasesAfter)).toEqual(withoutNewIssues(releasesBefore));
    expect(releasesAfter.releases.find((r: any) => r.release === 'r1')).toMatchObject({
      sessions: { total: 2, crashed: 1 },
      crash_free_rate: 0.5,
    });
    expect(await breakdownTotals([a.fingerprint])).toEqual(totalsBefore);

    // A merged fingerprint answers the target, naming it.
    const gone = await json(t, `/api/projects/${project.slug}/issues/${b.fingerprint}?days=1`);
    expect(gone.status).toBe(200);
    expect(gone.body).toMatchObject({ fingerprint: a.fingerprint, merged_into: a.fingerprint, event_count: 5 });
    const eventsOfMerged = (await json(t, `/api/projects/${project.slug}/events?fingerprint=${c.fingerprint}&days=1`))
      .body.events as any[];
    expect(eventsOfMerged).toHaveLength(5);

    // A later event of a merged fingerprint counts in the target; a new user too.
    await send(t, project, [errorEvent({ timestamp: now - 60_000, fn: 'b', user: 'u4', release: 'r2' })]);
    const later = (await json(t, `/api/projects/${project.slug}/issues`)).body;
    expect(later.issues).toHaveLength(1);
    expect(later.issues[0]).toMatchObject({ fingerprint: a.fingerprint, event_count: 6, users: 4, last_release: 'r2' });
    const newest = (await json(t, `/api/projects/${project.slug}/events?fingerprint=${a.fingerprint}&days=1`)).body
      .events as any[];
    expect(newest).toHaveLength(6);
    expect(newest.every((e) => e.fingerprint === undefined || e.fingerprint === a.fingerprint)).toBe(true);

    // Merged again into another issue: the fingerprints merged before follow.
    await send(t, project, [errorEvent({ timestamp: now - 30_000, fn: 'd' })]);
    const d = (await json(t, `/api/projects/${project.slug}/issues`)).body.issues.find(
      (i: any) => i.fingerprint !== a.fingerprint,
    );
    expect(
      (
        await json(t, `/api/projects/${project.slug}/issues/merge`, {
          method: 'POST',
          json: { fingerprints: [a.fingerprint], into: d.fingerprint },
        })
      ).status,
    ).toBe(200);
    await send(t, project, [errorEvent({ timestamp: now - 20_000, fn: 'c' })]);
    const final = (await json(t, `/api/projects/${project.slug}/issues`)).body;
    expect(final.issues.map((i: any) => [i.fingerprint, i.event_count])).toEqual([[d.fingerprint, 8]]);
    expect((await json(t, `/api/projects/${project.slug}/issues/${b.fingerprint}`)).body.merged_into).toBe(
      d.fingerprint,
    );

    // The target's history has a `merged` entry per merge request.
    const changes = await t.deps.store.db
      .selectFrom('issue_changes')
      .select(['kind'])
      .where('project_id', '=', project.id)
      .where('kind', '=', 'merged')
      .execute();
    expect(changes).toHaveLength(2);
  });

  it('refuses bad requests with 400 or 404 and changes nothing', async () => {
    const project = await makeProject(t);
    const now = t.clock.now();
    await send(t, project, [
      errorEvent({ timestamp: now - HOUR, fn: 'x' }),
      errorEvent({ timestamp: now - HOUR, fn: 'y' }),
    ]);
    const [x, y] = (await json(t, `/api/projects/${project.slug}/issues`)).body.issues as any[];
    const other = await makeProject(t);
    await send(t, other, [errorEvent({ timestamp: now - HOUR, fn: 'z' })]);
    const [z] = (await json(t, `/api/projects/${other.slug}/issues`)).body.issues as any[];
    const before = await rowCounts(t);
    const merge = (body: unknown) =>
      json(t, `/api/projects/${project.slug}/issues/merge`, { method: 'POST', json: body });

    expect(await merge({ fingerprints: [], into: x.fingerprint })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/at least one/) },
    });
    expect(await merge({ fingerprints: [x.fingerprint, y.fingerprint], into: x.fingerprint })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/into itself/) },
    });
    expect(await merge({ fingerprints: [y.fingerprint] })).toMatchObject({ status: 400 });
    expect(await merge({ fingerprints: y.fingerprint, into: x.fingerprint })).toMatchObject({ status: 400 });
    expect(await merge({ fingerprints: [1], into: x.fingerprint })).toMatchObject({ status: 400 });
    expect(await merge([y.fingerprint])).toMatchObject({ status: 400 });
    expect(
      await merge({ fingerprints: Array.from({ length: 21 }, (_, i) => `f${i}`), into: x.fingerprint }),
    ).toMatchObject({ status: 400 });
    const unknown = await merge({ fingerprints: [y.fingerprint, '0'.repeat(32)], into: x.fingerprint });
    expect(unknown).toMatchObject({ status: 404, body: { error: expect.stringContaining('0'.repeat(32)) } });
    // Issues merge only within one project: another project's issue is a 400 that says so.
    expect(await merge({ fingerprints: [z.fingerprint], into: x.fingerprint })).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/another project/) },
    });
    expect(await merge({ fingerprints: [y.fingerprint], into: z.fingerprint })).toMatchObject({ status: 400 });
    const bad = await t.api(`/api/projects/${project.slug}/issues/merge`, {
      method: 'POST',
      body: '{"fingerprints": [',
      headers: { 'content-type': 'application/json' },
    });
    expect(bad.status).toBe(400);
    expect((await t.api(`/api/projects/${project.slug}/issues/merge`)).status).toBe(405);
    expect(
      (
        await t.api(`/api/projects/nope/issues/merge`, {
          method: 'POST',
          json: { fingerprints: [y.fingerprint], into: x.fingerprint },
        })
      ).status,
    ).toBe(404);

    expect(await rowCounts(t)).toEqual(before);
    expect((await json(t, `/api/projects/${project.slug}/issues`)).body.issues).toHaveLength(2);
    expect((await json(t, `/api/projects/${project.slug}/issues/${'0'.repeat(32)}`)).status).toBe(404);
  });
});
