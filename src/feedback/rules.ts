// User feedback rules, as pure functions: what an envelope `user_report` item (the
// legacy form: `{event_id, name, email, comments}`), a `feedback` item (an event whose
// `contexts.feedback` holds `message`, `contact_email`, `name`, `url` and
// `associated_event_id`) and a body of `POST /api/0/projects/{org}/{project}/user-feedback/`
// become: one FeedbackInput, values cut to Sentry's lengths. docs/api.md "User feedback".
import { z } from 'zod';
import { InvalidItemError } from '../errors.js';
import { cleanUuid, parseTimestamp } from '../protocol-values.js';
import { MAX_FEEDBACK_COMMENTS, MAX_FEEDBACK_EMAIL, MAX_FEEDBACK_NAME, MAX_FEEDBACK_URL } from '../limits.js';

export const FEEDBACK_SOURCES = ['user_report', 'feedback', 'api'] as const;
export type FeedbackSource = (typeof FEEDBACK_SOURCES)[number];

export interface FeedbackInput {
  /** The event it is about (32 lowercase hex), or '' when it names none. */
  eventId: string;
  name: string;
  email: string;
  comments: string;
  url: string;
  source: FeedbackSource;
  /** When the user sent it (epoch ms). */
  createdAt: number;
}

function cut(value: unknown, max: number): string {
  if (typeof value !== 'string') return '';
  const clean = value.replace(/\u0000/g, '').trim();
  return clean.length <= max ? clean : Array.from(clean).slice(0, max).join('');
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function parseJsonObject(payload: Uint8Array, what: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw new InvalidItemError(`${what} is not JSON`);
  }
  if (!isObject(value)) throw new InvalidItemError(`${what} is not a JSON object`);
  return value;
}

/** A `user_report` item: it must name an event and say something. */
export function parseUserReport(payload: Uint8Array, receivedAt: number): FeedbackInput {
  const v = parseJsonObject(payload, 'user_report');
  const eventId = cleanUuid(v.event_id);
  if (!eventId) throw new InvalidItemError('user_report: event_id must be 32 hex characters');
  const comments = cut(v.comments, MAX_FEEDBACK_COMMENTS);
  if (comments === '') throw new InvalidItemError('user_report: comments are empty');
  return {
    eventId,
    name: cut(v.name, MAX_FEEDBACK_NAME),
    email: cut(v.email, MAX_FEEDBACK_EMAIL),
    comments,
    url: '',
    source: 'user_report',
    createdAt: receivedAt,
  };
}

/** A `feedback` item (the feedback widget and `captureFeedback`): the event's `contexts.feedback`. */
export function parseFeedbackItem(payload: Uint8Array, receivedAt: number): FeedbackInput {
  const v = parseJsonObject(payload, 'feedback');
  const feedback = isObject(v.contexts) && isObject(v.contexts.feedback) ? v.contexts.feedback : null;
  if (!feedback) throw new InvalidItemError('feedback: contexts.feedback is missing');
  const comments = cut(feedback.message, MAX_FEEDBACK_COMMENTS);
  if (comments === '') throw new InvalidItemError('feedback: contexts.feedback.message is empty');
  const at = parseTimestamp(v.timestamp);
  const user = isObject(v.user) ? v.user : {};
  return {
    eventId: cleanUuid(feedback.associated_event_id) ?? '',
    name: cut(feedback.name ?? user.name ?? user.username, MAX_FEEDBACK_NAME),
    email: cut(feedback.contact_email ?? user.email, MAX_FEEDBACK_EMAIL),
    comments,
    url: cut(feedback.url, MAX_FEEDBACK_URL),
    source: 'feedback',
    createdAt: at !== null && at <= receivedAt ? at : receivedAt,
  };
}

const BODY_MESSAGES = {
  event_id: 'event_id: must be the event_id, 32 hex characters (dashes allowed)',
  name: 'name: must be a string',
  email: 'email: must be a string',
  comments: 'comments: must be a non-empty string',
};

export const userFeedbackBody = z
  .object({
    event_id: z
      .string({ error: BODY_MESSAGES.event_id })
      .refine((s) => cleanUuid(s) !== null, { error: BODY_MESSAGES.event_id }),
    name: z.string({ error: BODY_MESSAGES.name }).max(10_000, { error: BODY_MESSAGES.name }).optional(),
    email: z.string({ error: BODY_MESSAGES.email }).max(10_000, { error: BODY_MESSAGES.email }).optional(),
    comments: z
      .string({ error: BODY_MESSAGES.comments })
      .min(1, { error: BODY_MESSAGES.comments })
      .max(100_000, { error: 'comments: at most 100 000 characters' }),
  })
  .strict();

/** A validated body of the user-feedback route. */
export function feedbackFromBody(body: z.infer<typeof userFeedbackBody>, receivedAt: number): FeedbackInput {
  return {
    eventId: cleanUuid(body.event_id) ?? '',
    name: cut(body.name, MAX_FEEDBACK_NAME),
    email: cut(body.email, MAX_FEEDBACK_EMAIL),
    comments: cut(body.comments, MAX_FEEDBACK_COMMENTS),
    url: '',
    source: 'api',
    createdAt: receivedAt,
  };
}
