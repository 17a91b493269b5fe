// Commits of releases sentry-cli created (`releases set-commits`): the `commits` a
// release update carries (from the local git history: id, repository, message, author,
// time) or its `refs` (a repository's head commit, and nothing else is known of it),
// kept in `release_commits` in the order sent, replacing what the release had.
// Answered in Sentry's shape on the uploader routes and in our own on the releases API
// (docs/api.md).
import type { Kysely } from 'kysely';
import { iso } from '../clock.js';
import { executeAtomically, type Store } from '../store/database.js';
import { chunks } from '../store/dialect.js';
import { D1_MAX_BOUND_PARAMETERS } from '../store/d1.js';
import type { Database, ReleaseCommitTable } from '../store/schema.js';
import { optionalDate, optionalText } from './deploys.js';
import { UploadError } from './errors.js';
import {
  MAX_COMMIT_ID_LENGTH,
  MAX_COMMIT_MESSAGE_LENGTH,
  MAX_RELEASE_COMMITS,
  MAX_RELEASE_TEXT_LENGTH,
} from '../limits.js';

type Db = Kysely<Database>;
export type CommitRow = ReleaseCommitTable;

export interface CommitInput {
  repository: string;
  id: string;
  message: string | null;
  authorName: string | null;
  authorEmail: string | null;
  date: number | null;
}

const COMMIT_COLUMNS = 9;
/** Rows per INSERT: what every database binds in one statement (D1 the fewest). */
const ROWS_PER_INSERT = Math.floor(D1_MAX_BOUND_PARAMETERS / COMMIT_COLUMNS);

function commitId(value: unknown, name: string): string {
  const id = optionalText(value, name, MAX_COMMIT_ID_LENGTH);
  if (!id || id.trim() === '') throw new UploadError(400, `${name} is required`);
  return id;
}

function list(value: unknown, name: string): Record<string, unknown>[] {
  if (!Array.isArray(value) || value.some((c) => c === null || typeof c !== 'object' || Array.isArray(c)))
    throw new UploadError(400, `${name} must be a list of objects`);
  if (value.length > MAX_RELEASE_COMMITS)
    throw new UploadError(400, `at most ${MAX_RELEASE_COMMITS} ${name} per release`);
  return value as Record<string, unknown>[];
}

/**
 * The commits of a release body, or undefined when it sets none. `commits` (sentry-cli
 * from local git) wins over `refs` (a repository integration's heads: the head commit is
 * kept, as nothing else of the range is known here). An empty list clears them.
 */
export function parseReleaseCommits(body: Record<string, unknown>): CommitInput[] | undefined {
  if (body.commits !== undefined && body.commits !== null) {
    return list(body.commits, 'commits').map((c, i) => {
      const message = optionalText(c.message, `commits[${i}].message`, Number.MAX_SAFE_INTEGER);
      return {
        repository: optionalText(c.repository, `commits[${i}].repository`, MAX_RELEASE_TEXT_LENGTH) ?? '',
        id: commitId(c.id, `commits[${i}].id`),
        message: message === null ? null : message.slice(0, MAX_COMMIT_MESSAGE_LENGTH),
        authorName: optionalText(c.author_name, `commits[${i}].author_name`, MAX_RELEASE_TEXT_LENGTH),
        authorEmail: optionalText(c.author_email, `commits[${i}].author_email`, MAX_RELEASE_TEXT_LENGTH),
        date: optionalDate(c.timestamp, `commits[${i}].timestamp`),
      };
    });
  }
  if (body.refs !== undefined && body.refs !== null) {
    return list(body.refs, 'refs').map((r, i) => ({
      repository: optionalText(r.repository, `refs[${i}].repository`, MAX_RELEASE_TEXT_LENGTH) ?? '',
      id: commitId(r.commit, `refs[${i}].commit`),
      message: null,
      authorName: null,
      authorEmail: null,
      date: null,
    }));
  }
  return undefined;
}

/** Replaces the commits of `version` in these projects with `commits` (in one transaction; D1 one batch). */
export async function setReleaseCommits(
  store: Store,
  projectIds: number[],
  version: string,
  commits: CommitInput[],
): Promise<void> {
  const db = store.db;
  const seen = new Set<string>();
  const unique = commits.filter((c) => {
    const key = `${c.repository}\n${c.id}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const queries = [
    db.deleteFrom('release_commits').where('project_id', 'in', projectIds).where('version', '=', version).compile(),
  ];
  for (const projectId of projectIds) {
    const rows: CommitRow[] = unique.map((c, position) => ({
      project_id: projectId,
      version,
      repository: c.repository,
      commit_id: c.id,
      position,
      message: c.message,
      author_name: c.authorName,
      author_email: c.authorEmail,
      date: c.date,
    }));
    for (const part of chunks(rows, ROWS_PER_INSERT))
      queries.push(db.insertInto('release_commits').values(part).compile());
  }
  await executeAtomically(store, queries);
}

/** The commits of `version` in one project, in the order sent (the first `limit`). */
export async function listCommits(
  db: Db,
  projectId: number,
  version: string,
  limit = MAX_RELEASE_COMMITS,
): Promise<CommitRow[]> {
  return db
    .selectFrom('release_commits')
    .selectAll()
    .where('project_id', '=', projectId)
    .where('version', '=', version)
    .orderBy('position')
    .limit(limit)
    .execute();
}

/** Sentry's commit JSON (`releases info`, `lastCommit`). */
export function commitJson(row: CommitRow) {
  return {
    id: row.commit_id,
    message: row.message,
    dateCreated: row.date === null ? null : iso(Number(row.date)),
    author:
      row.author_name === null && row.author_email === null ? null : { name: row.author_name, email: row.author_email },
    repository: { name: row.repository },
  };
}
