// Password hashing: PBKDF2-HMAC-SHA256 through Web Crypto at OWASP's current
// iteration count (600 000), native on Node and in workerd, so both editions hash and
// verify the same way with no dependency. A hash names its algorithm and parameters
// (`pbkdf2-sha256$<iterations>$<salt>$<hash>`, base64url), so raising the count later
// still verifies older hashes and rehashes them at the next sign-in.
// docs/api.md "Accounts" gives the verify times measured on both editions.

export const PBKDF2_ITERATIONS = 600_000;
const SALT_BYTES = 16;
const HASH_BITS = 256;

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromBase64url(text: string): Uint8Array | null {
  if (!/^[A-Za-z0-9_-]+$/.test(text)) return null;
  try {
    return Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (ch) => ch.charCodeAt(0));
  } catch {
    return null;
  }
}

async function derive(password: string, salt: Uint8Array, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey(
    'raw',
    new TextEncoder().encode(password.normalize('NFC')),
    'PBKDF2',
    false,
    ['deriveBits'],
  );
  const bits = await crypto.subtle.deriveBits(
    { name: 'PBKDF2', hash: 'SHA-256', salt: salt as Uint8Array<ArrayBuffer>, iterations },
    key,
    HASH_BITS,
  );
  return new Uint8Array(bits);
}

/** A new hash of `password` with a random salt. */
export async function hashPassword(password: string, iterations = PBKDF2_ITERATIONS): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  return `pbkdf2-sha256$${iterations}$${base64url(salt)}$${base64url(await derive(password, salt, iterations))}`;
}

/** Whether `stored` is a hash this module reads. */
export function isPasswordHash(stored: string): boolean {
  return parse(stored) !== null;
}

function parse(stored: string): { iterations: number; salt: Uint8Array; hash: Uint8Array } | null {
  const parts = stored.split('$');
  if (parts.length !== 4 || parts[0] !== 'pbkdf2-sha256' || !/^[1-9][0-9]{0,7}$/.test(parts[1])) return null;
  const salt = fromBase64url(parts[2]);
  const hash = fromBase64url(parts[3]);
  if (!salt || !hash || salt.length < 8 || hash.length !== HASH_BITS / 8) return null;
  return { iterations: Number(parts[1]), salt, hash };
}

/**
 * Whether `password` matches `stored`, and whether the hash should be replaced (made
 * with fewer iterations than today's). A malformed hash never matches.
 */
export async function verifyPassword(
  password: string,
  stored: string | null,
): Promise<{ ok: boolean; rehash: boolean }> {
  const parsed = stored ? parse(stored) : null;
  if (!parsed) {
    // The same work as a real check, so timing does not tell whether the account exists.
    await derive(password, new Uint8Array(SALT_BYTES), PBKDF2_ITERATIONS);
    return { ok: false, rehash: false };
  }
  const computed = await derive(password, parsed.salt, parsed.iterations);
  let diff = 0;
  for (let i = 0; i < computed.length; i++) diff |= computed[i] ^ parsed.hash[i];
  const ok = diff === 0;
  return { ok, rehash: ok && parsed.iterations < PBKDF2_ITERATIONS };
}
