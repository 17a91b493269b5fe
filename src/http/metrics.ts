// GET /metrics: the Prometheus text exposition of the app's metrics (src/metrics.ts;
// docs/operations.md "Metrics"). Asks for `Authorization: Bearer <METRICS_TOKEN>` when
// METRICS_TOKEN is set, else for an API key (none when the server has no API keys,
// like the rest of the API). Editions without metrics answer 404.
import { Hono } from 'hono';
import type { AppDeps } from '../context.js';
import { bearerToken, equalBytes, sha256 } from './auth.js';
import { errorResponse } from './errors.js';

export const METRICS_PATH = '/metrics';

export function metricsRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const { metricsToken, apiKeys } = deps.config;
  const accepted = Promise.all((metricsToken !== null ? [metricsToken] : apiKeys).map(sha256));

  app.get(METRICS_PATH, async (c) => {
    const metrics = deps.metrics;
    if (!metrics) return errorResponse(c, 404, 'this edition serves no metrics');
    if (metricsToken !== null || apiKeys.length > 0) {
      const token = bearerToken(c);
      const presented = token === null ? null : await sha256(token);
      let matched = false;
      for (const digest of await accepted) matched = (presented !== null && equalBytes(presented, digest)) || matched;
      if (!matched) return errorResponse(c, 401, 'unauthorized', { 'WWW-Authenticate': 'Bearer' });
    }
    return c.body(await metrics.render(), 200, { 'Content-Type': metrics.contentType, 'Cache-Control': 'no-store' });
  });

  return app;
}
