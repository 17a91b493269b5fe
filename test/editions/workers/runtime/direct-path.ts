// wrangler.jsonc binds the ingest queue and the R2 bucket; tests of the direct ingest path
// (each request commits its own D1 batch, bytes in D1) build their deps from the env
// without either, and tests of bytes in R2 keep the bucket (`withBlobs`).
import type { WorkerEnv } from '../../../../src/editions/workers/deps.js';

/** The env without the queue and the bucket: every request commits, D1 holds the bytes. */
export function withoutQueue(env: WorkerEnv): WorkerEnv {
  const { INGEST_QUEUE: _queue, BLOBS: _blobs, ...direct } = env;
  return direct as WorkerEnv;
}

/** The env without the queue but with the bucket `BLOBS`: payload chunks go to R2. */
export function withBlobs(env: WorkerEnv): WorkerEnv {
  const { INGEST_QUEUE: _queue, ...direct } = env;
  if (!direct.BLOBS) throw new Error('wrangler.jsonc binds no R2 bucket BLOBS');
  return direct as WorkerEnv;
}
