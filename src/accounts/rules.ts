// The rules of accounts as pure functions (docs/api.md "Accounts"): roles and what
// each route class needs, email normalisation, the password policy, the personal
// token format, and who may change whom. No database, no HTTP.

export const ROLES = ['viewer', 'member', 'admin'] as const;
export type Role = (typeof ROLES)[number];

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** Whether `role` includes everything `needed` may do (viewer < member < admin). */
export function roleAtLeast(role: Role, needed: Role): boolean {
  return ROLES.indexOf(role) >= ROLES.indexOf(needed);
}

/** Who made a request: a signed-in user, an instance API key, or the instance itself. */
export interface Actor {
  kind: 'user' | 'key' | 'system';
  userId?: number;
  email?: string;
  /** What the audit log names: the user's email, "api key <8 hex>" or "system". */
  label: string;
  role: Role;
}

export const SYSTEM_ACTOR: Actor = { kind: 'system', label: 'system', role: 'admin' };

/** The actor of an instance API key, named by the first 8 hex digits of its SHA-256. */
export function apiKeyActor(keyHashHex: string): Actor {
  return { kind: 'key', label: `api key ${keyHashHex.slice(0, 8)}`, role: 'admin' };
}

/**
 * Classes of management routes, each with the role it needs. `self` routes act on the
 * caller's own account (any role; the route checks for admin when another user is named).
 */
export type RouteClass =
  | 'read'
  | 'self'
  | 'triage'
  | 'alerts'
  | 'symbols'
  | 'uploads'
  | 'projects'
  | 'users'
  | 'audit'
  | 'transfer';

export const ROUTE_CLASS_ROLE: Record<RouteClass, Role> = {
  read: 'viewer',
  self: 'viewer',
  triage: 'member',
  alerts: 'member',
  symbols: 'member',
  uploads: 'member',
  projects: 'admin',
  users: 'admin',
  audit: 'admin',
  transfer: 'admin',
};

const ISSUE_WRITE = /^\/api\/projects\/[^/]+\/issues(\/|$)/;
const ALERTS = /^\/api\/projects\/[^/]+\/alerts(\/|$)/;
/** Cron monitors' settings (PATCH, DELETE) are alert configuration. */
const MONITORS = /^\/api\/projects\/[^/]+\/monitors(\/|$)/;
const SYMBOLS = /^\/api\/projects\/[^/]+\/symbols(\/|$)/;
const PROJECTS = /^\/api\/projects(\/[^/]+(\/rotate-key)?)?\/?$/;

/**
 * The class of a management request. Reads are `read` unless they expose secrets
 * (audit log, export); an unknown write falls to `projects` (admin), so a route added
 * without a class here is never open to less than an admin.
 */
export function routeClass(method: string, path: string): RouteClass {
  const m = method.toUpperCase();
  const read = m === 'GET' || m === 'HEAD' || m === 'OPTIONS';
  if (path === '/api/audit' || path.startsWith('/api/audit/')) return 'audit';
  if (path === '/api/export' || path === '/api/import') return 'transfer';
  if (path === '/api/users/me' || path === '/api/tokens' || path.startsWith('/api/tokens/')) return 'self';
  if (path === '/api/users' || path.startsWith('/api/users/')) {
    if (read) return 'read';
    // A user changes their own name or password, or ends their own sessions; the route
    // asks for admin when another user is named.
    if (m === 'PATCH' && /^\/api\/users\/[^/]+$/.test(path)) return 'self';
    if (m === 'DELETE' && /^\/api\/users\/[^/]+\/sessions$/.test(path)) return 'self';
    return 'users';
  }
  if (read) return 'read';
  if (path.startsWith('/api/0/')) return 'uploads';
  if (ISSUE_WRITE.test(path)) return 'triage';
  if (ALERTS.test(path) || MONITORS.test(path)) return 'alerts';
  if (SYMBOLS.test(path)) return 'symbols';
  if (PROJECTS.test(path)) return 'projects';
  return 'projects';
}

/**
 * The role a dashboard request needs: admin pages and project administration need admin;
 * issue, alert and symbol actions member; reading and your own account any role.
 */
export function dashboardRouteRole(method: string, path: string): Role {
  if (path === '/admin' || path.startsWith('/admin/')) return 'admin';
  const m = method.toUpperCase();
  if (m === 'GET' || m === 'HEAD') return 'viewer';
  if (path === '/logout' || path === '/settings' || path.startsWith('/settings/')) return 'viewer';
  if (/^\/[^/]+\/(issues|alerts|symbols)(\/|$)/.test(path)) return 'member';
  return 'admin';
}

/** The 403 message when `role` is below what `needed` requires, or null when allowed. */
export function roleRefusal(role: Role, needed: Role, what = 'this action'): string | null {
  if (roleAtLeast(role, needed)) return null;
  return `${what} needs the ${needed} role`;
}

export class AccountInputError extends Error {
  constructor(
    message: string,
    readonly status: 400 | 403 | 404 | 409 | 410 = 400,
  ) {
    super(message);
  }
}

const EMAIL =
  /^[^\s@"<>(),;:\\[\]]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;

/** An email as stored and compared: trimmed, lower case; a malformed one is refused. */
export function normaliseEmail(input: unknown): string {
  if (typeof input !== 'string') throw new AccountInputError('email must be a string such as "ana@example.com"');
  const email = input.trim().toLowerCase();
  if (email.length > 254 || !EMAIL.test(email))
    throw new AccountInputError(
      `email ${JSON.stringify(input.slice(0, 100))} is not a valid address such as "ana@example.com"`,
    );
  return email;
}

/** The domain part of a normalised email. */
export function emailDomain(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1);
}

export const PASSWORD_MIN_LENGTH = 10;
/** Longer passwords only cost KDF time; nobody types more. */
export const PASSWORD_MAX_LENGTH = 1024;

/** The password policy: at least 10 characters (code points), at most 1024. */
export function checkPassword(input: unknown): string {
  if (typeof input !== 'string') throw new AccountInputError('password must be a string');
  const length = [...input].length;
  if (length < PASSWORD_MIN_LENGTH)
    throw new AccountInputError(`password must be at least ${PASSWORD_MIN_LENGTH} characters long`);
  if (length > PASSWORD_MAX_LENGTH)
    throw new AccountInputError(`password must be at most ${PASSWORD_MAX_LENGTH} characters long`);
  return input;
}

/** A display name: defaults to the email's local part, at most 200 characters. */
export function checkName(input: unknown, email: string): string {
  if (input === undefined || input === null) return email.slice(0, email.indexOf('@'));
  if (typeof input !== 'string') throw new AccountInputError('name must be a string');
  const name = input.trim();
  if (name.length > 200) throw new AccountInputError('name must be at most 200 characters long');
  return name === '' ? email.slice(0, email.indexOf('@')) : name;
}

export const TOKEN_PREFIX = 'flt_';
const TOKEN_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const TOKEN_PATTERN = /^flt_[A-Za-z0-9]{40}$/;

/** Random text of `length` characters of [A-Za-z0-9], without modulo bias. */
export function randomText(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      // 248 = 4 × 62: bytes above are dropped so each character is equally likely.
      if (b < 248 && out.length < length) out += TOKEN_ALPHABET[b % 62];
    }
  }
  return out;
}

/** A new personal token: `flt_` and 40 random characters (about 238 bits). */
export function newPersonalToken(): string {
  return TOKEN_PREFIX + randomText(40);
}

export function isPersonalToken(text: string): boolean {
  return TOKEN_PATTERN.test(text);
}

/** SHA-256 of a secret as lower-case hex: how tokens, sessions and invites are stored. */
export async function secretHash(secret: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret)));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** A token's optional expiry: an RFC 3339 time after `now`, or null/absent for none. */
export function parseExpiry(input: unknown, now: number): number | null {
  if (input === undefined || input === null) return null;
  if (typeof input !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(input)) {
    throw new AccountInputError('expires_at must be an RFC 3339 time such as "2030-01-01T00:00:00Z", or null');
  }
  const at = Date.parse(input);
  if (!Number.isFinite(at)) throw new AccountInputError('expires_at is not a valid time');
  if (at <= now) throw new AccountInputError('expires_at must be in the future');
  return at;
}

/** One user as the last-admin rule sees it. */
export interface AdminSeat {
  id: number;
  role: Role;
  disabled: boolean;
}

/**
 * Refuses a change that would leave no enabled admin (409): removing, disabling or
 * demoting the last one. `after` is the user as the change leaves them, null when removed.
 */
export function lastAdminRefusal(
  users: AdminSeat[],
  targetId: number,
  after: { role: Role; disabled: boolean } | null,
): string | null {
  const enabledAdmins = users.filter((u) => u.role === 'admin' && !u.disabled);
  const target = enabledAdmins.find((u) => u.id === targetId);
  if (!target || enabledAdmins.length > 1) return null;
  if (after && after.role === 'admin' && !after.disabled) return null;
  return 'this is the last enabled admin; make another user an admin first';
}
