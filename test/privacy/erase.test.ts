// End-user deletion through the real server: a user's events, tags and raw payloads go
// (the payload chunks they shared with other users' events keep those intact), counts
// stay, other users and projects are untouched, a user with more events than one slice is
// erased whole, and an unknown user or a resend afterwards changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decompress } from '../../src/editions/node/codec.js';
import { storedPayload } from '../../src/editions/node/payloads.js';
import { ERASE_SLICE, parseEndUser } from '../../src/privacy/erase.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { envelope, errorEvent, eventId, eventsOf, issuesOf, makeProject, post } from '../ingest/helpers.js';

const T0 = 1_790_000_000_000;

describe('parseEndUser', () => {
  it.each([
    ['alice', 'user_id', 'alice', 'id:alice'],
    ['id:alice', 'user_id', 'alice', 'id:alice'],
    ['email:a@x.test', 'user_email', 'a@x.test', 'email:a@x.test'],
    ['username:al', 'user_username', 'al', 'username:al'],
    ['ip:10.0.0.1', 'user_ip', '10.0.0.1', 'ip:10.0.0.1'],
    ['weird:thing', 'user_id', 'weird:thing', 'id:weird:thing'],
  ])('%s', (segment, column, value, userKey) => {
    expect(parseEndUser(segment)).toEqual({ column, value, userKey });
  });
});

describe.each(dialects)('erasing an end user on %s', (dialect) => {
  let t: TestServer;
  let p: ProjectRow;
  let other: ProjectRow;
  const aliceIds: string[] = [];

  async function send(project: ProjectRow, user: string, n: number, perEnvelope = 10): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < n; i += perEnvelope) {
      const events = Array.from({ length: Math.min(perEnvelope, n - i) }, (_, k) => {
        const id = eventId();
        ids.push(id);
        return { type: 'event', payload: { ...errorEvent({ id, timestamp: T0 + i + k, user, value: `secret-of-${user}` }), tags: { who: user } } };
      });
      const res = await post(t, project, envelope({}, events));
      expect(res.status).toBe(200);
    }
    return ids;
  }

  beforeAll(async () => {
    t = await startTestServer(dialect, { clock: { now: () => T0 + 60_000 } });
    p = await makeProject(t);
    other = await makeProject(t);
    // Alice and Bob share envelopes' batches, so their payloads share chunks.
    for (let round = 0; round < 3; round++) {
      aliceIds.push(...(await send(p, 'alice', ERASE_SLICE)));
      await send(p, 'bob', 5, 5);
    }
    await send(other, 'alice', 3);
  }, 120_000);
  afterAll(async () => {
    await t?.close();
  });

  it('removes the user’s events, tags, payload bytes and issue user key; counts stay', async () => {
    const before = await issuesOf(t, p);
    expect(before).toHaveLength(1);
    expect(Number(before[0].stored_count)).toBe(3 * ERASE_SLICE + 15);

    const res = await t.api(`/api/projects/${p.slug}/users/alice/events`, { method: 'DELETE' });
    expect(res.status).toBe(204);

    const events = await eventsOf(t, p);
    expect(events).toHaveLength(15);
    expect(new Set(events.map((e) => e.user_id))).toEqual(new Set(['bob']));
    const [issue] = await issuesOf(t, p);
    expect(Number(issue.event_count)).toBe(Number(before[0].event_count));
    expect(Number(issue.users)).toBe(2);
    expect(Number(issue.stored_count)).toBe(15);
    const keys = await t.deps.store.db.selectFrom('issue_users').select('user_key').where('issue_id', '=', issue.id).execute();
    expect(keys.map((k) => k.user_key)).toEqual(['id:bob']);
    const tags = await t.deps.store.db.selectFrom('event_tags').select('value').where('project_id', '=', p.id).execute();
    expect(new Set(tags.map((x) => x.value))).toEqual(new Set(['bob']));

    // Bob's payloads read back whole from the rewritten chunks; no chunk holds Alice's text.
    for (const e of events) expect(JSON.parse((await storedPayload(t.deps.store.db, e)).toString('utf8')).user.id).toBe('bob');
    const chunks = await t.deps.store.db.selectFrom('payload_chunks').select('data').where('project_id', '=', p.id).execute();
    for (const c of chunks) expect(decompress(c.data).toString('utf8')).not.toContain('secret-of-alice');

    // The other project's Alice is another project's data.
    expect(await eventsOf(t, other)).toHaveLength(3);
  });

  it('a resend of an erased event is still a duplicate, not stored again', async () => {
    const res = await post(t, p, envelope({}, [{ type: 'event', payload: errorEvent({ id: aliceIds[0], timestamp: T0, user: 'alice' }) }]));
    expect(res.status).toBe(200);
    expect((await eventsOf(t, p)).filter((e) => e.user_id === 'alice')).toHaveLength(0);
  });

  it('an unknown user, or one erased already: 204, nothing changes', async () => {
    const before = await eventsOf(t, p);
    for (const user of ['nobody', 'alice', 'email:nobody@x.test']) {
      const res = await t.api(`/api/projects/${p.slug}/users/${encodeURIComponent(user)}/events`, { method: 'DELETE' });
      expect(res.status).toBe(204);
    }
    expect(await eventsOf(t, p)).toEqual(before);
  });

  it('an unknown project is 404', async () => {
    const res = await t.api('/api/projects/nope/users/alice/events', { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect((await res.json()).error).toContain('project "nope" not found');
  });
});
