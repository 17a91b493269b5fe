// DSN-key credentials of an ingest request: where SDKs put the key (X-Sentry-Auth,
// Authorization: Sentry … or Basic base64(<key>:), the sentry_key query parameter,
// the envelope header's `dsn`), the protocol version they claim, and the DSN URL
// itself. Pure functions on Web APIs; the project lookup and the 401/400 answers
// are the pipeline's.

/** The newest protocol version this server speaks; SDKs send 7, older ones 5 or 6. */
export const PROTOCOL_VERSION = 7;

export interface SentryAuth {
  key: string;
  /** Declared protocol version, or null when the client did not say. */
  version: number | null;
}

/** Where a key was found, for error messages. */
export type CredentialSource = 'x-sentry-auth' | 'authorization' | 'query' | 'envelope dsn' | 'path';

export interface Credential extends SentryAuth {
  source: CredentialSource;
}

export class AuthError extends Error {
  constructor(
    message: string,
    /** 401 for anything about the key, 400 for a protocol version we do not speak. */
    readonly status: 400 | 401 = 401,
  ) {
    super(message);
  }
}

/**
 * Parses `Sentry sentry_key=…, sentry_version=7, …` (prefix case-insensitive, pairs
 * split on commas, keys and values trimmed, unknown keys ignored). Returns null when
 * the value is not a Sentry auth value at all (for example `Bearer …`).
 */
export function parseSentryAuthHeader(value: string | null | undefined): Partial<SentryAuth> | null {
  if (!value) return null;
  const trimmed = value.trim();
  if (!/^sentry\s/i.test(trimmed)) return null;
  const fields = new Map<string, string>();
  for (const part of trimmed.slice(6).split(',')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    // A repeated header arrives joined with ", " (`Sentry a=1, Sentry b=2`): each
    // value's own `Sentry` prefix goes, so its fields are read like the first one's.
    const name = part
      .slice(0, eq)
      .trim()
      .toLowerCase()
      .replace(/^sentry\s+/, '');
    const value = part.slice(eq + 1).trim();
    const earlier = fields.get(name);
    if (name === 'sentry_key' && earlier !== undefined && earlier !== value) {
      throw new AuthError('the request names different DSN keys in its Sentry authentication headers; send one key');
    }
    fields.set(name, value);
  }
  const key = fields.get('sentry_key');
  return {
    key: key === undefined || key === '' ? undefined : key,
    version: parseVersion(fields.get('sentry_version')),
  };
}

const BASIC = /^basic(?:\s+(.*))?$/is;
const STRICT_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{2,3})?$/;
const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Parses `Basic base64(<key>:[secret])` (newer Relay): the part before the first
 * colon is the key, the rest (a secret) is ignored. Returns null when the value is
 * not Basic at all; a Basic value that is not base64 of `<non-empty key>:…` is a 401.
 */
export function parseBasicAuthHeader(value: string | null | undefined): Partial<SentryAuth> | null {
  if (!value) return null;
  const match = BASIC.exec(value.trim());
  if (!match) return null;
  const malformed = () => new AuthError('malformed Authorization: Basic header; expected Basic base64("<DSN key>:")');
  const encoded = (match[1] ?? '').trim();
  if (encoded === '' || !STRICT_BASE64.test(encoded)) throw malformed();
  let decoded: string;
  try {
    const binary = atob(encoded);
    decoded = utf8.decode(Uint8Array.from(binary, (ch) => ch.charCodeAt(0)));
  } catch {
    throw malformed();
  }
  const colon = decoded.indexOf(':');
  if (colon <= 0) throw malformed();
  return { key: decoded.slice(0, colon).trim() || undefined, version: null };
}

/** `7`, `7.0` → 7 (cut at the first dot, as Relay does); anything else → null. */
export function parseVersion(raw: string | null | undefined): number | null {
  if (raw === null || raw === undefined) return null;
  const head = raw.trim().split('.')[0];
  if (!/^[0-9]{1,9}$/.test(head)) return null;
  return Number(head);
}

export interface ParsedDsn {
  key: string;
  projectId: number;
}

/**
 * `scheme://key[:secret]@host[:port][/prefix]/<project id>`: the key is the user part,
 * the project id the leading digits of the last path segment (as the JS SDK reads it).
 */
export function parseDsn(dsn: string): ParsedDsn | null {
  let url: URL;
  try {
    url = new URL(dsn);
  } catch {
    return null;
  }
  let key: string;
  try {
    key = decodeURIComponent(url.username);
  } catch {
    // Malformed percent-encoding (`%ff`) is no key at all.
    return null;
  }
  if (key === '') return null;
  const last = url.pathname.replace(/\/+$/, '').split('/').pop() ?? '';
  const digits = /^[0-9]+/.exec(last)?.[0];
  if (!digits || digits.length > 15) return null;
  return { key, projectId: Number(digits) };
}

export interface RequestCredentialsInput {
  xSentryAuth: string | null;
  authorization: string | null;
  /** The request's query string parameters. */
  query: URLSearchParams;
}

/**
 * The key carried by the request's headers or query string (not the envelope body),
 * or null when there is none. Several places naming different keys is refused: the
 * request would be ambiguous. The version comes from wherever it was given.
 */
export function credentialsFromRequest(input: RequestCredentialsInput): Credential | null {
  const found: Array<{ source: CredentialSource; auth: Partial<SentryAuth> }> = [];
  const header = parseSentryAuthHeader(input.xSentryAuth);
  if (header) found.push({ source: 'x-sentry-auth', auth: header });
  const authorization = parseSentryAuthHeader(input.authorization) ?? parseBasicAuthHeader(input.authorization);
  if (authorization) found.push({ source: 'authorization', auth: authorization });
  const queryKeys = input.query.getAll('sentry_key');
  if (queryKeys.some((k) => k !== queryKeys[0]))
    throw new AuthError('the query string names different DSN keys; send one sentry_key');
  const queryKey = queryKeys.length > 0 ? queryKeys[0] : null;
  const queryVersion = parseVersion(input.query.get('sentry_version'));
  if (queryKey !== null || queryVersion !== null) {
    found.push({ source: 'query', auth: { key: queryKey || undefined, version: queryVersion } });
  }

  let version: number | null = null;
  for (const f of found) {
    if (f.auth.version !== null && f.auth.version !== undefined) version = Math.max(version ?? 0, f.auth.version);
  }
  if (version !== null && version > PROTOCOL_VERSION) {
    throw new AuthError(
      `unsupported protocol version ${version}; this server accepts sentry_version up to ${PROTOCOL_VERSION}`,
      400,
    );
  }

  const withKey = found.filter((f) => f.auth.key !== undefined);
  if (withKey.length === 0) return null;
  const key = withKey[0].auth.key as string;
  if (withKey.some((f) => f.auth.key !== key)) {
    throw new AuthError(
      `the request names different DSN keys in ${withKey.map((f) => f.source).join(' and ')}; send one key`,
    );
  }
  return { key, version, source: withKey[0].source };
}

/** The credential in an envelope header's `dsn` field, null when absent. */
export function credentialFromEnvelopeDsn(dsn: unknown): Credential | null {
  if (dsn === undefined || dsn === null) return null;
  if (typeof dsn !== 'string') throw new AuthError('the envelope header field "dsn" must be a DSN string');
  const parsed = parseDsn(dsn);
  if (!parsed) throw new AuthError('the envelope header field "dsn" is not a valid DSN (scheme://key@host/project_id)');
  return { key: parsed.key, version: null, source: 'envelope dsn' };
}

/** The project id the envelope's `dsn` names, or null without a usable dsn. */
export function projectIdFromEnvelopeDsn(dsn: unknown): number | null {
  return typeof dsn === 'string' ? (parseDsn(dsn)?.projectId ?? null) : null;
}
