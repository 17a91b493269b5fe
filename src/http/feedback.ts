// User feedback routes (docs/api.md "User feedback"): Sentry's
// `POST /api/0/projects/{org}/{project}/user-feedback/` (an API key, as every /api/0/
// route), and the project's feedback list, newest first, paged by cursor.
import { Hono, type Context } from 'hono';
import type { AppDeps } from '../context.js';
import { feedbackFromBody, userFeedbackBody } from '../feedback/rules.js';
import { feedbackDigest, listFeedback, storeFeedback } from '../feedback/storage.js';
import { findIssue } from '../read/issues.js';
import { ReadNotFoundError } from '../errors.js';
import { findProjectByIdOrSlug, findProjectBySlug } from '../store/projects.js';
import type { ProjectRow } from '../store/schema.js';
import { badRequest, HttpError, readJson, zodMessage } from './errors.js';

const MAX_LIMIT = 100;

export function feedbackRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;

  async function project(
    c: Context,
    find: (db: AppDeps['store']['db'], key: string) => Promise<ProjectRow | undefined>,
    param: string,
  ): Promise<ProjectRow> {
    const key = c.req.param(param) ?? '';
    const row = await find(db, key);
    if (!row) throw new HttpError(404, `project ${JSON.stringify(key)} not found`);
    return row;
  }

  const create = async (c: Context) => {
    const p = await project(c, findProjectByIdOrSlug, 'project');
    const parsed = userFeedbackBody.safeParse(await readJson(c));
    if (!parsed.success) throw badRequest(zodMessage(parsed.error));
    const now = deps.clock.now();
    const input = feedbackFromBody(parsed.data, now);
    await storeFeedback(deps.store, p.id, [input], now);
    const row = await db
      .selectFrom('user_feedback')
      .select(['id', 'created_at'])
      .where('project_id', '=', p.id)
      .where('digest', '=', await feedbackDigest(input))
      .executeTakeFirstOrThrow();
    // Sentry's answer (its UserReport serializer), so its SDKs and scripts read it.
    return c.json({
      id: String(row.id),
      eventID: input.eventId,
      name: input.name,
      email: input.email,
      comments: input.comments,
      dateCreated: new Date(Number(row.created_at)).toISOString(),
    });
  };
  app.post('/api/0/projects/:org/:project/user-feedback/', create);
  app.post('/api/0/projects/:org/:project/user-feedback', create);

  app.get('/api/projects/:slug/feedback', async (c) => {
    const p = await project(c, findProjectBySlug, 'slug');
    const q = c.req.query();
    for (const name of Object.keys(q)) {
      if (!['cursor', 'limit', 'issue'].includes(name))
        throw badRequest(`unknown parameter ${JSON.stringify(name)}; this route takes cursor, limit and issue`);
    }
    let limit = 50;
    if (q.limit !== undefined) {
      if (!/^[0-9]{1,6}$/.test(q.limit) || Number(q.limit) < 1)
        throw badRequest('limit must be a whole number from 1 to 100');
      limit = Math.min(MAX_LIMIT, Number(q.limit));
    }
    let before: number | undefined;
    if (q.cursor !== undefined) {
      if (!/^[0-9]{1,15}$/.test(q.cursor)) throw badRequest('cursor must be the next_cursor of the previous page');
      before = Number(q.cursor);
    }
    let issueId: number | undefined;
    if (q.issue !== undefined) {
      try {
        issueId = Number((await findIssue(db, p.id, q.issue)).row.id);
      } catch (err) {
        if (err instanceof ReadNotFoundError) throw new HttpError(404, err.message);
        throw err;
      }
    }
    return c.json(await listFeedback(db, p.id, { limit, before, issueId }));
  });

  return app;
}
