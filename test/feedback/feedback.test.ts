// User feedback through the real server on each database: sentry-cocoa's `user_report`
// item, the React Native feedback widget's `feedback` item (also before its event
// arrives), Sentry's user-feedback route, resends, bad input, cursor paging and the
// issue's feedback_count.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { runRetention } from '../../src/store/retention.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject, post } from '../ingest/helpers.js';
import { androidEvent, buildEnvelope, mobileFixture, newEventId } from '../attachments/mobile-envelopes.js';
import { emptyStore, exportText, importText } from '../transfer/support.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { Client } from '../dashboard/fixture.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

type FeedbackJson = {
  id: string;
  event_id: string | null;
  event: number | null;
  issue: string | null;
  name: string;
  email: string;
  comments: string;
  url: string | null;
  source: string;
};

const userReport = (eventId: string) =>
  JSON.parse(mobileFixture('cocoa-user-report.json').toString().replace('ASSOCIATED', eventId));
const widgetFeedback = (eventId: string | null) => {
  const f = JSON.parse(
    mobileFixture('react-native-feedback.json')
      .toString()
      .replace('ASSOCIATED', eventId ?? ''),
  );
  if (eventId === null) delete f.contexts.feedback.associated_event_id;
  f.event_id = newEventId();
  return f;
};

describe.each(dialects)('user feedback on %s', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: new ManualClock(NOW), env: { API_KEYS: 'feedback-key-0123456789' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  async function sendEvent(p: ProjectRow, id: string): Promise<string> {
    expect(
      (
        await post(
          t,
          p,
          buildEnvelope({ event_id: id }, [{ headers: { type: 'event' }, payload: androidEvent(id, NOW - 60_000) }]),
        )
      ).status,
    ).toBe(200);
    const event = (await (await t.api(`/api/projects/${p.slug}/events/${id}`)).json()) as {
      fingerprint: string;
      id: number;
    };
    return event.fingerprint;
  }

  async function feedbackOf(
    p: ProjectRow,
    query = '',
  ): Promise<{ feedback: FeedbackJson[]; next_cursor: string | null }> {
    const res = await t.api(`/api/projects/${p.slug}/feedback${query}`);
    expect(res.status).toBe(200);
    return res.json() as Promise<{ feedback: FeedbackJson[]; next_cursor: string | null }>;
  }

  const issueOf = async (p: ProjectRow, fp: string) =>
    (await (await t.api(`/api/projects/${p.slug}/issues/${fp}`)).json()) as { feedback_count: number };

  it('links a user_report to its event and issue, and counts it on the issue', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const fp = await sendEvent(p, id);
    const res = await post(
      t,
      p,
      buildEnvelope({ event_id: id, sdk: { name: 'sentry.cocoa', version: '8.36.0' } }, [
        { headers: { type: 'user_report' }, payload: userReport(id) },
      ]),
    );
    expect(res.status).toBe(200);
    const { feedback } = await feedbackOf(p);
    expect(feedback).toMatchObject([
      {
        event_id: id,
        issue: fp,
        name: 'Grace',
        email: 'grace@example.com',
        comments: 'App closed while paying.',
        source: 'user_report',
      },
    ]);
    expect(feedback[0].event).toEqual(expect.any(Number));
    expect((await issueOf(p, fp)).feedback_count).toBe(1);
    const list = (await (await t.api(`/api/projects/${p.slug}/issues`)).json()) as {
      issues: { fingerprint: string; feedback_count: number }[];
    };
    expect(list.issues.find((i) => i.fingerprint === fp)?.feedback_count).toBe(1);
    // The resend of the same envelope stores nothing twice.
    await post(t, p, buildEnvelope({ event_id: id }, [{ headers: { type: 'user_report' }, payload: userReport(id) }]));
    expect((await feedbackOf(p)).feedback).toHaveLength(1);
  });

  it('keeps widget feedback sent before its event and links it once the event arrives', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const fb = widgetFeedback(id);
    expect(
      (
        await post(
          t,
          p,
          buildEnvelope({ event_id: fb.event_id, sent_at: new Date(NOW).toISOString() }, [
            { headers: { type: 'feedback' }, payload: fb },
          ]),
        )
      ).status,
    ).toBe(200);
    let { feedback } = await feedbackOf(p);
    expect(feedback).toMatchObject([
      {
        event_id: id,
        event: null,
        issue: null,
        name: 'Ada',
        email: 'ada@example.com',
        url: 'app://checkout',
        source: 'feedback',
      },
    ]);
    const fp = await sendEvent(p, id);
    ({ feedback } = await feedbackOf(p));
    expect(feedback[0].issue).toBe(fp);
    expect((await issueOf(p, fp)).feedback_count).toBe(1);
    expect((await feedbackOf(p, `?issue=${fp}`)).feedback).toHaveLength(1);

    // Feedback about no event (the widget opened from a menu) is listed on its own.
    expect(
      (await post(t, p, buildEnvelope({}, [{ headers: { type: 'feedback' }, payload: widgetFeedback(null) }]))).status,
    ).toBe(200);
    ({ feedback } = await feedbackOf(p));
    expect(feedback.map((f) => f.event_id)).toEqual([null, id]);
    expect((await feedbackOf(p, `?issue=${fp}`)).feedback).toHaveLength(1);
  });

  it('takes Sentry user-feedback route bodies and refuses bad ones with a 400', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const fp = await sendEvent(p, id);
    const route = `/api/0/projects/acme/${p.slug}/user-feedback/`;
    const ok = await t.api(route, {
      method: 'POST',
      json: {
        event_id: id.replace(/^(.{8})(.{4})(.{4})(.{4})/, '$1-$2-$3-$4-'),
        name: 'Lin',
        email: 'lin@example.com',
        comments: 'Froze on launch',
      },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({
      eventID: id,
      name: 'Lin',
      email: 'lin@example.com',
      comments: 'Froze on launch',
      dateCreated: new Date(NOW).toISOString(),
    });
    expect((await issueOf(p, fp)).feedback_count).toBe(1);

    for (const [body, message] of [
      [{ event_id: id, name: 'x' }, /comments/],
      [{ event_id: 'nope', comments: 'x' }, /event_id/],
      [{ event_id: id, comments: '' }, /comments/],
      [{ event_id: id, comments: 'x', extra: 1 }, /extra/],
    ] as const) {
      const res = await t.api(route, { method: 'POST', json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(((await res.json()) as { error: string }).error).toMatch(message);
    }
    expect((await t.api(route, { method: 'POST', body: '{not json' })).status).toBe(400);
    expect(
      (
        await t.api(`/api/0/projects/acme/no-such-project/user-feedback/`, {
          method: 'POST',
          json: { event_id: id, comments: 'x' },
        })
      ).status,
    ).toBe(404);
    expect(
      (await fetch(`${t.url}${route}`, { method: 'POST', body: JSON.stringify({ event_id: id, comments: 'x' }) }))
        .status,
    ).toBe(401);
    // A malformed item is skipped; the rest of the envelope is kept.
    const bad = await post(
      t,
      p,
      buildEnvelope({ event_id: id }, [
        { headers: { type: 'user_report' }, payload: '{"comments":' },
        { headers: { type: 'feedback' }, payload: { contexts: {} } },
      ]),
    );
    expect(bad.status).toBe(200);
    expect((await feedbackOf(p)).feedback).toHaveLength(1);
  });

  it('pages by cursor, newest first, and refuses bad parameters', async () => {
    const p = await makeProject(t);
    for (let i = 0; i < 5; i++) {
      const fb = widgetFeedback(null);
      fb.contexts.feedback.message = `message ${i}`;
      expect((await post(t, p, buildEnvelope({}, [{ headers: { type: 'feedback' }, payload: fb }]))).status).toBe(200);
    }
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { feedback: FeedbackJson[]; next_cursor: string | null } = await feedbackOf(
        p,
        `?limit=2${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.feedback.length).toBeLessThanOrEqual(2);
      seen.push(...page.feedback.map((f) => f.comments));
      cursor = page.next_cursor;
    } while (cursor);
    expect(seen).toEqual(['message 4', 'message 3', 'message 2', 'message 1', 'message 0']);
    for (const q of ['?limit=0', '?limit=x', '?cursor=abc', '?other=1'])
      expect((await t.api(`/api/projects/${p.slug}/feedback${q}`)).status, q).toBe(400);
    expect((await t.api(`/api/projects/${p.slug}/feedback?issue=${'0'.repeat(32)}`)).status).toBe(404);
  });

  it('lists feedback on the dashboard, per project and on the issue page, as text', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    const fp = await sendEvent(p, id);
    const report = { ...userReport(id), comments: '<script>alert(1)</script> crashed', name: '<b>Eve</b>' };
    await post(t, p, buildEnvelope({ event_id: id }, [{ headers: { type: 'user_report' }, payload: report }]));
    const client = new Client(t.url);
    expect((await client.signIn('feedback-key-0123456789')).status).toBe(303);
    for (const path of [`/${p.slug}/feedback`, `/${p.slug}/issues/${fp}`]) {
      const res = await client.request(path);
      expect(res.status, path).toBe(200);
      const page = await res.text();
      expect(page, path).toContain('&lt;script&gt;alert(1)&lt;/script&gt; crashed');
      expect(page, path).toContain('&lt;b&gt;Eve&lt;/b&gt;');
      expect(page, path).not.toContain('<script>alert(1)');
    }
    expect((await client.request(`/${p.slug}/feedback?cursor=x`)).status).toBe(400);
  });

  it('goes with retention and its project, and is exported and imported', async () => {
    const p = await makeProject(t);
    const id = newEventId();
    await sendEvent(p, id);
    await post(t, p, buildEnvelope({ event_id: id }, [{ headers: { type: 'user_report' }, payload: userReport(id) }]));
    const file = await exportText(t.deps.store, { project: p.slug });
    expect(file.split('\n').filter((l) => l.startsWith('{"type":"user_feedback"'))).toHaveLength(1);
    const target = await emptyStore(dialect);
    try {
      expect((await importText(target.store, file)).types.user_feedback.added).toBe(1);
      expect((await importText(target.store, file)).types.user_feedback.added).toBe(0);
      const body = (text: string) => text.split('\n').filter((l) => l && JSON.parse(l).type !== 'meta');
      expect(body(await exportText(target.store, { project: p.slug }))).toEqual(body(file));
    } finally {
      await target.close();
    }
    const summary = await runRetention(t.deps.store, { now: NOW + 31 * 86_400_000, retentionDays: 30 });
    expect(summary.deleted.user_feedback).toBeGreaterThanOrEqual(1);
    expect((await feedbackOf(p)).feedback).toEqual([]);
  });
});
