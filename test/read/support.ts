// Support for the read API tests: a project made through the projects API,
// realistic envelopes (events shaped like @sentry/node's, sessions) posted to the
// real ingest route, a deterministic multi-day data set, and an independent model
// of what the read API should answer, computed only from what the test sent.
import { randomBytes } from 'node:crypto';
import { expect } from 'vitest';
import type { TestServer } from '../helpers/server.js';

export const HOUR = 3_600_000;
export const DAY = 86_400_000;
export const iso = (ms: number) => new Date(ms).toISOString();
export const hourOf = (ms: number) => Math.floor(ms / HOUR) * HOUR;
export const dayOf = (ms: number) => Math.floor(ms / DAY) * DAY;

/** A fixed "now" for the injected clock: Tuesday 2026-03-10 14:25:30.250 UTC. */
export const NOW = Date.UTC(2026, 2, 10, 14, 25, 30, 250);

export interface TestProject {
  id: number;
  slug: string;
  key: string;
}

let projectCounter = 0;

export async function createProject(t: TestServer, slug?: string): Promise<TestProject> {
  projectCounter += 1;
  const name = slug ?? `read-${projectCounter}-${randomBytes(3).toString('hex')}`;
  const res = await t.api('/api/projects', { method: 'POST', json: { slug: name, name, platform: 'backend' } });
  expect(res.status).toBe(201);
  const body = (await res.json()) as { id: number; slug: string; dsn: string };
  const key = new URL(body.dsn).username;
  return { id: body.id, slug: body.slug, key };
}

export function newEventId(): string {
  return randomBytes(16).toString('hex');
}

/** Mulberry32: a small seeded PRNG so data sets are the same on every run. */
export function rng(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)],
  };
}

export function envelopeBody(header: object, items: { type: string; payload: object }[]): string {
  return [
    JSON.stringify(header),
    ...items.flatMap((i) => [JSON.stringify({ type: i.type }), JSON.stringify(i.payload)]),
  ].join('\n');
}

/** Posts one envelope the way @sentry/node does (query-string auth, no content type). */
export async function postEnvelope(t: TestServer, p: TestProject, body: string): Promise<void> {
  const url = `${t.url}/api/${p.id}/envelope/?sentry_version=7&sentry_key=${p.key}&sentry_client=sentry.javascript.node%2F11.12.0`;
  const res = await fetch(url, { method: 'POST', body, headers: { 'user-agent': 'sentry.javascript.node/11.12.0' } });
  if (res.status !== 200) throw new Error(`ingest answered ${res.status}: ${await res.text()}`);
}

/** Runs `fn` over `items` with at most `width` in flight. */
export async function inParallel<T>(items: T[], width: number, fn: (item: T) => Promise<void>): Promise<void> {
  let i = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (i < items.length) await fn(items[i++]);
    }),
  );
}

// ---------------------------------------------------------------------------
// Events

/** What a test decides about one event; the payload is built from it. */
export interface EventSpec {
  eventId: string;
  group: GroupSpec;
  timestamp: number;
  release: string;
  environment: string;
  userId: string | null;
  deviceModel: string | null;
  deviceId: string | null;
  osName: string;
  osVersion: string;
  screen: string;
  tags: Record<string, string>;
}

export interface GroupSpec {
  key: string;
  kind: 'exception' | 'message';
  level: 'fatal' | 'error' | 'warning' | 'info' | 'debug';
  /** Exception: type and value; message: the message. */
  type: string;
  value: string;
  handled: boolean;
  platform: string;
  /** Innermost in-app frame (exceptions only). */
  file: string;
  fn: string;
  line: number;
}

export const GROUPS: GroupSpec[] = [
  {
    key: 'cart',
    kind: 'exception',
    level: 'error',
    type: 'TypeError',
    value: "Cannot read properties of undefined (reading 'price')",
    handled: true,
    platform: 'node',
    file: 'cart.js',
    fn: 'addItem',
    line: 42,
  },
  {
    key: 'checkout-crash',
    kind: 'exception',
    level: 'fatal',
    type: 'RangeError',
    value: 'Invalid array length',
    handled: false,
    platform: 'node',
    file: 'checkout.js',
    fn: 'buildRows',
    line: 17,
  },
  {
    key: 'db',
    kind: 'exception',
    level: 'error',
    type: 'ConnectionError',
    value: 'connection refused by db-primary',
    handled: true,
    platform: 'node',
    file: 'pool.js',
    fn: 'acquire',
    line: 88,
  },
  {
    key: 'unhandled',
    kind: 'exception',
    level: 'error',
    type: 'SyntaxError',
    value: 'Unexpected token < in JSON',
    handled: false,
    platform: 'node',
    file: 'api-client.js',
    fn: 'parseBody',
    line: 130,
  },
  {
    key: 'payment-warning',
    kind: 'message',
    level: 'warning',
    type: '',
    value: 'Payment provider slow to answer',
    handled: true,
    platform: 'node',
    file: '',
    fn: '',
    line: 0,
  },
  {
    key: 'cache-info',
    kind: 'message',
    level: 'info',
    type: '',
    value: 'Cache warmed for tenant acme',
    handled: true,
    platform: 'node',
    file: '',
    fn: '',
    line: 0,
  },
  {
    key: 'debug-trace',
    kind: 'message',
    level: 'debug',
    type: '',
    value: 'Retrying job after backoff',
    handled: true,
    platform: 'node',
    file: '',
    fn: '',
    line: 0,
  },
];

export function isCrash(g: GroupSpec): boolean {
  return g.level === 'fatal' || (g.kind === 'exception' && !g.handled);
}

/** The event payload as @sentry/node 11 sends it (trimmed to the parts that matter). */
export function eventPayload(e: EventSpec): object {
  const g = e.group;
  const base: Record<string, unknown> = {
    event_id: e.eventId,
    timestamp: e.timestamp / 1000,
    platform: g.platform,
    level: g.level,
    release: e.release || undefined,
    environment: e.environment,
    transaction: e.screen,
    server_name: 'web-1',
    user: e.userId ? { id: e.userId, email: `${e.userId}@example.com`, ip_address: '10.0.0.7' } : undefined,
    tags: e.tags,
    contexts: {
      os: { name: e.osName, version: e.osVersion },
      device: { model: e.deviceModel ?? undefined, arch: 'x64' },
      runtime: { name: 'node', version: 'v20.20.2' },
      trace: { trace_id: 'fb8d646ddfc145f386a844658c646e3c', span_id: '81f56ecc8377ed1d' },
    },
    breadcrumbs: [
      {
        timestamp: e.timestamp / 1000 - 2,
        category: 'http',
        type: 'http',
        data: { method: 'GET', url: '/api/cart', status_code: 200 },
      },
      { timestamp: e.timestamp / 1000 - 1, category: 'console', level: 'log', message: 'loading cart' },
    ],
    sdk: { name: 'sentry.javascript.node', version: '11.12.0', integrations: ['Http', 'Console'] },
    extra: { attempt: 1 },
  };
  if (e.deviceId)
    (base.contexts as Record<string, Record<string, unknown>>).device.device_unique_identifier = e.deviceId;
  if (g.kind === 'exception') {
    base.exception = {
      values: [
        {
          type: g.type,
          value: g.value,
          mechanism: { type: g.handled ? 'generic' : 'onuncaughtexception', handled: g.handled },
          stacktrace: {
            frames: [
              {
                filename: 'node:internal/modules/run_main',
                module: 'run_main',
                function: 'asyncRunEntryPointWithESMLoader',
                lineno: 117,
                colno: 5,
                in_app: false,
              },
              {
                filename: '/srv/app/server.js',
                module: 'server',
                function: 'handle',
                lineno: 12,
                colno: 3,
                in_app: true,
              },
              {
                filename: `/srv/app/src/${g.file}`,
                module: g.file.replace(/\.js$/, ''),
                function: g.fn,
                lineno: g.line,
                colno: 9,
                in_app: true,
                context_line: '  boom();',
              },
            ],
          },
        },
      ],
    };
  } else {
    base.message = g.value;
  }
  return base;
}

export async function sendEvents(t: TestServer, p: TestProject, events: EventSpec[], width = 8): Promise<void> {
  await inParallel(events, width, (e) =>
    postEnvelope(
      t,
      p,
      envelopeBody(
        {
          event_id: e.eventId,
          sent_at: iso(t.clock.now()),
          sdk: { name: 'sentry.javascript.node', version: '11.12.0' },
        },
        [{ type: 'event', payload: eventPayload(e) }],
      ),
    ),
  );
}

export const RELEASES = ['app@1.0.0', 'app@1.1.0', 'app@2.0.0+build.7', 'web/3.1'] as const;
export const ENVIRONMENTS = ['production', 'staging'] as const;
export const DEVICES = ['Pixel 8', 'iPhone15,2', 'Galaxy S23', 'ThinkPad X1'] as const;
export const OS_VERSIONS = ['14', '17.4', '13', '12.11'] as const;
export const SCREENS = ['GET /cart', 'POST /checkout', 'GET /search'] as const;
export const USERS = Array.from({ length: 12 }, (_, i) => `user-${i + 1}`);

/**
 * A deterministic data set: `count` events over the `days` days before `now`
 * (a few in the current hour), releases rolling forward with time, and some
 * events without release, user or device.
 */
export function makeDataset(seed: number, count: number, now: number, days = 6): EventSpec[] {
  const r = rng(seed);
  const out: EventSpec[] = [];
  for (let i = 0; i < count; i++) {
    const group = GROUPS[i < GROUPS.length ? i : r.int(GROUPS.length)];
    // Every 10th event lands in the current or previous hour so sparklines have recent points.
    const age = i % 10 === 0 ? r.int(2 * HOUR) : r.int(days * DAY);
    const timestamp = now - 1 - age;
    const phase = Math.min(RELEASES.length - 1, Math.floor(((days * DAY - age) / (days * DAY)) * RELEASES.length));
    const release = i % 17 === 5 ? '' : RELEASES[r.next() < 0.7 ? phase : r.int(RELEASES.length)];
    const userless = i % 11 === 3;
    out.push({
      eventId: newEventId(),
      group,
      timestamp,
      release,
      environment: r.pick(ENVIRONMENTS),
      userId: userless ? null : r.pick(USERS),
      deviceModel: i % 13 === 4 ? null : r.pick(DEVICES),
      deviceId: i % 13 === 4 ? null : `dev-${r.int(6)}`,
      osName: 'Debian',
      osVersion: r.pick(OS_VERSIONS),
      screen: r.pick(SCREENS),
      tags: { feature: r.pick(['checkout', 'search', 'profile']), region: r.pick(['eu', 'us']) },
    });
  }
  return out;
}

// ---------------------------------------------------------------------------
// Sessions

export interface SessionSpec {
  sid: string;
  did: string;
  started: number;
  release: string;
  environment: string;
  status: 'ok' | 'exited' | 'crashed' | 'errored' | 'abnormal';
  errors: number;
}

export function makeSessions(seed: number, count: number, now: number, days = 6): SessionSpec[] {
  const r = rng(seed);
  const statuses = ['exited', 'exited', 'exited', 'crashed', 'errored', 'abnormal', 'ok'] as const;
  return Array.from({ length: count }, (_, i) => {
    const age = i % 9 === 0 ? r.int(HOUR) : r.int(days * DAY);
    const started = now - 1 - age;
    const phase = Math.min(RELEASES.length - 1, Math.floor(((days * DAY - age) / (days * DAY)) * RELEASES.length));
    const status = r.pick(statuses);
    return {
      sid: randomBytes(16).toString('hex'),
      did: r.pick(USERS),
      started,
      release: RELEASES[phase],
      environment: 'production',
      status,
      errors: status === 'exited' && r.next() < 0.3 ? 2 : status === 'errored' ? 1 : 0,
    };
  });
}

/** Each session as an `init` update, then (unless still ok) a final update with its end status. */
export async function sendSessions(t: TestServer, p: TestProject, sessions: SessionSpec[]): Promise<void> {
  await inParallel(sessions, 8, async (s) => {
    const attrs = { release: s.release, environment: s.environment };
    const header = { sent_at: iso(t.clock.now()), sdk: { name: 'sentry.javascript.node', version: '11.12.0' } };
    await postEnvelope(
      t,
      p,
      envelopeBody(header, [
        {
          type: 'session',
          payload: {
            sid: s.sid,
            did: s.did,
            init: true,
            started: iso(s.started),
            timestamp: iso(s.started),
            status: 'ok',
            errors: 0,
            attrs,
          },
        },
      ]),
    );
    if (s.status !== 'ok' || s.errors > 0) {
      await postEnvelope(
        t,
        p,
        envelopeBody(header, [
          {
            type: 'session',
            payload: {
              sid: s.sid,
              did: s.did,
              init: false,
              started: iso(s.started),
              timestamp: iso(s.started + 1000),
              status: s.status,
              errors: s.errors,
              duration: 1,
              attrs,
            },
          },
        ]),
      );
    }
  });
}

export interface AggregateSpec {
  started: number;
  release: string;
  exited: number;
  errored: number;
  abnormal: number;
  crashed: number;
}

export async function sendAggregates(t: TestServer, p: TestProject, aggs: AggregateSpec[]): Promise<void> {
  const byRelease = new Map<string, AggregateSpec[]>();
  for (const a of aggs) byRelease.set(a.release, [...(byRelease.get(a.release) ?? []), a]);
  for (const [release, list] of byRelease) {
    await postEnvelope(
      t,
      p,
      envelopeBody({ sent_at: iso(t.clock.now()), sdk: { name: 'sentry.javascript.node', version: '11.12.0' } }, [
        {
          type: 'sessions',
          payload: {
            aggregates: list.map((a) => ({
              started: iso(a.started),
              exited: a.exited,
              errored: a.errored,
              abnormal: a.abnormal,
              crashed: a.crashed,
            })),
            attrs: { release, environment: 'production' },
          },
        },
      ]),
    );
  }
}

// ---------------------------------------------------------------------------
// The independent model

export interface Window {
  from: number;
  to: number;
}

/** Hour buckets whose start lies in [from, to) (the documented rule for aggregates). */
export function bucketsOf(w: Window): number[] {
  const out: number[] = [];
  for (let b = Math.ceil(w.from / HOUR) * HOUR; b < w.to; b += HOUR) out.push(b);
  return out;
}

export const inBuckets = (w: Window, ts: number) => {
  const b = hourOf(ts);
  return b >= w.from && b < w.to;
};
export const inWindow = (w: Window, ts: number) => ts >= w.from && ts < w.to;

export function titleOf(g: GroupSpec): string {
  return g.kind === 'exception' ? `${g.type}: ${g.value}` : g.value;
}

export interface SessionTotals {
  total: number;
  crashed: number;
  errored: number;
}

export function sessionOutcome(s: SessionSpec): SessionTotals {
  const crashed = s.status === 'crashed' ? 1 : 0;
  const errored = !crashed && (s.status === 'errored' || s.status === 'abnormal' || s.errors > 0) ? 1 : 0;
  return { total: 1, crashed, errored };
}

export function sessionTotals(
  w: Window,
  sessions: SessionSpec[],
  aggs: AggregateSpec[],
  release?: string,
): SessionTotals {
  const out = { total: 0, crashed: 0, errored: 0 };
  for (const s of sessions) {
    if ((release !== undefined && s.release !== release) || !inBuckets(w, s.started)) continue;
    const o = sessionOutcome(s);
    out.total += 1;
    out.crashed += o.crashed;
    out.errored += o.errored;
  }
  for (const a of aggs) {
    if ((release !== undefined && a.release !== release) || !inBuckets(w, a.started)) continue;
    out.total += a.exited + a.errored + a.abnormal + a.crashed;
    out.crashed += a.crashed;
    out.errored += a.errored + a.abnormal;
  }
  return out;
}

export const rate = (s: SessionTotals) => (s.total === 0 ? null : 1 - s.crashed / s.total);

export async function getJson<T = any>(t: TestServer, path: string): Promise<{ status: number; body: T }> {
  const res = await t.api(path);
  return { status: res.status, body: (await res.json()) as T };
}
