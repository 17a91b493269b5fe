// Rate limiting: fixed one-minute windows per key (API key or DSN key). The
// limiter sits behind the RateLimiter interface (src/context.ts): in memory for one
// process, SharedRateLimiter (src/store/rate-limits.ts) across instances.
import type { Context, MiddlewareHandler } from 'hono';
import type { AppDeps, RateLimitDecision, RateLimiter } from '../context.js';
import { API_KEY_ID, isAuthExempt } from './auth.js';
import { errorResponse } from './errors.js';
import { clientAddressOf } from './forwarded.js';
import { rateLimitWindow } from '../store/rate-limits.js';

/** Per-process limiter: for one instance (SQLite); PostgreSQL uses SharedRateLimiter. */
export class MemoryRateLimiter implements RateLimiter {
  private windowStart = 0;
  private counts = new Map<string, number>();

  constructor(private readonly limitPerMinute: number) {}

  async hit(key: string, now: number): Promise<RateLimitDecision> {
    const { start, retryAfterSeconds } = rateLimitWindow(now);
    if (start !== this.windowStart) {
      this.windowStart = start;
      this.counts.clear();
    }
    if (this.limitPerMinute <= 0) return { allowed: true, retryAfterSeconds };
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    return { allowed: count <= this.limitPerMinute, retryAfterSeconds };
  }
}

/** The 429 every rate-limited route answers; extra headers (e.g. X-Sentry-Rate-Limits) may be added. */
export function rateLimitedResponse(
  c: Context,
  decision: RateLimitDecision,
  headers: Record<string, string> = {},
): Response {
  return errorResponse(c, 429, 'rate limit exceeded', {
    'Retry-After': String(decision.retryAfterSeconds),
    ...headers,
  });
}

/**
 * Counts a request against the key `keyOf` returns (null: not limited) and
 * answers 429 with Retry-After once the key is over RATE_LIMIT in this minute.
 */
export function rateLimit(deps: AppDeps, keyOf: (c: Context) => string | null): MiddlewareHandler {
  return async (c, next) => {
    if (deps.config.rateLimit <= 0) return next();
    const key = keyOf(c);
    if (key === null) return next();
    const decision = await deps.rateLimiter.hit(key, deps.clock.now());
    if (!decision.allowed) return rateLimitedResponse(c, decision);
    return next();
  };
}

/**
 * The management API's key: the API key used (a digest prefix, never the key),
 * or with API_KEYS empty the client's address (src/http/forwarded.ts).
 */
export function managementRateLimitKey(deps: AppDeps): (c: Context) => string | null {
  return (c) => {
    if (isAuthExempt(c.req.path)) return null;
    const keyId = c.get(API_KEY_ID) as string | undefined;
    if (keyId) return `api:${keyId}`;
    return `addr:${clientAddressOf(deps, c.req.raw, c.env)}`;
  };
}
