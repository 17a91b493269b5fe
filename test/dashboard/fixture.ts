// Shared set-up of the dashboard tests: a real server with API keys, the demo
// project filled through ingest by `faultline seed`, an event whose every text
// field holds markup (the XSS corpus), symbolicated frames stored for one event,
// two cron monitors, and a fetch-based signed-in client (cookie jar + the page's CSRF token).
import { runSeed } from '../../src/cli/seed.js';
import { findProjectBySlug } from '../../src/store/projects.js';
import type { ProjectRow } from '../../src/store/schema.js';
import { startTestServer, type DialectName, type TestServer } from '../helpers/server.js';
import { envelope, post } from '../ingest/helpers.js';

export const API_KEY = 'dashboard-test-key-0123456789';
export const OTHER_KEY = 'second-key-abcdefabcdef';

export function startDashboardServer(
  dialect: DialectName,
  env: Record<string, string> = { API_KEYS: `${API_KEY},${OTHER_KEY}` },
): Promise<TestServer> {
  // Real time: seeded events are spread over the week before now.
  return startTestServer(dialect, { env, clock: { now: () => Date.now() } });
}

/** A week of the demo app through the real ingest path. */
export async function seedDemo(t: TestServer, apiKey: string | undefined = API_KEY): Promise<ProjectRow> {
  await runSeed({ slug: 'demo', url: t.url, apiKey, seed: 42 });
  const demo = (await findProjectBySlug(t.deps.store.db, 'demo'))!;
  // Two cron monitors, one of them failing, for the Monitors pages.
  const config = (value: string) => ({
    schedule: { type: 'crontab', value },
    timezone: 'Europe/Vienna',
    checkin_margin: 5,
  });
  const checkIns = [
    {
      check_in_id: crypto.randomUUID(),
      monitor_slug: 'nightly-backup',
      status: 'ok',
      duration: 42.5,
      environment: 'production',
      monitor_config: config('0 3 * * *'),
    },
    {
      check_in_id: crypto.randomUUID(),
      monitor_slug: 'invoice-sync',
      status: 'ok',
      duration: 3,
      monitor_config: config('*/15 * * * *'),
    },
    { check_in_id: crypto.randomUUID(), monitor_slug: 'invoice-sync', status: 'error', duration: 1.2 },
  ];
  const res = await post(
    t,
    demo,
    envelope(
      {},
      checkIns.map((payload) => ({ type: 'check_in', payload })),
    ),
  );
  if (res.status !== 200) throw new Error(`check-ins: ${res.status} ${await res.text()}`);
  return demo;
}

/** Markup that must render as text wherever event data appears. */
export const XSS = [
  '<script>window.__xss=1</script>',
  '"><img src=x onerror="window.__xss=2">',
  "'><svg onload=window.__xss=3>",
  '</textarea><iframe src="javascript:window.__xss=4"></iframe>',
  '<a href="javascript:window.__xss=5">x</a>',
  '&lt;b&gt;already-escaped&lt;/b&gt;',
];

/** Sends one event whose title, message, tags, breadcrumbs, frames (context lines, vars), threads, request, extra, contexts and user carry the corpus. */
export async function sendXssEvent(t: TestServer, project: ProjectRow): Promise<string> {
  const eventId = 'a'.repeat(24) + Date.now().toString(16).padStart(8, '0').slice(-8);
  const event = {
    event_id: eventId,
    timestamp: Date.now() / 1000,
    level: 'error',
    platform: 'javascript',
    release: 'xss@1.0.0',
    environment: XSS[2],
    transaction: XSS[1],
    message: XSS.join(' | '),
    tags: { [XSS[0]]: XSS[1], plain: XSS[3] },
    user: { id: XSS[1], email: 'x@example.com', username: XSS[4] },
    contexts: { [XSS[3]]: { [XSS[0]]: XSS[5] }, device: { model: XSS[2] } },
    breadcrumbs: {
      values: [
        { timestamp: Date.now() / 1000 - 5, category: XSS[0], message: XSS[1], data: { url: XSS[4] } },
        { timestamp: Date.now() / 1000 - 4, type: XSS[5], level: XSS[3], data: { [XSS[2]]: XSS[0] } },
        { timestamp: Date.now() / 1000 - 3, type: 'http', data: { method: XSS[1], url: XSS[0], status_code: XSS[4] } },
      ],
    },
    exception: {
      values: [
        {
          type: 'XssError',
          value: XSS[0],
          stacktrace: {
            frames: [
              { function: XSS[4], module: XSS[5], filename: XSS[2], lineno: 1, in_app: false },
              {
                function: XSS[1],
                filename: XSS[3],
                lineno: 7,
                in_app: true,
                context_line: XSS[0],
                pre_context: [XSS[1], XSS[2]],
                post_context: [XSS[3], XSS[4]],
                vars: { [XSS[0]]: XSS[5], nested: { [XSS[1]]: XSS[2] } },
              },
            ],
          },
          mechanism: { type: XSS[2], handled: false },
        },
      ],
    },
    threads: {
      values: [
        {
          id: XSS[0],
          name: XSS[1],
          state: XSS[2],
          crashed: true,
          stacktrace: { frames: [{ function: XSS[3], filename: XSS[4], in_app: true }] },
        },
      ],
    },
    request: {
      method: 'POST',
      url: XSS[4],
      headers: { [XSS[0]]: XSS[1] },
      query_string: [[XSS[2], XSS[3]]],
      data: XSS[5],
    },
    extra: { [XSS[3]]: XSS[0], list: [XSS[1]] },
  };
  await sendStoreEvent(t, project, event);
  return eventId;
}

/** Sends one event through the legacy /store/ route, as an SDK would; throws unless it is accepted. */
export async function sendStoreEvent(
  t: TestServer,
  project: ProjectRow,
  event: Record<string, unknown>,
): Promise<void> {
  const res = await fetch(`${t.url}/api/${project.id}/store/`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-sentry-auth': `Sentry sentry_version=7, sentry_key=${project.dsn_key}`,
    },
    body: JSON.stringify(event),
  });
  if (res.status !== 200) throw new Error(`ingest refused the event: ${res.status} ${await res.text()}`);
}

/**
 * Stores symbolicated frames for the latest event of the issue, as symbolication
 * does (one frame list per exception of the chain), so the page shows both stacks.
 * Returns the symbolicated function names.
 */
export async function symbolicateLatest(t: TestServer, project: ProjectRow, fingerprint: string): Promise<string[]> {
  const db = t.deps.store.db;
  const issue = await db
    .selectFrom('issues')
    .select(['id', 'last_seen_id'])
    .where('project_id', '=', project.id)
    .where('fingerprint', '=', fingerprint)
    .executeTakeFirstOrThrow();
  const detail = await (await t.api(`/api/projects/${project.slug}/events/${issue.last_seen_id}`)).json();
  const names: string[] = [];
  const perException = (detail.exceptions as { frames: unknown[] }[]).map((x, xi) =>
    x.frames.map((_f, i) => {
      const name = `symbolicated_fn_${xi}_${i}`;
      names.push(name);
      return { function: name, filename: `src/original_${i}.ts`, lineno: 100 + i, in_app: true };
    }),
  );
  await db
    .updateTable('events')
    .set({ symbolicated: JSON.stringify(perException) })
    .where('id', '=', Number(issue.last_seen_id))
    .execute();
  return names;
}

/** A fetch client keeping cookies, like a browser of this site. */
export class Client {
  cookies = new Map<string, string>();
  constructor(readonly base: string) {}

  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(this.base + path, { ...init, headers, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const [pair, ...attrs] = line.split(';');
      const [name, value] = [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)];
      if (attrs.some((a) => /max-age=0/i.test(a.trim())) || value === '') this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return res;
  }

  /** A same-origin form post (what the page's own forms send). */
  post(
    path: string,
    fields: Record<string, string | string[]>,
    headers: Record<string, string> = {},
  ): Promise<Response> {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(fields)) for (const one of Array.isArray(v) ? v : [v]) body.append(k, one);
    return this.request(path, {
      method: 'POST',
      body,
      headers: { origin: this.base, 'content-type': 'application/x-www-form-urlencoded', ...headers },
    });
  }

  async signIn(key: string): Promise<Response> {
    return this.post('/login', { key, next: '/' });
  }

  /** The CSRF token the forms of `path` carry. */
  async csrf(path = '/'): Promise<string> {
    const html = await (await this.request(path)).text();
    const m = /name="_csrf" value="([^"]+)"/.exec(html);
    if (!m) throw new Error(`no CSRF field on ${path}`);
    return m[1];
  }
}
