// API-key authentication of the management API: `Authorization: Bearer <key>`
// against API_KEYS, compared in constant time over SHA-256 digests (Web Crypto,
// so every edition can run it). Decides which paths are exempt (health, ingest).
import type { Context, MiddlewareHandler } from 'hono';
import { errorResponse } from './errors.js';

/** Context variable holding a short, non-secret id of the API key used (for rate limits). */
export const API_KEY_ID = 'apiKeyId';

/** Ingest paths authenticate with the project's DSN key instead (trailing slash optional). */
const INGEST_PATH = /^\/api\/([0-9]+)\/(envelope|store)\/?$/;

/** The project id and endpoint an ingest path names, or null for any other path. */
export function matchIngestPath(path: string): { projectId: string; endpoint: 'envelope' | 'store' } | null {
  const m = INGEST_PATH.exec(path);
  return m ? { projectId: m[1], endpoint: m[2] as 'envelope' | 'store' } : null;
}

/** Paths that never need an API key: health and the SDK ingest endpoints. */
export function isAuthExempt(path: string): boolean {
  // /metrics checks its own token (src/http/metrics.ts).
  return path === '/health' || path === '/metrics' || INGEST_PATH.test(path);
}

export function isIngestPath(path: string): boolean {
  return INGEST_PATH.test(path);
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

/**
 * Checks the API key on every non-exempt path when API_KEYS is set; open otherwise.
 * Digests of the configured keys are computed once; each request is compared with
 * every key (no early exit) so timing reveals neither a key nor which one matched.
 */
export function apiKeyAuth(apiKeys: string[]): MiddlewareHandler {
  const digests = Promise.all(apiKeys.map(sha256));
  return async (c, next) => {
    if (apiKeys.length === 0 || isAuthExempt(c.req.path)) return next();
    const token = bearerToken(c);
    if (token !== null) {
      const presented = await sha256(token);
      let matched = false;
      for (const digest of await digests) matched = equalBytes(presented, digest) || matched;
      if (matched) {
        c.set(API_KEY_ID, hex(presented.subarray(0, 8)));
        return next();
      }
    }
    return errorResponse(c, 401, 'unauthorized', { 'WWW-Authenticate': 'Bearer' });
  };
}
