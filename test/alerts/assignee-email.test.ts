// The assignee of an issue that regresses gets an email (real server on each database, a
// real SMTP server): once per regression, also when the rule's cooldown holds the team's
// alert back or the project has no channel; not for an unassigned issue, a disabled
// assignee, a rule switched off, or without SMTP.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/clock.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { errorEvent } from '../ingest/helpers.js';
import { SmtpSink } from './smtp.js';
import { Receiver, addWebhook, apiProject, pendingOutbox, sendEvents, sleep, until } from './support.js';

const API_KEY = 'assignee-test-key';

describe.each(dialects)('assignee emails (%s)', (dialect) => {
  let t: TestServer;
  let smtp: SmtpSink;
  const clock = new ManualClock(Date.UTC(2026, 10, 21, 10, 0));

  beforeAll(async () => {
    smtp = await SmtpSink.start();
    t = await startTestServer(dialect, {
      clock,
      env: {
        API_KEYS: API_KEY,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        PUBLIC_URL: 'https://faultline.example',
        SMTP_URL: smtp.url(),
        SMTP_FROM: 'Faultline <alerts@faultline.example>',
      },
      serverOptions: { alerts: { pollMs: 25 } },
    });
  });

  afterAll(async () => {
    await t?.close();
    await smtp?.stop();
  });

  let users = 0;
  async function user(name: string): Promise<{ id: number; email: string }> {
    users += 1;
    const email = `${name.toLowerCase()}.${users}@shop.example`;
    const res = await t.api('/api/users', { method: 'POST', json: { email, name, role: 'member' } });
    expect(res.status, await res.clone().text()).toBe(201);
    return { id: (await res.json()).id, email };
  }

  async function settled(): Promise<void> {
    await until(async () => (await pendingOutbox(t)) === 0);
    await sleep(300);
  }

  const mailsTo = (email: string) => smtp.messages.filter((m) => m.envelope.to.includes(email));

  /** A project with one issue, assigned as asked, then resolved. */
  async function resolvedIssue(assignee: string | null, fn: string) {
    const p = await apiProject(t, 'Shop app');
    await sendEvents(t, p, [
      errorEvent({ timestamp: clock.now() - 60_000, fn, value: `boom in ${fn}`, release: 'shop@1.0' }),
    ]);
    await settled();
    const issue = await t.deps.store.db
      .selectFrom('issues')
      .select('fingerprint')
      .where('project_id', '=', p.id)
      .executeTakeFirstOrThrow();
    const patch = (json: unknown) =>
      t.api(`/api/projects/${p.slug}/issues/${issue.fingerprint}`, { method: 'PATCH', json });
    if (assignee) expect((await patch({ assignee })).status).toBe(200);
    expect((await patch({ status: 'resolved' })).status).toBe(200);
    const regress = async (release: string) => {
      await sendEvents(t, p, [errorEvent({ timestamp: clock.now() - 30_000, fn, value: `boom in ${fn}`, release })]);
      await settled();
    };
    return { p, fingerprint: issue.fingerprint, patch, regress };
  }

  it('the assignee gets one email per regression, also while the cooldown holds the team alert back', async () => {
    const ann = await user('Ann');
    const { p, fingerprint, patch, regress } = await resolvedIssue(ann.email, 'checkout');
    const hook = await Receiver.start();
    await addWebhook(t, p, hook.url);
    await regress('shop@2.0');
    await until(() => mailsTo(ann.email).length === 1, 8000, "the assignee's email");
    const { mail, secure } = mailsTo(ann.email)[0];
    expect(secure).toBe(true);
    expect(mail.subject).toBe('[Faultline] Your issue regressed in Shop app: TypeError: boom in checkout');
    expect(mail.text).toContain('Ann, this issue is assigned to you and has come back.');
    expect(mail.text).toContain('Release: shop@2.0');
    expect(mail.text).toContain(`https://faultline.example/${p.slug}/issues/${fingerprint}`);
    expect(mail.html).toContain('Ann, this issue is assigned to you');

    // A second regression inside the rule's cooldown: the assignee hears of it too.
    expect((await patch({ status: 'resolved' })).status).toBe(200);
    await regress('shop@3.0');
    await until(() => mailsTo(ann.email).length === 2, 8000, 'the second email');
    expect(mailsTo(ann.email)[1].mail.text).toContain('Release: shop@3.0');
    await sleep(300);
    expect(mailsTo(ann.email)).toHaveLength(2);
    // The team heard of the first; the second waits in the cooldown for the digest.
    expect(hook.requests).toHaveLength(1);
    const states = await t.deps.store.db
      .selectFrom('alert_outbox')
      .select('state')
      .where('project_id', '=', p.id)
      .where('type', '=', 'regression')
      .orderBy('id')
      .execute();
    expect(states.map((r) => r.state)).toEqual(['sent', 'held']);
    await hook.stop();
  });

  it('without a channel the assignee is still told', async () => {
    const eve = await user('Eve');
    const { regress } = await resolvedIssue(eve.email, 'lonely');
    await regress('shop@2.0');
    await until(() => mailsTo(eve.email).length === 1, 8000, "the assignee's email");
  });

  it('nobody is emailed for an unassigned issue, a disabled assignee or a rule switched off', async () => {
    const before = smtp.messages.length;
    const unassigned = await resolvedIssue(null, 'nobody');
    await unassigned.regress('shop@2.0');

    const bob = await user('Bob');
    const disabled = await resolvedIssue(bob.email, 'disabled');
    expect((await t.api(`/api/users/${bob.id}`, { method: 'PATCH', json: { disabled: true } })).status).toBe(200);
    await disabled.regress('shop@2.0');

    const cy = await user('Cy');
    const off = await resolvedIssue(cy.email, 'switched-off');
    expect(
      (await t.api(`/api/projects/${off.p.slug}/alerts/regression`, { method: 'PATCH', json: { enabled: false } }))
        .status,
    ).toBe(200);
    await off.regress('shop@2.0');

    await sleep(300);
    expect(smtp.messages.length).toBe(before);
  });
});

describe.each(dialects)('assignee emails without SMTP (%s)', (dialect) => {
  it('a regression of an assigned issue sends nothing and fails nothing', async () => {
    const t = await startTestServer(dialect, { env: { API_KEYS: API_KEY }, serverOptions: { alerts: { pollMs: 25 } } });
    try {
      const res = await t.api('/api/users', {
        method: 'POST',
        json: { email: 'dee@shop.example', name: 'Dee', role: 'member' },
      });
      expect(res.status).toBe(201);
      const p = await apiProject(t);
      await sendEvents(t, p, [errorEvent({ timestamp: Date.now() - 60_000, fn: 'x', release: 'a@1' })]);
      const issue = await t.deps.store.db
        .selectFrom('issues')
        .select('fingerprint')
        .where('project_id', '=', p.id)
        .executeTakeFirstOrThrow();
      const patch = (json: unknown) =>
        t.api(`/api/projects/${p.slug}/issues/${issue.fingerprint}`, { method: 'PATCH', json });
      expect((await patch({ assignee: 'dee@shop.example' })).status).toBe(200);
      expect((await patch({ status: 'resolved' })).status).toBe(200);
      await sendEvents(t, p, [errorEvent({ timestamp: Date.now() - 30_000, fn: 'x', release: 'a@2' })]);
      await until(async () => (await pendingOutbox(t)) === 0);
      const row = await t.deps.store.db
        .selectFrom('alert_outbox')
        .select(['type', 'state'])
        .where('project_id', '=', p.id)
        .where('type', '=', 'regression')
        .executeTakeFirstOrThrow();
      expect(row.state).toBe('no_channel');
    } finally {
      await t.close();
    }
  });
});
