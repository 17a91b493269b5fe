// Ingest routes: POST /api/{project_id}/envelope/ and /store/ (trailing slash
// optional), their CORS preflight, and the CORS headers on every ingest answer
// (ingestCors, installed app-wide so answers made outside these routes, such as
// 405 or 500, carry them too). The work is src/ingest/pipeline.ts; this adapts
// Hono's request to it. The Node edition answers these POSTs without Hono
// (src/editions/node/ingest.ts) through the helpers exported here.
import { Hono, type MiddlewareHandler } from 'hono';
import type { AppDeps } from '../context.js';
import type { Config } from '../config.js';
import { isCronPath, isIngestPath } from './auth.js';
import { handleCronCheckIn } from '../ingest/cron.js';
import { readBody } from '../ingest/decode.js';
import { handleIngest, type IngestEndpoint, type IngestResponse } from '../ingest/pipeline.js';

/** The request headers SDKs send (protocol notes §1.3), allowed in preflight answers. */
const ALLOW_HEADERS =
  'x-sentry-auth, x-requested-with, x-forwarded-for, origin, referer, accept, content-type, authentication, authorization, content-encoding, transfer-encoding, sentry-trace, baggage';
const EXPOSE_HEADERS = 'x-sentry-error, x-sentry-rate-limits, retry-after';

// Only numeric project ids are ingest paths; anything else falls through to the
// other route modules (and their 404), so a slug like "store" can never be shadowed.
const PATHS: Record<IngestEndpoint, string[]> = {
  envelope: ['/api/:projectId{[0-9]+}/envelope', '/api/:projectId{[0-9]+}/envelope/'],
  store: ['/api/:projectId{[0-9]+}/store', '/api/:projectId{[0-9]+}/store/'],
};

/**
 * Adds Access-Control-Allow-Origin and -Expose-Headers to every answer on an ingest
 * path, whoever made it (route, 405, 404, error handler): without them a browser SDK
 * cannot read the status, X-Sentry-Error or the rate-limit headers.
 */
export function ingestCors(config: Config): MiddlewareHandler {
  const headers = Object.entries(ingestCorsHeaders(config));
  return async (c, next) => {
    await next();
    if (!isIngestPath(c.req.path) && !isCronPath(c.req.path)) return;
    for (const [name, value] of headers) c.res.headers.set(name, value);
  };
}

/** The CORS headers of every answer on an ingest path. */
export function ingestCorsHeaders(config: Config): Record<string, string> {
  return { 'Access-Control-Allow-Origin': config.corsOrigin, 'Access-Control-Expose-Headers': EXPOSE_HEADERS };
}

/** An ingest answer's JSON body and headers, as every edition sends them. */
export function ingestAnswer(result: IngestResponse): { body: string; headers: Record<string, string> } {
  return { body: JSON.stringify(result.body), headers: { 'Content-Type': 'application/json', ...result.headers } };
}

export function ingestRoutes(deps: AppDeps): Hono {
  const app = new Hono();

  for (const endpoint of ['envelope', 'store'] as const) {
    for (const path of PATHS[endpoint]) {
      app.options(path, () =>
        new Response(null, {
          status: 204,
          headers: {
            'Access-Control-Allow-Methods': 'POST, OPTIONS',
            'Access-Control-Allow-Headers': ALLOW_HEADERS,
            'Access-Control-Max-Age': '3600',
          },
        }),
      );
      app.post(path, async (c) => {
        const url = new URL(c.req.url);
        const result = await handleIngest(deps, {
          endpoint,
          projectId: c.req.param('projectId') ?? '',
          headers: c.req.raw.headers,
          query: url.searchParams,
          readBody: (limit) => deps.readRequestBody?.(c.req.raw, c.env, limit) ?? readBody(c.req.raw.body, limit),
          clientIp: clientIpOf((name) => c.req.header(name), deps.clientAddress?.(c.req.raw, c.env)),
        });
        const { body, headers } = ingestAnswer(result);
        return new Response(body, { status: result.status, headers });
      });
    }
  }
  // Legacy cron check-ins (src/ingest/cron.ts): GET or POST, the key in the path or as for envelopes.
  for (const path of ['/api/:projectId{[0-9]+}/cron/:slug/:key', '/api/:projectId{[0-9]+}/cron/:slug/:key/', '/api/:projectId{[0-9]+}/cron/:slug', '/api/:projectId{[0-9]+}/cron/:slug/']) {
    app.on(['GET', 'POST'], path, async (c) => {
      const result = await handleCronCheckIn(deps, {
        projectId: c.req.param('projectId') ?? '',
        monitorSlug: c.req.param('slug') ?? '',
        pathKey: c.req.param('key') ?? null,
        headers: c.req.raw.headers,
        query: new URL(c.req.url).searchParams,
        readBody: (limit) => readBody(c.req.raw.body, limit),
      });
      if (result.status === 202) return new Response(null, { status: 202 });
      const { body, headers } = ingestAnswer(result);
      return new Response(body, { status: result.status, headers });
    });
  }
  return app;
}

/**
 * The address `{{auto}}` resolves to. The first X-Forwarded-For hop (or X-Real-IP)
 * wins, since a self-hosted server usually sits behind a proxy; otherwise the
 * connection's peer as the edition reports it. A forged header only changes the
 * IP shown on the client's own events, which the client could set directly anyway.
 */
export function clientIpOf(header: (name: string) => string | null | undefined, remote: string | null | undefined): string | null {
  const forwarded = header('x-forwarded-for');
  if (forwarded) {
    const first = forwarded.split(',')[0].trim();
    if (first) return first;
  }
  const real = header('x-real-ip')?.trim();
  if (real) return real;
  if (!remote) return null;
  // IPv4 peers of a dual-stack socket appear as ::ffff:a.b.c.d.
  return remote.startsWith('::ffff:') ? remote.slice(7) : remote;
}
