// Authentication and roles of the management API: `Authorization: Bearer <key>` with
// an instance API key (compared in constant time over SHA-256 digests, Web Crypto so
// every edition runs it) or a personal token; the role each route class needs; the
// request's actor. Decides which paths are exempt (health, ingest).
import type { Context, MiddlewareHandler } from 'hono';
import type { AppDeps } from '../context.js';
import {
  apiKeyActor,
  type Actor,
  isPersonalToken,
  isRole,
  type Role,
  ROUTE_CLASS_ROLE,
  roleRefusal,
  routeClass,
  SYSTEM_ACTOR,
} from '../accounts/rules.js';
import { resolveToken, touchToken } from '../accounts/store.js';
import type { UserPresence } from '../accounts/presence.js';
import { errorResponse, HttpError } from './errors.js';

/** Context variable holding a short, non-secret id of the API key used (for rate limits). */
export const API_KEY_ID = 'apiKeyId';

/** Ingest paths authenticate with the project's DSN key instead (trailing slash optional). */
const INGEST_PATH = /^\/api\/([0-9]+)\/(envelope|store)\/?$/;
/** The minidump upload (Breakpad and Crashpad clients), authenticated by the DSN key too. */
const MINIDUMP_PATH = /^\/api\/([0-9]+)\/minidump\/?$/;

/** The project id and endpoint an ingest path names, or null for any other path. */
export function matchIngestPath(path: string): { projectId: string; endpoint: 'envelope' | 'store' } | null {
  const m = INGEST_PATH.exec(path);
  return m ? { projectId: m[1], endpoint: m[2] as 'envelope' | 'store' } : null;
}

/** The legacy cron check-in route (docs/api.md "Cron monitors"), with or without the key in the path. */
const CRON_PATH = /^\/api\/[0-9]+\/cron\/[^/]+(\/[^/]+)?\/?$/;

/** Paths that never need an API key: health and the SDK ingest endpoints (cron check-ins too). */
export function isAuthExempt(path: string): boolean {
  // /metrics checks its own token (src/http/metrics.ts).
  return path === '/health' || path === '/metrics' || isIngestPath(path) || CRON_PATH.test(path);
}

export function isIngestPath(path: string): boolean {
  return INGEST_PATH.test(path) || MINIDUMP_PATH.test(path);
}

export function isCronPath(path: string): boolean {
  return CRON_PATH.test(path);
}

export async function sha256(text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text)));
}

/** Compares equal-length byte arrays without an early exit. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** The bearer token of a request, or null when the header is missing or of another scheme. */
export function bearerToken(c: Context): string | null {
  const header = c.req.header('authorization');
  if (!header) return null;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m ? m[1] : null;
}

/** Context variable holding the request's actor (see requestActor). */
const ACTOR = 'actor';

/**
 * Who made this request: a user (personal token or dashboard session), an instance API
 * key, or `system` (the open API, background work). Audit entries, comments and
 * activity name this actor. Set by managementAuth; `system` where nothing signed in.
 */
export function requestActor(c: Context): Actor {
  return (c.get(ACTOR) as Actor | undefined) ?? SYSTEM_ACTOR;
}

/** Sets the actor (the dashboard does, from its session). */
export function setRequestActor(c: Context, actor: Actor): void {
  c.set(ACTOR, actor);
}

/** The digests of the configured API keys, computed once per app. */
export type ApiKeyDigests = Promise<Uint8Array[]>;

export function apiKeyDigests(apiKeys: string[]): ApiKeyDigests {
  return Promise.all(apiKeys.map(sha256));
}

/**
 * The presented key's digest when it is one of the configured API keys. Compares with
 * every key (no early exit) so timing reveals neither a key nor which one matched.
 */
export async function matchApiKeyDigest(digests: ApiKeyDigests, presented: string): Promise<Uint8Array | null> {
  const digest = await sha256(presented);
  let matched = false;
  for (const d of await digests) matched = equalBytes(digest, d) || matched;
  return matched ? digest : null;
}

/** The actor of a user as the role checks see them. */
export function userActor(user: { id: number; email: string; role: string }): Actor {
  return {
    kind: 'user',
    userId: Number(user.id),
    email: user.email,
    label: user.email,
    role: isRole(user.role) ? user.role : 'viewer',
  };
}

/**
 * Authenticates every non-exempt path and enforces the role its route class needs
 * (src/accounts/rules.ts). Bearer credentials: an instance API key (acts as admin) or a
 * personal token (its user's role; refused when expired or the user is disabled). The
 * API is open only while API_KEYS is empty and no user exists (docs/api.md "Accounts").
 */
export function managementAuth(deps: AppDeps, presence: UserPresence): MiddlewareHandler {
  const digests = apiKeyDigests(deps.config.apiKeys);
  const db = deps.store.db;
  return async (c, next) => {
    if (isAuthExempt(c.req.path)) return next();
    const token = bearerToken(c);
    let actor: Actor | null = null;
    if (token !== null) {
      if (isPersonalToken(token)) {
        const found = await resolveToken(db, token, deps.clock.now());
        if (found) {
          actor = userActor(found.user);
          c.set(API_KEY_ID, `token:${Number(found.token.id)}`);
          await touchToken(db, found.token, deps.clock.now());
        }
      } else {
        const digest = await matchApiKeyDigest(digests, token);
        if (digest) {
          const id = hex(digest.subarray(0, 8));
          c.set(API_KEY_ID, id);
          actor = apiKeyActor(id);
        }
      }
    }
    // The open API ignores whatever credential came with the request, as it always has.
    if (!actor && deps.config.apiKeys.length === 0 && !(await presence.exists())) actor = SYSTEM_ACTOR;
    if (!actor) return errorResponse(c, 401, 'unauthorized', { 'WWW-Authenticate': 'Bearer' });
    c.set(ACTOR, actor);
    const refusal = roleRefusal(
      actor.role,
      ROUTE_CLASS_ROLE[routeClass(c.req.method, c.req.path)],
      `${c.req.method} ${c.req.path}`,
    );
    if (refusal) return errorResponse(c, 403, refusal);
    return next();
  };
}

/** Throws a 403 unless the request's actor has `needed` (for checks inside a route). */
export function requireRole(c: Context, needed: Role, what: string): Actor {
  const actor = requestActor(c);
  const refusal = roleRefusal(actor.role, needed, what);
  if (refusal) throw new HttpError(403, refusal);
  return actor;
}
