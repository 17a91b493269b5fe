// Projects API (/api/projects): list, create, get, patch, delete, rotate-key.
// Each field is validated by the schemas of src/store/project-input.ts;
// unknown fields are refused so a typo never passes silently.
import { Hono, type Context } from 'hono';
import type { z } from 'zod';
import { iso } from '../clock.js';
import type { AppDeps } from '../context.js';
import type { ProjectRow } from '../store/schema.js';
import { createSchema, patchSchema, privacyColumns } from '../store/project-input.js';
import { parseList } from '../privacy/scrub.js';
import {
  PROJECT_DEFAULTS,
  SlugTakenError,
  type NewProjectInput,
  createProject,
  deleteProject,
  findProjectBySlug,
  listProjects,
  rotateProjectKey,
  updateProject,
  type ProjectCreated,
} from '../store/projects.js';
import { HttpError, badRequest, notFound, readJsonObject, zodMessage } from './errors.js';
import { buildDsn, publicBaseUrl } from './public-url.js';
import { audit } from './audit.js';
import { addDefaultRules } from '../alerts/store.js';

/** What creating a project sets up besides its row, for every route that creates one (the API's and the dashboard's). */
export const PROJECT_CREATED: readonly ProjectCreated[] = [addDefaultRules];

/** Validates a project body; a failure is a 400 naming each bad field. */
export function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const result = schema.safeParse(body);
  if (!result.success) throw badRequest(zodMessage(result.error));
  return result.data;
}

/** A validated create body with the defaults of docs/api.md "The project object" filled in. */
export function withDefaults(input: z.infer<typeof createSchema>): NewProjectInput {
  return {
    slug: input.slug,
    name: input.name ?? input.slug,
    platform: input.platform ?? PROJECT_DEFAULTS.platform,
    sample_keep_first: input.sample_keep_first ?? PROJECT_DEFAULTS.sample_keep_first,
    sample_rate: input.sample_rate ?? PROJECT_DEFAULTS.sample_rate,
    daily_quota: input.daily_quota ?? PROJECT_DEFAULTS.daily_quota,
    ...Object.fromEntries(Object.entries(privacyColumns(input)).filter(([, v]) => v !== undefined)),
  };
}

/** The project object of the API (docs/api.md "The project object"). */
export function projectJson(project: ProjectRow, baseUrl: string) {
  return {
    id: project.id,
    slug: project.slug,
    name: project.name,
    platform: project.platform,
    sample_keep_first: project.sample_keep_first,
    sample_rate: project.sample_rate,
    daily_quota: project.daily_quota,
    scrub_defaults: Boolean(project.scrub_defaults),
    scrub_ip_addresses: Boolean(project.scrub_ip_addresses),
    scrub_fields: parseList(project.scrub_fields),
    safe_fields: parseList(project.safe_fields),
    storage_budget_mb: Number(project.storage_budget_mb),
    created_at: iso(project.created_at),
    dsn: buildDsn(baseUrl, project.dsn_key, project.id),
  };
}

export function projectRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;
  const json = (c: Context, project: ProjectRow) => projectJson(project, publicBaseUrl(c, deps.config));

  async function projectOr404(slug: string): Promise<ProjectRow> {
    const project = await findProjectBySlug(db, slug);
    if (!project) throw notFound(`project "${slug}"`);
    return project;
  }

  app.get('/api/projects', async (c) => {
    const base = publicBaseUrl(c, deps.config);
    const projects = await listProjects(db);
    return c.json(projects.map((p) => projectJson(p, base)));
  });

  app.post('/api/projects', async (c) => {
    const input = parse(createSchema, await readJsonObject(c));
    try {
      const project = await createProject(db, withDefaults(input), deps.clock.now(), PROJECT_CREATED);
      deps.logger.info({ project: project.slug, project_id: project.id }, 'project created');
      await audit(deps, c, 'project.create', project.slug);
      return c.json(json(c, project), 201, { Location: `/api/projects/${project.slug}` });
    } catch (err) {
      if (err instanceof SlugTakenError) throw new HttpError(409, err.message);
      throw err;
    }
  });

  app.get('/api/projects/:slug', async (c) => c.json(json(c, await projectOr404(c.req.param('slug')))));

  app.patch('/api/projects/:slug', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    const patch = parse(patchSchema, await readJsonObject(c));
    const updated = await updateProject(db, project.id, { ...patch, ...privacyColumns(patch) });
    if (!updated) throw notFound(`project "${project.slug}"`);
    await audit(deps, c, 'project.update', project.slug, patch as Record<string, unknown>);
    return c.json(json(c, updated));
  });

  app.delete('/api/projects/:slug', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    if (!(await deleteProject(db, project.id, deps.blobs))) throw notFound(`project "${project.slug}"`);
    deps.logger.info({ project: project.slug, project_id: project.id }, 'project deleted');
    await audit(deps, c, 'project.delete', project.slug);
    return c.body(null, 204);
  });

  app.post('/api/projects/:slug/rotate-key', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    const rotated = await rotateProjectKey(db, project.id);
    if (!rotated) throw notFound(`project "${project.slug}"`);
    deps.logger.info({ project: project.slug, project_id: project.id }, 'project DSN key rotated');
    await audit(deps, c, 'project.rotate_key', project.slug);
    return c.json(json(c, rotated));
  });

  return app;
}
