// The web dashboard: server-rendered pages for projects, overview, issues,
// events, releases and project settings, served by the same Hono app at `/`
// (every path outside /api and /health). Pages call the same domain functions
// as the JSON routes (src/read, src/store/projects.ts, the project validation of
// src/http/projects.ts); nothing here queries the database itself. Web APIs
// only, so every edition serves it.
//
// Sign-in (API_KEYS set): an API key is asked once and exchanged for a signed
// session cookie (session.ts: HttpOnly, SameSite=Strict, Secure over https),
// valid on every instance. Every state-changing request is a POST carrying the
// session's CSRF token and coming from this site's origin. With API_KEYS empty
// the dashboard is open like the API; forms are then protected by a
// double-submit CSRF cookie and the same origin check.
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import type { ContentfulStatusCode } from 'hono/utils/http-status';
import type { AppDeps } from '../context.js';
import { HttpError, zodMessage } from '../http/errors.js';
import { hasUnsafeText } from '../ingest/hygiene.js';
import { projectJson, withDefaults } from '../http/projects.js';
import { createSchema, patchSchema } from '../store/project-input.js';
import { clientAddressOf } from '../http/forwarded.js';
import { publicBasePath, publicBaseUrl } from '../http/public-url.js';
import { SIGN_IN_FAILURES, SIGN_IN_WINDOW_MS } from '../limits.js';
import { SignInThrottle } from '../store/rate-limits.js';
import { REQUEST_ID_HEADER } from '../http/request-meta.js';
import { ReadInputError, ReadNotFoundError } from '../read/errors.js';
import { eventDetail, listEvents, parseEventListQuery } from '../read/events.js';
import { bulkSetStatus, findIssue, issueDetail, listIssues, parseBulkBody, parseIssueListQuery, setIssueStatus } from '../read/issues.js';
import { overview } from '../read/overview.js';
import { listReleases, releaseDetail } from '../read/releases.js';
import { createProject, deleteProject, findProjectBySlug, listProjects, rotateProjectKey, SLUG_PATTERN, SlugTakenError, updateProject } from '../store/projects.js';
import { isIssueStatus } from '../read/params.js';
import type { ProjectRow } from '../store/schema.js';
import { addChannel, sendTestAlert } from '../alerts/channel-admin.js';
import { AlertInputError, isAlertType, parseRulePatch } from '../alerts/rules.js';
import { channelJson, deleteChannel, findChannel, listChannels, listDeliveries, listRules, updateRule } from '../alerts/store.js';
import { webAlertRuntime } from '../alerts/transport.js';
import { CSS, FAVICON_SVG, JS } from './assets.js';
import { alertsPage } from './pages/alerts.js';
import { receiveSymbolUpload } from '../http/symbols.js';
import { attachmentDownload } from '../http/attachments.js';
import { eventFiles, getAttachment } from '../attachments/storage.js';
import { listFeedback } from '../feedback/storage.js';
import { feedbackPage } from './pages/feedback.js';
import { listSymbolFiles, symbolFileJson } from '../symbols/storage.js';
import { symbolsPage } from './pages/symbols.js';
import { href, locationUnderBasePath, nonEmpty, pathWithoutBasePath, projectPath, underBasePath, type Html } from './html.js';
import type { PageContext } from './layout.js';
import { eventListPage, eventListQuery, eventPage, type EventDetail } from './pages/events.js';
import { issueListPage, issuePage } from './pages/issues.js';
import { overviewPage, RELEASE_PAGE_ISSUES, releaseListPage, releasePage } from './pages/overview.js';
import { errorPage, loginPage, projectListPage, settingsPage } from './pages/projects.js';
import { issueSession, matchApiKey, randomToken, sameOrigin, sameToken, SESSION_TTL_MS, sessionKeys, verifySession } from './session.js';

export const SESSION_COOKIE = 'faultline_session';
/** The account an API-key sign-in counts its failures against (docs/api.md, "Dashboard sign-in"). */
const API_KEY_ACCOUNT = 'api-keys';
export const CSRF_COOKIE = 'faultline_csrf';

/** Paths the dashboard answers: everything except the JSON API and the health check. */
export function isDashboardPath(path: string): boolean {
  return !(path === '/api' || path.startsWith('/api/') || path === '/health' || path.startsWith('/health/'));
}

/** The symbol upload form's target: its body streams, past the 1 MB form limit. */
function isUploadPath(path: string): boolean {
  return /^\/[^/]+\/symbols$/.test(path);
}

/** Content-Security-Policy of every page: nothing from another host, no inline script or style. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

type Env = { Variables: { page: PageContext } };

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
    if (hasUnsafeText(k) || values.some(hasUnsafeText)) throw new HttpError(400, 'The form holds a NUL character, which is not allowed.');
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
  if (f.environments !== undefined) out.environments = one(f.environments).split(',').map((e) => e.trim()).filter((e) => e !== '');
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
export function dashboard(deps: AppDeps): MiddlewareHandler {
  const app = dashboardApp(deps);
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

export function dashboardApp(deps: AppDeps): Hono<Env> {
  const app = new Hono<Env>();
  const db = deps.store.db;
  const now = () => deps.clock.now();
  const signInRequired = deps.config.apiKeys.length > 0;
  const keys = sessionKeys(deps.config.apiKeys);
  const signInThrottle = new SignInThrottle(deps.store, SIGN_IN_FAILURES, SIGN_IN_WINDOW_MS, deps.logger);

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

  app.get('/static/dashboard.css', (c) => c.body(CSS, 200, { 'Content-Type': 'text/css; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }));
  app.get('/static/dashboard.js', (c) => c.body(JS, 200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': 'public, max-age=3600' }));
  app.get('/static/favicon.svg', (c) => c.body(FAVICON_SVG, 200, { 'Content-Type': 'image/svg+xml', 'Cache-Control': 'public, max-age=86400' }));

  app.get('/login', async (c) => {
    if (!signInRequired) return c.redirect('/', 303);
    const session = await verifySession(await keys, getCookie(c, SESSION_COOKIE), now());
    if (session) return c.redirect(safeNext(c.req.query('next')), 303);
    return render(c, loginPage(safeNext(c.req.query('next'))));
  });

  app.post('/login', async (c) => {
    if (!signInRequired) return c.redirect('/', 303);
    // Sign-in has no session yet, so only the origin check guards it against cross-site posts.
    if (!sameOrigin(originHeaders(c), allowedOrigins(c))) return c.text('cross-site request refused', 403);
    const address = clientAddressOf(deps, c.req.raw, c.env);
    if (deps.config.rateLimit > 0) {
      const decision = await deps.rateLimiter.hit(`login:${address}`, now());
      if (!decision.allowed) return c.html(loginPage('/', 'Too many sign-in attempts; wait a minute.'), 429, { 'Retry-After': String(decision.retryAfterSeconds) });
    }
    const f = await form(c);
    const next = safeNext(one(f.next));
    // The instance's API keys are one account: wrong keys from every address count against it too.
    const throttle = await signInThrottle.begin(address, API_KEY_ACCOUNT, now());
    if (!throttle.allowed) {
      deps.logger.warn({ event: 'dashboard_sign_in_throttled', retry_after: throttle.retryAfterSeconds }, 'dashboard sign-in refused: too many failed attempts');
      const minutes = Math.ceil(throttle.retryAfterSeconds / 60);
      return c.html(loginPage(next, `Too many failed sign-ins; try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`), 429, { 'Retry-After': String(throttle.retryAfterSeconds) });
    }
    const key = await matchApiKey(await keys, one(f.key));
    if (!key) {
      deps.logger.info({ event: 'dashboard_sign_in_refused' }, 'dashboard sign-in with a wrong API key');
      return render(c, loginPage(next, 'That is not one of this server’s API keys.'), 401);
    }
    await throttle.attempt.succeeded();
    setCookie(c, SESSION_COOKIE, await issueSession(key, now()), {
      httpOnly: true,
      sameSite: 'Strict',
      secure: secure(c),
      path: '/',
      maxAge: Math.floor(SESSION_TTL_MS / 1000),
    });
    return c.redirect(next, 303);
  });

  // Everything below needs a session (when sign-in is on) and, for POSTs, a valid CSRF token from this origin.
  app.use(async (c, next) => {
    let csrf: string;
    if (signInRequired) {
      const session = await verifySession(await keys, getCookie(c, SESSION_COOKIE), now());
      if (!session) {
        if (c.req.method === 'GET' || c.req.method === 'HEAD') return c.redirect(href('/login', { next: c.req.path === '/' ? undefined : pathWithQuery(c) }), 303);
        const referer = c.req.header('referer');
        const back = referer ? pathWithoutBasePath(new URL(referer, c.req.url).pathname, publicBasePath(deps.config)) : '/';
        return c.html(loginPage(safeNext(back), 'Sign in first.'), 401);
      }
      csrf = session.csrf;
    } else {
      csrf = getCookie(c, CSRF_COOKIE) ?? '';
      if (!/^[A-Za-z0-9_-]{32}$/.test(csrf)) {
        csrf = randomToken();
        setCookie(c, CSRF_COOKIE, csrf, { httpOnly: true, sameSite: 'Strict', secure: secure(c), path: '/' });
      }
    }
    c.set('page', { csrf, signedIn: signInRequired, now: now() });
    if (c.req.method === 'POST') {
      const refused = (why: string) => c.html(errorPage(c.get('page'), 403, `${why}; reload the page and try again.`), 403);
      if (!sameOrigin(originHeaders(c), allowedOrigins(c))) return refused('This form was sent from another site');
      // A multipart upload carries the token in the form's URL, so its body is never buffered here.
      const multipart = (c.req.header('content-type') ?? '').toLowerCase().startsWith('multipart/form-data');
      const token = c.req.header('x-csrf-token') ?? (multipart ? c.req.query('_csrf') : one((await form(c))._csrf));
      if (!token || !sameToken(token, csrf)) return refused('This form’s security token is missing or out of date');
    }
    return next();
  });

  app.post('/logout', (c) => {
    deleteCookie(c, SESSION_COOKIE, { path: '/', secure: secure(c) });
    return c.redirect('/login', 303);
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
    return render(c, projectListPage(pageCtx(c), projects, {}, undefined, deleted && SLUG_PATTERN.test(deleted) ? `Project "${deleted}" was deleted.` : undefined));
  });

  app.post('/new', async (c) => {
    const f = await form(c);
    const input = { slug: one(f.slug).trim(), name: one(f.name).trim() || undefined, platform: one(f.platform) || undefined };
    const projects = async () => (await listProjects(db)).map((p) => views(c, p));
    const parsed = createSchema.safeParse(input);
    if (!parsed.success) return render(c, projectListPage(pageCtx(c), await projects(), { ...input, name: input.name ?? '' } as Record<string, string>, zodMessage(parsed.error)), 400);
    try {
      const project = await createProject(db, withDefaults(parsed.data), now());
      deps.logger.info({ project: project.slug, project_id: project.id }, 'project created');
      return c.redirect(`${projectPath(project.slug, 'settings')}?created=1`, 303);
    } catch (err) {
      if (err instanceof SlugTakenError) return render(c, projectListPage(pageCtx(c), await projects(), input as Record<string, string>, err.message), 409);
      throw err;
    }
  });

  app.get('/:slug', async (c) => {
    const p = await projectOr404(c);
    const q = nonEmpty(c.req.query());
    return render(c, overviewPage(pageCtx(c), p, q, await overview(db, p.id, q, now())));
  });

  app.get('/:slug/issues', async (c) => {
    const p = await projectOr404(c);
    const { updated, updated_to: updatedTo, ...q } = nonEmpty(c.req.query());
    const parsed = parseIssueListQuery(q, now());
    const list = await listIssues(db, p.id, parsed, now());
    const message = updated !== undefined && /^[0-9]{1,6}$/.test(updated) && isIssueStatus(updatedTo) ? `${updated} issue${updated === '1' ? '' : 's'} set to ${updatedTo}.` : undefined;
    return render(c, issueListPage(pageCtx(c), p, q, list, parsed.limit, message));
  });

  app.post('/:slug/issues/bulk', async (c) => {
    const p = await projectOr404(c);
    const f = await form(c);
    const fingerprints = Array.isArray(f.fingerprints) ? f.fingerprints : f.fingerprints ? [f.fingerprints] : [];
    const { status } = parseBulkBody({ fingerprints, status: one(f.status) });
    const result = await bulkSetStatus(db, p.id, fingerprints, status, now());
    const list = projectPath(p.slug, 'issues');
    const back = safeNext(one(f.back), list);
    const target = back === list || back.startsWith(`${list}?`) ? back : list;
    const url = new URL(target, 'http://x');
    url.searchParams.set('updated', String(result.updated));
    url.searchParams.set('updated_to', status);
    return c.redirect(url.pathname + url.search, 303);
  });

  app.get('/:slug/issues/:fingerprint', async (c) => {
    const p = await projectOr404(c);
    const fingerprint = c.req.param('fingerprint');
    const { set, ...q } = nonEmpty(c.req.query());
    const issue = await issueDetail(db, p.id, fingerprint, q, now());
    // A merged issue's page is the page of the issue it was merged into (links sent before the merge).
    if (issue.merged_into !== undefined) return c.redirect(href(projectPath(p.slug, 'issues', issue.merged_into), { ...q, set }), 302);
    let event: EventDetail | null = null;
    const wanted = q.event ?? (issue.latest_event_id !== null ? String(issue.latest_event_id) : undefined);
    if (wanted !== undefined) {
      event = await eventDetail(db, p.id, wanted, deps.decompressBlob);
      if (event.fingerprint !== issue.fingerprint) throw new HttpError(404, `Event ${wanted} does not belong to this issue.`);
    }
    const [older, recent] = await Promise.all([
      event ? listEvents(db, p.id, parseEventListQuery({ fingerprint, before: String(event.id), limit: '1' }, now())) : null,
      listEvents(db, p.id, parseEventListQuery({ fingerprint, limit: '10' }, now())),
    ]);
    const message = isIssueStatus(set) ? `Status set to ${set}.` : undefined;
    // A newer event is known when the shown one is among the newest few listed on the page.
    const at = event ? recent.events.findIndex((e) => e.id === event.id) : -1;
    const newer = at > 0 ? recent.events[at - 1].id : null;
    const [files, feedback] = await Promise.all([
      event ? eventFiles(db, p.id, event.event_id) : [],
      listFeedback(db, p.id, { issueId: Number((await findIssue(db, p.id, issue.fingerprint)).row.id), limit: 20 }),
    ]);
    return render(c, issuePage(pageCtx(c), p, issue, q, event, recent.events, { older: older?.events[0]?.id ?? null, newer }, message, files, feedback.feedback));
  });

  app.post('/:slug/issues/:fingerprint/status', async (c) => {
    const p = await projectOr404(c);
    const fingerprint = c.req.param('fingerprint');
    const { status } = parseBulkBody({ fingerprints: [], status: one((await form(c)).status) });
    await setIssueStatus(db, p.id, fingerprint, status, now());
    return c.redirect(href(projectPath(p.slug, 'issues', fingerprint), { set: status }), 303);
  });

  app.get('/:slug/events', async (c) => {
    const p = await projectOr404(c);
    const q = nonEmpty(c.req.query());
    const list = await listEvents(db, p.id, parseEventListQuery(eventListQuery(q), now()));
    return render(c, eventListPage(pageCtx(c), p, q, list));
  });

  app.get('/:slug/events/:id', async (c) => {
    const p = await projectOr404(c);
    const event = await eventDetail(db, p.id, c.req.param('id'), deps.decompressBlob);
    return render(c, eventPage(pageCtx(c), p, event, await eventFiles(db, p.id, event.event_id)));
  });

  // Attachment downloads (docs/api.md "Attachments"): always `attachment`, except the
  // image route, which serves a file inline only when its bytes are a raster image.
  const attachmentOr404 = async (c: Context<Env>) => {
    const p = await projectOr404(c);
    const row = await getAttachment(db, p.id, c.req.param('aid') ?? '');
    if (!row) throw new HttpError(404, 'There is no such attachment in this project.');
    return row;
  };
  app.get('/:slug/attachments/:aid', async (c) => attachmentDownload(deps.store, await attachmentOr404(c), false));
  app.get('/:slug/attachments/:aid/image', async (c) => attachmentDownload(deps.store, await attachmentOr404(c), true));

  app.get('/:slug/feedback', async (c) => {
    const p = await projectOr404(c);
    const cursor = c.req.query('cursor');
    if (cursor !== undefined && !/^[0-9]{1,15}$/.test(cursor)) throw new HttpError(400, 'That page of feedback does not exist.');
    return render(c, feedbackPage(pageCtx(c), p, await listFeedback(db, p.id, { limit: 50, before: cursor === undefined ? undefined : Number(cursor) }), cursor));
  });

  app.get('/:slug/releases', async (c) => {
    const p = await projectOr404(c);
    const q = nonEmpty(c.req.query());
    return render(c, releaseListPage(pageCtx(c), p, q, (await listReleases(db, p.id, q, now())).releases));
  });

  app.get('/:slug/releases/:version{.+}', async (c) => {
    const p = await projectOr404(c);
    const q = nonEmpty(c.req.query());
    return render(c, releasePage(pageCtx(c), p, q, await releaseDetail(db, p.id, c.req.param('version'), q, now(), RELEASE_PAGE_ISSUES + 1)));
  });

  app.get('/:slug/settings', async (c) => {
    const p = await projectOr404(c);
    const q = c.req.query();
    const message = q.created ? 'Project created. Give this DSN to your app’s Sentry SDK.' : q.rotated ? 'A new key was made; the old DSN no longer works.' : q.saved ? 'Settings saved.' : undefined;
    return render(c, settingsPage(pageCtx(c), views(c, p), { message }));
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
    const updated = await updateProject(db, p.id, parsed.data);
    if (!updated) throw new HttpError(404, `There is no project "${p.slug}".`);
    return c.redirect(`${projectPath(p.slug, 'settings')}?saved=1`, 303);
  });

  app.post('/:slug/rotate-key', async (c) => {
    const p = await projectOr404(c);
    if (!(await rotateProjectKey(db, p.id))) throw new HttpError(404, `There is no project "${p.slug}".`);
    deps.logger.info({ project: p.slug, project_id: p.id }, 'project DSN key rotated (dashboard)');
    return c.redirect(`${projectPath(p.slug, 'settings')}?rotated=1`, 303);
  });

  app.post('/:slug/delete', async (c) => {
    const p = await projectOr404(c);
    if (one((await form(c)).confirm).trim() !== p.slug) {
      return render(c, settingsPage(pageCtx(c), views(c, p), { error: `Type the slug "${p.slug}" exactly to delete the project.` }), 400);
    }
    await deleteProject(db, p.id);
    deps.logger.info({ project: p.slug, project_id: p.id }, 'project deleted (dashboard)');
    return c.redirect(href('/', { deleted: p.slug }), 303);
  });

  // Alerts: rules, channels (add, send a test, delete) and deliveries, through src/alerts as the alerts API.
  const alertRuntime = deps.alertRuntime ?? webAlertRuntime;

  async function alertsData(projectId: number) {
    const [rules, channels, deliveries] = await Promise.all([listRules(db, projectId), listChannels(db, projectId), listDeliveries(db, projectId)]);
    return { rules, channels: channels.map(channelJson), deliveries };
  }

  app.get('/:slug/alerts', async (c) => {
    const p = await projectOr404(c);
    const q = c.req.query();
    const tested = q.test === 'delivered' || q.test === 'failed' ? `The test alert ${q.test === 'delivered' ? 'was delivered' : 'was not delivered (the error is in the deliveries below)'}${/^[0-9]{3}$/.test(q.status ?? '') ? ` (HTTP ${q.status})` : ''}.` : undefined;
    const message = tested ?? (q.added ? 'Channel added.' : q.deleted ? 'Channel deleted.' : q.saved ? 'Rule saved.' : undefined);
    return render(c, alertsPage(pageCtx(c), p, await alertsData(p.id), { message }));
  });

  app.post('/:slug/alerts/rules/:type', async (c) => {
    const p = await projectOr404(c);
    const type = c.req.param('type');
    if (!isAlertType(type)) throw new HttpError(404, `There is no alert type "${type}" (types are new_issue, regression, crash_spike).`);
    const f = await form(c);
    try {
      await updateRule(db, p.id, type, parseRulePatch({ enabled: one(f.enabled) === 'true', cooldown_minutes: numberField(f.cooldown_minutes), ...ruleFilterFields(f) }));
    } catch (err) {
      if (err instanceof AlertInputError) return render(c, alertsPage(pageCtx(c), p, await alertsData(p.id), { error: err.message }), 400);
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
        : { kind: f.kind, config: { url: f.url ?? '', ...(f.secret ? { secret: f.secret } : {}) } };
    try {
      const channel = await addChannel(db, p.id, body, deps.config, alertRuntime, now());
      deps.logger.info({ project: p.slug, channel_id: Number(channel.id), kind: channel.kind }, 'alert channel created (dashboard)');
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
    return c.redirect(href(projectPath(p.slug, 'alerts'), { test: result.delivered ? 'delivered' : 'failed', status: result.status }), 303);
  });

  app.post('/:slug/alerts/channels/:id/delete', async (c) => {
    const p = await projectOr404(c);
    const channel = await channelOr404(c, p.id);
    await deleteChannel(db, p.id, Number(channel.id));
    deps.logger.info({ project: p.slug, channel_id: Number(channel.id) }, 'alert channel deleted (dashboard)');
    return c.redirect(`${projectPath(p.slug, 'alerts')}?deleted=1`, 303);
  });

  // Symbols: list, upload (streamed through the symbols API's reader), delete.
  app.get('/:slug/symbols', async (c) => {
    const p = await projectOr404(c);
    const q = c.req.query();
    const message = q.uploaded && /^[0-9]{1,4}$/.test(q.uploaded) ? `${q.uploaded} file${q.uploaded === '1' ? '' : 's'} uploaded.` : q.deleted ? 'Symbol file deleted.' : undefined;
    return render(c, symbolsPage(pageCtx(c), p, (await listSymbolFiles(db, p.id)).map(symbolFileJson), { message }));
  });

  app.post('/:slug/symbols', async (c) => {
    const p = await projectOr404(c);
    try {
      const stored = await receiveSymbolUpload(deps, p, c.req.header('content-type') ?? null, c.req.raw.body);
      return c.redirect(href(projectPath(p.slug, 'symbols'), { uploaded: stored.length }), 303);
    } catch (err) {
      if (err instanceof HttpError && err.status === 400) {
        return render(c, symbolsPage(pageCtx(c), p, (await listSymbolFiles(db, p.id)).map(symbolFileJson), { error: err.message }), 400);
      }
      throw err;
    }
  });

  app.post('/:slug/symbols/:id/delete', async (c) => {
    const p = await projectOr404(c);
    const raw = c.req.param('id');
    const deleted = /^[0-9]{1,15}$/.test(raw) && deps.symbols ? await deps.symbols.deleteFile(p.id, Number(raw)) : false;
    if (!deleted) throw new HttpError(404, `There is no symbol file ${raw} in this project.`);
    return c.redirect(`${projectPath(p.slug, 'symbols')}?deleted=1`, 303);
  });

  app.notFound((c) => c.html(errorPage(ctxOrAnonymous(c), 404, `There is no page at ${c.req.path}.`), 404));

  app.onError((err, c) => {
    const ctx = ctxOrAnonymous(c);
    if (err instanceof ReadInputError || err instanceof ReadNotFoundError || err instanceof HttpError) {
      return c.html(errorPage(ctx, err.status, err.message), err.status as ContentfulStatusCode);
    }
    deps.logger.error({ err, method: c.req.method, path: c.req.path }, 'unexpected failure while rendering a dashboard page');
    return c.html(errorPage(ctx, 500, 'Something went wrong on the server; the log has the details.'), 500);
  });

  return app;
}

function ctxOrAnonymous(c: Context<Env>): PageContext {
  return c.get('page') ?? { csrf: '', signedIn: false, now: Date.now() };
}

function pathWithQuery(c: Context): string {
  const url = new URL(c.req.url);
  return url.pathname + url.search;
}

function originHeaders(c: Context) {
  return { origin: c.req.header('origin'), referer: c.req.header('referer'), fetchSite: c.req.header('sec-fetch-site') };
}
