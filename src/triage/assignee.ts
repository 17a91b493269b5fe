// Assignees (docs/api.md "Assigning issues"): an issue's assignee is an enabled user,
// named in a request by id or email (or null to unassign), shown as {id, email, name}.
// The change goes into the activity as `assigned`.
import { sql, type CompiledQuery, type Kysely } from 'kysely';
import { ReadInputError } from '../errors.js';
import type { Database } from '../store/schema.js';
import type { Actor } from './activity.js';

type Db = Kysely<Database>;

export interface AssigneeJson {
  id: number;
  email: string;
  name: string;
}

/** What a request names: a user id, an email, or null (nobody). */
export type AssigneeRef = number | string | null;

export function parseAssigneeRef(value: unknown): AssigneeRef {
  if (value === null) return null;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value > 0) return value;
  if (typeof value === 'string' && value.trim() !== '' && value.length <= 254) {
    return /^[0-9]{1,15}$/.test(value) ? Number(value) : value.trim().toLowerCase();
  }
  throw new ReadInputError('assignee must be a user id, a user’s email or null');
}

/** The enabled user a reference names; 400 for an unknown or disabled one (nothing changes). */
export async function resolveAssignee(db: Db, ref: AssigneeRef): Promise<AssigneeJson | null> {
  if (ref === null) return null;
  let query = db.selectFrom('users').select(['id', 'email', 'name', 'disabled']);
  // Emails are stored lower case (src/accounts/rules.ts normaliseEmail).
  query = typeof ref === 'number' ? query.where('id', '=', ref) : query.where('email', '=', ref);
  const user = await query.executeTakeFirst();
  if (!user) throw new ReadInputError(`assignee ${JSON.stringify(ref)} is no user`);
  if (Number(user.disabled) !== 0)
    throw new ReadInputError(`assignee ${JSON.stringify(ref)} is disabled; only enabled users can be assigned`);
  return { id: Number(user.id), email: user.email, name: user.name };
}

/** The assignees of issue rows, by user id (one query). */
export async function assigneesOf(db: Db, ids: (number | null)[]): Promise<Map<number, AssigneeJson>> {
  const wanted = [...new Set(ids.filter((id): id is number => id !== null).map(Number))];
  const out = new Map<number, AssigneeJson>();
  for (let i = 0; i < wanted.length; i += 500) {
    const rows = await db
      .selectFrom('users')
      .select(['id', 'email', 'name'])
      .where('id', 'in', wanted.slice(i, i + 500))
      .execute();
    for (const r of rows) out.set(Number(r.id), { id: Number(r.id), email: r.email, name: r.name });
  }
  return out;
}

/**
 * The `assigned` activity of the listed issues whose assignee changes, run before the
 * update in its transaction: data = the new assignee (null: unassigned).
 */
export function assignedChangeStatement(
  db: Db,
  projectId: number,
  fingerprints: string[],
  assignee: AssigneeJson | null,
  now: number,
  actor: Actor | null,
): CompiledQuery {
  const data = JSON.stringify({ assignee });
  const to = assignee?.id ?? null;
  return db
    .insertInto('issue_changes')
    .columns(['project_id', 'issue_id', 'kind', 'at', 'release', 'actor', 'actor_user_id', 'data'])
    .expression(
      db
        .selectFrom('issues')
        .select([
          'project_id',
          'id',
          sql<string>`'assigned'`.as('kind'),
          sql<number>`cast(${now} as bigint)`.as('at'),
          'last_release',
          sql<string | null>`cast(${actor?.label ?? null} as text)`.as('actor'),
          sql<number | null>`cast(${actor?.userId ?? null} as bigint)`.as('actor_user_id'),
          sql<string>`cast(${data} as text)`.as('data'),
        ])
        .where('project_id', '=', projectId)
        .where('fingerprint', 'in', fingerprints)
        .where(
          to === null
            ? sql<boolean>`assignee_id is not null`
            : sql<boolean>`(assignee_id is null or assignee_id <> ${to})`,
        )
        .orderBy('id'),
    )
    .compile();
}
