// Ingest through the queue inside workerd: the Worker's app answers once a work is
// enqueued (the producer here records what it would send, cloned as the queue clones
// it), and the consumer commits batches built by the runtime's own createMessageBatch
// on the real D1. The rows equal those the direct path writes for the same envelopes; a
// redelivered batch, a batch committed twice in one delivery and a malformed message
// change no count; and the queue binding of wrangler.jsonc takes the message.
import { createExecutionContext, createMessageBatch, getQueueResult } from 'cloudflare:test';
import { env } from 'cloudflare:workers';
import type { Hono } from 'hono';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildWorkerDeps, type WorkerEnv } from '../../../../src/editions/workers/deps.js';
import {
  consumeIngestBatch,
  type QueueBinding,
  type QueueIngestSink,
} from '../../../../src/editions/workers/ingest-queue.js';
import { createApp } from '../../../../src/editions/app.js';
import type { Store } from '../../../../src/store/database.js';
import { migrate } from '../../../../src/store/migrate.js';
import { createProject, PROJECT_DEFAULTS } from '../../../../src/store/projects.js';
import nodeEvent from '../../../fixtures/sdk-captures/node-event.envelope?raw';
import nodeMessage from '../../../fixtures/sdk-captures/node-message.envelope?raw';
import nodeSessionUpdate from '../../../fixtures/sdk-captures/node-session-update.envelope?raw';
import nodeSessionCrashed from '../../../fixtures/sdk-captures/node-session-crashed.envelope?raw';
import nodeAggregates from '../../../fixtures/sdk-captures/node-session-aggregates.envelope?raw';
import { withoutQueue } from './direct-path.js';

const FIXTURE_EVENT_ID = '53581e2b976e4b7c89e8cf789073fd8e';
const QUEUE = 'faultline-ingest';

/** The producer side, recording each body as the queue would deliver it (a structured clone). */
class RecordingQueue implements QueueBinding {
  readonly bodies: unknown[] = [];
  async send(body: unknown): Promise<void> {
    this.bodies.push(structuredClone(body));
  }
}

const workerEnv = env as unknown as WorkerEnv;
let direct: { app: Hono; store: Store };
let queued: { app: Hono; store: Store; queue: RecordingQueue; sink: QueueIngestSink };

beforeAll(async () => {
  const settings = { RATE_LIMIT: '0', LOG_LEVEL: 'silent' };
  const directDeps = buildWorkerDeps({ ...withoutQueue(workerEnv), ...settings });
  const queue = new RecordingQueue();
  const queueDeps = buildWorkerDeps({ ...workerEnv, ...settings, INGEST_QUEUE: queue });
  direct = { app: createApp(directDeps), store: directDeps.store };
  queued = { app: createApp(queueDeps), store: queueDeps.store, queue, sink: queueDeps.ingest as QueueIngestSink };
  await migrate(direct.store);
});

let n = 0;
async function project() {
  n += 1;
  return createProject(
    direct.store.db,
    { ...PROJECT_DEFAULTS, slug: `q${n}-${Date.now()}`, name: `q${n}` },
    Date.now(),
  );
}
type Project = Awaited<ReturnType<typeof project>>;

async function send(app: Hono, p: Project, body: string): Promise<number> {
  const res = await app.fetch(
    new Request(`http://worker/api/${p.id}/envelope/?sentry_key=${p.dsn_key}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-sentry-envelope' },
      body,
    }),
  );
  await res.arrayBuffer();
  return res.status;
}

const hex32 = (i: number, tag: string) => `${tag}${i.toString(16).padStart(8, '0')}`.padEnd(32, '0');
const eventEnvelope = (id: string, release = 'app@1.0.0') =>
  nodeEvent.replaceAll(FIXTURE_EVENT_ID, id).replaceAll('app@1.0.0', release);

/** 100 envelopes of every kind the SDK sends: new events, repeats of one event id, messages, sessions, aggregates. */
function mixedEnvelopes(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 100; i++) {
    switch (i % 6) {
      case 0:
      case 1:
        out.push(eventEnvelope(hex32(i, 'c'), i % 4 === 0 ? 'app@1.0.0' : 'app@1.1.0'));
        break;
      case 2:
        out.push(eventEnvelope(hex32(0, 'c'))); // a duplicate of the first event
        break;
      case 3:
        out.push(nodeMessage);
        break;
      case 4:
        out.push(i % 12 === 4 ? nodeSessionUpdate : nodeSessionCrashed);
        break;
      default:
        out.push(nodeAggregates);
    }
  }
  return out;
}

/** What a project's rows say, without ids, times of writing and the project itself. */
async function snapshot(store: Store, p: Project) {
  const drop = (row: Record<string, unknown>) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(row)) {
      if (
        k === 'id' ||
        k === 'project_id' ||
        k === 'issue_id' ||
        k === 'stored_id' ||
        k.endsWith('_at') ||
        k.endsWith('_seen_id') ||
        k.startsWith('payload_')
      )
        continue;
      out[k] = typeof v === 'bigint' ? Number(v) : v;
    }
    return out;
  };
  const sorted = (rows: Record<string, unknown>[]) =>
    rows
      .map(drop)
      .map((r) => JSON.stringify(r))
      .sort();
  const db = store.db;
  const issueFp = db.selectFrom('issues').select(['id', 'fingerprint']).where('project_id', '=', p.id);
  return {
    issues: sorted(await db.selectFrom('issues').selectAll().where('project_id', '=', p.id).execute()),
    events: sorted(await db.selectFrom('events').selectAll().where('project_id', '=', p.id).execute()),
    seen: sorted(await db.selectFrom('seen_events').select(['event_id']).where('project_id', '=', p.id).execute()),
    issueHourly: sorted(
      await db
        .selectFrom('issue_hourly')
        .innerJoin(issueFp.as('i'), 'i.id', 'issue_hourly.issue_id')
        .select(['i.fingerprint', 'issue_hourly.bucket', 'issue_hourly.events'])
        .execute(),
    ),
    issueUsers: sorted(
      await db
        .selectFrom('issue_users')
        .innerJoin(issueFp.as('i'), 'i.id', 'issue_users.issue_id')
        .select(['i.fingerprint', 'issue_users.user_key'])
        .execute(),
    ),
    issueReleases: sorted(
      await db
        .selectFrom('issue_releases')
        .innerJoin(issueFp.as('i'), 'i.id', 'issue_releases.issue_id')
        .select(['i.fingerprint', 'issue_releases.release'])
        .execute(),
    ),
    projectHourly: sorted(await db.selectFrom('project_hourly').selectAll().where('project_id', '=', p.id).execute()),
    releases: sorted(await db.selectFrom('releases').selectAll().where('project_id', '=', p.id).execute()),
    usage: sorted(await db.selectFrom('daily_usage').select(['events']).where('project_id', '=', p.id).execute()),
    sessions: sorted(await db.selectFrom('sessions').selectAll().where('project_id', '=', p.id).execute()),
    sessionHourly: sorted(await db.selectFrom('session_hourly').selectAll().where('project_id', '=', p.id).execute()),
    changes: sorted(
      await db.selectFrom('issue_changes').select(['kind', 'release']).where('project_id', '=', p.id).execute(),
    ),
    outbox: sorted(
      await db.selectFrom('alert_outbox').select(['type', 'state']).where('project_id', '=', p.id).execute(),
    ),
  };
}

function batchOf(bodies: unknown[], ids: string[]) {
  return createMessageBatch(
    QUEUE,
    bodies.map((body, i) => ({ id: ids[i], timestamp: new Date(1_790_000_000_000), attempts: 1, body })),
  );
}

const consumerOptions = () => ({
  store: queued.store,
  logger: { debug() {}, info() {}, warn() {}, error() {} } as never,
  now: () => Date.now(),
});

describe('ingest through the queue inside workerd', () => {
  it('commits a batch of 100 mixed envelopes to exactly the rows of the direct path', async () => {
    const envelopes = mixedEnvelopes();
    const a = await project();
    for (const body of envelopes) expect(await send(direct.app, a, body)).toBe(200);

    const b = await project();
    const before = queued.queue.bodies.length;
    for (const body of envelopes) expect(await send(queued.app, b, body)).toBe(200);
    const bodies = queued.queue.bodies.slice(before);
    expect(bodies).toHaveLength(100);
    // Nothing is written before the consumer runs.
    expect((await snapshot(queued.store, b)).seen).toEqual([]);

    const batch = batchOf(
      bodies,
      bodies.map((_, i) => `parity-${i}`),
    );
    const summary = await consumeIngestBatch(batch, consumerOptions());
    expect(summary).toMatchObject({ committed: 100, redelivered: 0, retried: 0, oneBatch: true });
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.explicitAcks).toHaveLength(100);
    expect(result.retryMessages).toEqual([]);

    const expected = await snapshot(direct.store, a);
    expect(expected.events.length).toBeGreaterThan(10);
    expect(expected.sessionHourly.length).toBeGreaterThan(0);
    expect(await snapshot(queued.store, b)).toEqual(expected);
  });

  it('acknowledges a redelivered batch without counting anything twice', async () => {
    const p = await project();
    const before = queued.queue.bodies.length;
    for (const body of [eventEnvelope(hex32(1, 'd')), nodeAggregates, nodeSessionCrashed])
      expect(await send(queued.app, p, body)).toBe(200);
    const bodies = queued.queue.bodies.slice(before);
    const ids = bodies.map((_, i) => `again-${i}`);
    await consumeIngestBatch(batchOf(bodies, ids), consumerOptions());
    const once = await snapshot(queued.store, p);

    // The consumer died after the commit and before the acknowledgement: the queue delivers again.
    // The messages with sessions left a receipt and are acknowledged unwritten; the event's
    // left none (it costs D1 bytes per event) and commits again, deduplicated by event id.
    const receipts = await queued.store.db
      .selectFrom('ingest_receipts')
      .select('message_id')
      .where('message_id', 'in', ids)
      .orderBy('message_id')
      .execute();
    expect(receipts.map((r) => r.message_id)).toEqual(['again-1', 'again-2']);
    const again = batchOf(bodies, ids);
    const summary = await consumeIngestBatch(again, consumerOptions());
    expect(summary).toMatchObject({ committed: 1, redelivered: 2, retried: 0 });
    expect((await getQueueResult(again, createExecutionContext())).explicitAcks).toHaveLength(3);
    expect(await snapshot(queued.store, p)).toEqual(once);
  });

  it('commits one by one when the batch fails, and leaves a malformed message to the retry path', async () => {
    const p = await project();
    const before = queued.queue.bodies.length;
    expect(await send(queued.app, p, nodeAggregates)).toBe(200);
    const [aggregates] = queued.queue.bodies.slice(before);
    // The same message twice in one delivery: the second receipt fails the one batch.
    const batch = batchOf([aggregates, aggregates, { v: 99 }], ['twice', 'twice', 'bad']);
    const summary = await consumeIngestBatch(batch, consumerOptions());
    expect(summary).toMatchObject({ committed: 1, redelivered: 1, retried: 1, oneBatch: false });
    const result = await getQueueResult(batch, createExecutionContext());
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(['bad']);
    const hourly = await queued.store.db
      .selectFrom('session_hourly')
      .select(['total'])
      .where('project_id', '=', p.id)
      .execute();
    const once = (await snapshot(direct.store, p)).sessionHourly;
    expect(hourly.reduce((s, h) => s + Number(h.total), 0)).toBeGreaterThan(0);
    expect(once).toEqual(await snapshot(queued.store, p).then((s) => s.sessionHourly));
    // Counted once although the message came twice.
    const direct1 = await project();
    expect(await send(direct.app, direct1, nodeAggregates)).toBe(200);
    expect((await snapshot(direct.store, direct1)).sessionHourly).toEqual(
      (await snapshot(queued.store, p)).sessionHourly,
    );
  });

  it('keeps the daily quota exact per request: a project with a quota is not merged', async () => {
    const p = await createProject(
      direct.store.db,
      { ...PROJECT_DEFAULTS, slug: `quota-${Date.now()}`, name: 'quota', daily_quota: 7 },
      Date.now(),
    );
    const before = queued.queue.bodies.length;
    for (let i = 0; i < 20; i++) expect(await send(queued.app, p, eventEnvelope(hex32(i, 'f')))).toBe(200);
    const bodies = queued.queue.bodies.slice(before);
    const summary = await consumeIngestBatch(
      batchOf(
        bodies,
        bodies.map((_, i) => `quota-${i}`),
      ),
      consumerOptions(),
    );
    expect(summary).toMatchObject({ committed: 20, refused: 13, oneBatch: true });
    expect((await snapshot(queued.store, p)).seen).toHaveLength(7);
  });

  it('answers an envelope too large for a message by committing it directly', async () => {
    const p = await project();
    const before = queued.sink.counts.direct;
    const big = eventEnvelope(hex32(7, 'e')).replace('depcheck boom', `depcheck boom ${'x'.repeat(200_000)}`);
    expect(await send(queued.app, p, big)).toBe(200);
    expect(queued.sink.counts.direct).toBe(before + 1);
    expect((await snapshot(queued.store, p)).seen).toHaveLength(1);
  });

  it('the queue binding of wrangler.jsonc takes a work as the producer sends it', async () => {
    expect(workerEnv.INGEST_QUEUE).toBeDefined();
    const real = buildWorkerDeps({ ...workerEnv, RATE_LIMIT: '0', LOG_LEVEL: 'silent' });
    const p = await project();
    expect(await send(createApp(real), p, eventEnvelope(hex32(8, 'e')))).toBe(200);
    expect((real.ingest as QueueIngestSink).counts).toEqual({ enqueued: 1, direct: 0 });
  });
});
