// Helpers for the HTTP ingest tests: projects made straight in the store, envelope
// building, posting to the real server, and row counts that prove what was (not)
// stored.
import { gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { createProject, PROJECT_DEFAULTS } from '../../src/store/projects.js';
import type { ProjectRow } from '../../src/store/schema.js';
import type { TestServer } from '../helpers/server.js';

let counter = 0;

export async function makeProject(
  t: TestServer,
  overrides: Partial<Pick<ProjectRow, 'sample_keep_first' | 'sample_rate' | 'daily_quota'>> = {},
): Promise<ProjectRow> {
  counter += 1;
  const slug = `ingest-${counter}-${randomBytes(3).toString('hex')}`;
  return createProject(t.deps.store.db, { ...PROJECT_DEFAULTS, slug, name: slug, ...overrides }, t.clock.now());
}

/** The DSN an SDK would be given for the project on the test server. */
export function dsnOf(t: TestServer, project: ProjectRow): string {
  const url = new URL(t.url);
  return `${url.protocol}//${project.dsn_key}@${url.host}/${project.id}`;
}

export function eventId(): string {
  return randomBytes(16).toString('hex');
}

export interface Item {
  type: string;
  payload: string | Uint8Array | object;
  /** Write a `length` header (default: no length, newline-terminated). */
  withLength?: boolean;
}

/** Builds an envelope body: header line, then each item header and payload. */
export function envelope(header: object, items: Item[], trailingNewline = false): Buffer {
  const parts: Buffer[] = [Buffer.from(JSON.stringify(header))];
  for (const item of items) {
    const payload =
      typeof item.payload === 'string'
        ? Buffer.from(item.payload)
        : item.payload instanceof Uint8Array
          ? Buffer.from(item.payload)
          : Buffer.from(JSON.stringify(item.payload));
    const itemHeader: Record<string, unknown> = { type: item.type };
    if (item.withLength) itemHeader.length = payload.length;
    parts.push(Buffer.from('\n' + JSON.stringify(itemHeader) + '\n'), payload);
  }
  if (trailingNewline) parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

/** A minimal error event with a stack, at `timestamp` (ms). */
export function errorEvent(opts: {
  id?: string;
  timestamp: number;
  type?: string;
  value?: string;
  fn?: string;
  level?: string;
  handled?: boolean;
  release?: string;
  user?: string;
}): Record<string, unknown> {
  return {
    event_id: opts.id ?? eventId(),
    timestamp: opts.timestamp / 1000,
    platform: 'node',
    level: opts.level ?? 'error',
    release: opts.release ?? 'app@1.0.0',
    environment: 'test',
    ...(opts.user ? { user: { id: opts.user } } : {}),
    exception: {
      values: [
        {
          type: opts.type ?? 'TypeError',
          value: opts.value ?? 'boom',
          ...(opts.handled === undefined ? {} : { mechanism: { type: 'generic', handled: opts.handled } }),
          stacktrace: {
            frames: [
              { filename: '/srv/app/main.js', function: 'main', lineno: 3, in_app: true },
              { filename: '/srv/app/work.js', function: opts.fn ?? 'work', lineno: 10, in_app: true },
            ],
          },
        },
      ],
    },
  };
}

export function sessionUpdate(opts: {
  sid?: string;
  init?: boolean;
  status?: string;
  errors?: number;
  started: number;
  timestamp?: number;
  release?: string;
}) {
  return {
    sid: opts.sid ?? eventId(),
    init: opts.init ?? true,
    started: new Date(opts.started).toISOString(),
    timestamp: new Date(opts.timestamp ?? opts.started).toISOString(),
    status: opts.status ?? 'exited',
    errors: opts.errors ?? 0,
    attrs: { release: opts.release ?? 'app@1.0.0', environment: 'test' },
  };
}

export interface PostOptions {
  /** How to authenticate: query (default, as the JS SDK does), header, or none. */
  auth?: 'query' | 'header' | 'authorization' | 'none';
  key?: string;
  projectId?: number | string;
  endpoint?: 'envelope' | 'store';
  headers?: Record<string, string>;
  gzip?: boolean;
  trailingSlash?: boolean;
}

export async function post(
  t: TestServer,
  project: ProjectRow,
  body: Uint8Array | string,
  opts: PostOptions = {},
): Promise<Response> {
  const key = opts.key ?? project.dsn_key;
  const endpoint = opts.endpoint ?? 'envelope';
  let url = `${t.url}/api/${opts.projectId ?? project.id}/${endpoint}${opts.trailingSlash === false ? '' : '/'}`;
  const headers: Record<string, string> = { ...opts.headers };
  const auth = opts.auth ?? 'query';
  if (auth === 'query') url += `?sentry_version=7&sentry_key=${encodeURIComponent(key)}`;
  if (auth === 'header')
    headers['X-Sentry-Auth'] = `Sentry sentry_version=7, sentry_client=test/1.0, sentry_key=${key}`;
  if (auth === 'authorization') headers.Authorization = `Sentry sentry_key=${key}, sentry_version=7`;
  let data: Uint8Array = typeof body === 'string' ? Buffer.from(body) : body;
  if (opts.gzip) {
    data = gzipSync(data);
    headers['Content-Encoding'] = 'gzip';
  }
  return fetch(url, { method: 'POST', headers, body: data as BodyInit });
}

export const COUNTED_TABLES = [
  'events',
  'issues',
  'sessions',
  'seen_events',
  'daily_usage',
  'session_hourly',
  'project_hourly',
  'issue_hourly',
  'releases',
] as const;

/** Row counts of every table ingest writes to, to prove a refused request changed nothing. */
export async function rowCounts(t: TestServer): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of COUNTED_TABLES) {
    const row = await t.deps.store.db
      .selectFrom(table)
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    out[table] = Number(row.n);
  }
  // daily_usage rows could be updated in place; the sum shows that too.
  const usage = await t.deps.store.db
    .selectFrom('daily_usage')
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number | string>('events'), eb.lit(0)).as('n'))
    .executeTakeFirstOrThrow();
  out.daily_usage_events = Number(usage.n);
  return out;
}

export async function issuesOf(t: TestServer, project: ProjectRow) {
  return t.deps.store.db.selectFrom('issues').selectAll().where('project_id', '=', project.id).orderBy('id').execute();
}

export async function eventsOf(t: TestServer, project: ProjectRow) {
  return t.deps.store.db.selectFrom('events').selectAll().where('project_id', '=', project.id).orderBy('id').execute();
}

export async function sessionsOf(t: TestServer, project: ProjectRow) {
  return t.deps.store.db
    .selectFrom('sessions')
    .selectAll()
    .where('project_id', '=', project.id)
    .orderBy('started')
    .execute();
}

export async function sessionTotals(t: TestServer, project: ProjectRow) {
  const row = await t.deps.store.db
    .selectFrom('session_hourly')
    .select((eb) => [
      eb.fn.coalesce(eb.fn.sum<number | string>('total'), eb.lit(0)).as('total'),
      eb.fn.coalesce(eb.fn.sum<number | string>('crashed'), eb.lit(0)).as('crashed'),
      eb.fn.coalesce(eb.fn.sum<number | string>('errored'), eb.lit(0)).as('errored'),
    ])
    .where('project_id', '=', project.id)
    .executeTakeFirstOrThrow();
  return { total: Number(row.total), crashed: Number(row.crashed), errored: Number(row.errored) };
}

export async function usageOf(t: TestServer, project: ProjectRow): Promise<number> {
  const rows = await t.deps.store.db
    .selectFrom('daily_usage')
    .select('events')
    .where('project_id', '=', project.id)
    .execute();
  return rows.reduce((sum, r) => sum + Number(r.events), 0);
}
