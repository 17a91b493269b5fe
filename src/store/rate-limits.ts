// Rate limits that hold across every server instance on one database (DECISIONS:
// "with several server instances on one Postgres database, the limit holds across
// them"). Each instance leases part of a key's per-minute budget from the
// `rate_limit_windows` row with one atomic upsert and spends the lease in memory,
// so a busy key costs one database round trip per lease, not per request. The
// budget handed out never exceeds the limit; the cost is that requests leased by
// one instance and not yet spent are not available to another (at most one lease
// per other instance and key: 2 % of the limit).
import type { Logger } from '../logger.js';
import { sql } from 'kysely';
import type { RateLimitDecision, RateLimiter } from '../context.js';
import type { Store } from './database.js';

export const RATE_LIMIT_WINDOW_MS = 60_000;

/** Start of the fixed one-minute window holding `now`, and seconds until it ends (≥ 1). */
export function rateLimitWindow(now: number): { start: number; retryAfterSeconds: number } {
  const start = Math.floor(now / RATE_LIMIT_WINDOW_MS) * RATE_LIMIT_WINDOW_MS;
  return { start, retryAfterSeconds: Math.max(1, Math.ceil((start + RATE_LIMIT_WINDOW_MS - now) / 1000)) };
}

/** How many requests one claim asks for: small against the limit, so idle leases waste little. */
export function leaseSize(limitPerMinute: number): number {
  return Math.max(1, Math.ceil(limitPerMinute / 50));
}

/**
 * Claims up to `want` requests of `key`'s budget in the window starting at `windowStart`,
 * atomically against every other claimant. Returns how many were granted (0 when the
 * window's budget is spent).
 */
export async function claimRateLimit(
  store: Store,
  key: string,
  windowStart: number,
  want: number,
  limit: number,
): Promise<number> {
  const row = await store.db
    .insertInto('rate_limit_windows')
    .values({ key, window_start: windowStart, claimed: want })
    .onConflict((oc) =>
      oc.columns(['key', 'window_start']).doUpdateSet({ claimed: sql<number>`rate_limit_windows.claimed + ${want}` }),
    )
    .returning('claimed')
    .executeTakeFirstOrThrow();
  const before = Number(row.claimed) - want;
  return Math.max(0, Math.min(want, limit - before));
}

/** Deletes windows that ended before `before` (each instance does it once a minute). */
export async function deleteRateLimitWindowsBefore(store: Store, before: number): Promise<void> {
  await store.db.deleteFrom('rate_limit_windows').where('window_start', '<', before).execute();
}

interface KeyState {
  windowStart: number;
  /** Leased and not yet spent. */
  remaining: number;
  /** The last claim got less than it asked: the window's budget is spent once `remaining` is. */
  budgetSpent: boolean;
  /** A claim in flight; concurrent requests for the key wait for it instead of claiming too. */
  claiming: Promise<void> | null;
}

/** RateLimiter over `rate_limit_windows`: the limit holds across instances sharing the database. */
export class SharedRateLimiter implements RateLimiter {
  private readonly keys = new Map<string, KeyState>();
  private lastSweptWindow = 0;
  private readonly lease: number;

  constructor(
    private readonly store: Store,
    private readonly limitPerMinute: number,
    private readonly logger?: Logger,
  ) {
    this.lease = leaseSize(limitPerMinute);
  }

  async hit(key: string, now: number): Promise<RateLimitDecision> {
    const { start, retryAfterSeconds } = rateLimitWindow(now);
    if (this.limitPerMinute <= 0) return { allowed: true, retryAfterSeconds };
    if (start !== this.lastSweptWindow) this.startWindow(start);
    for (;;) {
      let state = this.keys.get(key);
      if (!state || state.windowStart !== start) {
        state = { windowStart: start, remaining: 0, budgetSpent: false, claiming: null };
        this.keys.set(key, state);
      }
      if (state.remaining > 0) {
        state.remaining -= 1;
        return { allowed: true, retryAfterSeconds };
      }
      if (state.budgetSpent) return { allowed: false, retryAfterSeconds };
      if (!state.claiming) {
        const claimant = state;
        claimant.claiming = this.claim(key, claimant).finally(() => {
          claimant.claiming = null;
        });
      }
      try {
        await state.claiming;
      } catch (err) {
        // A limiter must not take the service down with the database: the request
        // goes on and meets the database failure (and its 503) where it writes.
        this.logger?.warn({ err, key }, 'rate limit claim failed; request allowed');
        return { allowed: true, retryAfterSeconds };
      }
    }
  }

  private async claim(key: string, state: KeyState): Promise<void> {
    const granted = await claimRateLimit(this.store, key, state.windowStart, this.lease, this.limitPerMinute);
    state.remaining += granted;
    if (granted < this.lease) state.budgetSpent = true;
  }

  /** A new minute: forget the last one's leases here, and old windows in the database. */
  private startWindow(start: number): void {
    this.lastSweptWindow = start;
    for (const [key, state] of this.keys) if (state.windowStart < start && !state.claiming) this.keys.delete(key);
    deleteRateLimitWindowsBefore(this.store, start - RATE_LIMIT_WINDOW_MS).catch((err) =>
      this.logger?.warn({ err }, 'deleting old rate limit windows failed'),
    );
  }
}
