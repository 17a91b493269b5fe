// Triage (docs/api.md "Issue activity", "Comments"): an issue's activity timeline and
// its comments. The timeline is `issue_changes`: ingest writes its own rows there
// (new issue, regression, snooze ended: no actor, no data) in the ingest commit, people
// write status changes, comments and merges with who did it (`actor`) and what (`data`,
// JSON). Comments are timeline rows of kind `comment`, edited and deleted in place.
import { sql, type CompiledQuery, type Kysely, type Selectable } from 'kysely';
import { iso } from '../clock.js';
import { ReadInputError, ReadNotFoundError } from '../errors.js';
import type { Store } from '../store/database.js';
import type { Database, IssueChangeTable } from '../store/schema.js';

type Db = Kysely<Database>;
type ChangeRow = Selectable<IssueChangeTable>;

/** Who acts on an issue: a label for the timeline, the user when one is signed in, and whether it may act on others' comments. */
export interface Actor {
  label: string;
  userId: number | null;
  admin: boolean;
}

export const ACTIVITY_TYPES = ['first_seen', 'status', 'assigned', 'comment', 'merged'] as const;
export type ActivityType = (typeof ACTIVITY_TYPES)[number];

export interface ActivityJson {
  id: number;
  type: ActivityType;
  /** Null for the service's own changes. */
  actor: string | null;
  data: Record<string, unknown>;
  created_at: string;
}

/** Statuses a change row's kind may name (a status set by a person or by ingest). */
const STATUS_KINDS = new Set(['unresolved', 'resolved', 'ignored', 'triaged', 'regression']);

/** The most characters a comment holds. */
export const MAX_COMMENT_CHARS = 10_000;

function parseData(text: string | null): Record<string, unknown> {
  if (text === null) return {};
  try {
    const value = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

/**
 * A change row as a timeline entry. Rows ingest wrote carry no data: their kind says
 * what happened (a regression is resolved → regression, a snooze that ended ignored →
 * unresolved, both with the service as actor).
 */
export function activityJson(
  row: Pick<ChangeRow, 'id' | 'kind' | 'at' | 'release' | 'actor' | 'data'>,
): ActivityJson | null {
  const base = { id: Number(row.id), actor: row.actor, created_at: iso(Number(row.at)) };
  const data = parseData(row.data);
  switch (row.kind) {
    case 'new_issue':
      return { ...base, type: 'first_seen', actor: null, data: { release: row.release } };
    case 'snooze_ended':
      return {
        ...base,
        type: 'status',
        actor: null,
        data: { from: 'ignored', to: 'unresolved', reason: 'snooze_ended' },
      };
    case 'merged':
    case 'comment':
    case 'assigned':
      return { ...base, type: row.kind, data };
    default:
      if (!STATUS_KINDS.has(row.kind)) return null;
      // A regression ingest found (no actor, no data).
      if (row.kind === 'regression' && row.actor === null && row.data === null) {
        return {
          ...base,
          type: 'status',
          data: { from: 'resolved', to: 'regression', reason: 'regression', release: row.release },
        };
      }
      return { ...base, type: 'status', data: { to: row.kind, ...data } };
  }
}

/** The issue's timeline, oldest first (issue_changes_issue). */
export async function listActivity(db: Db, issueId: number): Promise<ActivityJson[]> {
  const rows = await db
    .selectFrom('issue_changes')
    .select(['id', 'kind', 'at', 'release', 'actor', 'data'])
    .where('issue_id', '=', issueId)
    .orderBy('at')
    .orderBy('id')
    .execute();
  return rows.map(activityJson).filter((a): a is ActivityJson => a !== null);
}

/** A comment's text from a request body: 1 to 10 000 characters, not only blanks. */
export function parseCommentBody(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ReadInputError('request body must be a JSON object {"text": "<comment>"}');
  const text = (body as Record<string, unknown>).text;
  if (typeof text !== 'string') throw new ReadInputError('text must be a string of 1 to 10000 characters');
  const length = [...text].length;
  if (text.trim() === '') throw new ReadInputError('text must not be empty');
  if (length > MAX_COMMENT_CHARS)
    throw new ReadInputError(`text must be at most ${MAX_COMMENT_CHARS} characters (got ${length})`);
  return text;
}

/** The author-or-admin rule for editing and deleting a comment. */
export function mayChangeComment(
  actor: Actor,
  comment: { actor: string | null; actor_user_id: number | null },
): boolean {
  if (actor.admin) return true;
  if (actor.userId !== null) return comment.actor_user_id !== null && Number(comment.actor_user_id) === actor.userId;
  return comment.actor !== null && comment.actor === actor.label;
}

/** The row of a change a person makes (status, comment, merge), as an insert of its values. */
export function changeValues(
  projectId: number,
  issueId: number,
  kind: string,
  at: number,
  release: string,
  actor: Actor | null,
  data: Record<string, unknown> | null,
) {
  return {
    project_id: projectId,
    issue_id: issueId,
    kind,
    at,
    release,
    actor: actor?.label ?? null,
    actor_user_id: actor?.userId ?? null,
    data: data === null ? null : JSON.stringify(data),
  };
}

export async function addComment(
  store: Store,
  projectId: number,
  issue: { id: number; last_release: string },
  text: string,
  actor: Actor,
  now: number,
): Promise<ActivityJson> {
  const [result] = await store.atomic([
    store.db
      .insertInto('issue_changes')
      .values(changeValues(projectId, issue.id, 'comment', now, issue.last_release, actor, { text }))
      .returning(['id', 'kind', 'at', 'release', 'actor', 'data'])
      .compile(),
  ]);
  return activityJson(result.rows[0] as ChangeRow)!;
}

async function findComment(db: Db, issueId: number, id: string): Promise<ChangeRow> {
  const n = /^[0-9]{1,15}$/.test(id) ? Number(id) : Number.NaN;
  const row = Number.isSafeInteger(n)
    ? await db
        .selectFrom('issue_changes')
        .selectAll()
        .where('id', '=', n)
        .where('issue_id', '=', issueId)
        .where('kind', '=', 'comment')
        .executeTakeFirst()
    : undefined;
  if (!row) throw new ReadNotFoundError(`comment ${JSON.stringify(id)} not found on this issue`);
  return row;
}

export class ForbiddenError extends Error {
  readonly status = 403;
}

function checkMay(actor: Actor, row: ChangeRow): void {
  if (!mayChangeComment(actor, row)) throw new ForbiddenError('only the comment’s author or an admin may change it');
}

/** Edits a comment's text (author or admin); keeps when it was written, records when it was edited. */
export async function editComment(
  store: Store,
  issueId: number,
  id: string,
  text: string,
  actor: Actor,
  now: number,
): Promise<ActivityJson> {
  const row = await findComment(store.db, issueId, id);
  checkMay(actor, row);
  const data = JSON.stringify({ text, edited_at: iso(now) });
  const [result] = await store.atomic([
    store.db
      .updateTable('issue_changes')
      .set({ data })
      .where('id', '=', Number(row.id))
      .where('kind', '=', 'comment')
      .returning(['id', 'kind', 'at', 'release', 'actor', 'data'])
      .compile(),
  ]);
  const updated = result.rows[0] as ChangeRow | undefined;
  if (!updated) throw new ReadNotFoundError(`comment ${JSON.stringify(id)} not found on this issue`);
  return activityJson(updated)!;
}

export async function deleteComment(store: Store, issueId: number, id: string, actor: Actor): Promise<void> {
  const row = await findComment(store.db, issueId, id);
  checkMay(actor, row);
  await store.atomic([
    store.db.deleteFrom('issue_changes').where('id', '=', Number(row.id)).where('kind', '=', 'comment').compile(),
  ]);
}

/**
 * The statement recording a status change of the listed issues (those whose status
 * differs from `to`), run before the update in its transaction: kind = the new status,
 * data = from/to (and the snooze's condition).
 */
export function statusChangeStatement(
  db: Db,
  projectId: number,
  fingerprints: string[],
  to: string,
  now: number,
  actor: Actor | null,
  extra: Record<string, unknown> = {},
): CompiledQuery {
  // Statuses are fixed words, so the JSON is put together in SQL the same on every database.
  const rest = JSON.stringify({ to, ...extra }).slice(1);
  return db
    .insertInto('issue_changes')
    .columns(['project_id', 'issue_id', 'kind', 'at', 'release', 'actor', 'actor_user_id', 'data'])
    .expression(
      db
        .selectFrom('issues')
        .select([
          'project_id',
          'id',
          sql<string>`cast(${to} as text)`.as('kind'),
          sql<number>`cast(${now} as bigint)`.as('at'),
          'last_release',
          sql<string | null>`cast(${actor?.label ?? null} as text)`.as('actor'),
          sql<number | null>`cast(${actor?.userId ?? null} as bigint)`.as('actor_user_id'),
          sql<string>`'{"from":"' || status || '",' || cast(${rest} as text)`.as('data'),
        ])
        .where('project_id', '=', projectId)
        .where('fingerprint', 'in', fingerprints)
        .where('status', '<>', to)
        .orderBy('id'),
    )
    .compile();
}
