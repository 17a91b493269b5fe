// Triage's pure rules (docs/api.md "Snoozing", "Issue activity", "Comments"): when a
// snooze ends, what a snooze request may ask, how a change row reads as activity, and
// who may change a comment. No database.
import { describe, expect, it } from 'vitest';
import { snoozeEnded, type SnoozeFacts } from '../../src/ingest/plan.js';
import { activityJson, mayChangeComment, parseCommentBody } from '../../src/triage/activity.js';
import { parseSnooze } from '../../src/triage/snooze.js';

const NOW = Date.UTC(2026, 2, 10, 12, 0, 0);
const issue = (over: Partial<SnoozeFacts>): SnoozeFacts => ({
  status: 'ignored',
  event_count: 10,
  users: 4,
  ignore_until: null,
  ignore_count: null,
  ignore_users: null,
  ignored_event_count: null,
  ignored_users: null,
  ...over,
});

describe('snoozeEnded', () => {
  it('ends a time snooze at its time, not a millisecond before', () => {
    expect(snoozeEnded(issue({ ignore_until: NOW }), NOW - 1)).toBe(false);
    expect(snoozeEnded(issue({ ignore_until: NOW }), NOW)).toBe(true);
  });
  it('ends a count snooze at exactly n more events than when it began', () => {
    expect(snoozeEnded(issue({ ignore_count: 5, ignored_event_count: 6, event_count: 10 }), NOW)).toBe(false);
    expect(snoozeEnded(issue({ ignore_count: 5, ignored_event_count: 6, event_count: 11 }), NOW)).toBe(true);
  });
  it('ends a user snooze at exactly n more users', () => {
    expect(snoozeEnded(issue({ ignore_users: 2, ignored_users: 3, users: 4 }), NOW)).toBe(false);
    expect(snoozeEnded(issue({ ignore_users: 2, ignored_users: 3, users: 5 }), NOW)).toBe(true);
  });
  it('never ends a plain ignore, nor touches another status', () => {
    expect(snoozeEnded(issue({}), NOW)).toBe(false);
    expect(snoozeEnded(issue({ status: 'unresolved', ignore_count: 1, ignored_event_count: 0 }), NOW)).toBe(false);
  });
});

describe('parseSnooze', () => {
  it('takes one condition with status ignored', () => {
    expect(parseSnooze({ ignore_until: '2026-03-10T13:00:00Z' }, 'ignored', NOW)).toEqual({ until: NOW + 3_600_000 });
    expect(parseSnooze({ ignore_count: 100 }, 'ignored', NOW)).toEqual({ count: 100 });
    expect(parseSnooze({ ignore_users: 3, ignore_count: null }, 'ignored', NOW)).toEqual({ users: 3 });
    expect(parseSnooze({}, 'ignored', NOW)).toBeNull();
  });
  it('refuses two conditions, a past or malformed time, bad counts and other statuses', () => {
    expect(() => parseSnooze({ ignore_until: '2026-03-10T13:00:00Z', ignore_users: 1 }, 'ignored', NOW)).toThrow(
      /one condition; got ignore_until and ignore_users/,
    );
    expect(() => parseSnooze({ ignore_until: '2026-03-10T12:00:00Z' }, 'ignored', NOW)).toThrow(/future/);
    expect(() => parseSnooze({ ignore_until: 1_800_000_000_000 }, 'ignored', NOW)).toThrow(/RFC 3339/);
    for (const n of [0, -1, 2.5, '3', 1_000_000_001])
      expect(() => parseSnooze({ ignore_count: n }, 'ignored', NOW)).toThrow(/whole number/);
    expect(() => parseSnooze({ ignore_count: 1 }, 'triaged', NOW)).toThrow(/needs status "ignored"/);
  });
});

describe('activityJson', () => {
  const row = { id: 7, at: NOW, release: 'app@2', actor: null, data: null };
  it('reads ingest rows as the service changes', () => {
    expect(activityJson({ ...row, kind: 'new_issue' })).toMatchObject({
      type: 'first_seen',
      actor: null,
      data: { release: 'app@2' },
    });
    expect(activityJson({ ...row, kind: 'regression' })).toMatchObject({
      type: 'status',
      actor: null,
      data: { from: 'resolved', to: 'regression', reason: 'regression' },
    });
    expect(activityJson({ ...row, kind: 'snooze_ended' })).toMatchObject({
      type: 'status',
      actor: null,
      data: { from: 'ignored', to: 'unresolved', reason: 'snooze_ended' },
    });
  });
  it('reads a person’s rows with their actor and data', () => {
    expect(
      activityJson({
        ...row,
        kind: 'regression',
        actor: 'api key 0badc0de',
        data: '{"from":"resolved","to":"regression"}',
      }),
    ).toEqual({
      id: 7,
      type: 'status',
      actor: 'api key 0badc0de',
      data: { from: 'resolved', to: 'regression' },
      created_at: '2026-03-10T12:00:00.000Z',
    });
    expect(activityJson({ ...row, kind: 'comment', actor: 'anonymous', data: '{"text":"<b>hi</b>"}' })).toMatchObject({
      type: 'comment',
      data: { text: '<b>hi</b>' },
    });
    expect(activityJson({ ...row, kind: 'something_else' })).toBeNull();
  });
});

describe('comments', () => {
  it('takes 1 to 10 000 characters (code points), not only blanks', () => {
    expect(parseCommentBody({ text: '😀'.repeat(10_000) })).toHaveLength(20_000);
    expect(() => parseCommentBody({ text: '😀'.repeat(10_001) })).toThrow(/at most 10000 characters \(got 10001\)/);
    expect(() => parseCommentBody({ text: ' \n' })).toThrow(/empty/);
    expect(() => parseCommentBody('text')).toThrow(/JSON object/);
  });
  it('lets the author or an admin change a comment', () => {
    const comment = { actor: 'ana@example.com', actor_user_id: 3 };
    expect(mayChangeComment({ label: 'ana@example.com', userId: 3, admin: false }, comment)).toBe(true);
    expect(mayChangeComment({ label: 'bo@example.com', userId: 4, admin: false }, comment)).toBe(false);
    expect(mayChangeComment({ label: 'api key 0badc0de', userId: null, admin: true }, comment)).toBe(true);
    expect(
      mayChangeComment(
        { label: 'ana@example.com', userId: null, admin: false },
        { actor: 'ana@example.com', actor_user_id: null },
      ),
    ).toBe(true);
  });
});
