// Rate limits that hold across every server instance on one database (docs/api.md
// "Rate limits": with several instances on one PostgreSQL database, the limit holds
// across them). Each instance leases part of a key's per-minute budget from the
// `rate_limit_windows` row with one atomic upsert and spends the lease in memory,
// so a busy key costs one database round trip per lease, not per request. The
// budget handed out never exceeds the limit; the cost is that requests leased by
// one instance and not yet spent are not available to another (at most one lease
// per other instance and key: 2 % of the limit).
import type { Logger } from '../logger.js';
import { sql } from 'kysely';
import type { Store } from './database.js';

export const RATE_LIMIT_WINDOW_MS = 60_000;

export interface RateLimitDecision {
  allowed: boolean;
  /** Seconds until the current window ends (for Retry-After). */
  retryAfterSeconds: number;
}

/** Fixed one-minute windows per key. Implementations may be per-process or shared. */
export interface RateLimiter {
  hit(key: string, now: number): Promise<RateLimitDecision>;
}

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

/**
 * Deletes one-minute windows that ended before `before` (each instance does it once a
 * minute). The sign-in throttle's rows outlive a minute and are swept by it.
 */
export async function deleteRateLimitWindowsBefore(store: Store, before: number): Promise<void> {
  await store.db
    .deleteFrom('rate_limit_windows')
    .where('window_start', '<', before)
    .where('key', 'not like', `${SIGN_IN_KEY_PREFIX}%`)
    .execute();
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

// ---------------------------------------------------------------------------
// The sign-in throttle
// ---------------------------------------------------------------------------

/** Keys of the sign-in throttle's rows: one row per key and minute, `claimed` counting failures. */
const SIGN_IN_KEY_PREFIX = 'signin:';

/** One minute's failures of one key. */
export interface FailureBucket {
  start: number;
  failures: number;
}

/**
 * Seconds until one more attempt fits: a minute's failures stop counting a whole window
 * after the end of that minute, so the oldest buckets leave first until fewer than
 * `limit` remain. At least 1.
 */
export function signInRetryAfterSeconds(
  buckets: FailureBucket[],
  now: number,
  limit: number,
  windowMs: number,
): number {
  let remaining = buckets.reduce((n, b) => n + b.failures, 0);
  let at = now;
  for (const b of [...buckets].sort((x, y) => x.start - y.start)) {
    if (remaining < limit) break;
    remaining -= b.failures;
    at = b.start + RATE_LIMIT_WINDOW_MS + windowMs;
  }
  return Math.max(1, Math.ceil((at - now) / 1000));
}

export type SignInDecision = { allowed: true; attempt: SignInAttempt } | { allowed: false; retryAfterSeconds: number };

/** An attempt let through: it counts as a failure unless it is reported a success. */
export interface SignInAttempt {
  succeeded(): Promise<void>;
}

/**
 * Failed sign-ins per client address and per account, held in `rate_limit_windows` so
 * the limit holds across instances (docs/api.md, "Dashboard sign-in": SIGN_IN_FAILURES
 * in SIGN_IN_WINDOW_MS, then 429). An attempt is counted before its credentials are checked and taken
 * back when they were right, so concurrent guesses cannot all pass one check: at most
 * `limit` wrong ones are tried per window, however many arrive at once.
 */
export class SignInThrottle {
  private lastSweep = 0;

  constructor(
    private readonly store: Store,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly logger?: Logger,
  ) {}

  /** Counts an attempt by the client `address` on `account`; refused while either is over the limit. */
  async begin(address: string, account: string, now: number): Promise<SignInDecision> {
    const keys = [`${SIGN_IN_KEY_PREFIX}address:${address}`, `${SIGN_IN_KEY_PREFIX}account:${account}`];
    const minute = rateLimitWindow(now).start;
    if (minute !== this.lastSweep) this.sweep(minute);
    for (const key of keys) await this.add(key, minute, 1);
    const rows = await this.store.db
      .selectFrom('rate_limit_windows')
      .select(['key', 'window_start', 'claimed'])
      .where('key', 'in', keys)
      .where('window_start', '>', now - this.windowMs - RATE_LIMIT_WINDOW_MS)
      .execute();
    let retryAfterSeconds = 0;
    for (const key of keys) {
      // This attempt is among the rows: the earlier ones are what it is checked against.
      const buckets = rows
        .filter((r) => r.key === key)
        .map((r) => ({ start: Number(r.window_start), failures: Number(r.claimed) }));
      const own = buckets.find((b) => b.start === minute);
      if (own) own.failures -= 1;
      if (buckets.reduce((n, b) => n + b.failures, 0) >= this.limit) {
        retryAfterSeconds = Math.max(
          retryAfterSeconds,
          signInRetryAfterSeconds(buckets, now, this.limit, this.windowMs),
        );
      }
    }
    const undo = async () => {
      for (const key of keys) await this.add(key, minute, -1);
    };
    if (retryAfterSeconds > 0) {
      await undo();
      return { allowed: false, retryAfterSeconds };
    }
    return { allowed: true, attempt: { succeeded: undo } };
  }

  private async add(key: string, windowStart: number, delta: number): Promise<void> {
    await this.store.db
      .insertInto('rate_limit_windows')
      .values({ key, window_start: windowStart, claimed: delta })
      .onConflict((oc) =>
        oc
          .columns(['key', 'window_start'])
          .doUpdateSet({ claimed: sql<number>`rate_limit_windows.claimed + ${delta}` }),
      )
      .execute();
  }

  /** A new minute: forget failures older than the window. */
  private sweep(minute: number): void {
    this.lastSweep = minute;
    this.store.db
      .deleteFrom('rate_limit_windows')
      .where('key', 'like', `${SIGN_IN_KEY_PREFIX}%`)
      .where('window_start', '<=', minute - this.windowMs - RATE_LIMIT_WINDOW_MS)
      .execute()
      .catch((err) => this.logger?.warn({ err }, 'deleting old sign-in failures failed'));
  }
}
