// The serverless edition's Worker entry (wrangler.jsonc `main`): the shared Hono app
// for requests, once the isolate's D1 schema is current, then the work requests left
// (alerts to send, a re-symbolication step) kept alive past the answer by waitUntil
// (background.ts); the ingest queue's consumer (ingest-queue.ts); and the cron
// housekeeping.
import type { ExecutionContext } from 'hono';
import { runCron } from './crons.js';
import { workerInstance, type WorkerEnv } from './deps.js';
import { consumeIngestBatch, type MessageBatch } from './ingest-queue.js';

interface ScheduledController {
  cron: string;
  scheduledTime: number;
}

const UNAVAILABLE = JSON.stringify({ error: 'the database is unavailable; try again later' });
/** What /health answers whenever the database cannot serve (src/http/health.ts). */
const HEALTH_UNAVAILABLE = JSON.stringify({ status: 'db unavailable' });

export default {
  async fetch(request: Request, env: WorkerEnv, ctx: ExecutionContext): Promise<Response> {
    let instance;
    try {
      instance = workerInstance(env);
    } catch (err) {
      // A setting with a bad value: every request says which (as `serve` refuses to start).
      console.log(
        JSON.stringify({ level: 60, time: Date.now(), msg: 'invalid settings', error: (err as Error).message }),
      );
      return Response.json({ error: `invalid settings: ${(err as Error).message}` }, { status: 500 });
    }
    try {
      await instance.ready;
    } catch (err) {
      instance.deps.logger.error({ err }, 'the D1 schema could not be migrated; answering 503');
      const health = new URL(request.url).pathname === '/health';
      return new Response(health ? HEALTH_UNAVAILABLE : UNAVAILABLE, {
        status: 503,
        headers: { 'content-type': 'application/json' },
      });
    }
    const response = await instance.app.fetch(request, env, ctx);
    const after = instance.afterAnswer.take(instance.deps);
    if (after) ctx.waitUntil(after);
    return response;
  },

  /** The ingest queue's consumer: commits the batch, then sends the alerts it recorded. */
  async queue(batch: MessageBatch, env: WorkerEnv, _ctx: ExecutionContext): Promise<void> {
    const instance = workerInstance(env);
    await instance.ready;
    const { deps, afterAnswer } = instance;
    const summary = await consumeIngestBatch(batch, {
      store: deps.store,
      logger: deps.logger,
      now: () => deps.clock.now(),
      onAlertsRecorded: afterAnswer.alertsRecorded,
      bucket: deps.blobs,
    });
    deps.logger.debug({ ...summary, messages: batch.messages.length }, 'ingest queue batch consumed');
    await afterAnswer.take(deps);
  },

  async scheduled(controller: ScheduledController, env: WorkerEnv, _ctx: ExecutionContext): Promise<void> {
    const instance = workerInstance(env);
    await instance.ready;
    await runCron(controller.cron, instance.deps);
  },
};
