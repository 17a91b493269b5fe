// Export and import routes, mounted by editions that serve them (the serverless edition:
// spec "Export and import"; the server edition has the CLI instead): `GET /api/export`
// and `POST /api/import`, thin over src/transfer/http.ts. Behind the API key like every
// management route; the import body has its own limit (IMPORT_BODY_LIMIT).
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import type { AppDeps } from '../context.js';
import { IMPORT_BODY_LIMIT } from '../limits.js';
import { exportResponse, importResponse } from '../transfer/http.js';
import { errorResponse } from './errors.js';
import { audit } from './audit.js';

export const IMPORT_PATH = '/api/import';

export function transferRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const transfer = deps.transfer;
  if (!transfer) return app;
  const http = { ...transfer, store: deps.store };
  app.get('/api/export', (c) => exportResponse(http, new URL(c.req.url)));
  app.post(
    IMPORT_PATH,
    bodyLimit({
      maxSize: IMPORT_BODY_LIMIT,
      onError: (c) =>
        errorResponse(
          c,
          413,
          `request body too large; send at most ${IMPORT_BODY_LIMIT} bytes per request (faultline import --to splits a file)`,
        ),
    }),
    async (c) => {
      const res = await importResponse(http, c.req.raw);
      await audit(deps, c, 'import', null, { status: res.status });
      return res;
    },
  );
  return app;
}
