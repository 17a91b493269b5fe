// The dependencies every part of the app receives, built by an edition
// (src/editions) and injected, so route and domain code never reach for
// process-wide singletons and the serverless edition can supply its own.
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { Config } from './config.js';
import type { Store } from './store/database.js';
import type { IngestSink } from './ingest/types.js';

export interface RateLimitDecision {
  allowed: boolean;
  /** Seconds until the current window ends (for Retry-After). */
  retryAfterSeconds: number;
}

/** Fixed one-minute windows per key. Implementations may be per-process or shared. */
export interface RateLimiter {
  hit(key: string, now: number): Promise<RateLimitDecision>;
}

export interface AppDeps {
  config: Config;
  store: Store;
  clock: Clock;
  logger: Logger;
  rateLimiter: RateLimiter;
  ingest: IngestSink;
  /**
   * The network address of the peer that sent a request, supplied by the edition
   * (Node: the socket's remote address; `env` is what the server adapter passes as
   * the app's env). Used to key the open management API's rate limit.
   */
  clientAddress?: (request: Request, env: unknown) => string | undefined;
}
