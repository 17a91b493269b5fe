// GET /health: 200 when the database answers a trivial query within 2 s, else
// 503; also 503 while the disk guard refuses ingest (src/privacy/disk.ts), saying why.
// On a database with a size cap (D1) the answer says how full it is, with a warning from
// 80 % on (src/store/capacity.ts). Never needs an API key; never waits longer than the
// deadline, even when the database hangs instead of refusing.
import { Hono } from 'hono';
import type { AppDeps } from '../context.js';
import { storeCapacity } from '../store/capacity.js';

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
        return c.json(
          {
            status: 'low disk',
            detail: `${disk.freeMb} MB free, below MIN_FREE_DISK_MB=${disk.minFreeMb}: ingest is refused`,
          },
          503,
        );
      }
      const capacity = await storeCapacity(deps.store, deps.config.d1MaxSizeMb);
      return c.json(capacity ? { status: 'ok', storage: capacity } : { status: 'ok' });
    }
    deps.logger.warn({ database: deps.store.description }, 'health check: database did not answer');
    return c.json({ status: 'db unavailable' }, 503);
  });
  return app;
}
