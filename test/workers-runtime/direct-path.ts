// wrangler.jsonc binds the ingest queue; tests of the direct ingest path (each request
// commits its own D1 batch) build their deps from the env without it.
import type { WorkerEnv } from '../../src/editions/workers/deps.js';

export function withoutQueue(env: WorkerEnv): WorkerEnv {
  const { INGEST_QUEUE: _queue, ...direct } = env;
  return direct as WorkerEnv;
}
