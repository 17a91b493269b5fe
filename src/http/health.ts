// GET /health: 200 when the database answers a trivial query within 2 s, else
// 503; also 503 while the disk guard refuses ingest (src/privacy/disk.ts), saying why. Never needs an API key; never waits longer than the deadline, even when
// the database hangs instead of refusing.
import { Hono } from 'hono';
import type { AppDeps } from '../context.js';

export const HEALTH_TIMEOUT_MS = 2000;

export function healthRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  app.get('/health', async (c) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), HEALTH_TIMEOUT_MS + 100);
    });
    const ok = await Promise.race([deps.store.ping(HEALTH_TIMEOUT_MS).catch(() => false), deadline]);
    clearTimeout(timer);
    if (ok) {
      const disk = deps.diskGuard ? await deps.diskGuard() : null;
      if (disk?.low) {
        return c.json({ status: 'low disk', detail: `${disk.freeMb} MB free, below MIN_FREE_DISK_MB=${disk.minFreeMb}: ingest is refused` }, 503);
      }
      return c.json({ status: 'ok' });
    }
    deps.logger.warn({ database: deps.store.description }, 'health check: database did not answer');
    return c.json({ status: 'db unavailable' }, 503);
  });
  return app;
}
