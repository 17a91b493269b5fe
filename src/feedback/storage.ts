// User feedback storage and reads. Feedback names its event by `event_id`; the event
// and its issue are found through `seen_events` → `events` when it is read, so feedback
// sent before its event (or about an event stored later) links by itself, and an
// issue merge carries it along with the events.
//
//   storeFeedback(store, projectId, items, receivedAt)   one atomic write; a resend is stored once
//   listFeedback(db, projectId, query)                   newest first, keyset paging by id
//   feedbackCounts(db, projectId, issueIds)              feedback per issue (`feedback_count`)
import { type CompiledQuery, sql, type Kysely } from 'kysely';
import { iso } from '../clock.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import { ASSIGNEE_FEEDBACK, feedbackAlertPayload } from '../alerts/assignee.js';
import { OUTBOX_PENDING } from '../alerts/outbox.js';
import type { FeedbackInput } from './rules.js';

type Db = Kysely<Database>;

const hex = (buffer: ArrayBuffer) =>
  Array.from(new Uint8Array(buffer), (b) => b.toString(16).padStart(2, '0')).join('');

export async function feedbackDigest(f: FeedbackInput): Promise<string> {
  const text = JSON.stringify([f.source, f.eventId, f.name, f.email, f.comments, f.url]);
  return hex(await crypto.subtle.digest('SHA-1', new TextEncoder().encode(text)));
}

/**
 * Stores the feedback in one atomic write; what is already there (a resend) is kept as it is.
 * New feedback about a stored event of an assigned issue records an email to the assignee
 * in the alert outbox in the same write (src/alerts/assignee.ts), before the feedback row,
 * so a resend records none.
 */
export async function storeFeedback(
  store: Store,
  projectId: number,
  items: FeedbackInput[],
  receivedAt: number,
): Promise<void> {
  if (items.length === 0) return;
  const queries = [];
  for (const f of items) {
    const digest = await feedbackDigest(f);
    if (f.eventId) {
      const payload = feedbackAlertPayload({
        event_id: f.eventId,
        name: f.name,
        email: f.email,
        comments: f.comments,
        url: f.url,
      });
      queries.push(
        store.db
          .insertInto('alert_outbox')
          .columns(['project_id', 'type', 'issue_id', 'payload', 'state', 'created_at'])
          .expression((eb) =>
            eb
              .selectFrom('seen_events as s')
              .innerJoin('events as e', 'e.id', 's.stored_id')
              .innerJoin('issues as i', 'i.id', 'e.issue_id')
              // Typed, so PostgreSQL does not take the parameters for text.
              .select([
                sql<number>`cast(${projectId} as bigint)`.as('project_id'),
                sql<string>`cast(${ASSIGNEE_FEEDBACK} as text)`.as('type'),
                'i.id',
                sql<string>`cast(${payload} as text)`.as('payload'),
                sql<string>`cast(${OUTBOX_PENDING} as text)`.as('state'),
                sql<number>`cast(${receivedAt} as bigint)`.as('created_at'),
              ])
              .where('s.project_id', '=', projectId)
              .where('s.event_id', '=', f.eventId)
              .where('i.assignee_id', 'is not', null)
              .where((w) =>
                w.not(
                  w.exists(
                    w
                      .selectFrom('user_feedback')
                      .select('id')
                      .where('project_id', '=', projectId)
                      .where('digest', '=', digest),
                  ),
                ),
              ),
          )
          .compile(),
      );
    }
    queries.push(
      store.db
        .insertInto('user_feedback')
        .values({
          project_id: projectId,
          digest,
          event_id: f.eventId,
          name: f.name,
          email: f.email,
          comments: f.comments,
          url: f.url,
          source: f.source,
          created_at: f.createdAt,
          received_at: receivedAt,
        })
        .onConflict((oc) => oc.columns(['project_id', 'digest']).doNothing())
        .compile(),
    );
  }
  await store.atomic(queries);
}

export interface FeedbackJson {
  id: string;
  event_id: string | null;
  /** The event's integer id once it is stored, else null. */
  event: number | null;
  /** The fingerprint of the event's issue once the event is stored, else null. */
  issue: string | null;
  name: string;
  email: string;
  comments: string;
  url: string | null;
  source: string;
  created_at: string;
}

export interface FeedbackQuery {
  /** Only feedback on events of this issue (its id). */
  issueId?: number;
  /** Feedback with ids below this (the previous page's `next_cursor`). */
  before?: number;
  limit: number;
}

/** Newest first; `next_cursor` is the id to pass as `cursor` for the next page, null at the end. */
export async function listFeedback(
  db: Db,
  projectId: number,
  q: FeedbackQuery,
): Promise<{ feedback: FeedbackJson[]; next_cursor: string | null }> {
  let query = db
    .selectFrom('user_feedback as f')
    .leftJoin('seen_events as s', (j) =>
      j.onRef('s.project_id', '=', 'f.project_id').onRef('s.event_id', '=', 'f.event_id'),
    )
    .leftJoin('events as e', 'e.id', 's.stored_id')
    .leftJoin('issues as i', 'i.id', 'e.issue_id')
    .select([
      'f.id',
      'f.event_id',
      'f.name',
      'f.email',
      'f.comments',
      'f.url',
      'f.source',
      'f.created_at',
      'e.id as stored_id',
      'i.fingerprint',
    ])
    .where('f.project_id', '=', projectId);
  if (q.issueId !== undefined) query = query.where('e.issue_id', '=', q.issueId);
  if (q.before !== undefined) query = query.where('f.id', '<', q.before);
  const rows = await query
    .orderBy('f.id', 'desc')
    .limit(q.limit + 1)
    .execute();
  const page = rows.slice(0, q.limit);
  return {
    feedback: page.map((r) => ({
      id: String(r.id),
      event_id: r.event_id === '' ? null : r.event_id,
      event: r.stored_id === null || r.stored_id === undefined ? null : Number(r.stored_id),
      issue: r.fingerprint ?? null,
      name: r.name,
      email: r.email,
      comments: r.comments,
      url: r.url === '' ? null : r.url,
      source: r.source,
      created_at: iso(Number(r.created_at)),
    })),
    next_cursor: rows.length > q.limit ? String(page[page.length - 1].id) : null,
  };
}

/** Feedback per issue among `issueIds` (issues without any are absent). */
export async function feedbackCounts(db: Db, projectId: number, issueIds: number[]): Promise<Map<number, number>> {
  if (issueIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('user_feedback as f')
    .innerJoin('seen_events as s', (j) =>
      j.onRef('s.project_id', '=', 'f.project_id').onRef('s.event_id', '=', 'f.event_id'),
    )
    .innerJoin('events as e', 'e.id', 's.stored_id')
    .select(['e.issue_id', sql<number>`count(*)`.as('n')])
    .where('f.project_id', '=', projectId)
    .where('e.issue_id', 'in', issueIds)
    .groupBy('e.issue_id')
    .execute();
  return new Map(rows.map((r) => [Number(r.issue_id), Number(r.n)]));
}

/**
 * Statements removing the feedback of an erased end user (docs/privacy.md "End-user
 * deletion"), to run in the erasure's atomic write before the events go: feedback on
 * the erased events, and feedback the user sent under the erased email address.
 */
export function feedbackOfEndUser(
  db: Kysely<Database>,
  projectId: number,
  eventRowIds: number[],
  user: { column: string; value: string },
): CompiledQuery[] {
  const out: CompiledQuery[] = [];
  if (eventRowIds.length > 0) {
    out.push(
      sql`delete from user_feedback where project_id = ${projectId} and event_id in (select e.event_id from events e where e.id in (${sql.join(eventRowIds)}))`.compile(
        db,
      ),
    );
  }
  if (user.column === 'user_email')
    out.push(
      db.deleteFrom('user_feedback').where('project_id', '=', projectId).where('email', '=', user.value).compile(),
    );
  return out;
}
