// The D1 ingest commit from inside the Workers runtime: the Worker's own app (its deps
// built from the D1 binding of wrangler.jsonc) takes the real SDK's envelopes, many at
// once, and the tables hold exactly what the rules say: one issue and exact counts for
// parallel envelopes to a new issue, the daily quota exact, duplicates of one event_id
// counted once, a resolved issue flipped to regression once, sampling, sessions.
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import { withoutQueue } from './direct-path.js';
import type { D1IngestSink } from '../../../../src/editions/workers/ingest-sink.js';
import { createApp } from '../../../../src/editions/app.js';
import { eventSummaryJson, listEvents } from '../../../../src/read/events.js';
import { fillEventTags } from '../../../../src/store/event-text.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import nodeEvent from '../../../fixtures/sdk-captures/node-event.envelope?raw';
import nodeMessage from '../../../fixtures/sdk-captures/node-message.envelope?raw';
import nodeSessionUpdate from '../../../fixtures/sdk-captures/node-session-update.envelope?raw';
import nodeSessionCrashed from '../../../fixtures/sdk-captures/node-session-crashed.envelope?raw';
import nodeAggregates from '../../../fixtures/sdk-captures/node-session-aggregates.envelope?raw';

const FIXTURE_EVENT_ID = '53581e2b976e4b7c89e8cf789073fd8e';

let app: Hono;
let store: Store;
let sink: D1IngestSink;

beforeAll(async () => {
  const deps = buildWorkerDeps({ ...withoutQueue(env as unknown as WorkerEnv), RATE_LIMIT: '0', LOG_LEVEL: 'silent' });
  store = deps.store;
  sink = deps.ingest as D1IngestSink;
  app = createApp(deps);
  await migrate(store);
});

let n = 0;
async function project(settings: Partial<typeof PROJECT_DEFAULTS> = {}) {
  n += 1;
  return createProject(
    store.db,
    { ...PROJECT_DEFAULTS, ...settings, slug: `p${n}-${Date.now()}`, name: `p${n}` },
    Date.now(),
  );
}

type Project = Awaited<ReturnType<typeof project>>;

function send(p: Project, body: string): Promise<Response> {
  return Promise.resolve(
    app.fetch(
      new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-sentry-envelope' },
        body,
      }),
    ),
  );
}

/** The SDK's event envelope with another event_id (and the payload otherwise as captured). */
function eventEnvelope(eventId: string, replace: [string, string][] = []): string {
  let text = nodeEvent.replaceAll(FIXTURE_EVENT_ID, eventId);
  for (const [from, to] of replace) text = text.replaceAll(from, to);
  return text;
}

const hex32 = (i: number, tag = 'a') => `${tag}${i.toString(16).padStart(8, '0')}`.padEnd(32, '0');

async function tagsOf(event: { id: number; tags: string }): Promise<string> {
  const row = { ...event };
  await fillEventTags(store.db, [row]);
  return row.tags;
}

async function issuesOf(p: Project) {
  return store.db.selectFrom('issues').selectAll().where('project_id', '=', p.id).execute();
}

async function count(
  table: 'events' | 'seen_events' | 'issue_changes' | 'alert_outbox' | 'payload_chunks',
  p: Project,
): Promise<number> {
  const row = await store.db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('project_id', '=', p.id)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

describe('D1 ingest inside workerd', () => {
  it('stores the SDK event as the server does: issue, event, payload, tags, aggregates, release, change and alert', async () => {
    const p = await project();
    const tagged = eventEnvelope(FIXTURE_EVENT_ID, [
      ['"platform":"node"', '"platform":"node","tags":{"zeta":"1","alpha":"2","10":"x"}'],
    ]);
    const res = await send(p, tagged);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: FIXTURE_EVENT_ID });
    const [issue] = await issuesOf(p);
    expect(issue).toMatchObject({
      event_count: 1,
      stored_count: 1,
      status: 'unresolved',
      first_release: 'app@1.0.0',
      last_release: 'app@1.0.0',
      regressed_at: null,
    });
    const event = await store.db
      .selectFrom('events')
      .selectAll()
      .where('project_id', '=', p.id)
      .executeTakeFirstOrThrow();
    expect(issue.first_seen_id).toBe(event.id);
    expect(issue.last_seen_id).toBe(event.id);
    expect(event.issue_id).toBe(issue.id);
    // The title is the exception's type and message: the row leaves it out, readers make it again.
    expect(event.title).toBe('');
    expect(issue.title).toBe(`${event.error_type}: ${event.message}`);
    expect(eventSummaryJson(event).title).toBe(issue.title);
    // A message event's title is no such pair: the row keeps it.
    const m = await project();
    expect((await send(m, nodeMessage)).status).toBe(200);
    const [messageIssue] = await issuesOf(m);
    const messageEvent = await store.db
      .selectFrom('events')
      .selectAll()
      .where('project_id', '=', m.id)
      .executeTakeFirstOrThrow();
    expect(messageEvent.title).toBe(messageIssue.title);
    expect(eventSummaryJson(messageEvent).title).toBe(messageIssue.title);
    const seen = await store.db
      .selectFrom('seen_events')
      .selectAll()
      .where('project_id', '=', p.id)
      .executeTakeFirstOrThrow();
    expect(seen.stored_id).toBe(event.id);
    const chunk = await store.db
      .selectFrom('payload_chunks')
      .selectAll()
      .where('id', '=', Number(event.payload_chunk))
      .executeTakeFirstOrThrow();
    expect(Number(chunk.received_at)).toBe(Number(event.received_at));
    const tags = await store.db
      .selectFrom('event_tags')
      .select(['key', 'value'])
      .where('event_id', '=', event.id)
      .execute();
    // The row leaves its tags to event_tags; readers take them back in the event's order.
    expect(event.tags).toBe('');
    expect(tags.length).toBeGreaterThan(0);
    const summary = eventSummaryJson({ ...event, tags: await tagsOf(event) });
    expect(Object.entries(summary.tags)).toEqual(tags.map((t) => [t.key, t.value]));
    // In the order of the JSON the row would have held (src/ingest/prepare.ts).
    expect(JSON.stringify(summary.tags)).toBe(JSON.stringify({ zeta: '1', alpha: '2', 10: 'x' }));
    const listed = await listEvents(store.db, p.id, { exact: {}, tags: [], crash: false, limit: 10, window: null });
    expect(JSON.stringify(listed.events[0].tags)).toBe(JSON.stringify(summary.tags));
    expect(
      (await store.db.selectFrom('releases').selectAll().where('project_id', '=', p.id).execute()).map((r) => [
        r.release,
        r.platforms,
      ]),
    ).toEqual([['app@1.0.0', '["node"]']]);
    const changes = await store.db
      .selectFrom('issue_changes')
      .select(['kind', 'release'])
      .where('project_id', '=', p.id)
      .execute();
    expect(changes).toEqual([{ kind: 'new_issue', release: 'app@1.0.0' }]);
    const outbox = await store.db
      .selectFrom('alert_outbox')
      .select(['type', 'payload', 'state'])
      .where('project_id', '=', p.id)
      .execute();
    expect(outbox.map((o) => [o.type, o.state, JSON.parse(o.payload).event_count])).toEqual([
      ['new_issue', 'pending', 1],
    ]);
    const hourly = await store.db
      .selectFrom('project_hourly')
      .select(['events', 'errors'])
      .where('project_id', '=', p.id)
      .execute();
    expect(hourly).toEqual([{ events: 1, errors: 1 }]);

    // The event detail reads its payload back from the chunk.
    const detail = await app.fetch(new Request(`http://worker/api/projects/${p.slug}/events/${FIXTURE_EVENT_ID}`));
    expect(detail.status).toBe(200);
    expect(await detail.text()).toContain('depcheck boom: cannot read foo of undefined');
  });

  it('counts many parallel envelopes to one new issue exactly', async () => {
    const p = await project();
    const N = 40;
    const answers = await Promise.all(Array.from({ length: N }, (_, i) => send(p, eventEnvelope(hex32(i)))));
    expect(answers.map((r) => r.status)).toEqual(Array(N).fill(200));
    const issues = await issuesOf(p);
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatchObject({ event_count: N, stored_count: N, status: 'unresolved' });
    expect(await count('events', p)).toBe(N);
    expect(await count('seen_events', p)).toBe(N);
    expect(await count('issue_changes', p)).toBe(1);
    expect(await count('alert_outbox', p)).toBe(1);
    const usage = await store.db.selectFrom('daily_usage').select('events').where('project_id', '=', p.id).execute();
    expect(usage.reduce((s, u) => s + Number(u.events), 0)).toBe(N);
    const hourly = await store.db
      .selectFrom('issue_hourly')
      .select('events')
      .where('issue_id', '=', issues[0].id)
      .execute();
    expect(hourly.reduce((s, h) => s + Number(h.events), 0)).toBe(N);
    const ph = await store.db.selectFrom('project_hourly').select('events').where('project_id', '=', p.id).execute();
    expect(ph.reduce((s, h) => s + Number(h.events), 0)).toBe(N);
    // No marker survives the batches.
    const seen = await store.db.selectFrom('seen_events').select('stored_id').where('project_id', '=', p.id).execute();
    expect(seen.every((s) => s.stored_id !== null && Number(s.stored_id) > 0)).toBe(true);
    expect(Number(issues[0].last_seen_id)).toBeGreaterThan(0);
    expect(issues[0].regressed_at).toBeNull();
  });

  it('holds the daily quota exactly under parallel envelopes, and answers the rest 429', async () => {
    const p = await project({ daily_quota: 7 });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => send(p, eventEnvelope(hex32(i, 'b')))));
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(7);
    expect(statuses.filter((s) => s === 429)).toHaveLength(13);
    expect(answers.find((r) => r.status === 429)!.headers.get('retry-after')).toMatch(/^\d+$/);
    const [issue] = await issuesOf(p);
    expect(issue.event_count).toBe(7);
    expect(await count('seen_events', p)).toBe(7);
    const usage = await store.db.selectFrom('daily_usage').select('events').where('project_id', '=', p.id).execute();
    expect(usage.reduce((s, u) => s + Number(u.events), 0)).toBe(7);
  });

  it('counts parallel duplicates of one event_id once', async () => {
    const p = await project();
    const answers = await Promise.all(Array.from({ length: 20 }, () => send(p, eventEnvelope(hex32(1, 'c')))));
    expect(answers.map((r) => r.status)).toEqual(Array(20).fill(200));
    const [issue] = await issuesOf(p);
    expect(issue).toMatchObject({ event_count: 1, stored_count: 1 });
    expect(await count('events', p)).toBe(1);
    expect(await count('seen_events', p)).toBe(1);
    expect(await count('payload_chunks', p)).toBe(1);
    expect(await count('issue_changes', p)).toBe(1);
  });

  it('flips a resolved issue to regression once under parallel envelopes of a new release', async () => {
    const p = await project();
    expect((await send(p, eventEnvelope(hex32(0, 'd')))).status).toBe(200);
    const [before] = await issuesOf(p);
    await store.db
      .updateTable('issues')
      .set({ status: 'resolved', resolved_at: Date.now() })
      .where('id', '=', before.id)
      .execute();
    const answers = await Promise.all(
      Array.from({ length: 15 }, (_, i) => send(p, eventEnvelope(hex32(i + 1, 'd'), [['app@1.0.0', 'app@2.0.0']]))),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(15).fill(200));
    const [issue] = await issuesOf(p);
    expect(issue.status).toBe('regression');
    expect(issue.event_count).toBe(16);
    expect(Number(issue.regressed_at)).toBeGreaterThan(0);
    const changes = await store.db
      .selectFrom('issue_changes')
      .select(['kind', 'release'])
      .where('project_id', '=', p.id)
      .orderBy('id')
      .execute();
    expect(changes).toEqual([
      { kind: 'new_issue', release: 'app@1.0.0' },
      { kind: 'regression', release: 'app@2.0.0' },
    ]);
    const outbox = await store.db
      .selectFrom('alert_outbox')
      .select('type')
      .where('project_id', '=', p.id)
      .orderBy('id')
      .execute();
    expect(outbox.map((o) => o.type)).toEqual(['new_issue', 'regression']);
    // A release seen before the resolution does not reopen it.
    const again = await issuesOf(p);
    await store.db
      .updateTable('issues')
      .set({ status: 'resolved', resolved_at: Date.now() + 1000 })
      .where('id', '=', again[0].id)
      .execute();
    expect((await send(p, eventEnvelope(hex32(99, 'd'), [['app@1.0.0', 'app@2.0.0']]))).status).toBe(200);
    expect((await issuesOf(p))[0].status).toBe('resolved');
  });

  it('samples: the first sample_keep_first events of an issue are stored, the rest counted only', async () => {
    const p = await project({ sample_keep_first: 3, sample_rate: 0 });
    const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => send(p, eventEnvelope(hex32(i, 'e')))));
    expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
    const [issue] = await issuesOf(p);
    expect(issue).toMatchObject({ event_count: 10, stored_count: 3 });
    expect(await count('events', p)).toBe(3);
    const seen = await store.db.selectFrom('seen_events').select('stored_id').where('project_id', '=', p.id).execute();
    expect(seen.filter((s) => s.stored_id === null)).toHaveLength(7);
    expect(await count('payload_chunks', p)).toBe(3);
  });

  it('takes several events of one envelope, some already seen, and a message to another issue', async () => {
    const p = await project();
    expect((await send(p, eventEnvelope(hex32(1, 'f')))).status).toBe(200);
    const items = [hex32(1, 'f'), hex32(2, 'f'), hex32(3, 'f')].map((id) =>
      eventEnvelope(id).split('\n').slice(1).join('\n'),
    );
    const header = JSON.stringify({ sent_at: new Date().toISOString() });
    const msg = nodeMessage.split('\n').slice(1).join('\n');
    expect((await send(p, [header, ...items, msg].join('\n'))).status).toBe(200);
    const issues = await issuesOf(p);
    expect(issues.map((i) => i.event_count).sort()).toEqual([1, 3]);
    expect(await count('events', p)).toBe(4);
    expect(await count('issue_changes', p)).toBe(2);
  });

  it('takes an envelope of 100 events and an event of 1.5 MB (split over chunks and statements within D1 limits)', async () => {
    const p = await project();
    const header = JSON.stringify({ sent_at: new Date().toISOString() });
    const items = Array.from({ length: 100 }, (_, i) => eventEnvelope(hex32(i, '9')).split('\n').slice(1).join('\n'));
    const many = await send(p, [header, ...items].join('\n'));
    expect(many.status, await many.clone().text()).toBe(200);
    let noise = '';
    while (noise.length < 1_500_000) noise += Math.random().toString(36).slice(2);
    const big = eventEnvelope(hex32(1000, '9')).replace('"in_app":false', `"in_app":false,"vars":{"noise":"${noise}"}`);
    expect(big.length).toBeGreaterThan(1_500_000);
    const bigAnswer = await send(p, big);
    expect(bigAnswer.status, await bigAnswer.clone().text()).toBe(200);
    const [issue] = await issuesOf(p);
    expect(issue).toMatchObject({ event_count: 101, stored_count: 101 });
    expect(await count('events', p)).toBe(101);
    const detail = await app.fetch(new Request(`http://worker/api/projects/${p.slug}/events/${hex32(1000, '9')}`));
    expect(detail.status).toBe(200);
    expect(await detail.text()).toContain(noise.slice(0, 1000));
  });

  it('records sessions and aggregates as release health', async () => {
    const p = await project();
    for (const body of [nodeSessionUpdate, nodeSessionCrashed, nodeAggregates])
      expect((await send(p, body)).status).toBe(200);
    const sessions = await store.db.selectFrom('sessions').selectAll().where('project_id', '=', p.id).execute();
    expect(sessions.length).toBeGreaterThan(0);
    const hourly = await store.db
      .selectFrom('session_hourly')
      .select(['total', 'crashed', 'errored'])
      .where('project_id', '=', p.id)
      .execute();
    const total = hourly.reduce((s, h) => s + Number(h.total), 0);
    expect(total).toBeGreaterThan(0);
    for (const h of hourly) expect(Number(h.crashed) + Number(h.errored)).toBeLessThanOrEqual(Number(h.total));
  });

  it('counts its batches and statements', () => {
    expect(sink.counts.batches).toBeGreaterThan(0);
    expect(sink.counts.failed).toBe(0);
  });
});
