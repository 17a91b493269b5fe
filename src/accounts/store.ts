// Reads and writes of accounts: users, personal tokens, dashboard sessions, invites,
// setup tokens and the audit log. Secrets (tokens, session ids, invite and setup
// tokens) are stored only as SHA-256 hashes (rules.ts secretHash), passwords only as
// KDF hashes (password.ts). Statements that commit together (a change and its audit
// entry) go through Store.atomic; reads through Kysely.
import type { CompiledQuery, Kysely } from 'kysely';
import { DAY_MS, iso } from '../clock.js';
import type { Store } from '../store/database.js';
import type { Database } from '../store/schema.js';
import type { Selectable, Updateable } from 'kysely';
import type { UserTable, PersonalTokenTable, AuditLogTable, UserSessionTable } from '../store/schema.js';
import {
  AccountInputError,
  type Actor,
  isRole,
  lastAdminRefusal,
  newPersonalToken,
  randomText,
  type Role,
  secretHash,
} from './rules.js';

type Db = Kysely<Database>;
export type UserRow = Selectable<UserTable>;
export type TokenRow = Selectable<PersonalTokenTable>;
export type AuditRow = Selectable<AuditLogTable>;
export type SessionRow = Selectable<UserSessionTable>;

/** Session lifetimes (docs/api.md "Accounts"): absolute 30 days, idle 7 days. */
export const SESSION_ABSOLUTE_MS = 30 * DAY_MS;
export const SESSION_IDLE_MS = 7 * DAY_MS;
/** A session's last_seen_at is written at most this often (idle expiry is this coarse). */
export const SESSION_TOUCH_MS = 60 * 60 * 1000;
export const INVITE_TTL_MS = 7 * DAY_MS;

export function userJson(u: UserRow) {
  return {
    id: Number(u.id),
    email: u.email,
    name: u.name,
    role: u.role as Role,
    disabled: Number(u.disabled) === 1,
    created_at: iso(Number(u.created_at)),
    last_login_at: u.last_login_at === null ? null : iso(Number(u.last_login_at)),
  };
}

export function tokenJson(t: TokenRow) {
  return {
    id: Number(t.id),
    user_id: Number(t.user_id),
    name: t.name,
    created_at: iso(Number(t.created_at)),
    expires_at: t.expires_at === null ? null : iso(Number(t.expires_at)),
    last_used_at: t.last_used_at === null ? null : iso(Number(t.last_used_at)),
  };
}

export function auditJson(a: AuditRow) {
  let details: unknown = {};
  try {
    details = JSON.parse(a.details);
  } catch {
    details = {};
  }
  return {
    id: Number(a.id),
    at: iso(Number(a.at)),
    actor: a.actor,
    action: a.action,
    target: a.target,
    details,
    ip: a.ip,
  };
}

// ---------------------------------------------------------------------------
// Audit log
// ---------------------------------------------------------------------------

export interface AuditEntry {
  actor: Actor | string;
  action: string;
  target?: string | null;
  details?: Record<string, unknown>;
  ip?: string | null;
}

/** The insert of one audit entry, to run with the change it records. */
export function auditQuery(db: Db, entry: AuditEntry, at: number): CompiledQuery {
  return db
    .insertInto('audit_log')
    .values({
      uid: randomText(20),
      at,
      actor: typeof entry.actor === 'string' ? entry.actor : entry.actor.label,
      action: entry.action,
      target: entry.target ?? null,
      details: JSON.stringify(entry.details ?? {}),
      ip: entry.ip ?? null,
    })
    .compile();
}

export async function recordAudit(store: Store, entry: AuditEntry, at: number): Promise<void> {
  await store.atomic([auditQuery(store.db, entry, at)]);
}

export interface AuditFilter {
  before?: number;
  limit: number;
  actor?: string;
  action?: string;
  target?: string;
}

/** Newest first; `before` is the id of the last entry of the previous page. */
export async function listAudit(db: Db, f: AuditFilter): Promise<AuditRow[]> {
  let q = db.selectFrom('audit_log').selectAll().orderBy('id', 'desc').limit(f.limit);
  if (f.before !== undefined) q = q.where('id', '<', f.before);
  if (f.actor) q = q.where('actor', '=', f.actor);
  if (f.action) q = q.where('action', '=', f.action);
  if (f.target) q = q.where('target', '=', f.target);
  return q.execute();
}

// ---------------------------------------------------------------------------
// Users
// ---------------------------------------------------------------------------

export async function anyUserExists(db: Db): Promise<boolean> {
  return (await db.selectFrom('users').select('id').limit(1).executeTakeFirst()) !== undefined;
}

export async function listUsers(db: Db): Promise<UserRow[]> {
  return db.selectFrom('users').selectAll().orderBy('id').execute();
}

export async function findUser(db: Db, id: number): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('email', '=', email).executeTakeFirst();
}

function isUniqueViolation(err: unknown): boolean {
  return /unique|duplicate/i.test(String((err as Error)?.message ?? err));
}

export interface NewUser {
  email: string;
  name: string;
  role: Role;
  passwordHash: string | null;
}

/**
 * Creates a user and records it; the first user also ends every setup token. A taken
 * email is a 409.
 */
export async function createUser(
  store: Store,
  input: NewUser,
  now: number,
  audit: Omit<AuditEntry, 'action' | 'target'>,
): Promise<UserRow> {
  if (await findUserByEmail(store.db, input.email))
    throw new AccountInputError(`a user with email ${input.email} already exists`, 409);
  const db = store.db;
  try {
    await store.atomic([
      db
        .insertInto('users')
        .values({
          email: input.email,
          name: input.name,
          role: input.role,
          disabled: 0,
          password_hash: input.passwordHash,
          created_at: now,
          last_login_at: null,
        })
        .compile(),
      db.deleteFrom('setup_tokens').compile(),
      auditQuery(
        db,
        {
          ...audit,
          action: 'user.create',
          target: input.email,
          details: { role: input.role, ...(audit.details ?? {}) },
        },
        now,
      ),
    ]);
  } catch (err) {
    if (isUniqueViolation(err)) throw new AccountInputError(`a user with email ${input.email} already exists`, 409);
    throw err;
  }
  const user = await findUserByEmail(db, input.email);
  if (!user) throw new Error('user vanished after insert');
  return user;
}

export interface UserPatch {
  name?: string;
  role?: Role;
  disabled?: boolean;
  passwordHash?: string;
}

async function adminSeats(db: Db) {
  const rows = await db.selectFrom('users').select(['id', 'role', 'disabled']).where('role', '=', 'admin').execute();
  return rows.map((r) => ({ id: Number(r.id), role: r.role as Role, disabled: Number(r.disabled) === 1 }));
}

/**
 * Applies a patch and records it. Disabling a user or changing their password ends
 * their sessions (and a disabled user's tokens stop working by the auth check). The
 * last enabled admin cannot be demoted or disabled (409).
 */
export async function updateUser(
  store: Store,
  user: UserRow,
  patch: UserPatch,
  now: number,
  audit: Omit<AuditEntry, 'action' | 'target'>,
): Promise<UserRow> {
  const db = store.db;
  const id = Number(user.id);
  const after = { role: patch.role ?? (user.role as Role), disabled: patch.disabled ?? Number(user.disabled) === 1 };
  const refusal = lastAdminRefusal(await adminSeats(db), id, after);
  if (refusal) throw new AccountInputError(refusal, 409);
  const values: Updateable<UserTable> = {};
  if (patch.name !== undefined) values.name = patch.name;
  if (patch.role !== undefined) values.role = patch.role;
  if (patch.disabled !== undefined) values.disabled = patch.disabled ? 1 : 0;
  if (patch.passwordHash !== undefined) values.password_hash = patch.passwordHash;
  const queries: CompiledQuery[] = [];
  if (Object.keys(values).length > 0) queries.push(db.updateTable('users').set(values).where('id', '=', id).compile());
  if (patch.disabled === true || patch.passwordHash !== undefined)
    queries.push(db.deleteFrom('user_sessions').where('user_id', '=', id).compile());
  const details: Record<string, unknown> = {};
  if (patch.name !== undefined) details.name = patch.name;
  if (patch.role !== undefined) details.role = patch.role;
  if (patch.disabled !== undefined) details.disabled = patch.disabled;
  if (patch.passwordHash !== undefined) details.password = 'changed';
  const action =
    patch.passwordHash !== undefined && Object.keys(details).length === 1 ? 'user.password' : 'user.update';
  queries.push(
    auditQuery(db, { ...audit, action, target: user.email, details: { ...details, ...(audit.details ?? {}) } }, now),
  );
  await store.atomic(queries);
  return (await findUser(db, id)) ?? user;
}

export async function deleteUser(
  store: Store,
  user: UserRow,
  now: number,
  audit: Omit<AuditEntry, 'action' | 'target'>,
): Promise<void> {
  const refusal = lastAdminRefusal(await adminSeats(store.db), Number(user.id), null);
  if (refusal) throw new AccountInputError(refusal, 409);
  const db = store.db;
  const id = Number(user.id);
  // Children first: D1 and SQLite files opened without foreign keys do not cascade.
  await store.atomic([
    db.deleteFrom('user_sessions').where('user_id', '=', id).compile(),
    db.deleteFrom('personal_tokens').where('user_id', '=', id).compile(),
    db.deleteFrom('user_invites').where('user_id', '=', id).compile(),
    db.deleteFrom('users').where('id', '=', id).compile(),
    auditQuery(db, { ...audit, action: 'user.delete', target: user.email }, now),
  ]);
}

export async function recordSignIn(
  store: Store,
  user: UserRow,
  now: number,
  rehash: string | null,
  audit: Omit<AuditEntry, 'action' | 'target'>,
): Promise<void> {
  const db = store.db;
  const set: { last_login_at: number; password_hash?: string } = { last_login_at: now };
  if (rehash) set.password_hash = rehash;
  await store.atomic([
    db.updateTable('users').set(set).where('id', '=', Number(user.id)).compile(),
    auditQuery(db, { ...audit, action: 'user.sign_in', target: user.email, details: audit.details }, now),
  ]);
}

// ---------------------------------------------------------------------------
// Personal tokens
// ---------------------------------------------------------------------------

/** Creates a token; the returned `token` is the only time it is seen. */
export async function createToken(
  store: Store,
  user: UserRow,
  name: string,
  expiresAt: number | null,
  now: number,
  audit: Omit<AuditEntry, 'action' | 'target'>,
): Promise<{ token: string; row: TokenRow }> {
  const token = newPersonalToken();
  const hash = await secretHash(token);
  const db = store.db;
  await store.atomic([
    db
      .insertInto('personal_tokens')
      .values({
        user_id: Number(user.id),
        name,
        token_hash: hash,
        created_at: now,
        expires_at: expiresAt,
        last_used_at: null,
      })
      .compile(),
    auditQuery(
      db,
      {
        ...audit,
        action: 'token.create',
        target: user.email,
        details: { name, expires_at: expiresAt === null ? null : iso(expiresAt) },
      },
      now,
    ),
  ]);
  const row = await db
    .selectFrom('personal_tokens')
    .selectAll()
    .where('token_hash', '=', hash)
    .executeTakeFirstOrThrow();
  return { token, row };
}

export async function listTokens(db: Db, userId?: number): Promise<TokenRow[]> {
  let q = db.selectFrom('personal_tokens').selectAll().orderBy('id');
  if (userId !== undefined) q = q.where('user_id', '=', userId);
  return q.execute();
}

export async function findToken(db: Db, id: number): Promise<TokenRow | undefined> {
  return db.selectFrom('personal_tokens').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function deleteToken(
  store: Store,
  token: TokenRow,
  ownerEmail: string,
  now: number,
  audit: Omit<AuditEntry, 'action' | 'target'>,
): Promise<void> {
  const db = store.db;
  await store.atomic([
    db.deleteFrom('personal_tokens').where('id', '=', Number(token.id)).compile(),
    auditQuery(
      db,
      { ...audit, action: 'token.delete', target: ownerEmail, details: { name: token.name, id: Number(token.id) } },
      now,
    ),
  ]);
}

/** The token and its user for a presented personal token, when both are usable at `now`. */
export async function resolveToken(
  db: Db,
  presented: string,
  now: number,
): Promise<{ token: TokenRow; user: UserRow } | null> {
  const hash = await secretHash(presented);
  const row = await db
    .selectFrom('personal_tokens')
    .innerJoin('users', 'users.id', 'personal_tokens.user_id')
    .select([
      'personal_tokens.id as token_id',
      'personal_tokens.name as token_name',
      'personal_tokens.created_at as token_created_at',
      'personal_tokens.expires_at',
      'personal_tokens.last_used_at',
      'personal_tokens.token_hash',
      'users.id',
      'users.email',
      'users.name',
      'users.role',
      'users.disabled',
      'users.password_hash',
      'users.created_at',
      'users.last_login_at',
    ])
    .where('personal_tokens.token_hash', '=', hash)
    .executeTakeFirst();
  if (!row) return null;
  if (row.expires_at !== null && Number(row.expires_at) <= now) return null;
  if (Number(row.disabled) === 1 || !isRole(row.role)) return null;
  const user: UserRow = {
    id: Number(row.id),
    email: row.email,
    name: row.name,
    role: row.role,
    disabled: Number(row.disabled),
    password_hash: row.password_hash,
    created_at: Number(row.created_at),
    last_login_at: row.last_login_at,
  };
  const token: TokenRow = {
    id: Number(row.token_id),
    user_id: Number(row.id),
    name: row.token_name,
    token_hash: row.token_hash,
    created_at: Number(row.token_created_at),
    expires_at: row.expires_at,
    last_used_at: row.last_used_at,
  };
  return { token, user };
}

/** Notes a token's use, at most once an hour, so requests do not all write. */
export async function touchToken(db: Db, token: TokenRow, now: number): Promise<void> {
  if (token.last_used_at !== null && now - Number(token.last_used_at) < SESSION_TOUCH_MS) return;
  await db.updateTable('personal_tokens').set({ last_used_at: now }).where('id', '=', Number(token.id)).execute();
}

// ---------------------------------------------------------------------------
// Dashboard sessions
// ---------------------------------------------------------------------------

export interface NewSession {
  userId: number | null;
  apiKeyId: string | null;
  ip: string | null;
  userAgent: string | null;
}

/** A new session; the returned id goes into the cookie and is never stored. */
export async function createSession(store: Store, s: NewSession, now: number): Promise<string> {
  const id = randomText(43);
  await store.db
    .insertInto('user_sessions')
    .values({
      id_hash: await secretHash(id),
      user_id: s.userId,
      api_key_id: s.apiKeyId,
      created_at: now,
      last_seen_at: now,
      expires_at: now + SESSION_ABSOLUTE_MS,
      ip: s.ip,
      user_agent: s.userAgent === null ? null : s.userAgent.slice(0, 300),
    })
    .execute();
  return id;
}

export function isSessionId(text: string | undefined): text is string {
  return typeof text === 'string' && /^[A-Za-z0-9]{43}$/.test(text);
}

/** The live session of a cookie's session id, refreshing its idle time; null when ended, expired or idle. */
export async function findSession(db: Db, id: string, now: number): Promise<SessionRow | null> {
  if (!isSessionId(id)) return null;
  const row = await db
    .selectFrom('user_sessions')
    .selectAll()
    .where('id_hash', '=', await secretHash(id))
    .executeTakeFirst();
  if (!row) return null;
  if (Number(row.expires_at) <= now || Number(row.last_seen_at) + SESSION_IDLE_MS <= now) {
    await db.deleteFrom('user_sessions').where('id_hash', '=', row.id_hash).execute();
    return null;
  }
  if (now - Number(row.last_seen_at) >= SESSION_TOUCH_MS) {
    await db.updateTable('user_sessions').set({ last_seen_at: now }).where('id_hash', '=', row.id_hash).execute();
  }
  return row;
}

export async function deleteSession(db: Db, id: string): Promise<void> {
  if (!isSessionId(id)) return;
  await db
    .deleteFrom('user_sessions')
    .where('id_hash', '=', await secretHash(id))
    .execute();
}

export async function listSessions(db: Db, userId: number, now: number): Promise<SessionRow[]> {
  return db
    .selectFrom('user_sessions')
    .selectAll()
    .where('user_id', '=', userId)
    .where('expires_at', '>', now)
    .where('last_seen_at', '>', now - SESSION_IDLE_MS)
    .orderBy('created_at', 'desc')
    .execute();
}

/** Ends every session of a user ("end sessions"). */
export async function endSessions(
  store: Store,
  user: UserRow,
  now: number,
  audit: Omit<AuditEntry, 'action' | 'target'>,
): Promise<void> {
  const db = store.db;
  await store.atomic([
    db.deleteFrom('user_sessions').where('user_id', '=', Number(user.id)).compile(),
    auditQuery(db, { ...audit, action: 'user.end_sessions', target: user.email }, now),
  ]);
}

// ---------------------------------------------------------------------------
// Invites and setup tokens
// ---------------------------------------------------------------------------

/** A one-time invite for a user without a password; the token goes into the link only. */
export async function createInvite(db: Db, userId: number, now: number): Promise<{ token: string; expiresAt: number }> {
  const token = randomText(40);
  const expiresAt = now + INVITE_TTL_MS;
  await db
    .insertInto('user_invites')
    .values({ token_hash: await secretHash(token), user_id: userId, created_at: now, expires_at: expiresAt })
    .execute();
  return { token, expiresAt };
}

/** The user an invite token is for, when it is valid at `now`. */
export async function findInvite(db: Db, token: string, now: number): Promise<UserRow | null> {
  if (!/^[A-Za-z0-9]{40}$/.test(token)) return null;
  const invite = await db
    .selectFrom('user_invites')
    .selectAll()
    .where('token_hash', '=', await secretHash(token))
    .executeTakeFirst();
  if (!invite || Number(invite.expires_at) <= now) return null;
  const user = await findUser(db, Number(invite.user_id));
  return user && Number(user.disabled) === 0 ? user : null;
}

/** Sets the invited user's password and spends the invite (and any other of theirs). */
export async function acceptInvite(
  store: Store,
  user: UserRow,
  passwordHash: string,
  now: number,
  ip: string | null,
): Promise<void> {
  const db = store.db;
  await store.atomic([
    db.updateTable('users').set({ password_hash: passwordHash }).where('id', '=', Number(user.id)).compile(),
    db.deleteFrom('user_invites').where('user_id', '=', Number(user.id)).compile(),
    auditQuery(db, { actor: user.email, action: 'user.invite_accepted', target: user.email, ip }, now),
  ]);
}

/** A new setup token (kept hashed, so every instance accepts it) while no user exists. */
export async function createSetupToken(db: Db, now: number): Promise<string> {
  const token = randomText(32);
  await db
    .insertInto('setup_tokens')
    .values({ token_hash: await secretHash(token), created_at: now })
    .execute();
  return token;
}

export async function setupTokenValid(db: Db, token: string): Promise<boolean> {
  if (!/^[A-Za-z0-9]{32}$/.test(token)) return false;
  return (
    (await db
      .selectFrom('setup_tokens')
      .select('token_hash')
      .where('token_hash', '=', await secretHash(token))
      .executeTakeFirst()) !== undefined
  );
}

/** The stored form of a session id (to tell the current session in a list). */
export function secretHashOf(id: string): Promise<string> {
  return secretHash(id);
}
