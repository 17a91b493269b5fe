// Alerts API (/api/projects/{slug}/alerts): rules, channels, test alerts and the
// delivery log. Thin: parses the request, calls src/alerts, maps AlertInputError to
// 400 and unknown projects, types and channels to 404.
import { Hono } from 'hono';
import { addChannel, sendTestAlert } from '../alerts/channel-admin.js';
import { ALERT_TYPES, AlertInputError, isAlertType, parseRulePatch } from '../alerts/rules.js';
import {
  channelJson,
  deleteChannel,
  findChannel,
  listChannels,
  listDeliveries,
  listRules,
  updateRule,
} from '../alerts/store.js';
import { webAlertRuntime } from '../alerts/transport.js';
import type { AppDeps } from '../context.js';
import { findProjectBySlug } from '../store/projects.js';
import type { ProjectRow } from '../store/schema.js';
import { badRequest, notFound, readJson } from './errors.js';
import { audit } from './audit.js';

export function alertRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;
  const runtime = deps.alertRuntime ?? webAlertRuntime;

  async function projectOr404(slug: string): Promise<ProjectRow> {
    const project = await findProjectBySlug(db, slug);
    if (!project) throw notFound(`project "${slug}"`);
    return project;
  }

  async function input<T>(fn: () => T | Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof AlertInputError) throw badRequest(err.message);
      throw err;
    }
  }

  function channelId(raw: string): number {
    return /^[0-9]{1,15}$/.test(raw) ? Number(raw) : -1;
  }

  app.get('/api/projects/:slug/alerts', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    const [rules, channels] = await Promise.all([listRules(db, project.id), listChannels(db, project.id)]);
    return c.json({ rules, channels: channels.map(channelJson) });
  });

  app.get('/api/projects/:slug/alerts/deliveries', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    return c.json({ deliveries: await listDeliveries(db, project.id) });
  });

  // Not the sibling paths: PATCH on /alerts/channels or /alerts/deliveries is a wrong
  // method there (405 with their Allow), not an unknown alert type.
  app.patch('/api/projects/:slug/alerts/:type{(?!channels$|deliveries$)[^/]+}', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    const type = c.req.param('type');
    if (!isAlertType(type)) throw notFound(`alert type "${type}" (types are ${ALERT_TYPES.join(', ')})`);
    const body = await readJson(c);
    const patch = await input(() => parseRulePatch(body));
    const rule = await input(() => updateRule(db, project.id, type, patch));
    await audit(deps, c, 'alert_rule.update', `${project.slug}/${type}`, patch as unknown as Record<string, unknown>);
    return c.json(rule);
  });

  app.post('/api/projects/:slug/alerts/channels', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    const body = await readJson(c);
    const channel = await input(() => addChannel(db, project.id, body, deps.config, runtime, deps.clock.now()));
    deps.logger.info(
      { project: project.slug, channel_id: Number(channel.id), kind: channel.kind },
      'alert channel created',
    );
    await audit(deps, c, 'alert_channel.create', project.slug, { id: Number(channel.id), kind: channel.kind });
    return c.json(channelJson(channel), 201);
  });

  app.delete('/api/projects/:slug/alerts/channels/:id', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    if (!(await deleteChannel(deps.store, project.id, channelId(c.req.param('id')))))
      throw notFound(`alert channel ${JSON.stringify(c.req.param('id'))}`);
    deps.logger.info({ project: project.slug, channel_id: Number(c.req.param('id')) }, 'alert channel deleted');
    await audit(deps, c, 'alert_channel.delete', project.slug, { id: Number(c.req.param('id')) });
    return c.body(null, 204);
  });

  app.post('/api/projects/:slug/alerts/channels/:id/test', async (c) => {
    const project = await projectOr404(c.req.param('slug'));
    const channel = await findChannel(db, project.id, channelId(c.req.param('id')));
    if (!channel) throw notFound(`alert channel ${JSON.stringify(c.req.param('id'))}`);
    const result = await sendTestAlert(db, project, channel, deps.config, runtime, deps.clock);
    return c.json({ delivered: result.delivered, status: result.status, error: result.error });
  });

  return app;
}
