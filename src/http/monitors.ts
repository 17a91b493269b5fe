// Cron monitors API (/api/projects/{slug}/monitors): the list, one monitor with its
// recent check-ins, PATCH (status, config) and DELETE. Thin: src/monitors does the work;
// MonitorConfigError is a 400, unknown projects and monitors 404.
import { Hono } from 'hono';
import type { AppDeps } from '../context.js';
import { MonitorConfigError, parseMonitorPatch } from '../monitors/config.js';
import {
  checkinJson,
  configOf,
  deleteMonitor,
  findMonitor,
  listMonitors,
  monitorJson,
  recentCheckins,
  updateMonitor,
  type MonitorRow,
} from '../monitors/store.js';
import { findProjectBySlug } from '../store/projects.js';
import type { ProjectRow } from '../store/schema.js';
import { badRequest, HttpError, notFound, readJson } from './errors.js';

export function monitorRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;

  async function projectOr404(slug: string): Promise<ProjectRow> {
    const project = await findProjectBySlug(db, slug);
    if (!project) throw notFound(`project "${slug}"`);
    return project;
  }

  async function monitorOr404(project: ProjectRow, slug: string): Promise<MonitorRow> {
    const monitor = await findMonitor(db, project.id, slug);
    if (!monitor) throw notFound(`monitor "${slug}"`);
    return monitor;
  }

  async function detail(m: MonitorRow) {
    return { ...monitorJson(m), checkins: (await recentCheckins(db, m.id)).map(checkinJson) };
  }

  app.get('/api/projects/:slug/monitors', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    return c.json({ monitors: (await listMonitors(db, project.id)).map(monitorJson) });
  });

  app.get('/api/projects/:slug/monitors/:monitor', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    return c.json(await detail(await monitorOr404(project, c.req.param('monitor'))));
  });

  app.patch('/api/projects/:slug/monitors/:monitor', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    const monitor = await monitorOr404(project, c.req.param('monitor'));
    const body = await readJson(c);
    let patch: ReturnType<typeof parseMonitorPatch>;
    try {
      patch = parseMonitorPatch(body, configOf(monitor));
    } catch (err) {
      if (err instanceof MonitorConfigError) throw badRequest(err.message);
      throw err;
    }
    if (!(await updateMonitor(deps.store, monitor, patch, deps.clock.now()))) {
      throw new HttpError(
        409,
        'the monitor changed while this request was handled (a check-in arrived); send the PATCH again',
      );
    }
    return c.json(await detail(await monitorOr404(project, monitor.slug)));
  });

  app.delete('/api/projects/:slug/monitors/:monitor', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    await deleteMonitor(deps.store, await monitorOr404(project, c.req.param('monitor')));
    deps.logger.info({ project: project.slug, monitor: c.req.param('monitor') }, 'monitor deleted');
    return c.body(null, 204);
  });

  return app;
}
