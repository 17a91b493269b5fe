// Accounts API: /api/users, /api/users/me, /api/tokens and /api/audit (docs/api.md
// "Accounts"). Thin: parse, check who may act on whom, call src/accounts. The role a
// route class needs is enforced before these run (auth.ts); here only the checks
// that depend on the target (your own account or another's).
import { Hono, type Context } from 'hono';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppDeps } from '../context.js';
import { parseId, parseTokenCreate, parseUserCreate, parseUserPatch } from '../accounts/input.js';
import { hashPassword } from '../accounts/password.js';
import { AccountInputError, roleAtLeast } from '../accounts/rules.js';
import {
  auditJson,
  createInvite,
  createToken,
  createUser,
  deleteToken,
  deleteUser,
  endSessions,
  findToken,
  findUser,
  listAudit,
  listTokens,
  listUsers,
  tokenJson,
  type UserRow,
  updateUser,
  userJson,
} from '../accounts/store.js';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../limits.js';
import { auditFrom } from './audit.js';
import { requestActor } from './auth.js';
import { handleError, HttpError, readJson } from './errors.js';
import { publicBaseUrl } from './public-url.js';

export function userRoutes(deps: AppDeps): Hono {
  const app = new Hono();
  const db = deps.store.db;
  const now = () => deps.clock.now();

  async function userOr404(raw: string | undefined): Promise<UserRow> {
    const id = parseId(raw, 'user');
    const user = await findUser(db, id);
    if (!user) throw new AccountInputError(`user ${id} not found`, 404);
    return user;
  }

  /** The signed-in user of the request; an API key or the open API has none. */
  async function me(c: Context): Promise<UserRow | null> {
    const actor = requestActor(c);
    return actor.kind === 'user' && actor.userId !== undefined ? ((await findUser(db, actor.userId)) ?? null) : null;
  }

  function isAdmin(c: Context): boolean {
    return roleAtLeast(requestActor(c).role, 'admin');
  }

  app.get('/api/users', async (c) => c.json((await listUsers(db)).map(userJson)));

  app.post('/api/users', async (c) => {
    const input = parseUserCreate(await readJson(c));
    const passwordHash = input.password === null ? null : await hashPassword(input.password);
    const user = await createUser(
      deps.store,
      { email: input.email, name: input.name, role: input.role, passwordHash },
      now(),
      {
        ...auditFrom(deps, c),
        details: { invited: input.password === null },
      },
    );
    const body: Record<string, unknown> = userJson(user);
    if (input.password === null) {
      const invite = await createInvite(db, Number(user.id), now());
      body.invite_url = `${publicBaseUrl(c, deps.config)}/login/invite/${invite.token}`;
      body.invite_expires_at = new Date(invite.expiresAt).toISOString();
    }
    deps.logger.info({ user_id: Number(user.id), role: user.role }, 'user created');
    return c.json(body, 201, { Location: `/api/users/${Number(user.id)}` });
  });

  app.get('/api/users/me', async (c) => {
    const user = await me(c);
    if (user) return c.json(userJson(user));
    const actor = requestActor(c);
    return c.json({
      id: null,
      email: null,
      name: actor.label,
      role: actor.role,
      disabled: false,
      created_at: null,
      last_login_at: null,
    });
  });

  app.get('/api/users/:id', async (c) => c.json(userJson(await userOr404(c.req.param('id')))));

  app.patch('/api/users/:id', async (c) => {
    const target = await userOr404(c.req.param('id'));
    const self = requestActor(c).userId === Number(target.id);
    const patch = parseUserPatch(await readJson(c), target.email);
    if (!isAdmin(c)) {
      if (!self) throw new HttpError(403, 'changing another user needs the admin role');
      if (patch.role !== undefined || patch.disabled !== undefined)
        throw new HttpError(403, 'changing a role or disabling a user needs the admin role');
    }
    const updated = await updateUser(
      deps.store,
      target,
      {
        name: patch.name,
        role: patch.role,
        disabled: patch.disabled,
        passwordHash: patch.password === undefined ? undefined : await hashPassword(patch.password),
      },
      now(),
      auditFrom(deps, c),
    );
    return c.json(userJson(updated));
  });

  app.delete('/api/users/:id', async (c) => {
    await deleteUser(deps.store, await userOr404(c.req.param('id')), now(), auditFrom(deps, c));
    return c.body(null, 204);
  });

  // "End sessions": every dashboard session of the user ends at once, on every instance.
  app.delete('/api/users/:id/sessions', async (c) => {
    const target = await userOr404(c.req.param('id'));
    if (!isAdmin(c) && requestActor(c).userId !== Number(target.id))
      throw new HttpError(403, 'ending another user’s sessions needs the admin role');
    await endSessions(deps.store, target, now(), auditFrom(deps, c));
    return c.body(null, 204);
  });

  app.get('/api/tokens', async (c) => {
    const raw = c.req.query('user_id');
    const user = await me(c);
    if (raw !== undefined) {
      const id = parseId(raw, 'user');
      if (!isAdmin(c) && user && Number(user.id) !== id)
        throw new HttpError(403, 'listing another user’s tokens needs the admin role');
      return c.json((await listTokens(db, id)).map(tokenJson));
    }
    // An API key has no tokens of its own: it sees every user's.
    return c.json((await listTokens(db, user ? Number(user.id) : undefined)).map(tokenJson));
  });

  app.post('/api/tokens', async (c) => {
    const input = parseTokenCreate(await readJson(c), now());
    const caller = await me(c);
    let owner: UserRow | null = caller;
    if (input.userId !== null && (!caller || Number(caller.id) !== input.userId)) {
      if (!isAdmin(c)) throw new HttpError(403, 'creating a token for another user needs the admin role');
      owner = (await findUser(db, input.userId)) ?? null;
      if (!owner) throw new AccountInputError(`user ${input.userId} not found`, 404);
    }
    if (!owner)
      throw new AccountInputError('an API key has no user of its own: give user_id to create a token for a user');
    if (Number(owner.disabled) === 1) throw new AccountInputError(`user ${owner.email} is disabled`, 409);
    const { token, row } = await createToken(deps.store, owner, input.name, input.expiresAt, now(), auditFrom(deps, c));
    return c.json({ ...tokenJson(row), token }, 201);
  });

  app.delete('/api/tokens/:id', async (c) => {
    const id = parseId(c.req.param('id'), 'token');
    const token = await findToken(db, id);
    const caller = requestActor(c);
    // Another user's token is not found for a non-admin: its existence is not theirs to know.
    if (!token || (!isAdmin(c) && caller.userId !== Number(token.user_id)))
      throw new AccountInputError(`token ${id} not found`, 404);
    const owner = await findUser(db, Number(token.user_id));
    await deleteToken(deps.store, token, owner?.email ?? String(token.user_id), now(), auditFrom(deps, c));
    return c.body(null, 204);
  });

  app.get('/api/audit', async (c) => {
    const q = c.req.query();
    for (const k of Object.keys(q)) {
      if (!['before', 'limit', 'actor', 'action', 'target'].includes(k))
        throw new HttpError(400, `unknown query parameter "${k}"; allowed: before, limit, actor, action, target`);
    }
    if (q.before !== undefined && !/^[1-9][0-9]{0,14}$/.test(q.before))
      throw new HttpError(400, 'before must be an audit entry id (a positive integer), as given in next_before');
    if (q.limit !== undefined && !/^[1-9][0-9]{0,5}$/.test(q.limit))
      throw new HttpError(400, `limit must be an integer from 1 to ${MAX_LIMIT} (larger values are capped)`);
    const limit = Math.min(q.limit === undefined ? DEFAULT_LIMIT : Number(q.limit), MAX_LIMIT);
    const rows = await listAudit(db, {
      before: q.before === undefined ? undefined : Number(q.before),
      limit: limit + 1,
      actor: q.actor,
      action: q.action,
      target: q.target,
    });
    const page = rows.slice(0, limit);
    const more = rows.length > limit;
    return c.json({ entries: page.map(auditJson), more, next_before: more ? Number(page[page.length - 1].id) : null });
  });

  app.onError((err, c) => {
    if (err instanceof AccountInputError) return c.json({ error: err.message }, err.status as ContentfulStatusCode);
    return handleError(err, c, deps.logger);
  });

  return app;
}
