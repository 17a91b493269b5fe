// Releases as sentry-cli manages them (`releases new|finalize|list|info|set-commits`):
// kept per project in `cli_releases` (version, url, dates), with their commits
// (release-commits.ts) and deploys (deploys.ts), and answered in Sentry's shape
// (`version`, `dateCreated` required by the CLI). Faultline's own releases API shows
// these rows beside the releases events reveal (src/read/releases.ts). They stay a table
// of their own, apart from `releases`: ingest upserts that one in every batch on all
// three databases (D1 in its own statements) with first and last event times a CLI
// release does not have, while these rows hold what only the CLI says (url, dates).
import type { Kysely } from 'kysely';
import { iso } from '../clock.js';
import { chunks } from '../store/dialect.js';
import { D1_MAX_BOUND_PARAMETERS } from '../store/d1.js';
import type { CliReleaseTable, Database, ProjectRow } from '../store/schema.js';
import { deployJson, type DeployRow } from './deploys.js';
import { UploadError } from './errors.js';
import { commitJson, parseReleaseCommits, type CommitInput, type CommitRow } from './release-commits.js';
import { MAX_VERSION_LENGTH, RELEASE_LIST_LIMIT } from '../limits.js';

type Db = Kysely<Database>;

export interface ReleaseChange {
  version?: string;
  url?: string | null;
  dateStarted?: number | null;
  dateReleased?: number | null;
  projects?: string[];
  /** Replaces the release's commits when present (`set-commits`; empty clears them). */
  commits?: CommitInput[];
}

/** A release version as Sentry allows it: non-empty, no slashes or newlines, not `.`/`..`/`latest`. */
export function versionProblem(version: string): string | null {
  if (version.trim() === '' || version.length > MAX_VERSION_LENGTH)
    return `release version must be 1 to ${MAX_VERSION_LENGTH} characters`;
  if (
    /[\n\r\t\f\x0b/\\]/.test(version) ||
    version === '.' ||
    version === '..' ||
    version === ' ' ||
    version.toLowerCase() === 'latest'
  ) {
    return `release version ${JSON.stringify(version)} is not allowed (no slashes or line breaks; not ".", ".." or "latest")`;
  }
  return null;
}

function dateField(value: unknown, name: string): number | null | undefined {
  if (value === undefined) return undefined;
  if (value === null) return null;
  if (typeof value !== 'string') throw new UploadError(400, `${name} must be an RFC 3339 date`);
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new UploadError(400, `${name} must be an RFC 3339 date`);
  return ms;
}

/** The fields of a release body sentry-cli sends (others, e.g. `status`, are ignored). */
export function parseReleaseBody(body: unknown): ReleaseChange {
  if (body === undefined) return {};
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new UploadError(400, 'request body must be a JSON object');
  const b = body as Record<string, unknown>;
  const out: ReleaseChange = {};
  if (b.version !== undefined) {
    if (typeof b.version !== 'string') throw new UploadError(400, 'version must be a string');
    const problem = versionProblem(b.version);
    if (problem) throw new UploadError(400, problem);
    out.version = b.version;
  }
  if (b.url !== undefined) {
    if (b.url !== null && typeof b.url !== 'string') throw new UploadError(400, 'url must be a string');
    out.url = b.url as string | null;
  }
  out.dateStarted = dateField(b.dateStarted, 'dateStarted');
  out.dateReleased = dateField(b.dateReleased, 'dateReleased');
  if (b.projects !== undefined) {
    if (!Array.isArray(b.projects) || b.projects.some((p) => typeof p !== 'string'))
      throw new UploadError(400, 'projects must be a list of project slugs');
    out.projects = b.projects as string[];
  }
  out.commits = parseReleaseCommits(b);
  return out;
}

type CliRelease = CliReleaseTable;

/** What sentry-cli added to a release besides its dates: its commits and deploys. */
export interface ReleaseActivity {
  commitCount: number;
  /** The first commits, in the order sent (git: the newest first). */
  commits: CommitRow[];
  deployCount: number;
  /** The newest deploys first. */
  deploys: DeployRow[];
}

const NO_ACTIVITY: ReleaseActivity = { commitCount: 0, commits: [], deployCount: 0, deploys: [] };

/** Projects a release-activity query names itself (its parameters count against D1's limit). */
const ACTIVITY_PROJECTS_PER_QUERY = 8;

/**
 * The commits and deploys of these versions in these projects (all when null), at most
 * `perRelease` of each listed. A version's commits are those of its first project that has
 * any (set-commits gives every project of the release the same list).
 */
export async function releaseActivity(
  db: Db,
  projectIds: number[] | null,
  versions: string[],
  perRelease: number,
): Promise<Map<string, ReleaseActivity>> {
  const out = new Map<string, ReleaseActivity>();
  const inProjects = (id: number) => projectIds === null || projectIds.includes(Number(id));
  // The tables' keys start with the project: a few projects are named in the query, so
  // their indexes serve it; more are filtered here.
  const named = projectIds !== null && projectIds.length <= ACTIVITY_PROJECTS_PER_QUERY ? projectIds : null;
  // Versions per query: within what every database binds in one statement (D1 the fewest).
  for (const part of chunks([...new Set(versions)], D1_MAX_BOUND_PARAMETERS - 1 - ACTIVITY_PROJECTS_PER_QUERY)) {
    const commitRows = () => {
      const q = db.selectFrom('release_commits').where('version', 'in', part);
      return named ? q.where('project_id', 'in', named) : q;
    };
    const deployRows = named
      ? db.selectFrom('release_deploys').where('project_id', 'in', named)
      : db.selectFrom('release_deploys');
    const [counts, firstCommits, deploys] = await Promise.all([
      commitRows()
        .select((eb) => ['project_id', 'version', eb.fn.countAll<number>().as('n')])
        .groupBy(['project_id', 'version'])
        .orderBy('project_id')
        .execute(),
      commitRows().selectAll().where('position', '<', perRelease).orderBy('project_id').orderBy('position').execute(),
      deployRows
        .selectAll()
        .where('version', 'in', part)
        .orderBy('date_finished', 'desc')
        .orderBy('deploy_id')
        .execute(),
    ]);
    const commitProject = new Map<string, number>();
    for (const c of counts) {
      if (!inProjects(c.project_id) || commitProject.has(c.version)) continue;
      commitProject.set(c.version, Number(c.project_id));
      out.set(c.version, { ...NO_ACTIVITY, commitCount: Number(c.n), commits: [], deploys: [] });
    }
    for (const c of firstCommits) {
      if (commitProject.get(c.version) === Number(c.project_id)) out.get(c.version)!.commits.push(c);
    }
    const seen = new Set<string>();
    for (const d of deploys) {
      if (!inProjects(d.project_id) || seen.has(d.deploy_id)) continue;
      seen.add(d.deploy_id);
      let a = out.get(d.version);
      if (!a) out.set(d.version, (a = { ...NO_ACTIVITY, commits: [], deploys: [] }));
      a.deployCount++;
      if (a.deploys.length < perRelease) a.deploys.push(d);
    }
  }
  return out;
}

/** Sentry's release JSON for rows of one version (one row per project). */
export function releaseJson(
  rows: CliRelease[],
  projects: ReadonlyMap<number, ProjectRow>,
  activity: ReleaseActivity = NO_ACTIVITY,
) {
  const first = rows[0];
  const created = Math.min(...rows.map((r) => Number(r.date_created)));
  const released =
    rows.map((r) => (r.date_released === null ? null : Number(r.date_released))).find((d) => d !== null) ?? null;
  const started =
    rows.map((r) => (r.date_started === null ? null : Number(r.date_started))).find((d) => d !== null) ?? null;
  return {
    version: first.version,
    shortVersion: first.version,
    ref: null,
    url: first.url,
    dateCreated: iso(created),
    dateStarted: started === null ? null : iso(started),
    dateReleased: released === null ? null : iso(released),
    lastEvent: null,
    newGroups: 0,
    commitCount: activity.commitCount,
    deployCount: activity.deployCount,
    lastCommit: activity.commits.length > 0 ? commitJson(activity.commits[0]) : null,
    lastDeploy: activity.deploys.length > 0 ? deployJson(activity.deploys[0]) : null,
    authors: authorsOf(activity.commits),
    owner: null,
    data: {},
    projects: rows.flatMap((r) => {
      const p = projects.get(Number(r.project_id));
      return p ? [{ id: Number(p.id), slug: p.slug, name: p.name, platform: p.platform }] : [];
    }),
  };
}

export type ReleaseJson = ReturnType<typeof releaseJson>;

function authorsOf(commits: CommitRow[]): { name: string | null; email: string | null }[] {
  const seen = new Map<string, { name: string | null; email: string | null }>();
  for (const c of commits) {
    if (c.author_name === null && c.author_email === null) continue;
    const key = c.author_email ?? c.author_name ?? '';
    if (!seen.has(key)) seen.set(key, { name: c.author_name, email: c.author_email });
  }
  return [...seen.values()];
}

/**
 * Creates the release in each project, or updates it where it exists (sentry-cli's
 * `releases new` on an existing version is an update, as on Sentry). Returns whether
 * any row was new.
 */
export async function upsertRelease(
  db: Db,
  projectIds: number[],
  version: string,
  change: ReleaseChange,
  now: number,
): Promise<boolean> {
  let created = false;
  for (const projectId of projectIds) {
    const existing = await db
      .selectFrom('cli_releases')
      .selectAll()
      .where('project_id', '=', projectId)
      .where('version', '=', version)
      .executeTakeFirst();
    if (!existing) {
      const res = await db
        .insertInto('cli_releases')
        .values({
          project_id: projectId,
          version,
          url: change.url ?? null,
          date_created: now,
          date_started: change.dateStarted ?? null,
          date_released: change.dateReleased ?? null,
        })
        .onConflict((oc) => oc.columns(['project_id', 'version']).doNothing())
        .executeTakeFirst();
      if (Number(res.numInsertedOrUpdatedRows ?? 0) === 1) {
        created = true;
        continue;
      }
    }
    await updateRelease(db, [projectId], version, change);
  }
  return created;
}

/** Applies the given fields to the release rows of these projects; the number of rows changed. */
export async function updateRelease(
  db: Db,
  projectIds: number[],
  version: string,
  change: ReleaseChange,
): Promise<number> {
  const set: Partial<CliRelease> = {};
  if (change.url !== undefined) set.url = change.url;
  if (change.dateStarted !== undefined) set.date_started = change.dateStarted;
  if (change.dateReleased !== undefined) set.date_released = change.dateReleased;
  if (Object.keys(set).length === 0) {
    const rows = await db
      .selectFrom('cli_releases')
      .select('project_id')
      .where('project_id', 'in', projectIds)
      .where('version', '=', version)
      .execute();
    return rows.length;
  }
  const res = await db
    .updateTable('cli_releases')
    .set(set)
    .where('project_id', 'in', projectIds)
    .where('version', '=', version)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

/** The rows of one version in these projects (all projects when `projectIds` is null). */
export async function findRelease(db: Db, projectIds: number[] | null, version: string): Promise<CliRelease[]> {
  let q = db.selectFrom('cli_releases').selectAll().where('version', '=', version);
  if (projectIds) q = q.where('project_id', 'in', projectIds);
  return q.orderBy('project_id').execute();
}

/** Newest releases first, grouped by version (all projects when `projectIds` is null). */
export async function listReleases(db: Db, projectIds: number[] | null): Promise<CliRelease[][]> {
  let q = db.selectFrom('cli_releases').selectAll();
  if (projectIds) q = q.where('project_id', 'in', projectIds);
  const rows = await q
    .orderBy('date_created', 'desc')
    .orderBy('version')
    .limit(RELEASE_LIST_LIMIT * 10)
    .execute();
  const byVersion = new Map<string, CliRelease[]>();
  for (const row of rows) {
    const list = byVersion.get(row.version) ?? [];
    list.push(row);
    byVersion.set(row.version, list);
  }
  return [...byVersion.values()].slice(0, RELEASE_LIST_LIMIT);
}

/** Removes the release rows of these projects (all when null), with their commits and deploys. */
export async function deleteRelease(db: Db, projectIds: number[] | null, version: string): Promise<number> {
  let q = db.deleteFrom('cli_releases').where('version', '=', version);
  if (projectIds) q = q.where('project_id', 'in', projectIds);
  const res = await q.executeTakeFirst();
  for (const table of ['release_commits', 'release_deploys'] as const) {
    let d = db.deleteFrom(table).where('version', '=', version);
    if (projectIds) d = d.where('project_id', 'in', projectIds);
    await d.execute();
  }
  return Number(res.numDeletedRows);
}

/**
 * Associates a ProGuard mapping with a release (build plugins; sentry-cli 2.x
 * `upload-proguard --app-id`): false when the pair was already recorded (409).
 */
export async function associateProguardRelease(
  db: Db,
  projectId: number,
  release: string,
  uuid: string,
  now: number,
): Promise<boolean> {
  const res = await db
    .insertInto('proguard_releases')
    .values({ project_id: projectId, release, proguard_uuid: uuid.toLowerCase(), created_at: now })
    .onConflict((oc) => oc.columns(['project_id', 'release', 'proguard_uuid']).doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0) === 1;
}
