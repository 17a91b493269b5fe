// Dashboard sessions and CSRF tokens. Every session lives in the database
// (src/accounts/store.ts: only a SHA-256 of its id is stored), so sign-out, disabling
// a user, a password change or "end sessions" end it at once on every instance, and
// every instance (and the Workers edition) accepts what another one issued. The
// cookie holds the session id; the CSRF token of a session is derived from that id,
// so it needs no storage and only the cookie's holder can compute it. Web Crypto only.
import { equalBytes } from '../http/auth.js';
import { SESSION_ABSOLUTE_MS } from '../accounts/store.js';

/** How long the session cookie is kept by the browser (the server ends it sooner when idle). */
export const SESSION_TTL_MS = SESSION_ABSOLUTE_MS;

const encoder = new TextEncoder();

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** The CSRF token every form of the session with this id carries. */
export async function csrfTokenOf(sessionId: string): Promise<string> {
  return base64url(
    new Uint8Array(await crypto.subtle.digest('SHA-256', encoder.encode(`faultline-csrf.${sessionId}`))),
  );
}

/** Compares two tokens in time independent of where they differ. */
export function sameToken(a: string, b: string): boolean {
  return equalBytes(encoder.encode(a), encoder.encode(b));
}

/** A random token for the double-submit CSRF cookie of an open dashboard (API_KEYS empty). */
export function randomToken(): string {
  return base64url(crypto.getRandomValues(new Uint8Array(24)));
}

/**
 * Whether a state-changing request comes from a page of this site: an `Origin`
 * (or, without one, a `Referer`) must be one of the allowed origins, and
 * `Sec-Fetch-Site`, when sent, must not be cross-site or same-site. A request with
 * none of these headers (not a browser) passes on to the token check.
 */
export function sameOrigin(
  headers: { origin?: string; referer?: string; fetchSite?: string },
  allowed: string[],
): boolean {
  if (headers.fetchSite && headers.fetchSite !== 'same-origin' && headers.fetchSite !== 'none') return false;
  const source = headers.origin ?? (headers.referer ? originOf(headers.referer) : undefined);
  if (source === undefined) return true;
  return allowed.includes(source);
}

function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'invalid';
  }
}
