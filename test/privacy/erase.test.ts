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
        return {
          type: 'event',
          payload: {
            ...errorEvent({ id, timestamp: T0 + i + k, user, value: `secret-of-${user}` }),
            tags: { who: user },
          },
        };
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
    const keys = await t.deps.store.db
      .selectFrom('issue_users')
      .select('user_key')
      .where('issue_id', '=', issue.id)
      .execute();
    expect(keys.map((k) => k.user_key)).toEqual(['id:bob']);
    const tags = await t.deps.store.db
      .selectFrom('event_tags')
      .select('value')
      .where('project_id', '=', p.id)
      .execute();
    expect(new Set(tags.map((x) => x.value))).toEqual(new Set(['bob']));

    // Bob's payloads read back whole from the rewritten chunks; no chunk holds Alice's text.
    for (const e of events)
      expect(JSON.parse((await storedPayload(t.deps.store.db, e)).toString('utf8')).user.id).toBe('bob');
    const chunks = await t.deps.store.db
      .selectFrom('payload_chunks')
      .select('data')
      .where('project_id', '=', p.id)
      .execute();
    for (const c of chunks) expect(decompress(c.data).toString('utf8')).not.toContain('secret-of-alice');

    // The other project's Alice is another project's data.
    expect(await eventsOf(t, other)).toHaveLength(3);
  });

  it('removes the attachments and user feedback of the user’s events, and feedback under their email', async () => {
    // An envelope as a mobile SDK sends it: the event, a screenshot and the user's report.
    const withFiles = async (user: string) => {
      const id = eventId();
      const item = (headers: object, body: string | Uint8Array) => [
        JSON.stringify(headers),
        typeof body === 'string' ? body : Buffer.from(body).toString('latin1'),
      ];
      const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3]);
      const lines = [
        JSON.stringify({ event_id: id }),
        ...item(
          { type: 'event' },
          JSON.stringify({ ...errorEvent({ id, timestamp: T0, user }), user: { id: user, email: `${user}@x.test` } }),
        ),
        ...item(
          {
            type: 'attachment',
            filename: 'screenshot.png',
            content_type: 'image/png',
            attachment_type: 'event.attachment',
            length: png.length,
          },
          png,
        ),
        ...item(
          { type: 'user_report' },
          JSON.stringify({ event_id: id, name: user, email: `${user}@x.test`, comments: `it broke for ${user}` }),
        ),
      ];
      const res = await post(t, p, Buffer.from(lines.join('\n'), 'latin1'));
      expect(res.status).toBe(200);
      return id;
    };
    const carol = await withFiles('carol');
    const dave = await withFiles('dave');
    const db = t.deps.store.db;
    const files = async (id: string) =>
      (
        await db
          .selectFrom('attachments')
          .select('id')
          .where('project_id', '=', p.id)
          .where('event_id', '=', id)
          .execute()
      ).length;
    const notes = async (id: string) =>
      (
        await db
          .selectFrom('user_feedback')
          .select('id')
          .where('project_id', '=', p.id)
          .where('event_id', '=', id)
          .execute()
      ).length;
    expect([await files(carol), await notes(carol), await files(dave), await notes(dave)]).toEqual([1, 1, 1, 1]);
    // Feedback Carol sent under her email about no event of hers.
    await db
      .insertInto('user_feedback')
      .values({
        project_id: p.id,
        digest: 'e'.repeat(40),
        event_id: 'f'.repeat(32),
        name: 'c',
        email: 'carol@x.test',
        comments: 'again',
        url: '',
        source: 'api',
        created_at: T0,
        received_at: T0,
      })
      .execute();

    expect((await t.api(`/api/projects/${p.slug}/users/carol/events`, { method: 'DELETE' })).status).toBe(204);
    expect([await files(carol), await notes(carol), await files(dave), await notes(dave)]).toEqual([0, 0, 1, 1]);
    const chunks = await db.selectFrom('attachment_chunks').select('attachment_id').execute();
    expect(chunks.length).toBeGreaterThan(0);
    expect(await notes('f'.repeat(32))).toBe(1);
    expect((await t.api(`/api/projects/${p.slug}/users/email:carol@x.test/events`, { method: 'DELETE' })).status).toBe(
      204,
    );
    expect(await notes('f'.repeat(32))).toBe(0);
    expect(await notes(dave)).toBe(1);
  });

  it('a resend of an erased event is still a duplicate, not stored again', async () => {
    const res = await post(
      t,
      p,
      envelope({}, [{ type: 'event', payload: errorEvent({ id: aliceIds[0], timestamp: T0, user: 'alice' }) }]),
    );
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
