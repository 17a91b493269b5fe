// Merging issues (docs/api.md "Merging issues"): the request's rules (what may be merged
// into what) and the issue a merged fingerprint now answers with. The statements that
// move counts, aggregates and events are in src/store/issue-merges.ts.
import type { Kysely } from 'kysely';
import { MAX_MERGE } from '../limits.js';
import { mergedChange, mergedIssueId, mergeStatements, runLocked } from '../store/issue-merges.js';
import type { Store } from '../store/database.js';
import type { Database, IssueRow } from '../store/schema.js';
import type { Actor } from '../triage/activity.js';
import { ReadInputError, ReadNotFoundError } from '../errors.js';
import type { IssueJson } from './serialize.js';
import { issuesJson } from './issues.js';

type Db = Kysely<Database>;

export interface MergeRequest {
  fingerprints: string[];
  into: string;
}

export function parseMergeBody(body: unknown): MergeRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ReadInputError('request body must be a JSON object {"fingerprints": [..], "into": "<fingerprint>"}');
  }
  const { fingerprints, into } = body as Record<string, unknown>;
  if (!Array.isArray(fingerprints) || !fingerprints.every((f) => typeof f === 'string'))
    throw new ReadInputError('fingerprints must be an array of strings');
  if (typeof into !== 'string' || into === '')
    throw new ReadInputError('into must be the fingerprint of the issue to merge into');
  const unique = [...new Set(fingerprints as string[])];
  if (unique.length === 0) throw new ReadInputError('fingerprints must name at least one issue to merge');
  if (unique.length > MAX_MERGE) throw new ReadInputError(`fingerprints may list at most ${MAX_MERGE} issues`);
  if (unique.includes(into))
    throw new ReadInputError(`an issue cannot be merged into itself (${JSON.stringify(into)} is in fingerprints)`);
  return { fingerprints: unique, into };
}

/**
 * Merges the listed issues of the project into `into`, in one transaction (one atomic
 * batch on D1); 404 naming the fingerprints that are no issue of the project. The target
 * as it is afterwards, with the fingerprints merged.
 */
export async function mergeIssues(
  store: Store,
  projectId: number,
  request: MergeRequest,
  now: number,
  actor: Actor | null = null,
): Promise<IssueJson & { merged: string[] }> {
  await runLocked(store, projectId, async (reader) => {
    const wanted = [request.into, ...request.fingerprints];
    const rows = await reader
      .selectFrom('issues')
      .select(['id', 'fingerprint'])
      .where('project_id', '=', projectId)
      .where('fingerprint', 'in', wanted)
      .execute();
    const byFingerprint = new Map(rows.map((r) => [r.fingerprint, { id: Number(r.id), fingerprint: r.fingerprint }]));
    const unknown = wanted.filter((f) => !byFingerprint.has(f));
    if (unknown.length > 0) {
      const elsewhere = await reader
        .selectFrom('issues')
        .select('fingerprint')
        .where('project_id', '<>', projectId)
        .where('fingerprint', 'in', unknown)
        .limit(1)
        .executeTakeFirst();
      if (elsewhere)
        throw new ReadInputError(
          `issues merge only within one project: ${JSON.stringify(elsewhere.fingerprint)} is an issue of another project`,
        );
    }
    if (unknown.length > 0)
      throw new ReadNotFoundError(
        `no issue of this project has the fingerprint ${unknown.map((f) => JSON.stringify(f)).join(', ')}`,
      );
    const target = byFingerprint.get(request.into)!;
    const statements = request.fingerprints.flatMap((f) =>
      mergeStatements(reader, projectId, target, byFingerprint.get(f)!, now),
    );
    statements.push(
      mergedChange(reader, projectId, target.id, now, {
        actor: actor?.label ?? null,
        actorUserId: actor?.userId ?? null,
        fingerprints: request.fingerprints,
      }),
    );
    return { statements, result: undefined };
  });
  const row = await store.db
    .selectFrom('issues')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('fingerprint', '=', request.into)
    .executeTakeFirst();
  if (!row) throw new ReadNotFoundError(`issue ${JSON.stringify(request.into)} not found in this project`);
  return { ...(await issuesJson(store.db, [row]))[0], merged: request.fingerprints };
}

/** The issue of `fingerprint`: its own, or the one it was merged into (with `mergedInto`), or undefined. */
export async function findIssueOrMerged(
  db: Db,
  projectId: number,
  fingerprint: string,
): Promise<{ row: IssueRow; mergedInto?: string } | undefined> {
  const own = await db
    .selectFrom('issues')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('fingerprint', '=', fingerprint)
    .executeTakeFirst();
  if (own) return { row: own };
  const id = await mergedIssueId(db, projectId, fingerprint);
  if (id === undefined) return undefined;
  const target = await db.selectFrom('issues').selectAll().where('id', '=', id).executeTakeFirst();
  return target ? { row: target, mergedInto: target.fingerprint } : undefined;
}
