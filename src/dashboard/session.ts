// Dashboard sessions and CSRF tokens, without per-process state so every
// instance (and the Workers edition) accepts what another one issued.
//
// A session token is `<key id>.<expires ms>.<nonce>.<signature>`: the key id is
// the first 16 hex digits of SHA-256 of the API key that signed in (not secret),
// the signature an HMAC-SHA256 under that API key of the other three parts. A
// token is valid while its key is still in API_KEYS and it has not expired; taking
// a key out of API_KEYS ends every session signed in with it. The CSRF token of a
// session is an HMAC under the same key of the session's nonce, so it is tied to
// that session and forged by nobody who lacks the key. Web Crypto only.
import { DAY_MS } from '../clock.js';
import { equalBytes, sha256 } from '../http/auth.js';

/** How long a session lasts after signing in. */
export const SESSION_TTL_MS = 7 * DAY_MS;

export interface SessionKeys {
  /** The configured API keys, each with its id and HMAC key. */
  keys: { id: string; digest: Uint8Array; hmac: CryptoKey }[];
}

export interface Session {
  keyId: string;
  expires: number;
  nonce: string;
  /** The CSRF token every form of this session carries. */
  csrf: string;
}

const encoder = new TextEncoder();

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return null;
  try {
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/'));
    return Uint8Array.from(binary, (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}

/** Imports the API keys once; the result serves every request. */
export async function sessionKeys(apiKeys: string[]): Promise<SessionKeys> {
  const keys = await Promise.all(
    apiKeys.map(async (key) => {
      const digest = await sha256(key);
      const hmac = await crypto.subtle.importKey('raw', encoder.encode(key), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
      return { id: hex(digest.subarray(0, 8)), digest, hmac };
    }),
  );
  return { keys };
}

async function sign(key: CryptoKey, text: string): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.sign('HMAC', key, encoder.encode(text)));
}

/**
 * The configured key a presented API key equals, or null. Compares digests with
 * every key without an early exit, so timing reveals neither a key nor which matched.
 */
export async function matchApiKey(keys: SessionKeys, presented: string): Promise<SessionKeys['keys'][number] | null> {
  const digest = await sha256(presented);
  let found: SessionKeys['keys'][number] | null = null;
  for (const k of keys.keys) if (equalBytes(digest, k.digest) && found === null) found = k;
  return found;
}

/** A new session token for a key that signed in at `now`. */
export async function issueSession(key: SessionKeys['keys'][number], now: number): Promise<string> {
  const nonce = hex(crypto.getRandomValues(new Uint8Array(16)));
  const expires = now + SESSION_TTL_MS;
  const body = `${key.id}.${expires}.${nonce}`;
  return `${body}.${base64url(await sign(key.hmac, `faultline-session.${body}`))}`;
}

/** The session a token stands for, or null when it is malformed, forged, expired or its key is gone. */
export async function verifySession(keys: SessionKeys, token: string | undefined, now: number): Promise<Session | null> {
  if (!token) return null;
  const parts = token.split('.');
  if (parts.length !== 4) return null;
  const [keyId, expiresText, nonce, signature] = parts;
  if (!/^[0-9a-f]{16}$/.test(keyId) || !/^[0-9]{1,16}$/.test(expiresText) || !/^[0-9a-f]{32}$/.test(nonce)) return null;
  const key = keys.keys.find((k) => k.id === keyId);
  const sig = fromBase64url(signature);
  if (!key || !sig) return null;
  const body = `${keyId}.${expiresText}.${nonce}`;
  const valid = await crypto.subtle.verify('HMAC', key.hmac, sig as Uint8Array<ArrayBuffer>, encoder.encode(`faultline-session.${body}`));
  const expires = Number(expiresText);
  if (!valid || expires <= now) return null;
  return { keyId, expires, nonce, csrf: base64url(await sign(key.hmac, `faultline-csrf.${nonce}`)) };
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
export function sameOrigin(headers: { origin?: string; referer?: string; fetchSite?: string }, allowed: string[]): boolean {
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
