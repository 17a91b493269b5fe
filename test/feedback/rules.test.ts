// The feedback rules without a database: user_report and feedback items, values cut
// to Sentry's lengths, malformed items refused as items.
import { describe, expect, it } from 'vitest';
import { parseFeedbackItem, parseUserReport } from '../../src/feedback/rules.js';
import { InvalidItemError } from '../../src/errors.js';
import { MAX_FEEDBACK_COMMENTS, MAX_FEEDBACK_EMAIL, MAX_FEEDBACK_NAME } from '../../src/limits.js';

const NOW = Date.UTC(2026, 10, 21, 12);
const bytes = (v: unknown) => new TextEncoder().encode(typeof v === 'string' ? v : JSON.stringify(v));
const ID = 'ab'.repeat(16);

describe('parseUserReport', () => {
  it('reads the legacy item and cuts long values', () => {
    const f = parseUserReport(
      bytes({
        event_id: ID.toUpperCase(),
        name: 'n'.repeat(500),
        email: 'e'.repeat(500),
        comments: ` ${'c'.repeat(10_000)} `,
      }),
      NOW,
    );
    expect(f).toMatchObject({ eventId: ID, source: 'user_report', createdAt: NOW });
    expect([f.name.length, f.email.length, f.comments.length]).toEqual([
      MAX_FEEDBACK_NAME,
      MAX_FEEDBACK_EMAIL,
      MAX_FEEDBACK_COMMENTS,
    ]);
  });

  it.each([
    ['not json'],
    [bytes([1])],
    [bytes({ event_id: 'x', comments: 'a' })],
    [bytes({ event_id: ID, comments: '  ' })],
  ])('refuses %s as an item', (payload) => {
    expect(() => parseUserReport(typeof payload === 'string' ? bytes(payload) : payload, NOW)).toThrow(
      InvalidItemError,
    );
  });
});

describe('parseFeedbackItem', () => {
  it('reads contexts.feedback, falling back to the user, and never dates feedback in the future', () => {
    const f = parseFeedbackItem(
      bytes({
        timestamp: (NOW + 3_600_000) / 1000,
        user: { email: 'u@example.com', username: 'u' },
        contexts: { feedback: { message: 'hi', associated_event_id: ID, url: 'app://x' } },
      }),
      NOW,
    );
    expect(f).toEqual({
      eventId: ID,
      name: 'u',
      email: 'u@example.com',
      comments: 'hi',
      url: 'app://x',
      source: 'feedback',
      createdAt: NOW,
    });
    expect(
      parseFeedbackItem(bytes({ timestamp: (NOW - 1000) / 1000, contexts: { feedback: { message: 'm' } } }), NOW),
    ).toMatchObject({ eventId: '', createdAt: NOW - 1000 });
  });

  it('refuses an item without a message', () => {
    expect(() => parseFeedbackItem(bytes({ contexts: { feedback: { message: '' } } }), NOW)).toThrow(InvalidItemError);
    expect(() => parseFeedbackItem(bytes({ contexts: {} }), NOW)).toThrow(InvalidItemError);
  });
});
