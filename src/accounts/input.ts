// The bodies of the accounts API, checked field by field (unknown fields refused, so a
// typo never passes silently). Shared by the API, the dashboard and the CLI.
import {
  AccountInputError,
  checkName,
  checkPassword,
  isRole,
  normaliseEmail,
  parseExpiry,
  type Role,
  ROLES,
} from './rules.js';

function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new AccountInputError('request body must be a JSON object');
  return body as Record<string, unknown>;
}

function onlyFields(o: Record<string, unknown>, allowed: string[]): void {
  for (const k of Object.keys(o)) {
    if (!allowed.includes(k)) throw new AccountInputError(`unknown field "${k}"; allowed: ${allowed.join(', ')}`);
  }
}

export function parseRole(value: unknown): Role {
  if (!isRole(value))
    throw new AccountInputError(`role must be one of ${ROLES.join(', ')} (got ${JSON.stringify(value)})`);
  return value;
}

export interface UserCreateInput {
  email: string;
  name: string;
  role: Role;
  password: string | null;
}

export function parseUserCreate(body: unknown): UserCreateInput {
  const o = object(body);
  onlyFields(o, ['email', 'name', 'role', 'password']);
  const email = normaliseEmail(o.email);
  return {
    email,
    name: checkName(o.name, email),
    role: o.role === undefined ? 'viewer' : parseRole(o.role),
    password: o.password === undefined || o.password === null ? null : checkPassword(o.password),
  };
}

export interface UserPatchInput {
  name?: string;
  role?: Role;
  disabled?: boolean;
  password?: string;
}

export function parseUserPatch(body: unknown, email: string): UserPatchInput {
  const o = object(body);
  onlyFields(o, ['name', 'role', 'disabled', 'password']);
  const out: UserPatchInput = {};
  if (o.name !== undefined) out.name = checkName(o.name, email);
  if (o.role !== undefined) out.role = parseRole(o.role);
  if (o.disabled !== undefined) {
    if (typeof o.disabled !== 'boolean') throw new AccountInputError('disabled must be true or false');
    out.disabled = o.disabled;
  }
  if (o.password !== undefined) out.password = checkPassword(o.password);
  return out;
}

export interface TokenCreateInput {
  name: string;
  expiresAt: number | null;
  userId: number | null;
}

export function parseTokenCreate(body: unknown, now: number): TokenCreateInput {
  const o = object(body ?? {});
  onlyFields(o, ['name', 'expires_at', 'user_id']);
  if (typeof o.name !== 'string' || o.name.trim() === '' || o.name.length > 200)
    throw new AccountInputError('name must be a non-empty string of at most 200 characters');
  let userId: number | null = null;
  if (o.user_id !== undefined && o.user_id !== null) {
    if (typeof o.user_id !== 'number' || !Number.isSafeInteger(o.user_id) || o.user_id < 1)
      throw new AccountInputError('user_id must be a positive integer');
    userId = o.user_id;
  }
  return { name: o.name.trim(), expiresAt: parseExpiry(o.expires_at, now), userId };
}

/** A positive integer id in a path. */
export function parseId(raw: string | undefined, what: string): number {
  if (!raw || !/^[1-9][0-9]{0,14}$/.test(raw))
    throw new AccountInputError(`${what} ${JSON.stringify(raw ?? '')} not found`, 404);
  return Number(raw);
}
