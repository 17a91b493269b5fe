// Deploys of releases sentry-cli created (`deploys new|list`, 2.x `releases deploys`,
// the build plugins' `release.deploy`): `{environment, name, url, dateStarted,
// dateFinished}` per release, kept in `release_deploys` with one row per project of the
// release and one id shared by those rows, answered in Sentry's shape (docs/api.md,
// "Uploader routes").
import type { Kysely } from 'kysely';
import { iso } from '../clock.js';
import { hasUnsafeText } from '../ingest/hygiene.js';
import { executeAtomically, type Store } from '../store/database.js';
import type { Database, ReleaseDeployTable } from '../store/schema.js';
import { UploadError } from './errors.js';
import { DEPLOY_LIST_LIMIT, MAX_DEPLOY_NAME_LENGTH, MAX_RELEASE_TEXT_LENGTH } from '../limits.js';
import { randomId } from '../protocol-values.js';

type Db = Kysely<Database>;
export type DeployRow = ReleaseDeployTable;

export interface DeployInput {
  environment: string;
  name: string | null;
  url: string | null;
  dateStarted: number | null;
  /** Absent: the time the deploy is recorded (as Sentry does; sentry-cli's list needs one). */
  dateFinished: number | null;
  /** Projects of the release the deploy is for; absent: all of them. */
  projects?: string[];
}

/** A text field of a release body: a string within `max` characters, or null when absent. */
export function optionalText(value: unknown, name: string, max: number): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') throw new UploadError(400, `${name} must be a string`);
  if (value.length > max) throw new UploadError(400, `${name} must be at most ${max} characters`);
  if (hasUnsafeText(value)) throw new UploadError(400, `${name} holds a NUL character or a lone surrogate`);
  return value;
}

/** An RFC 3339 date of a release body as epoch ms, or null when absent. */
export function optionalDate(value: unknown, name: string): number | null {
  if (value === undefined || value === null) return null;
  const ms = typeof value === 'string' ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) throw new UploadError(400, `${name} must be an RFC 3339 date`);
  return ms;
}

/** The body of `POST .../deploys/` as sentry-cli sends it. */
export function parseDeployBody(body: unknown): DeployInput {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new UploadError(400, 'request body must be a JSON object');
  const b = body as Record<string, unknown>;
  const environment = optionalText(b.environment, 'environment', MAX_DEPLOY_NAME_LENGTH);
  // Sentry's environment names: no slashes or line breaks.
  if (!environment || environment.trim() === '') throw new UploadError(400, 'environment is required');
  if (/[\n\r\f/]/.test(environment)) throw new UploadError(400, 'environment must not hold slashes or line breaks');
  const out: DeployInput = {
    environment,
    name: optionalText(b.name, 'name', MAX_DEPLOY_NAME_LENGTH) || null,
    url: optionalText(b.url, 'url', MAX_RELEASE_TEXT_LENGTH) || null,
    dateStarted: optionalDate(b.dateStarted, 'dateStarted'),
    dateFinished: optionalDate(b.dateFinished, 'dateFinished'),
  };
  if (b.projects !== undefined && b.projects !== null) {
    if (!Array.isArray(b.projects) || b.projects.some((p) => typeof p !== 'string'))
      throw new UploadError(400, 'projects must be a list of project slugs');
    if (b.projects.length > 0) out.projects = b.projects as string[];
  }
  return out;
}

/** Sentry's deploy JSON. */
export function deployJson(row: DeployRow) {
  return {
    id: row.deploy_id,
    environment: row.environment,
    name: row.name,
    url: row.url,
    dateStarted: row.date_started === null ? null : iso(Number(row.date_started)),
    dateFinished: iso(Number(row.date_finished)),
  };
}

export type DeployJson = ReturnType<typeof deployJson>;

/** Records one deploy of `version` in each of these projects (all rows or none), under one new id. */
export async function createDeploy(
  store: Store,
  projectIds: number[],
  version: string,
  input: DeployInput,
  now: number,
): Promise<DeployRow> {
  const row: Omit<DeployRow, 'project_id'> = {
    deploy_id: randomId(),
    version,
    environment: input.environment,
    name: input.name,
    url: input.url,
    date_started: input.dateStarted,
    date_finished: input.dateFinished ?? now,
  };
  await executeAtomically(
    store,
    projectIds.map((projectId) =>
      store.db
        .insertInto('release_deploys')
        .values({ ...row, project_id: projectId })
        .compile(),
    ),
  );
  return { ...row, project_id: projectIds[0] };
}

/**
 * The deploys of `version` in these projects (all projects when null), newest first, each
 * once (a deploy of a release in several projects has a row in each).
 */
export async function listDeploys(
  db: Db,
  projectIds: number[] | null,
  version: string,
  limit = DEPLOY_LIST_LIMIT,
): Promise<DeployRow[]> {
  let q = db.selectFrom('release_deploys').selectAll().where('version', '=', version);
  if (projectIds) q = q.where('project_id', 'in', projectIds);
  const rows = await q.orderBy('date_finished', 'desc').orderBy('deploy_id').orderBy('project_id').execute();
  const seen = new Set<string>();
  const out: DeployRow[] = [];
  for (const row of rows) {
    if (seen.has(row.deploy_id)) continue;
    seen.add(row.deploy_id);
    out.push(row);
    if (out.length >= limit) break;
  }
  return out;
}
