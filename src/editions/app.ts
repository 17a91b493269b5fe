// Builds the Hono app every edition serves from injected dependencies: the API's
// routes and middleware (src/http) and the dashboard (src/dashboard), which reuses
// pieces of the API, so the two are put together here and src/http does not import the
// dashboard. Only Web APIs here. Cross-cutting behaviour (request ids, logging, errors,
// auth, rate limits, body limits, 404/405) is installed here; each domain's routes live
// in their own module of src/http.
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { methodNotAllowed } from 'hono/method-not-allowed';
import type { AppDeps } from '../context.js';
import { dashboard } from '../dashboard/index.js';
import { isIngestPath, managementAuth } from '../http/auth.js';
import { UserPresence } from '../accounts/presence.js';
import { userRoutes } from '../http/users.js';
import { errorResponse, handleError } from '../http/errors.js';
import { alertRoutes } from '../http/alerts.js';
import { attachmentRoutes } from '../http/attachments.js';
import { monitorRoutes } from '../http/monitors.js';
import { feedbackRoutes } from '../http/feedback.js';
import { ignoreUntrustedForwarding } from '../http/forwarded.js';
import { refuseNulInUrl } from '../http/input-hygiene.js';
import { healthRoutes } from '../http/health.js';
import { ingestCors, ingestRoutes } from '../http/ingest.js';
import { projectRoutes } from '../http/projects.js';
import { privacyRoutes } from '../http/privacy.js';
import { metricsRoutes } from '../http/metrics.js';
import { managementRateLimitKey, rateLimit } from '../http/rate-limit.js';
import { readRoutes } from '../http/read.js';
import { triageRoutes } from '../http/triage.js';
import { requestMeta } from '../http/request-meta.js';
import { uploadRoutes } from '../http/uploads.js';
import { isSymbolUploadPath, symbolRoutes } from '../http/symbols.js';
import { MANAGEMENT_BODY_LIMIT } from '../limits.js';
import { IMPORT_PATH, transferRoutes } from '../http/transfer.js';

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
