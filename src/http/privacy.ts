// Privacy and storage routes (docs/privacy.md): erasing an end user's data
// (`DELETE /api/projects/{slug}/users/{user}/events`) and storage usage
// (`GET /api/projects/{slug}/usage`, `GET /api/usage`). The domain work is in src/privacy.
import { Hono } from 'hono';
import type { AppDeps } from '../context.js';
import { attachmentsOfEvents } from '../attachments/storage.js';
import { feedbackOfEndUser } from '../feedback/storage.js';
import { eraseEndUser, parseEndUser } from '../privacy/erase.js';
import { findProjectBySlug, listProjects } from '../store/projects.js';
import { databaseBytes, projectUsage, type ProjectUsage } from '../privacy/usage.js';
import { HttpError, notFound } from './errors.js';

export function privacyRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;
  // One erasure at a time per app: two rewriting the same payload chunk at once could
  // put back what the other blanked.
  let erasing: Promise<unknown> = Promise.resolve();

  app.delete('/api/projects/:slug/users/:user/events', async (c) => {
    const slug = c.req.param('slug');
    const project = await findProjectBySlug(db, slug);
    if (!project) throw notFound(`project "${slug}"`);
    const { compressBlob } = deps;
    if (!compressBlob)
      throw new HttpError(501, 'this edition cannot rewrite stored payloads, so it cannot erase end users');
    const user = parseEndUser(c.req.param('user'));
    if (user.value === '') throw new HttpError(400, 'the end user must not be empty');
    // What hangs off the user's events in other domains goes in the same atomic writes.
    const extra = [
      (db: typeof deps.store.db, pid: number, ids: number[]) => attachmentsOfEvents(db, pid, ids),
      feedbackOfEndUser,
    ];
    const run = erasing.then(() =>
      eraseEndUser(
        { store: deps.store, compressBlob, decompressBlob: deps.decompressBlob, blobs: deps.blobs },
        project.id,
        user,
        extra,
      ),
    );
    erasing = run.catch(() => undefined);
    const summary = await run;
    // The user's identity is personal data: the log names the project and the counts only.
    deps.logger.info(
      { project: project.slug, project_id: project.id, events: summary.events, chunks: summary.chunks },
      'end user data erased',
    );
    return c.body(null, 204);
  });

  app.get('/api/projects/:slug/usage', async (c) => {
    const slug = c.req.param('slug');
    const project = await findProjectBySlug(db, slug);
    if (!project) throw notFound(`project "${slug}"`);
    return c.json(await projectUsage(db, project, deps.clock.now()));
  });

  app.get('/api/usage', async (c) => {
    const now = deps.clock.now();
    const projects: ProjectUsage[] = [];
    for (const p of await listProjects(db)) projects.push(await projectUsage(db, p, now));
    const sum = (f: (u: ProjectUsage) => number) => projects.reduce((n, u) => n + f(u), 0);
    return c.json({
      bytes: sum((u) => u.bytes),
      database_bytes: await databaseBytes(db, deps.store.dialect),
      kinds: {
        events: { count: sum((u) => u.kinds.events.count), bytes: sum((u) => u.kinds.events.bytes) },
        attachments: { count: sum((u) => u.kinds.attachments.count), bytes: sum((u) => u.kinds.attachments.bytes) },
        symbols: { count: sum((u) => u.kinds.symbols.count), bytes: sum((u) => u.kinds.symbols.bytes) },
      },
      projects,
    });
  });

  return app;
}
