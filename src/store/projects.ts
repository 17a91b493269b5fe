// Projects in the store: the rules a project's fields follow (slug pattern,
// reserved slugs, platforms, defaults), DSN keys, and every project query.
// Deleting a project relies on the schema's ON DELETE CASCADE foreign keys to
// remove everything under it in the same statement.
import { deleteObjects, type BlobBucket } from './blobs.js';
import type { Kysely } from 'kysely';
import type { Database, ProjectRow } from './schema.js';

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** Words a slug may not be (besides all-digit slugs, which would clash with numeric ids). */
export const RESERVED_SLUGS: readonly string[] = [
  'api',
  'health',
  'new',
  'bulk',
  'settings',
  'export',
  'import',
  'static',
  'assets',
  'login',
  'logout',
  'admin',
];

export const PLATFORMS = ['ios', 'android', 'flutter', 'react-native', 'web', 'backend', 'other'] as const;
export type Platform = (typeof PLATFORMS)[number];

export const PROJECT_DEFAULTS = {
  platform: 'other' as Platform,
  sample_keep_first: 100,
  sample_rate: 1.0,
  daily_quota: 0,
  // Privacy and storage (docs/privacy.md): scrub by the default rules, keep IP addresses, no budget.
  scrub_defaults: 1,
  scrub_ip_addresses: 0,
  scrub_fields: '[]',
  safe_fields: '[]',
  storage_budget_mb: 0,
};

/** Why a slug cannot be used, or null when it can. */
export function slugProblem(slug: string): string | null {
  if (!SLUG_PATTERN.test(slug)) {
    return 'slug must be 1 to 64 characters: lowercase letters, digits, ".", "_" or "-", starting with a letter or digit';
  }
  if (/^[0-9]+$/.test(slug)) return 'slug must not be all digits (numeric slugs clash with project ids)';
  if (RESERVED_SLUGS.includes(slug))
    return `slug "${slug}" is reserved; reserved slugs are ${RESERVED_SLUGS.join(', ')}`;
  return null;
}

/** 32 random lowercase hex characters (Web Crypto, so every edition can use it). */
export function generateDsnKey(): string {
  const bytes = new Uint8Array(16);
  globalThis.crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

export interface NewProjectInput {
  slug: string;
  name: string;
  platform: string;
  sample_keep_first: number;
  sample_rate: number;
  daily_quota: number;
  scrub_defaults?: number;
  scrub_ip_addresses?: number;
  /** JSON list of key names. */
  scrub_fields?: string;
  safe_fields?: string;
  storage_budget_mb?: number;
}

export type ProjectPatch = Partial<
  Pick<
    NewProjectInput,
    | 'name'
    | 'platform'
    | 'sample_keep_first'
    | 'sample_rate'
    | 'daily_quota'
    | 'scrub_defaults'
    | 'scrub_ip_addresses'
    | 'scrub_fields'
    | 'safe_fields'
    | 'storage_budget_mb'
  >
>;

export class SlugTakenError extends Error {
  constructor(readonly slug: string) {
    super(`a project with slug "${slug}" already exists`);
  }
}

type Db = Kysely<Database>;

/** Every project, oldest first. */
export async function listProjects(db: Db): Promise<ProjectRow[]> {
  return db.selectFrom('projects').selectAll().orderBy('id').execute();
}

export async function findProjectById(db: Db, id: number): Promise<ProjectRow | undefined> {
  if (!Number.isSafeInteger(id) || id <= 0) return undefined;
  return db.selectFrom('projects').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * How long the ingest path trusts a project row it has read. Writes made through this
 * module forget the rows at once; a change made by another process (another server
 * on the same PostgreSQL database) is seen within this time. The writer re-reads the
 * project inside each batch's transaction, so settings and deletions always apply to
 * what is stored; only which DSN key is accepted can lag by this much.
 */
export const INGEST_PROJECT_TTL_MS = 1000;

interface CachedProjects {
  /** Bumped by every project write, so a lookup that raced a write does not cache its stale row. */
  generation: number;
  rows: Map<number, { row: ProjectRow; until: number }>;
}

const ingestProjects = new WeakMap<Db, CachedProjects>();

function projectCacheOf(db: Db): CachedProjects {
  let cache = ingestProjects.get(db);
  if (!cache) {
    cache = { generation: 0, rows: new Map() };
    ingestProjects.set(db, cache);
  }
  return cache;
}

/**
 * Every project write goes through this: once the write has settled, the ingest
 * path forgets what it read, and a lookup that was in flight meanwhile does not
 * cache its possibly stale row (the generation moved on). A rotated-out key stops
 * working with the write's commit.
 */
async function forgettingProjects<T>(db: Db, write: Promise<T>): Promise<T> {
  try {
    return await write;
  } finally {
    const cache = projectCacheOf(db);
    cache.generation += 1;
    cache.rows.clear();
  }
}

/**
 * findProjectById for the ingest path, answered from memory for up to
 * INGEST_PROJECT_TTL_MS: one query per request would be the largest single statement
 * cost of SQLite ingest (measured). Unknown ids are not cached. A remembered row
 * whose key is not `presentedKey` is read again, so a key rotated on another
 * instance works here at once; the old key is refused once the row is re-read (by
 * such a request, or when it expires).
 */
export async function findProjectForIngest(db: Db, id: number, presentedKey?: string): Promise<ProjectRow | undefined> {
  const now = Date.now();
  const cache = projectCacheOf(db);
  const hit = cache.rows.get(id);
  if (hit && hit.until > now && (presentedKey === undefined || hit.row.dsn_key === presentedKey)) return hit.row;
  const generation = cache.generation;
  const row = await findProjectById(db, id);
  if (!row) cache.rows.delete(id);
  else if (cache.generation === generation) {
    if (cache.rows.size >= 10_000) cache.rows.clear();
    cache.rows.set(id, { row, until: now + INGEST_PROJECT_TTL_MS });
  }
  return row;
}

export async function findProjectBySlug(db: Db, slug: string): Promise<ProjectRow | undefined> {
  return db.selectFrom('projects').selectAll().where('slug', '=', slug).executeTakeFirst();
}

/** A numeric string is an id (slugs are never all digits), anything else a slug. */
export async function findProjectByIdOrSlug(db: Db, idOrSlug: string): Promise<ProjectRow | undefined> {
  if (/^[0-9]{1,15}$/.test(idOrSlug)) return findProjectById(db, Number(idOrSlug));
  return findProjectBySlug(db, idOrSlug);
}

export async function findProjectByDsnKey(db: Db, dsnKey: string): Promise<ProjectRow | undefined> {
  return db.selectFrom('projects').selectAll().where('dsn_key', '=', dsnKey).executeTakeFirst();
}

/**
 * What runs once a project is inserted, on the same database handle: a domain that keeps
 * rows per project adds its own (src/alerts/store.ts addDefaultRules). The routes that
 * create projects pass them (src/http/projects.ts PROJECT_CREATED), so the store calls no
 * domain.
 */
export type ProjectCreated = (db: Db, project: ProjectRow) => Promise<void>;

/** Inserts a project with a fresh DSN key, then runs `onCreated`. Throws SlugTakenError when the slug exists (also under a race). */
export async function createProject(
  db: Db,
  input: NewProjectInput,
  now: number,
  onCreated: readonly ProjectCreated[] = [],
): Promise<ProjectRow> {
  if (await findProjectBySlug(db, input.slug)) throw new SlugTakenError(input.slug);
  try {
    const project = await db
      .insertInto('projects')
      .values({ ...input, dsn_key: generateDsnKey(), created_at: now })
      .returningAll()
      .executeTakeFirstOrThrow();
    for (const hook of onCreated) await hook(db, project);
    return project;
  } catch (err) {
    // A concurrent create of the same slug loses on the unique index.
    if (isUniqueViolation(err) && (await findProjectBySlug(db, input.slug))) throw new SlugTakenError(input.slug);
    throw err;
  }
}

export async function updateProject(db: Db, id: number, patch: ProjectPatch): Promise<ProjectRow | undefined> {
  const values = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
  if (Object.keys(values).length === 0) return findProjectById(db, id);
  return forgettingProjects(
    db,
    db.updateTable('projects').set(values).where('id', '=', id).returningAll().executeTakeFirst(),
  );
}

/**
 * Removes the project and, through the cascading foreign keys, everything under it; with
 * a bucket, then the objects its payload, attachment and symbol chunks named (src/store/blobs.ts). A chunk an
 * ingest adds between the two reads is left as an orphan object, which retention sweeps.
 */
export async function deleteProject(db: Db, id: number, blobs?: BlobBucket): Promise<boolean> {
  const keys = blobs
    ? [
        ...(await db
          .selectFrom('payload_chunks')
          .select('r2_key')
          .where('project_id', '=', id)
          .where('r2_key', 'is not', null)
          .execute()),
        ...(await db
          .selectFrom('attachment_chunks')
          .select('r2_key')
          .where('attachment_id', 'in', db.selectFrom('attachments').select('id').where('project_id', '=', id))
          .where('r2_key', 'is not', null)
          .execute()),
        ...(await db
          .selectFrom('symbol_chunks')
          .select('r2_key')
          .where('file_id', 'in', db.selectFrom('symbol_files').select('id').where('project_id', '=', id))
          .where('r2_key', 'is not', null)
          .execute()),
      ].map((r) => r.r2_key)
    : [];
  const result = await forgettingProjects(db, db.deleteFrom('projects').where('id', '=', id).executeTakeFirst());
  await deleteObjects(blobs, keys);
  return Number(result.numDeletedRows) > 0;
}

/** Gives the project a new DSN key; the old one stops working with this commit. */
export async function rotateProjectKey(db: Db, id: number): Promise<ProjectRow | undefined> {
  return forgettingProjects(
    db,
    db
      .updateTable('projects')
      .set({ dsn_key: generateDsnKey() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirst(),
  );
}

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | null;
  if (!e) return false;
  // PostgreSQL unique_violation, SQLite SQLITE_CONSTRAINT_UNIQUE.
  return (
    e.code === '23505' || e.code === 'SQLITE_CONSTRAINT_UNIQUE' || /UNIQUE constraint failed/i.test(e.message ?? '')
  );
}
