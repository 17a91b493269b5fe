// Read API routes: overview, issues (list, detail, status, bulk status, merge), events
// (list, detail), releases (list, detail). Thin: parse the path, find the
// project, call src/read, map its errors to HTTP errors.
import { Hono, type Context } from 'hono';
import type { AppDeps } from '../context.js';
import { ReadInputError, ReadNotFoundError } from '../errors.js';
import { EVENT_LIST_PARAMETERS, eventDetail, listEvents, parseEventListQuery } from '../read/events.js';
import {
  bulkSetStatus,
  ISSUE_LIST_PARAMETERS,
  issueDetail,
  listIssues,
  parseBulkBody,
  parseIssueListQuery,
  parseStatusBody,
  setIssueStatus,
} from '../read/issues.js';
import { mergeIssues, parseMergeBody } from '../read/merge.js';
import { overview } from '../read/overview.js';
import { checkParameters, WINDOW_PARAMETERS, type RouteParameters } from '../read/params.js';
import { listReleases, releaseDetail } from '../read/releases.js';
import { findProjectBySlug } from '../store/projects.js';
import type { ProjectRow } from '../store/schema.js';
import { HttpError, readJson } from './errors.js';
import { actorOf } from './triage.js';
import { audit } from './audit.js';

const P = '/api/projects/:slug';
/** The routes that take only a time window (overview, issue detail, releases). */
const WINDOW_ONLY: RouteParameters = { names: WINDOW_PARAMETERS };
const NONE: RouteParameters = { names: [] };

export function readRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;
  const now = () => deps.clock.now();

  async function project(c: Context): Promise<ProjectRow> {
    const slug = c.req.param('slug') ?? '';
    const row = await findProjectBySlug(db, slug);
    if (!row) throw new HttpError(404, `project ${JSON.stringify(slug)} not found`);
    return row;
  }

  /** The request's query parameters, refused when one is not among those the route takes. */
  function query(c: Context, allowed: RouteParameters): Record<string, string> {
    const params = c.req.query();
    checkParameters(params, allowed);
    return params;
  }

  /** Runs a handler, turning the read domain's errors into HTTP errors. */
  const handle =
    (fn: (c: Context) => Promise<Response>) =>
    async (c: Context): Promise<Response> => {
      try {
        return await fn(c);
      } catch (err) {
        if (err instanceof ReadInputError || err instanceof ReadNotFoundError)
          throw new HttpError(err.status, err.message);
        throw err;
      }
    };

  app.get(
    `${P}/overview`,
    handle(async (c) => c.json(await overview(db, (await project(c)).id, query(c, WINDOW_ONLY), now()))),
  );

  app.get(
    `${P}/issues`,
    handle(async (c) => {
      const p = await project(c);
      return c.json(
        await listIssues(
          db,
          p.id,
          parseIssueListQuery(query(c, ISSUE_LIST_PARAMETERS), now()),
          now(),
          actorOf(c).userId,
        ),
      );
    }),
  );

  // Registered before /issues/:fingerprint so "bulk" is never taken for a fingerprint.
  app.post(
    `${P}/issues/bulk`,
    handle(async (c) => {
      const p = await project(c);
      const { fingerprints, ...change } = parseBulkBody(await readJson(c), now());
      const result = await bulkSetStatus(deps.store, p.id, fingerprints, change, now(), actorOf(c));
      await audit(deps, c, 'issue.bulk_status', p.slug, {
        status: change.status,
        ...(change.assignee !== undefined ? { assignee: change.assignee } : {}),
        fingerprints,
      });
      return c.json(result);
    }),
  );

  // Any other method on /issues/bulk is a wrong method on a known path, not a fingerprint lookup.
  app.all(`${P}/issues/bulk`, (c) =>
    c.json({ error: `method ${c.req.method} is not allowed on ${c.req.path}; allowed: POST` }, 405, { Allow: 'POST' }),
  );

  // Like bulk, registered before /issues/:fingerprint.
  app.post(
    `${P}/issues/merge`,
    handle(async (c) => {
      const p = await project(c);
      const body = parseMergeBody(await readJson(c));
      const result = await mergeIssues(deps.store, p.id, body, now(), actorOf(c));
      await audit(deps, c, 'issue.merge', p.slug, body as unknown as Record<string, unknown>);
      return c.json(result);
    }),
  );

  app.all(`${P}/issues/merge`, (c) =>
    c.json({ error: `method ${c.req.method} is not allowed on ${c.req.path}; allowed: POST` }, 405, { Allow: 'POST' }),
  );

  app.get(
    `${P}/issues/:fingerprint`,
    handle(async (c) => {
      const p = await project(c);
      return c.json(await issueDetail(db, p.id, c.req.param('fingerprint') ?? '', query(c, WINDOW_ONLY), now()));
    }),
  );

  app.patch(
    `${P}/issues/:fingerprint`,
    handle(async (c) => {
      const p = await project(c);
      const change = parseStatusBody(await readJson(c), now());
      const fingerprint = c.req.param('fingerprint') ?? '';
      const result = await setIssueStatus(deps.store, p.id, fingerprint, change, now(), actorOf(c));
      await audit(deps, c, change.status !== null ? 'issue.status' : 'issue.assign', `${p.slug}/${fingerprint}`, {
        status: change.status,
        ...(change.assignee !== undefined ? { assignee: change.assignee } : {}),
      });
      return c.json(result);
    }),
  );

  app.get(
    `${P}/events`,
    handle(async (c) => {
      const p = await project(c);
      return c.json(await listEvents(db, p.id, parseEventListQuery(query(c, EVENT_LIST_PARAMETERS), now())));
    }),
  );

  app.get(
    `${P}/events/:id`,
    handle(async (c) => {
      const p = await project(c);
      query(c, NONE);
      return c.json(await eventDetail(db, p.id, c.req.param('id') ?? '', deps.decompressBlob, deps.blobs));
    }),
  );

  app.get(
    `${P}/releases`,
    handle(async (c) => c.json(await listReleases(db, (await project(c)).id, query(c, WINDOW_ONLY), now()))),
  );

  // A version may hold "/" (sent raw or as %2F), "@" and "+": the parameter takes the rest of the path.
  app.get(
    `${P}/releases/:version{.+}`,
    handle(async (c) => {
      const p = await project(c);
      return c.json(await releaseDetail(db, p.id, c.req.param('version') ?? '', query(c, WINDOW_ONLY), now()));
    }),
  );

  return app;
}
