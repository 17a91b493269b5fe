// Triage routes (docs/api.md "Issue activity", "Comments"): an issue's activity
// timeline and comments. Thin: find the project and the issue (a merged fingerprint
// finds the issue it was merged into), call src/triage, map its errors.
import { Hono, type Context } from 'hono';
import type { AppDeps } from '../context.js';
import { ReadInputError, ReadNotFoundError } from '../errors.js';
import { findIssue } from '../read/issues.js';
import { checkParameters } from '../read/params.js';
import { findProjectBySlug } from '../store/projects.js';
import {
  addComment,
  deleteComment,
  editComment,
  ForbiddenError,
  listActivity,
  parseCommentBody,
  type Actor,
} from '../triage/activity.js';
import { requestActor } from './auth.js';
import { audit } from './audit.js';
import { HttpError, readJson } from './errors.js';

const ISSUE = '/api/projects/:slug/issues/:fingerprint';

/** The request's actor (src/http/auth.ts requestActor) as triage records it. */
export function actorOf(c: Context): Actor {
  const actor = requestActor(c);
  return { label: actor.label, userId: actor.userId ?? null, admin: actor.role === 'admin' };
}

export function triageRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;
  const now = () => deps.clock.now();

  async function issue(c: Context) {
    const slug = c.req.param('slug') ?? '';
    const project = await findProjectBySlug(db, slug);
    if (!project) throw new HttpError(404, `project ${JSON.stringify(slug)} not found`);
    const { row, mergedInto } = await findIssue(db, project.id, c.req.param('fingerprint') ?? '');
    return { project, row, mergedInto };
  }

  const handle =
    (fn: (c: Context) => Promise<Response>) =>
    async (c: Context): Promise<Response> => {
      try {
        return await fn(c);
      } catch (err) {
        if (err instanceof ReadInputError || err instanceof ReadNotFoundError || err instanceof ForbiddenError)
          throw new HttpError(err.status, err.message);
        throw err;
      }
    };

  app.get(
    `${ISSUE}/activity`,
    handle(async (c) => {
      checkParameters(c.req.query(), { names: [] });
      const { row, mergedInto } = await issue(c);
      return c.json({
        activity: await listActivity(db, Number(row.id)),
        ...(mergedInto !== undefined ? { merged_into: mergedInto } : {}),
      });
    }),
  );

  app.post(
    `${ISSUE}/comments`,
    handle(async (c) => {
      const text = parseCommentBody(await readJson(c));
      const { project, row } = await issue(c);
      return c.json(
        await addComment(
          deps.store,
          project.id,
          { id: Number(row.id), last_release: row.last_release },
          text,
          actorOf(c),
          now(),
        ),
        201,
      );
    }),
  );

  app.patch(
    `${ISSUE}/comments/:id`,
    handle(async (c) => {
      const text = parseCommentBody(await readJson(c));
      const { row } = await issue(c);
      return c.json(await editComment(deps.store, Number(row.id), c.req.param('id') ?? '', text, actorOf(c), now()));
    }),
  );

  app.delete(
    `${ISSUE}/comments/:id`,
    handle(async (c) => {
      const { project, row } = await issue(c);
      const id = c.req.param('id') ?? '';
      await deleteComment(deps.store, Number(row.id), id, actorOf(c));
      await audit(deps, c, 'issue.comment_delete', `${project.slug}/${row.fingerprint}`, { comment: id });
      return c.body(null, 204);
    }),
  );

  return app;
}
