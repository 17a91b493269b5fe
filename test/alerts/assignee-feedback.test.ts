// User feedback emailed to the issue's assignee, on each database, through a real SMTP
// server (smtp-server, STARTTLS and AUTH): sentry-cocoa's `user_report` about an event of
// an assigned issue is recorded in the alert outbox with the feedback, then sent to the
// assignee with the user's words and the issue link; a resend sends nothing more, and
// feedback on an unassigned issue records no email.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import {
  ASSIGNEE_FEEDBACK,
  feedbackAlertPayload,
  feedbackEmail,
  parseFeedbackAlertPayload,
} from '../../src/alerts/assignee.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { post } from '../ingest/helpers.js';
import { androidEvent, buildEnvelope, mobileFixture, newEventId } from '../attachments/mobile-envelopes.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { SmtpSink } from './smtp.js';
import { apiProject, sleep, until } from './support.js';

const NOW = Date.UTC(2026, 10, 21, 10, 0);
const FROM = 'Faultline <alerts@faultline.example>';
const userReport = (eventId: string) =>
  JSON.parse(mobileFixture('cocoa-user-report.json').toString().replace('ASSOCIATED', eventId));

describe.each(dialects)('feedback email to the assignee (%s)', (dialect) => {
  let t: TestServer;
  let smtp: SmtpSink;

  beforeAll(async () => {
    smtp = await SmtpSink.start();
    t = await startTestServer(dialect, {
      clock: new ManualClock(NOW),
      env: {
        API_KEYS: 'assignee-mail-key-0123456789',
        PUBLIC_URL: 'https://faultline.example',
        SMTP_URL: smtp.url(),
        SMTP_FROM: FROM,
      },
      serverOptions: { alerts: { pollMs: 25, retryDelaysMs: [100, 200] } },
    });
    const res = await t.api('/api/users', {
      method: 'POST',
      json: { email: 'dana@example.com', name: 'Dana', role: 'member', password: 'correct horse battery' },
    });
    expect(res.status, await res.clone().text()).toBe(201);
  });

  afterAll(async () => {
    await t?.close();
    await smtp?.stop();
  });

  async function crashIssue(p: ProjectRow, id: string): Promise<string> {
    expect(
      (
        await post(
          t,
          p,
          buildEnvelope({ event_id: id }, [{ headers: { type: 'event' }, payload: androidEvent(id, NOW - 60_000) }]),
        )
      ).status,
    ).toBe(200);
    return ((await (await t.api(`/api/projects/${p.slug}/events/${id}`)).json()) as { fingerprint: string })
      .fingerprint;
  }

  const sendReport = async (p: ProjectRow, id: string) =>
    expect(
      (
        await post(
          t,
          p,
          buildEnvelope({ event_id: newEventId() }, [{ headers: { type: 'user_report' }, payload: userReport(id) }]),
        )
      ).status,
    ).toBe(200);

  const outbox = async (projectId: number) =>
    t.deps.store.db
      .selectFrom('alert_outbox')
      .select(['state', 'issue_id'])
      .where('project_id', '=', projectId)
      .where('type', '=', ASSIGNEE_FEEDBACK)
      .execute();

  it('records the email with the feedback, then sends it to the assignee; a resend sends nothing more', async () => {
    const p = await apiProject(t, 'Shop iOS');
    const id = newEventId();
    const fp = await crashIssue(p, id);
    const assign = await t.api(`/api/projects/${p.slug}/issues/${fp}`, {
      method: 'PATCH',
      json: { assignee: 'Dana@Example.com' },
    });
    expect(assign.status, await assign.clone().text()).toBe(200);
    await sendReport(p, id);
    await until(
      () => smtp.messages.some((m) => m.envelope.to.includes('dana@example.com')),
      8000,
      'the assignee email',
    );
    const [mail] = smtp.messages.filter((m) => m.envelope.to.includes('dana@example.com'));
    expect(mail.secure).toBe(true);
    expect(mail.mail.subject).toMatch(/^\[Faultline\] User feedback on /);
    expect(mail.mail.text).toContain('App closed while paying.');
    expect(mail.mail.text).toContain('Grace <grace@example.com>');
    expect(mail.mail.text).toContain(`https://faultline.example/${p.slug}/issues/${fp}`);
    // The dispatcher marks the row once the server has taken the message: wait for it.
    await until(async () => (await outbox(p.id))[0]?.state === 'sent', 8000, 'the outbox row marked sent');
    expect(await outbox(p.id)).toEqual([{ state: 'sent', issue_id: expect.any(Number) }]);
    // The same report again: stored once, no second email.
    await sendReport(p, id);
    await sleep(300);
    expect(smtp.messages.filter((m) => m.envelope.to.includes('dana@example.com'))).toHaveLength(1);
    expect(await outbox(p.id)).toHaveLength(1);
  });

  it('records nothing for feedback on an issue nobody is assigned to', async () => {
    const p = await apiProject(t, 'Unassigned app');
    const id = newEventId();
    await crashIssue(p, id);
    await sendReport(p, id);
    const listed = (await (await t.api(`/api/projects/${p.slug}/feedback`)).json()) as { feedback: unknown[] };
    expect(listed.feedback).toHaveLength(1);
    expect(await outbox(p.id)).toEqual([]);
  });
});

describe('the assignee feedback email (pure)', () => {
  const issue = {
    title: 'TypeError: <b>x</b>',
    fingerprint: 'f'.repeat(32),
    projectSlug: 'shop',
    projectName: 'Shop',
    assigneeName: 'Dana',
  };
  it('escapes what the user wrote, keeps it in the text part, and reads its payload back', () => {
    const f = parseFeedbackAlertPayload(
      feedbackAlertPayload({
        event_id: 'e'.repeat(32),
        name: 'Eve',
        email: '',
        comments: '<script>alert(1)</script>\nsecond line',
        url: '',
      }),
    );
    const mail = feedbackEmail(issue, f, null);
    expect(mail.html).not.toContain('<script>');
    expect(mail.html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(mail.html).toContain('TypeError: &lt;b&gt;x&lt;/b&gt;');
    expect(mail.text).toContain('<script>alert(1)</script>\nsecond line');
    expect(mail.text).toContain('From: Eve');
    expect(mail.text).not.toContain('https://');
    expect(parseFeedbackAlertPayload('not json')).toEqual({ event_id: '', name: '', email: '', comments: '', url: '' });
  });
});
