// Builds the Hono app from injected dependencies. Shared by every edition; only
// Web APIs here. Cross-cutting behaviour (request ids, logging, errors, auth,
// rate limits, body limits, 404/405) is installed here; each domain's routes
// live in their own module.
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { AppDeps } from '../context.js';
import { dashboard } from '../dashboard/index.js';
import { isIngestPath, managementAuth } from './auth.js';
import { UserPresence } from '../accounts/presence.js';
import { userRoutes } from './users.js';
import { errorResponse, handleError } from './errors.js';
import { alertRoutes } from './alerts.js';
import { attachmentRoutes } from './attachments.js';
import { monitorRoutes } from './monitors.js';
import { feedbackRoutes } from './feedback.js';
import { ignoreUntrustedForwarding } from './forwarded.js';
import { refuseNulInUrl } from './input-hygiene.js';
import { healthRoutes } from './health.js';
import { ingestCors, ingestRoutes } from './ingest.js';
import { projectRoutes } from './projects.js';
import { privacyRoutes } from './privacy.js';
import { metricsRoutes } from './metrics.js';
import { managementRateLimitKey, rateLimit } from './rate-limit.js';
import { readRoutes } from './read.js';
import { triageRoutes } from './triage.js';
import { requestMeta } from './request-meta.js';
import { uploadRoutes } from './uploads.js';
import { isSymbolUploadPath, symbolRoutes } from './symbols.js';
import { MANAGEMENT_BODY_LIMIT } from '../limits.js';
import { IMPORT_PATH, transferRoutes } from './transfer.js';

/** Routes that take large bodies and enforce their own limits. */
function hasOwnBodyLimit(path: string): boolean {
  return isIngestPath(path) || path.startsWith('/api/0/') || isSymbolUploadPath(path) || path === IMPORT_PATH;
}

export function createApp(deps: AppDeps): Hono {
  const app = new Hono();
  const { logger } = deps;

  app.use(requestMeta(logger));
  app.use(ignoreUntrustedForwarding(deps));

  app.use(ingestCors(deps.config));
  app.use(refuseNulInUrl(isIngestPath));
  const presence = new UserPresence(deps.store.db);
  app.use(dashboard(deps, presence)); // every path outside /api and /health; signs in with its own session
  app.use(managementAuth(deps, presence));
  app.use(rateLimit(deps, managementRateLimitKey(deps)));

  const managementBodyLimit = bodyLimit({
    maxSize: MANAGEMENT_BODY_LIMIT,
    onError: (c) =>
      errorResponse(c, 413, `request body too large; the limit on this route is ${MANAGEMENT_BODY_LIMIT} bytes (1 MB)`),
  });
  app.use((c, next) => (hasOwnBodyLimit(c.req.path) ? next() : managementBodyLimit(c, next)));

  app.use(
    methodNotAllowed({
      app,
      onMethodNotAllowed: (c, methods) =>
        errorResponse(
          c,
          405,
          `method ${c.req.method} is not allowed on ${c.req.path}; allowed: ${methods.join(', ')}`,
          {
            Allow: methods.join(', '),
          },
        ),
    }),
  );

  app.route('/', healthRoutes(deps));
  app.route('/', metricsRoutes(deps));
  app.route('/', projectRoutes(deps));
  app.route('/', privacyRoutes(deps));
  app.route('/', ingestRoutes(deps));
  app.route('/', attachmentRoutes(deps));
  app.route('/', feedbackRoutes(deps));
  app.route('/', readRoutes(deps));
  app.route('/', triageRoutes(deps));
  app.route('/', alertRoutes(deps));
  app.route('/', monitorRoutes(deps));
  app.route('/', uploadRoutes(deps));
  app.route('/', symbolRoutes(deps));
  app.route('/', transferRoutes(deps));
  app.route('/', userRoutes(deps));

  app.notFound((c) => errorResponse(c, 404, 'not found'));
  app.onError((err, c) => handleError(err, c, logger));
  return app;
}
