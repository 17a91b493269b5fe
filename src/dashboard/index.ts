// The web dashboard: server-rendered pages for projects, overview, issues,
// events, releases and project settings, served by the same Hono app at `/`
// (every path outside /api and /health). Pages call the same domain functions
// as the JSON routes (src/read, src/store/projects.ts, the project validation of
// src/http/projects.ts); nothing here queries the database itself. Web APIs
// only, so every edition serves it.
//
// Sign-in (API_KEYS set or a user exists): email and password (or SSO), or while no
// user exists one of the API keys, exchanged for a session kept in the database
// (session.ts, src/accounts: cookie HttpOnly, SameSite=Strict, Secure over https),
// ended at once on every instance by sign-out, disabling, a password change or "end
// sessions". Every state-changing request is a POST carrying the session's CSRF token
// and coming from this site's origin; the signed-in user's role decides what they may
// do (src/accounts/rules.ts dashboardRouteRole). With API_KEYS empty and no user the
// dashboard is open like the API; forms are then protected by a double-submit CSRF
// cookie and the same origin check.
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppDeps } from '../context.js';
import { storeCapacity } from '../store/capacity.js';
import { UserPresence } from '../accounts/presence.js';
import { HttpError, zodMessage } from '../http/errors.js';
import { actorOf } from '../http/triage.js';
import { hasUnsafeText } from '../ingest/hygiene.js';
import { PROJECT_CREATED, projectJson, withDefaults } from '../http/projects.js';
import { createSchema, patchSchema, privacyColumns } from '../store/project-input.js';
import { projectUsage } from '../privacy/usage.js';
import { clientAddressOf } from '../http/forwarded.js';
import { publicBasePath, publicBaseUrl } from '../http/public-url.js';
import { SIGN_IN_FAILURES, SIGN_IN_WINDOW_MS } from '../limits.js';
import { SignInThrottle } from '../store/rate-limits.js';
import { REQUEST_ID_HEADER } from '../http/request-meta.js';
import { ReadInputError, ReadNotFoundError } from '../errors.js';
import { eventDetail, eventDetailOf, findEvent, listEvents, parseEventListQuery } from '../read/events.js';
import {
  bulkSetStatus,
  findIssue,
  issueDetail,
  listIssues,
  parseBulkBody,
  parseIssueListQuery,
  parseStatusBody,
  setIssueStatus,
} from '../read/issues.js';
import { addComment, deleteComment, ForbiddenError, listActivity, parseCommentBody } from '../triage/activity.js';
import { overview, projectIsEmpty } from '../read/overview.js';
import { listReleases, releaseDetail } from '../read/releases.js';
import {
  createProject,
  deleteProject,
  findProjectBySlug,
  listProjects,
  rotateProjectKey,
  SLUG_PATTERN,
  SlugTakenError,
  updateProject,
} from '../store/projects.js';
import { isIssueStatus } from '../read/params.js';
import type { ProjectRow } from '../store/schema.js';
import { addChannel, sendTestAlert } from '../alerts/channel-admin.js';
import { ALERT_TYPES, AlertInputError, isAlertType, parseRulePatch } from '../alerts/rules.js';
import {
  channelJson,
  deleteChannel,
  findChannel,
  listChannels,
  listDeliveries,
  listRules,
  updateRule,
} from '../alerts/store.js';
import { webAlertRuntime } from '../alerts/transport.js';
import { CSS, FAVICON_SVG, JS } from './assets.js';
import { alertsPage } from './pages/alerts.js';
import { receiveSymbolUpload } from '../http/symbols.js';
import { attachmentDownload } from '../http/attachments.js';
import { attachmentBlobsOf, eventFiles, getAttachment } from '../attachments/storage.js';
import { listFeedback } from '../feedback/storage.js';
import { feedbackPage } from './pages/feedback.js';
import { listSymbolFiles, symbolFileJson } from '../symbols/storage.js';
import { symbolsPage } from './pages/symbols.js';
import { monitorListPage, monitorPage } from './pages/monitors.js';
import {
  checkinJson,
  findMonitor,
  listMonitors,
  monitorJson,
  recentCheckins,
  recentCheckinsOf,
} from '../monitors/store.js';
import {
  href,
  locationUnderBasePath,
  nonEmpty,
  pathWithoutBasePath,
  projectPath,
  underBasePath,
  type Html,
} from './html.js';
import type { PageContext } from './layout.js';
import { setupCard } from './setup.js';
import { eventListPage, eventListQuery, eventPage, type EventDetail } from './pages/events.js';
import { issueListPage, issuePage } from './pages/issues.js';
import { overviewPage, RELEASE_PAGE_ISSUES, releaseListPage, releasePage } from './pages/overview.js';
import { errorPage, projectListPage, settingsPage } from './pages/projects.js';
import { accountPage, auditPage, continuePage, invitePage, loginPage, setupPage, usersPage } from './pages/accounts.js';
import { csrfTokenOf, randomToken, sameOrigin, sameToken, SESSION_TTL_MS } from './session.js';
import { apiKeyDigests, matchApiKeyDigest, setRequestActor, userActor } from '../http/auth.js';
import { audit, auditFrom } from '../http/audit.js';
import {
  AccountInputError,
  type Actor,
  type Role,
  apiKeyActor,
  checkPassword,
  dashboardRouteRole,
  normaliseEmail,
  roleRefusal,
  SYSTEM_ACTOR,
} from '../accounts/rules.js';
import { hashPassword, verifyPassword } from '../accounts/password.js';
import { parseRole, parseUserCreate } from '../accounts/input.js';
import { SsoClient, SsoRefusal, ssoRole } from '../accounts/oidc.js';
import {
  acceptInvite,
  auditJson,
  createInvite,
  createSession,
  createToken,
  createUser,
  deleteSession,
  deleteToken,
  deleteUser,
  endSessions,
  findInvite,
  findSession,
  findToken,
  findUser,
  findUserByEmail,
  isSessionId,
  listAudit,
  listSessions,
  listTokens,
  listUsers,
  recordSignIn,
  secretHashOf,
  setupTokenValid,
  type SessionRow,
  tokenJson,
  type UserRow,
  updateUser,
  userJson,
} from '../accounts/store.js';

export const SESSION_COOKIE = 'faultline_session';
/** The account an API-key sign-in counts its failures against (docs/api.md, "Dashboard sign-in"). */
const API_KEY_ACCOUNT = 'api-keys';
export const CSRF_COOKIE = 'faultline_csrf';

/** Paths the dashboard answers: everything except the JSON API, the health check and the metrics. */
export function isDashboardPath(path: string): boolean {
  return !(
    path === '/api' ||
    path.startsWith('/api/') ||
    path === '/health' ||
    path.startsWith('/health/') ||
    path === '/metrics'
  );
}

/** The symbol upload form's target: its body streams, past the 1 MB form limit. */
function isUploadPath(path: string): boolean {
  return /^\/[^/]+\/symbols$/.test(path);
}

/** Content-Security-Policy of every page: nothing from another host, no inline script or style. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** A signed-in request: its session and who it is. */
interface Signed {
  sessionId: string;
  row: SessionRow;
  actor: Actor;
  user: UserRow | null;
}

type Env = { Variables: { page: PageContext; signed: Signed | undefined } };

/** A local path to return to after signing in (never another host). */
function safeNext(next: string | undefined, fallback = '/'): string {
  return next && /^\/(?![/\\])/.test(next) ? next : fallback;
}

/**
 * Form fields as strings; repeated fields (checkboxes) as arrays. A NUL (or lone
 * surrogate) in any field is a 400, as in the API's JSON bodies: no database stores it as sent.
 */
async function form(c: Context): Promise<Record<string, string | string[]>> {
  const body = await c.req.parseBody({ all: true });
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(body)) {
    if (Array.isArray(v)) out[k] = v.filter((x): x is string => typeof x === 'string');
    else if (typeof v === 'string') out[k] = v;
    const values = out[k] === undefined ? [] : Array.isArray(out[k]) ? out[k] : [out[k]];
    if (hasUnsafeText(k) || values.some(hasUnsafeText))
      throw new HttpError(400, 'The form holds a NUL character, which is not allowed.');
  }
  return out;
}

const one = (v: string | string[] | undefined): string => (Array.isArray(v) ? (v[0] ?? '') : (v ?? ''));

/** A form number field: blank means "not given", anything else goes to the same validation as the API's JSON. */
function numberField(v: string | string[] | undefined): number | undefined {
  const t = one(v).trim();
  return t === '' ? undefined : Number(t);
}

/**
 * A rule form's filter fields, as the API's JSON would carry them: environments
 * comma-separated, a blank lowest level for all, the ticked channels (none: all). A
 * field the form did not show is left as it is.
 */
function ruleFilterFields(f: Record<string, string | string[]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (f.environments !== undefined)
    out.environments = one(f.environments)
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e !== '');
  if (f.min_level !== undefined) out.min_level = one(f.min_level) === '' ? null : one(f.min_level);
  if (f.channels_shown !== undefined) {
    const ticked = f.channels === undefined ? [] : Array.isArray(f.channels) ? f.channels : [f.channels];
    out.channels = ticked.map((v) => (/^[0-9]{1,15}$/.test(v) ? Number(v) : v));
  }
  return out;
}

/**
 * The dashboard as middleware for the app: requests to dashboard paths are
 * answered here (before the API's bearer-key check), the rest go on to the API.
 */
export function dashboard(deps: AppDeps, presence: UserPresence = new UserPresence(deps.store.db)): MiddlewareHandler {
  const app = dashboardApp(deps, presence);
  const basePath = publicBasePath(deps.config);
  return async (c, next) => {
    if (!isDashboardPath(c.req.path)) return next();
    const res = await app.fetch(c.req.raw, c.env);
    // Pages and redirects are written for the root; behind a proxy that strips
    // PUBLIC_URL's path, the browser must be sent under it.
    const isPage = (res.headers.get('content-type') ?? '').startsWith('text/html');
    const out = new Response(basePath !== '' && isPage ? underBasePath(await res.text(), basePath) : res.body, res);
    if (basePath !== '' && isPage) out.headers.delete('content-length');
    const location = out.headers.get('location');
    if (location) out.headers.set('location', locationUnderBasePath(location, basePath));
    // Headers set on the outer context before this point (the request id) belong on the answer too.
    const requestId = c.get('requestId') as string | undefined;
    if (requestId) out.headers.set(REQUEST_ID_HEADER, requestId);
    return out;
  };
}

export function dashboardApp(deps: AppDeps, presence: UserPresence = new UserPresence(deps.store.db)): Hono<Env> {
  const app = new Hono<Env>();
  const db = deps.store.db;
  const now = () => deps.clock.now();
  const keyDigests = apiKeyDigests(deps.config.apiKeys);
  const keyIds = (async () => (await keyDigests).map((d) => hexOf(d.subarray(0, 8))))();
  const signInThrottle = new SignInThrottle(deps.store, SIGN_IN_FAILURES, SIGN_IN_WINDOW_MS, deps.logger);
  /** Sign-in is on while API_KEYS is set or any user exists (the open-API rule). */
  const signInRequired = async () => deps.config.apiKeys.length > 0 || (await presence.exists());
  const sso = deps.config.oidc ? new SsoClient(deps.config.oidc, db) : null;

  /** The request's live session, or null: ended, expired, idle, its user disabled, or an API-key session once users exist. */
  async function currentSession(c: Context): Promise<Signed | null> {
    const id = getCookie(c, SESSION_COOKIE);
    if (!isSessionId(id)) return null;
    const row = await findSession(db, id, now());
    if (!row) return null;
    if (row.user_id !== null) {
      const user = await findUser(db, Number(row.user_id));
      if (!user || Number(user.disabled) === 1) return null;
      return { sessionId: id, row, actor: userActor(user), user };
    }
    if ((await presence.exists()) || !row.api_key_id || !(await keyIds).includes(row.api_key_id)) return null;
    return { sessionId: id, row, actor: apiKeyActor(row.api_key_id), user: null };
  }

  /** A new session for this browser (a new id at every sign-in) and its cookie. */
  async function startSession(c: Context, who: { userId: number | null; apiKeyId: string | null }): Promise<void> {
    const address = clientAddressOf(deps, c.req.raw, c.env);
    const id = await createSession(
      deps.store,
      { ...who, ip: address === 'unknown' ? null : address, userAgent: c.req.header('user-agent') ?? null },
      now(),
    );
    setCookie(c, SESSION_COOKIE, id, {
      httpOnly: true,
      sameSite: 'Strict',
      secure: secure(c),
      path: '/',
      maxAge: Math.floor(SESSION_TTL_MS / 1000),
    });
  }

  async function loginOptions(email?: string) {
    const users = await presence.exists();
    return { passwords: users, sso: sso !== null, setup: !users, email };
  }

  const base = (c: Context) => publicBaseUrl(c, deps.config);
  const secure = (c: Context) => base(c).startsWith('https:');
  const allowedOrigins = (c: Context) => [...new Set([new URL(c.req.url).origin, new URL(base(c)).origin])];

  function render(c: Context, body: Html, status: ContentfulStatusCode = 200): Response | Promise<Response> {
    return c.html(body, status);
  }

  function pageCtx(c: Context<Env>): PageContext {
    return c.get('page');
  }

  app.use(async (c, next) => {
    const started = performance.now();
    await next();
    // The time spent on the page, for the browser's developer tools and bench/dashboard.mjs.
    c.header('Server-Timing', `page;dur=${(performance.now() - started).toFixed(1)}`);
    // Downloads bring their own, stricter policy (a sandbox).
    if (!c.res.headers.has('Content-Security-Policy')) c.header('Content-Security-Policy', CSP);
    c.header('X-Content-Type-Options', 'nosniff');
    c.header('Referrer-Policy', 'same-origin');
    c.header('X-Frame-Options', 'DENY');
    if (!c.res.headers.has('Cache-Control')) c.header('Cache-Control', 'no-store');
  });

  const formLimit = bodyLimit({
    maxSize: 1024 * 1024,
    onError: (c) => c.text('request body too large (the limit is 1 MB)', 413),
  });
  // Symbol uploads stream into src/symbols, which enforces its own limits.
  app.use((c, next) => (isUploadPath(c.req.path) ? next() : formLimit(c, next)));

  app.get('/static/dashboard.css', (c) =>
    c.body(CSS, 200, { 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }),
  );
  app.get('/static/dashboard.js', (c) =>
    c.body(JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }),
  );
  app.get('/static/favicon.svg', (c) =>
    c.body(FAVICON_SVG, 200, { 'Content-Type': 'image/svg+xml', 'Cache-Control': 'public, max-age=86400' }),
  );

  app.get('/login', async (c) => {
    if (!(await signInRequired())) return c.redirect('/', 303);
    if (await currentSession(c)) return c.redirect(safeNext(c.req.query('next')), 303);
    return render(c, loginPage(safeNext(c.req.query('next')), undefined, await loginOptions()));
  });

  app.post('/login', async (c) => {
    if (!(await signInRequired())) return c.redirect('/', 303);
    // Sign-in has no session yet, so only the origin check guards it against cross-site posts.
    if (!sameOrigin(originHeaders(c), allowedOrigins(c))) return c.text('cross-site request refused', 403);
    const address = clientAddressOf(deps, c.req.raw, c.env);
    const users = await presence.exists();
    if (deps.config.rateLimit > 0) {
      const decision = await deps.rateLimiter.hit(`login:${address}`, now());
      if (!decision.allowed)
        return c.html(loginPage('/', 'Too many sign-in attempts; wait a minute.', await loginOptions()), 429, {
          'Retry-After': String(decision.retryAfterSeconds),
        });
    }
    const f = await form(c);
    const next = safeNext(one(f.next));
    const typedEmail = one(f.email).trim().toLowerCase().slice(0, 254);
    // Failures count per client address and per account: an email, or the instance's API keys as one account.
    const throttle = await signInThrottle.begin(address, users ? `user:${typedEmail}` : API_KEY_ACCOUNT, now());
    if (!throttle.allowed) {
      deps.logger.warn(
        { event: 'dashboard_sign_in_throttled', retry_after: throttle.retryAfterSeconds },
        'dashboard sign-in refused: too many failed attempts',
      );
      const minutes = Math.ceil(throttle.retryAfterSeconds / 60);
      return c.html(
        loginPage(
          next,
          `Too many failed sign-ins; try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`,
          await loginOptions(typedEmail),
        ),
        429,
        { 'Retry-After': String(throttle.retryAfterSeconds) },
      );
    }
    const ip = address === 'unknown' ? null : address;
    if (users) {
      let email = typedEmail;
      try {
        email = normaliseEmail(one(f.email));
      } catch {
        // Checked like any wrong password below (same answer, same time).
      }
      const user = await findUserByEmail(db, email);
      const usable = user && Number(user.disabled) === 0 ? user : undefined;
      const password = one(f.password);
      const { ok, rehash } = await verifyPassword(password, usable?.password_hash ?? null);
      if (!ok || !usable) {
        deps.logger.info({ event: 'dashboard_sign_in_refused' }, 'dashboard sign-in with a wrong email or password');
        await audit(deps, c, 'user.sign_in_failed', email);
        return render(c, loginPage(next, 'Wrong email or password.', await loginOptions(typedEmail)), 401);
      }
      await throttle.attempt.succeeded();
      await recordSignIn(deps.store, usable, now(), rehash ? await hashPassword(password) : null, {
        actor: usable.email,
        ip,
      });
      await startSession(c, { userId: Number(usable.id), apiKeyId: null });
      return c.redirect(next, 303);
    }
    const digest = await matchApiKeyDigest(keyDigests, one(f.key));
    if (!digest) {
      deps.logger.info({ event: 'dashboard_sign_in_refused' }, 'dashboard sign-in with a wrong API key');
      await audit(deps, c, 'api_key.sign_in_failed', null);
      return render(c, loginPage(next, 'That is not one of this server’s API keys.', await loginOptions()), 401);
    }
    await throttle.attempt.succeeded();
    const keyId = hexOf(digest.subarray(0, 8));
    await audit(deps, c, 'api_key.sign_in', null, { key: apiKeyActor(keyId).label });
    await startSession(c, { userId: null, apiKeyId: keyId });
    return c.redirect(next, 303);
  });

  // Single sign-on (src/accounts/oidc.ts): to the provider and back.
  app.get('/login/sso', async (c) => {
    if (!sso) throw new HttpError(404, 'Single sign-on is not configured on this server (OIDC_ISSUER).');
    return c.redirect(await sso.start(`${base(c)}/login/sso/callback`, safeNext(c.req.query('next')), now()), 303);
  });

  app.get('/login/sso/callback', async (c) => {
    if (!sso) throw new HttpError(404, 'Single sign-on is not configured on this server (OIDC_ISSUER).');
    const callback = new URL(`${base(c)}/login/sso/callback${new URL(c.req.url).search}`);
    const refused = async (why: string, status: ContentfulStatusCode) => {
      deps.logger.info({ event: 'sso_sign_in_refused', reason: why }, 'SSO sign-in refused');
      await audit(deps, c, 'user.sign_in_failed', null, { via: 'sso', reason: why });
      return c.html(loginPage('/', `SSO sign-in refused: ${why}.`, await loginOptions()), status);
    };
    let result: Awaited<ReturnType<SsoClient['finish']>>;
    try {
      result = await sso.finish(callback, now());
    } catch (err) {
      if (err instanceof SsoRefusal) return refused(err.message, 400);
      throw err;
    }
    const { identity } = result;
    const address = clientAddressOf(deps, c.req.raw, c.env);
    const ip = address === 'unknown' ? null : address;
    let user = await findUserByEmail(db, identity.email);
    if (user && Number(user.disabled) === 1) return refused(`${identity.email} is disabled here`, 403);
    const role = ssoRole(identity, user ? (user.role as Role) : null, sso.settings.defaultRole);
    if (!user) {
      // A first SSO sign-in creates the user; an existing one with that email is the same person.
      user = await createUser(
        deps.store,
        {
          email: identity.email,
          name: identity.name ?? identity.email.slice(0, identity.email.indexOf('@')),
          role,
          passwordHash: null,
        },
        now(),
        {
          actor: 'system',
          ip,
          details: { via: 'sso' },
        },
      );
    } else if (role !== user.role) {
      user = await updateUser(deps.store, user, { role }, now(), {
        actor: 'system',
        ip,
        details: { via: 'sso', groups: 'admin' },
      });
    }
    await recordSignIn(deps.store, user, now(), null, { actor: user.email, ip, details: { via: 'sso' } });
    await startSession(c, { userId: Number(user.id), apiKeyId: null });
    // A page, not a redirect: the browser came from the provider's site, and a SameSite=Strict
    // cookie is not sent along a redirect chain that started there; this page's own
    // navigation is same-site.
    return render(c, continuePage(safeNext(result.next)));
  });

  // The first admin: only while no user exists, with the setup token `serve` logs.
  app.get('/login/setup', async (c) => {
    if (await presence.exists()) return c.redirect('/login', 303);
    return render(c, setupPage());
  });

  app.post('/login/setup', async (c) => {
    if (await presence.exists()) return c.redirect('/login', 303);
    if (!sameOrigin(originHeaders(c), allowedOrigins(c))) return c.text('cross-site request refused', 403);
    const address = clientAddressOf(deps, c.req.raw, c.env);
    const f = await form(c);
    const entered = { email: one(f.email), name: one(f.name) };
    const throttle = await signInThrottle.begin(address, 'setup', now());
    if (!throttle.allowed)
      return c.html(setupPage('Too many wrong setup tokens; try again later.', entered), 429, {
        'Retry-After': String(throttle.retryAfterSeconds),
      });
    if (!(await setupTokenValid(db, one(f.setup_token).trim()))) {
      await audit(deps, c, 'setup.failed', null);
      return render(
        c,
        setupPage(
          'That is not the setup token (it is in the server’s log, and works only while no user exists).',
          entered,
        ),
        401,
      );
    }
    await throttle.attempt.succeeded();
    let user: UserRow;
    try {
      const input = parseUserCreate({
        email: entered.email,
        name: entered.name || undefined,
        role: 'admin',
        password: one(f.password),
      });
      user = await createUser(deps.store, { ...input, passwordHash: await hashPassword(input.password ?? '') }, now(), {
        actor: 'system',
        ip: address === 'unknown' ? null : address,
        details: { via: 'setup' },
      });
    } catch (err) {
      if (err instanceof AccountInputError)
        return render(c, setupPage(err.message, entered), err.status as ContentfulStatusCode);
      throw err;
    }
    await startSession(c, { userId: Number(user.id), apiKeyId: null });
    return c.redirect('/', 303);
  });

  app.get('/login/invite/:token', async (c) => {
    const user = await findInvite(db, c.req.param('token'), now());
    if (!user)
      return c.html(
        errorPage(
          ctxOrAnonymous(c),
          410,
          'This invite link is not valid: it has expired or was used. Ask an admin for a new one.',
        ),
        410,
      );
    return render(c, invitePage(c.req.param('token'), user.email));
  });

  app.post('/login/invite/:token', async (c) => {
    if (!sameOrigin(originHeaders(c), allowedOrigins(c))) return c.text('cross-site request refused', 403);
    const token = c.req.param('token');
    const user = await findInvite(db, token, now());
    if (!user)
      return c.html(
        errorPage(
          ctxOrAnonymous(c),
          410,
          'This invite link is not valid: it has expired or was used. Ask an admin for a new one.',
        ),
        410,
      );
    const f = await form(c);
    let password: string;
    try {
      password = checkPassword(one(f.password));
    } catch (err) {
      if (err instanceof AccountInputError) return render(c, invitePage(token, user.email, err.message), 400);
      throw err;
    }
    const address = clientAddressOf(deps, c.req.raw, c.env);
    await acceptInvite(deps.store, user, await hashPassword(password), now(), address === 'unknown' ? null : address);
    await startSession(c, { userId: Number(user.id), apiKeyId: null });
    return c.redirect('/', 303);
  });

  // Everything below needs a session (when sign-in is on) and, for POSTs, a valid CSRF token from this origin.
  app.use(async (c, next) => {
    let csrf: string;
    let actor: Actor = SYSTEM_ACTOR;
    const required = await signInRequired();
    if (required) {
      const signed = await currentSession(c);
      if (!signed) {
        if (c.req.method === 'GET' || c.req.method === 'HEAD')
          return c.redirect(href('/login', { next: c.req.path === '/' ? undefined : pathWithQuery(c) }), 303);
        const referer = c.req.header('referer');
        const back = referer
          ? pathWithoutBasePath(new URL(referer, c.req.url).pathname, publicBasePath(deps.config))
          : '/';
        return c.html(loginPage(safeNext(back), 'Sign in first.', await loginOptions()), 401);
      }
      csrf = await csrfTokenOf(signed.sessionId);
      actor = signed.actor;
      c.set('signed', signed);
    } else {
      csrf = getCookie(c, CSRF_COOKIE) ?? '';
      if (!/^[A-Za-z0-9_-]{32}$/.test(csrf)) {
        csrf = randomToken();
        setCookie(c, CSRF_COOKIE, csrf, { httpOnly: true, sameSite: 'Strict', secure: secure(c), path: '/' });
      }
    }
    setRequestActor(c, actor);
    // A size-capped database (D1) nearing its cap says so on every page (src/store/capacity.ts).
    const capacity = await storeCapacity(deps.store, deps.config.d1MaxSizeMb);
    c.set('page', {
      csrf,
      signedIn: required,
      now: now(),
      actor: required ? actor : undefined,
      warning: capacity?.warning ?? undefined,
    });
    if (c.req.method === 'POST') {
      const refused = (why: string) =>
        c.html(errorPage(c.get('page'), 403, `${why}; reload the page and try again.`), 403);
      if (!sameOrigin(originHeaders(c), allowedOrigins(c))) return refused('This form was sent from another site');
      // A multipart upload carries the token in the form's URL, so its body is never buffered here.
      const multipart = (c.req.header('content-type') ?? '').toLowerCase().startsWith('multipart/form-data');
      const token = c.req.header('x-csrf-token') ?? (multipart ? c.req.query('_csrf') : one((await form(c))._csrf));
      if (!token || !sameToken(token, csrf)) return refused('This form’s security token is missing or out of date');
    }
    const roleProblem = roleRefusal(actor.role, dashboardRouteRole(c.req.method, c.req.path), 'This page or action');
    if (roleProblem)
      return c.html(
        errorPage(c.get('page'), 403, `${roleProblem}; you are signed in as ${actor.label} (${actor.role}).`),
        403,
      );
    return next();
  });

  app.post('/logout', async (c) => {
    const signed = c.get('signed');
    if (signed) {
      await deleteSession(db, signed.sessionId);
      await audit(deps, c, signed.user ? 'user.sign_out' : 'api_key.sign_out', signed.user?.email ?? null);
    }
    deleteCookie(c, SESSION_COOKIE, { path: '/', secure: secure(c) });
    return c.redirect('/login', 303);
  });

  // Your account: password, sessions, personal tokens.
  async function accountData(c: Context<Env>) {
    const signed = c.get('signed');
    const user = signed?.user ?? null;
    if (!signed || !user) return { user: null, sessions: [], tokens: [] };
    const currentHash = await secretHashOf(signed.sessionId);
    const sessions = (await listSessions(db, Number(user.id), now())).map((r) => ({
      current: r.id_hash === currentHash,
      created_at: new Date(Number(r.created_at)).toISOString(),
      last_seen_at: new Date(Number(r.last_seen_at)).toISOString(),
      ip: r.ip,
      user_agent: r.user_agent,
    }));
    return { user: userJson(user), sessions, tokens: (await listTokens(db, Number(user.id))).map(tokenJson) };
  }

  async function renderAccount(
    c: Context<Env>,
    o: { message?: string; error?: string; newToken?: string } = {},
    status: ContentfulStatusCode = 200,
  ) {
    const d = await accountData(c);
    return render(c, accountPage(pageCtx(c), d.user, d.sessions, d.tokens, o), status);
  }

  function signedUser(c: Context<Env>): UserRow {
    const user = c.get('signed')?.user;
    if (!user) throw new HttpError(400, 'An API-key sign-in has no account of its own; sign in as a user.');
    return user;
  }

  app.get('/settings', async (c) => {
    const q = c.req.query();
    return renderAccount(c, {
      message: q.password
        ? 'Password changed; your other sessions have ended.'
        : q.deleted
          ? 'Token deleted.'
          : undefined,
    });
  });

  app.post('/settings/password', async (c) => {
    const user = signedUser(c);
    const f = await form(c);
    let password: string;
    try {
      password = checkPassword(one(f.password));
    } catch (err) {
      if (err instanceof AccountInputError) return renderAccount(c, { error: err.message }, 400);
      throw err;
    }
    await updateUser(deps.store, user, { passwordHash: await hashPassword(password) }, now(), auditFrom(deps, c));
    // Every session ended with the change; this browser gets a new one.
    await startSession(c, { userId: Number(user.id), apiKeyId: null });
    return c.redirect('/settings?password=1', 303);
  });

  app.post('/settings/end-sessions', async (c) => {
    await endSessions(deps.store, signedUser(c), now(), auditFrom(deps, c));
    deleteCookie(c, SESSION_COOKIE, { path: '/', secure: secure(c) });
    return c.redirect('/login', 303);
  });

  app.post('/settings/tokens', async (c) => {
    const user = signedUser(c);
    const f = await form(c);
    const name = one(f.name).trim();
    const date = one(f.expires_at).trim();
    if (name === '' || name.length > 200)
      return renderAccount(c, { error: 'A token needs a name of at most 200 characters.' }, 400);
    let expiresAt: number | null = null;
    if (date !== '') {
      expiresAt = /^\d{4}-\d{2}-\d{2}$/.test(date) ? Date.parse(`${date}T00:00:00Z`) : Number.NaN;
      if (!Number.isFinite(expiresAt) || expiresAt <= now())
        return renderAccount(c, { error: 'The expiry must be a date in the future.' }, 400);
    }
    const { token } = await createToken(deps.store, user, name, expiresAt, now(), auditFrom(deps, c));
    return renderAccount(c, { newToken: token }, 201);
  });

  app.post('/settings/tokens/:id/delete', async (c) => {
    const user = signedUser(c);
    const raw = c.req.param('id');
    const token = /^[0-9]{1,15}$/.test(raw) ? await findToken(db, Number(raw)) : undefined;
    if (!token || Number(token.user_id) !== Number(user.id))
      throw new HttpError(404, `There is no token ${raw} of yours.`);
    await deleteToken(deps.store, token, user.email, now(), auditFrom(deps, c));
    return c.redirect('/settings?deleted=1', 303);
  });

  // Admin: users and the audit log.
  async function renderUsers(
    c: Context<Env>,
    o: { message?: string; error?: string; inviteUrl?: string } = {},
    status: ContentfulStatusCode = 200,
  ) {
    return render(c, usersPage(pageCtx(c), (await listUsers(db)).map(userJson), o), status);
  }

  async function userOr404(c: Context<Env>): Promise<UserRow> {
    const raw = c.req.param('id') ?? '';
    const user = /^[0-9]{1,15}$/.test(raw) ? await findUser(db, Number(raw)) : undefined;
    if (!user) throw new HttpError(404, `There is no user ${raw}.`);
    return user;
  }

  app.get('/admin/users', async (c) => {
    const q = c.req.query();
    return renderUsers(c, {
      message: q.saved
        ? 'User saved.'
        : q.ended
          ? 'Their sessions have ended.'
          : q.deleted
            ? 'User deleted.'
            : undefined,
    });
  });

  app.post('/admin/users', async (c) => {
    const f = await form(c);
    try {
      const input = parseUserCreate({
        email: one(f.email),
        name: one(f.name) || undefined,
        role: one(f.role) || undefined,
      });
      const user = await createUser(deps.store, { ...input, passwordHash: null }, now(), {
        ...auditFrom(deps, c),
        details: { invited: true },
      });
      const invite = await createInvite(db, Number(user.id), now());
      return renderUsers(
        c,
        { message: `User ${user.email} created.`, inviteUrl: `${base(c)}/login/invite/${invite.token}` },
        201,
      );
    } catch (err) {
      if (err instanceof AccountInputError)
        return renderUsers(c, { error: err.message }, err.status as ContentfulStatusCode);
      throw err;
    }
  });

  app.post('/admin/users/:id', async (c) => {
    const user = await userOr404(c);
    const f = await form(c);
    try {
      const patch: { role?: ReturnType<typeof parseRole>; disabled?: boolean } = {};
      if (f.role !== undefined) patch.role = parseRole(one(f.role));
      if (f.disabled !== undefined) patch.disabled = one(f.disabled) === 'true';
      await updateUser(deps.store, user, patch, now(), auditFrom(deps, c));
    } catch (err) {
      if (err instanceof AccountInputError)
        return renderUsers(c, { error: err.message }, err.status as ContentfulStatusCode);
      throw err;
    }
    return c.redirect('/admin/users?saved=1', 303);
  });

  app.post('/admin/users/:id/end-sessions', async (c) => {
    await endSessions(deps.store, await userOr404(c), now(), auditFrom(deps, c));
    return c.redirect('/admin/users?ended=1', 303);
  });

  app.post('/admin/users/:id/delete', async (c) => {
    try {
      await deleteUser(deps.store, await userOr404(c), now(), auditFrom(deps, c));
    } catch (err) {
      if (err instanceof AccountInputError)
        return renderUsers(c, { error: err.message }, err.status as ContentfulStatusCode);
      throw err;
    }
    return c.redirect('/admin/users?deleted=1', 303);
  });

  app.get('/admin/audit', async (c) => {
    const q = nonEmpty(c.req.query());
    const before = q.before !== undefined && /^[0-9]{1,15}$/.test(q.before) ? Number(q.before) : undefined;
    const rows = await listAudit(db, { before, limit: 101, actor: q.actor, action: q.action, target: q.target });
    const pageRows = rows.slice(0, 100);
    const filters = { actor: q.actor ?? '', action: q.action ?? '', target: q.target ?? '' };
    return render(
      c,
      auditPage(
        pageCtx(c),
        pageRows.map(auditJson),
        filters,
        rows.length > 100 ? Number(pageRows[pageRows.length - 1].id) : null,
      ),
    );
  });

  async function projectOr404(c: Context<Env>): Promise<ProjectRow> {
    const slug = c.req.param('slug') ?? '';
    const project = await findProjectBySlug(db, slug);
    if (!project) throw new HttpError(404, `There is no project "${slug}".`);
    return project;
  }

  const views = (c: Context, p: ProjectRow) => projectJson(p, base(c));

  app.get('/', async (c) => {
    const projects = (await listProjects(db)).map((p) => views(c, p));
    const deleted = c.req.query('deleted');
    return render(
      c,
      projectListPage(
        pageCtx(c),
        projects,
        {},
        undefined,
        deleted && SLUG_PATTERN.test(deleted) ? `Project "${deleted}" was deleted.` : undefined,
      ),
    );
  });

  app.post('/new', async (c) => {
    const f = await form(c);
    const input = {
      slug: one(f.slug).trim(),
      name: one(f.name).trim() || undefined,
      platform: one(f.platform) || undefined,
    };
    const projects = async () => (await listProjects(db)).map((p) => views(c, p));
    const parsed = createSchema.safeParse(input);
    if (!parsed.success)
      return render(
        c,
        projectListPage(
          pageCtx(c),
          await projects(),
          { ...input, name: input.name ?? '' } as Record<string, string>,
          zodMessage(parsed.error),
        ),
        400,
      );
    try {
      const project = await createProject(db, withDefaults(parsed.data), now(), PROJECT_CREATED);
      deps.logger.info({ project: project.slug, project_id: project.id }, 'project created');
      await audit(deps, c, 'project.create', project.slug);
      return c.redirect(`${projectPath(project.slug, 'settings')}?created=1`, 303);
    } catch (err) {
      if (err instanceof SlugTakenError)
        return render(
          c,
          projectListPage(pageCtx(c), await projects(), input as Record<string, string>, err.message),
          409,
        );
      throw err;
    }
  });

  /** The page context, with the set-up card when the project has received nothing yet. */
  const projectCtx = async (c: Context, p: ProjectRow): Promise<{ ctx: PageContext; empty: boolean }> => {
    const empty = await projectIsEmpty(db, p.id);
    return {
      ctx: empty ? { ...pageCtx(c), notice: setupCard({ dsn: views(c, p).dsn, platform: p.platform }) } : pageCtx(c),
      empty,
    };
  };

  app.get('/:slug', async (c) => {
    const p = await projectOr404(c);
    const q = nonEmpty(c.req.query());
    const [o, { ctx, empty }] = await Promise.all([overview(db, p.id, q, now()), projectCtx(c, p)]);
    return render(c, overviewPage(ctx, p, q, o, empty));
  });

  app.get('/:slug/issues', async (c) => {
    const p = await projectOr404(c);
    const { updated, updated_to: updatedTo, ...q } = nonEmpty(c.req.query());
    const parsed = parseIssueListQuery(q, now());
    const [list, { ctx }] = await Promise.all([
      listIssues(db, p.id, parsed, now(), actorOf(c).userId),
      projectCtx(c, p),
    ]);
    const message =
      updated !== undefined && /^[0-9]{1,6}$/.test(updated) && isIssueStatus(updatedTo)
        ? `${updated} issue${updated === '1' ? '' : 's'} set to ${updatedTo}.`
        : undefined;
    return render(c, issueListPage(ctx, p, q, list, parsed.limit, message));
  });

  app.post('/:slug/issues/bulk', async (c) => {
    const p = await projectOr404(c);
    const f = await form(c);
    const fingerprints = Array.isArray(f.fingerprints) ? f.fingerprints : f.fingerprints ? [f.fingerprints] : [];
    const { status, snooze } = parseBulkBody({ fingerprints, status: one(f.status) }, now());
    const result = await bulkSetStatus(deps.store, p.id, fingerprints, { status, snooze }, now(), actorOf(c));
    await audit(deps, c, 'issue.bulk_status', p.slug, { status, fingerprints });
    const list = projectPath(p.slug, 'issues');
    const back = safeNext(one(f.back), list);
    const target = back === list || back.startsWith(`${list}?`) ? back : list;
    const url = new URL(target, 'http://x');
    url.searchParams.set('updated', String(result.updated));
    if (status !== null) url.searchParams.set('updated_to', status);
    return c.redirect(url.pathname + url.search, 303);
  });

  app.get('/:slug/issues/:fingerprint', async (c) => {
    const p = await projectOr404(c);
    const fingerprint = c.req.param('fingerprint');
    const { set, ...q } = nonEmpty(c.req.query());
    const found = await findIssue(db, p.id, fingerprint);
    // A merged issue's page is the page of the issue it was merged into (links sent before the merge).
    if (found.mergedInto !== undefined)
      return c.redirect(href(projectPath(p.slug, 'issues', found.mergedInto), { ...q, set }), 302);
    const issueId = Number(found.row.id);
    // Everything but the shown event's neighbours and files is known from the issue row:
    // read together (on PostgreSQL, each on a connection of the pool).
    const eventOf = (id: string) => eventDetail(db, p.id, id, deps.decompressBlob, deps.blobs);
    const [issue, asked, recent, activity, feedback] = await Promise.all([
      issueDetail(db, p.id, fingerprint, q, now(), { found }),
      q.event !== undefined ? eventOf(q.event) : null,
      listEvents(db, p.id, parseEventListQuery({ fingerprint: found.row.fingerprint, limit: '10' }, now())),
      listActivity(db, issueId),
      listFeedback(db, p.id, { issueId, limit: 20 }),
    ]);
    const event: EventDetail | null =
      asked ?? (issue.latest_event_id !== null ? await eventOf(String(issue.latest_event_id)) : null);
    if (event && event.fingerprint !== issue.fingerprint)
      throw new HttpError(404, `Event ${q.event} does not belong to this issue.`);
    const [older, files] = await Promise.all([
      event
        ? listEvents(
            db,
            p.id,
            parseEventListQuery({ fingerprint: issue.fingerprint, before: String(event.id), limit: '1' }, now()),
          )
        : null,
      event ? eventFiles(db, p.id, event.event_id, attachmentBlobsOf(deps.blobs)) : [],
    ]);
    const message = isIssueStatus(set)
      ? `Status set to ${set}.`
      : set === 'comment'
        ? 'Comment added.'
        : set === 'uncomment'
          ? 'Comment deleted.'
          : set === 'assigned'
            ? 'Assigned.'
            : set === 'unassigned'
              ? 'Unassigned.'
              : undefined;
    // A newer event is known when the shown one is among the newest few listed on the page.
    const at = event ? recent.events.findIndex((e) => e.id === event.id) : -1;
    const newer = at > 0 ? recent.events[at - 1].id : null;
    return render(
      c,
      issuePage(
        pageCtx(c),
        p,
        issue,
        q,
        event,
        recent.events,
        { older: older?.events[0]?.id ?? null, newer },
        message,
        files,
        activity,
        feedback.feedback,
      ),
    );
  });

  app.post('/:slug/issues/:fingerprint/status', async (c) => {
    const p = await projectOr404(c);
    const fingerprint = c.req.param('fingerprint');
    const f = await form(c);
    const { status, snooze } = parseBulkBody(
      { fingerprints: [], status: one(f.status), ...snoozeFields(one(f.snooze), now()) },
      now(),
    );
    await setIssueStatus(deps.store, p.id, fingerprint, { status, snooze }, now(), actorOf(c));
    await audit(deps, c, 'issue.status', `${p.slug}/${fingerprint}`, { status });
    return c.redirect(href(projectPath(p.slug, 'issues', fingerprint), { set: status }), 303);
  });

  app.post('/:slug/issues/:fingerprint/assign', async (c) => {
    const p = await projectOr404(c);
    const fingerprint = c.req.param('fingerprint');
    const email = one((await form(c)).assignee)?.trim() ?? '';
    const change = parseStatusBody({ assignee: email === '' ? null : email }, now());
    const issue = await setIssueStatus(deps.store, p.id, fingerprint, change, now(), actorOf(c));
    return c.redirect(
      href(projectPath(p.slug, 'issues', issue.fingerprint), { set: issue.assignee ? 'assigned' : 'unassigned' }),
      303,
    );
  });

  app.post('/:slug/issues/:fingerprint/comments', async (c) => {
    const p = await projectOr404(c);
    const { row } = await findIssue(db, p.id, c.req.param('fingerprint'));
    const text = parseCommentBody({ text: one((await form(c)).text) });
    await addComment(deps.store, p.id, { id: Number(row.id), last_release: row.last_release }, text, actorOf(c), now());
    return c.redirect(`${href(projectPath(p.slug, 'issues', row.fingerprint), { set: 'comment' })}#activity`, 303);
  });

  app.post('/:slug/issues/:fingerprint/comments/:id/delete', async (c) => {
    const p = await projectOr404(c);
    const { row } = await findIssue(db, p.id, c.req.param('fingerprint'));
    try {
      await deleteComment(deps.store, Number(row.id), c.req.param('id'), actorOf(c));
    } catch (err) {
      if (err instanceof ForbiddenError) throw new HttpError(403, err.message);
      throw err;
    }
    return c.redirect(`${href(projectPath(p.slug, 'issues', row.fingerprint), { set: 'uncomment' })}#activity`, 303);
  });

  app.get('/:slug/events', async (c) => {
    const p = await projectOr404(c);
    const q = nonEmpty(c.req.query());
    const [list, { ctx }] = await Promise.all([
      listEvents(db, p.id, parseEventListQuery(eventListQuery(q), now())),
      projectCtx(c, p),
    ]);
    return render(c, eventListPage(ctx, p, q, list));
  });

  app.get('/:slug/events/:id', async (c) => {
    const p = await projectOr404(c);
    const row = await findEvent(db, p.id, c.req.param('id'));
    // The files are read beside the detail (its payload and neighbours), not after it.
    const [event, files] = await Promise.all([
      eventDetailOf(db, row, deps.decompressBlob, deps.blobs),
      eventFiles(db, p.id, row.event_id, attachmentBlobsOf(deps.blobs)),
    ]);
    return render(c, eventPage(pageCtx(c), p, event, files));
  });

  // Attachment downloads (docs/api.md "Attachments"): always `attachment`, except the
  // image route, which serves a file inline only when its bytes are a raster image.
  const attachmentOr404 = async (c: Context<Env>) => {
    const p = await projectOr404(c);
    const row = await getAttachment(db, p.id, c.req.param('aid') ?? '');
    if (!row) throw new HttpError(404, 'There is no such attachment in this project.');
    return row;
  };
  app.get('/:slug/attachments/:aid', async (c) =>
    attachmentDownload(deps.store, await attachmentOr404(c), false, attachmentBlobsOf(deps.blobs)),
  );
  app.get('/:slug/attachments/:aid/image', async (c) =>
    attachmentDownload(deps.store, await attachmentOr404(c), true, attachmentBlobsOf(deps.blobs)),
  );

  app.get('/:slug/feedback', async (c) => {
    const p = await projectOr404(c);
    const cursor = c.req.query('cursor');
    if (cursor !== undefined && !/^[0-9]{1,15}$/.test(cursor))
      throw new HttpError(400, 'That page of feedback does not exist.');
    return render(
      c,
      feedbackPage(
        pageCtx(c),
        p,
        await listFeedback(db, p.id, { limit: 50, before: cursor === undefined ? undefined : Number(cursor) }),
        cursor,
      ),
    );
  });

  app.get('/:slug/releases', async (c) => {
    const p = await projectOr404(c);
    const q = nonEmpty(c.req.query());
    const [list, { ctx }] = await Promise.all([listReleases(db, p.id, q, now()), projectCtx(c, p)]);
    return render(c, releaseListPage(ctx, p, q, list.releases));
  });

  app.get('/:slug/releases/:version{.+}', async (c) => {
    const p = await projectOr404(c);
    const q = nonEmpty(c.req.query());
    return render(
      c,
      releasePage(
        pageCtx(c),
        p,
        q,
        await releaseDetail(db, p.id, c.req.param('version'), q, now(), RELEASE_PAGE_ISSUES + 1),
      ),
    );
  });

  app.get('/:slug/settings', async (c) => {
    const p = await projectOr404(c);
    const q = c.req.query();
    const message = q.created
      ? 'Project created. Give this DSN to your app’s Sentry SDK.'
      : q.rotated
        ? 'A new key was made; the old DSN no longer works.'
        : q.saved
          ? 'Settings saved.'
          : undefined;
    return render(c, settingsPage(pageCtx(c), views(c, p), { message, usage: await projectUsage(db, p, now()) }));
  });

  app.post('/:slug/settings', async (c) => {
    const p = await projectOr404(c);
    const f = await form(c);
    const input = {
      name: one(f.name),
      platform: one(f.platform) || undefined,
      sample_keep_first: numberField(f.sample_keep_first),
      sample_rate: numberField(f.sample_rate),
      daily_quota: numberField(f.daily_quota),
    };
    const parsed = patchSchema.safeParse(input);
    if (!parsed.success) {
      const entered = Object.fromEntries(Object.entries(f).map(([k, v]) => [k, one(v)]));
      return render(c, settingsPage(pageCtx(c), views(c, p), { error: zodMessage(parsed.error), form: entered }), 400);
    }
    const updated = await updateProject(db, p.id, { ...parsed.data, ...privacyColumns(parsed.data) });
    if (!updated) throw new HttpError(404, `There is no project "${p.slug}".`);
    return c.redirect(`${projectPath(p.slug, 'settings')}?saved=1`, 303);
  });

  app.post('/:slug/privacy', async (c) => {
    const p = await projectOr404(c);
    const f = await form(c);
    const lines = (v: string | string[] | undefined) =>
      one(v)
        .split(/[\r\n,]+/)
        .map((x) => x.trim())
        .filter((x) => x !== '');
    const input = {
      scrub_defaults: one(f.scrub_defaults) === '1',
      scrub_ip_addresses: one(f.scrub_ip_addresses) === '1',
      scrub_fields: lines(f.scrub_fields),
      safe_fields: lines(f.safe_fields),
      storage_budget_mb: numberField(f.storage_budget_mb),
    };
    const parsed = patchSchema.safeParse(input);
    if (!parsed.success) {
      const entered = Object.fromEntries(Object.entries(f).map(([k, v]) => [k, one(v)]));
      return render(c, settingsPage(pageCtx(c), views(c, p), { error: zodMessage(parsed.error), form: entered }), 400);
    }
    const updated = await updateProject(db, p.id, privacyColumns(parsed.data));
    if (!updated) throw new HttpError(404, `There is no project "${p.slug}".`);
    await audit(deps, c, 'project.update', p.slug, parsed.data as Record<string, unknown>);
    return c.redirect(`${projectPath(p.slug, 'settings')}?saved=1`, 303);
  });

  app.post('/:slug/rotate-key', async (c) => {
    const p = await projectOr404(c);
    if (!(await rotateProjectKey(db, p.id))) throw new HttpError(404, `There is no project "${p.slug}".`);
    deps.logger.info({ project: p.slug, project_id: p.id }, 'project DSN key rotated (dashboard)');
    await audit(deps, c, 'project.rotate_key', p.slug);
    return c.redirect(`${projectPath(p.slug, 'settings')}?rotated=1`, 303);
  });

  app.post('/:slug/delete', async (c) => {
    const p = await projectOr404(c);
    if (one((await form(c)).confirm).trim() !== p.slug) {
      return render(
        c,
        settingsPage(pageCtx(c), views(c, p), { error: `Type the slug "${p.slug}" exactly to delete the project.` }),
        400,
      );
    }
    await deleteProject(db, p.id, deps.blobs);
    deps.logger.info({ project: p.slug, project_id: p.id }, 'project deleted (dashboard)');
    await audit(deps, c, 'project.delete', p.slug);
    return c.redirect(href('/', { deleted: p.slug }), 303);
  });

  // Alerts: rules, channels (add, send a test, delete) and deliveries, through src/alerts as the alerts API.
  const alertRuntime = deps.alertRuntime ?? webAlertRuntime;

  async function alertsData(projectId: number) {
    const [rules, channels, deliveries] = await Promise.all([
      listRules(db, projectId),
      listChannels(db, projectId),
      listDeliveries(db, projectId),
    ]);
    return { rules, channels: channels.map(channelJson), deliveries };
  }

  app.get('/:slug/alerts', async (c) => {
    const p = await projectOr404(c);
    const q = c.req.query();
    const tested =
      q.test === 'delivered' || q.test === 'failed'
        ? `The test alert ${q.test === 'delivered' ? 'was delivered' : 'was not delivered (the error is in the deliveries below)'}${/^[0-9]{3}$/.test(q.status ?? '') ? ` (HTTP ${q.status})` : ''}.`
        : undefined;
    const message =
      tested ?? (q.added ? 'Channel added.' : q.deleted ? 'Channel deleted.' : q.saved ? 'Rule saved.' : undefined);
    return render(c, alertsPage(pageCtx(c), p, await alertsData(p.id), { message }));
  });

  app.post('/:slug/alerts/rules/:type', async (c) => {
    const p = await projectOr404(c);
    const type = c.req.param('type');
    if (!isAlertType(type))
      throw new HttpError(404, `There is no alert type "${type}" (types are ${ALERT_TYPES.join(', ')}).`);
    const f = await form(c);
    try {
      const patch = parseRulePatch({
        enabled: one(f.enabled) === 'true',
        cooldown_minutes: numberField(f.cooldown_minutes),
        ...ruleFilterFields(f),
      });
      await updateRule(db, p.id, type, patch);
      await audit(deps, c, 'alert_rule.update', `${p.slug}/${type}`, patch as unknown as Record<string, unknown>);
    } catch (err) {
      if (err instanceof AlertInputError)
        return render(c, alertsPage(pageCtx(c), p, await alertsData(p.id), { error: err.message }), 400);
      throw err;
    }
    return c.redirect(`${projectPath(p.slug, 'alerts')}?saved=1`, 303);
  });

  app.post('/:slug/alerts/channels', async (c) => {
    const p = await projectOr404(c);
    const f = Object.fromEntries(Object.entries(await form(c)).map(([k, v]) => [k, one(v).trim()]));
    const chat = f.chat_id ?? '';
    const body =
      f.kind === 'telegram'
        ? { kind: 'telegram', config: { chat_id: /^-?[0-9]{1,16}$/.test(chat) ? Number(chat) : chat } }
        : f.kind === 'email'
          ? { kind: 'email', config: { to: (f.to ?? '').split(/[\s,;]+/).filter((a) => a !== '') } }
          : f.kind === 'webhook'
            ? { kind: f.kind, config: { url: f.url ?? '', ...(f.secret ? { secret: f.secret } : {}) } }
            : { kind: f.kind, config: { url: f.url ?? '' } };
    try {
      const channel = await addChannel(db, p.id, body, deps.config, alertRuntime, now());
      deps.logger.info(
        { project: p.slug, channel_id: Number(channel.id), kind: channel.kind },
        'alert channel created (dashboard)',
      );
      await audit(deps, c, 'alert_channel.create', p.slug, { id: Number(channel.id), kind: channel.kind });
    } catch (err) {
      if (err instanceof AlertInputError) {
        const { secret: _secret, ...entered } = f;
        return render(c, alertsPage(pageCtx(c), p, await alertsData(p.id), { error: err.message, form: entered }), 400);
      }
      throw err;
    }
    return c.redirect(`${projectPath(p.slug, 'alerts')}?added=1`, 303);
  });

  async function channelOr404(c: Context<Env>, projectId: number) {
    const raw = c.req.param('id') ?? '';
    const channel = /^[0-9]{1,15}$/.test(raw) ? await findChannel(db, projectId, Number(raw)) : undefined;
    if (!channel) throw new HttpError(404, `There is no alert channel ${raw} in this project.`);
    return channel;
  }

  app.post('/:slug/alerts/channels/:id/test', async (c) => {
    const p = await projectOr404(c);
    const channel = await channelOr404(c, p.id);
    const result = await sendTestAlert(db, p, channel, deps.config, alertRuntime, deps.clock);
    return c.redirect(
      href(projectPath(p.slug, 'alerts'), { test: result.delivered ? 'delivered' : 'failed', status: result.status }),
      303,
    );
  });

  app.post('/:slug/alerts/channels/:id/delete', async (c) => {
    const p = await projectOr404(c);
    const channel = await channelOr404(c, p.id);
    await deleteChannel(deps.store, p.id, Number(channel.id));
    deps.logger.info({ project: p.slug, channel_id: Number(channel.id) }, 'alert channel deleted (dashboard)');
    await audit(deps, c, 'alert_channel.delete', p.slug, { id: Number(channel.id) });
    return c.redirect(`${projectPath(p.slug, 'alerts')}?deleted=1`, 303);
  });

  // Cron monitors: the list with status strips, one monitor's check-ins.
  app.get('/:slug/monitors', async (c) => {
    const p = await projectOr404(c);
    const monitors = await listMonitors(db, p.id);
    const checkins = await recentCheckinsOf(
      db,
      monitors.map((m) => m.id),
      30,
    );
    return render(
      c,
      monitorListPage(
        pageCtx(c),
        p,
        monitors.map((m) => ({ monitor: monitorJson(m), checkins: (checkins.get(m.id) ?? []).map(checkinJson) })),
      ),
    );
  });

  app.get('/:slug/monitors/:monitor', async (c) => {
    const p = await projectOr404(c);
    const m = await findMonitor(db, p.id, c.req.param('monitor'));
    if (!m) throw new HttpError(404, `There is no monitor "${c.req.param('monitor')}" in this project.`);
    return render(c, monitorPage(pageCtx(c), p, monitorJson(m), (await recentCheckins(db, m.id)).map(checkinJson)));
  });

  // Symbols: list, upload (streamed through the symbols API's reader), delete.
  app.get('/:slug/symbols', async (c) => {
    const p = await projectOr404(c);
    const q = c.req.query();
    const message =
      q.uploaded && /^[0-9]{1,4}$/.test(q.uploaded)
        ? `${q.uploaded} file${q.uploaded === '1' ? '' : 's'} uploaded.`
        : q.deleted
          ? 'Symbol file deleted.'
          : undefined;
    return render(c, symbolsPage(pageCtx(c), p, (await listSymbolFiles(db, p.id)).map(symbolFileJson), { message }));
  });

  app.post('/:slug/symbols', async (c) => {
    const p = await projectOr404(c);
    try {
      const stored = await receiveSymbolUpload(deps, p, c.req.header('content-type') ?? null, c.req.raw.body);
      await audit(deps, c, 'symbol.upload', p.slug, { files: stored.length });
      return c.redirect(href(projectPath(p.slug, 'symbols'), { uploaded: stored.length }), 303);
    } catch (err) {
      if (err instanceof HttpError && err.status === 400) {
        return render(
          c,
          symbolsPage(pageCtx(c), p, (await listSymbolFiles(db, p.id)).map(symbolFileJson), { error: err.message }),
          400,
        );
      }
      throw err;
    }
  });

  app.post('/:slug/symbols/:id/delete', async (c) => {
    const p = await projectOr404(c);
    const raw = c.req.param('id');
    const deleted =
      /^[0-9]{1,15}$/.test(raw) && deps.symbols ? await deps.symbols.deleteFile(p.id, Number(raw)) : false;
    if (!deleted) throw new HttpError(404, `There is no symbol file ${raw} in this project.`);
    await audit(deps, c, 'symbol.delete', p.slug, { id: Number(raw) });
    return c.redirect(`${projectPath(p.slug, 'symbols')}?deleted=1`, 303);
  });

  app.notFound((c) => c.html(errorPage(ctxOrAnonymous(c), 404, `There is no page at ${c.req.path}.`), 404));

  app.onError((err, c) => {
    const ctx = ctxOrAnonymous(c);
    if (
      err instanceof ReadInputError ||
      err instanceof ReadNotFoundError ||
      err instanceof HttpError ||
      err instanceof AccountInputError
    ) {
      return c.html(errorPage(ctx, err.status, err.message), err.status as ContentfulStatusCode);
    }
    deps.logger.error(
      { err, method: c.req.method, path: c.req.path },
      'unexpected failure while rendering a dashboard page',
    );
    return c.html(errorPage(ctx, 500, 'Something went wrong on the server; the log has the details.'), 500);
  });

  return app;
}

function hexOf(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

function ctxOrAnonymous(c: Context<Env>): PageContext {
  return c.get('page') ?? { csrf: '', signedIn: false, now: Date.now() };
}

function pathWithQuery(c: Context): string {
  const url = new URL(c.req.url);
  return url.pathname + url.search;
}

function originHeaders(c: Context) {
  return {
    origin: c.req.header('origin'),
    referer: c.req.header('referer'),
    fetchSite: c.req.header('sec-fetch-site'),
  };
}

/** The issue page's snooze choice (pages/issues.ts SNOOZES, `<kind>:<amount>`) as the API's fields. */
function snoozeFields(choice: string | undefined, now: number): Record<string, unknown> {
  const m = /^(hours|count|users):([0-9]{1,6})$/.exec(choice ?? '');
  if (!m) return {};
  const amount = Number(m[2]);
  if (m[1] === 'hours') return { ignore_until: new Date(now + amount * 3_600_000).toISOString() };
  return m[1] === 'count' ? { ignore_count: amount } : { ignore_users: amount };
}
