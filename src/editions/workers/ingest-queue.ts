// Ingest through a Cloudflare Queue (docs/architecture.md "Workers edition"): when
// the Worker is bound to a queue (`INGEST_QUEUE`), an ingest request is answered once its
// work is enqueued, which Cloudflare keeps durably. The consumer commits a delivery of up
// to 100 works in one D1 `db.batch()` built by the direct path's builder
// (src/ingest/d1-commit.ts). Works of one project and UTC day are merged into one work
// (mergeWorks): the builder's statements apply the rules to the merged events as they
// would to the same works committed one request at a time, in about twenty statements
// instead of twenty per request. Projects with a daily quota keep one work per request,
// since the quota refuses a request's work whole.
//
// Delivery is at least once. Events are deduplicated by event id (seen_events): every
// count joins to the rows a batch inserted there, so a message of events alone committed
// again writes nothing, as an SDK's resend does on the direct path. Session updates and
// aggregates are additive, so a committed message carrying any leaves a receipt
// (ingest_receipts) inserted by the same batch, with a plain INSERT: a message whose
// receipt exists is acknowledged without committing again, and a batch racing another
// delivery of the same message fails as a whole on the receipt's key and is retried.
// Messages of events alone leave none: their receipt (about 120 D1 bytes, kept 15 days)
// would protect nothing.
//
// A failing batch is committed again one message at a time, so one message that cannot
// commit does not hold back the others; it is retried by the queue and, after the
// consumer's max_retries (wrangler.jsonc), moved to the dead-letter queue, never dropped.
// A work too large for a queue message (Cloudflare takes 128 KB) is committed directly,
// as without a queue. With the R2 bucket bound, the payload objects a batch names are
// written before it (src/store/blobs.ts); a retried batch writes new ones, and the
// objects of the failed attempt are orphans that retention sweeps.
import { CompiledQuery, sql } from 'kysely';
import type { Logger } from '../../logger.js';
import type { Random } from '../../store/write-set.js';
import { prepareWork } from '../../ingest/prepare.js';
import type { PreparedWork } from '../../store/write-set.js';
import { utcDay } from '../../clock.js';
import type { IngestOutcome, IngestSink, IngestWork } from '../../ingest/types.js';
import type { Store } from '../../store/database.js';
import { payloadObjectKey, putObjects, type BlobBucket } from '../../store/blobs.js';
import { buildD1IngestCommit, type D1IngestCommit } from '../../ingest/d1-commit.js';
import { WORKER_QUEUE_MESSAGE_BYTES } from '../../limits.js';
import { compressBlob } from './runtime.js';

/** The producer side of a queue binding, as the Workers runtime provides it. */
export interface QueueBinding {
  send(body: unknown, options?: { contentType?: 'v8' | 'json' | 'text' | 'bytes' }): Promise<void>;
}

/** One delivered message, as the Workers runtime provides it to `queue()`. */
export interface QueueMessage<Body = unknown> {
  readonly id: string;
  readonly body: Body;
  readonly attempts: number;
  ack(): void;
  retry(options?: { delaySeconds?: number }): void;
}

export interface MessageBatch<Body = unknown> {
  readonly queue: string;
  readonly messages: readonly QueueMessage<Body>[];
}

/** What the producer enqueues: the request's work, versioned so a deploy can change the shape. */
export interface IngestMessage {
  v: 1;
  work: IngestWork;
}

/** Room a message keeps besides the events' own bytes (project, sessions, field names). */
const MESSAGE_OVERHEAD_BYTES = 4096;

/**
 * An upper estimate of the work's size as a queue message: every event's raw payload, the
 * fields the normaliser took from it (never more than the payload, counted again) and its
 * symbolicated frames.
 */
export function estimatedMessageBytes(work: IngestWork): number {
  let bytes = MESSAGE_OVERHEAD_BYTES + 256 * (work.sessions.length + work.aggregates.length);
  for (const e of work.events) bytes += 2 * e.raw.byteLength + 1024 + (e.symbolicated?.length ?? 0) * 2;
  return bytes;
}

/** What the producer counted since the isolate started. */
export interface QueueSinkCounts {
  enqueued: number;
  /** Works committed directly: too large for a message, or the queue refused them. */
  direct: number;
}

/** The ingest sink of a Worker bound to a queue: enqueue, or commit directly what cannot go. */
export class QueueIngestSink implements IngestSink {
  readonly counts: QueueSinkCounts = { enqueued: 0, direct: 0 };

  constructor(
    private readonly queue: QueueBinding,
    private readonly direct: IngestSink,
    private readonly logger: Logger,
  ) {}

  async submit(work: IngestWork): Promise<IngestOutcome> {
    if (work.events.length === 0 && work.sessions.length === 0 && work.aggregates.length === 0) return { kind: 'ok' };
    if (estimatedMessageBytes(work) <= WORKER_QUEUE_MESSAGE_BYTES) {
      const message: IngestMessage = { v: 1, work };
      try {
        await this.queue.send(message, { contentType: 'v8' });
        this.counts.enqueued++;
        // The quota is applied by the consumer: with a queue, a work over it is dropped
        // there (counted as refused), and the answer cannot tell the SDK to wait.
        return { kind: 'ok' };
      } catch (err) {
        this.logger.warn({ err }, 'enqueueing an ingest work failed; committing it directly');
      }
    }
    this.counts.direct++;
    return this.direct.submit(work);
  }

  async close(): Promise<void> {
    await this.direct.close();
  }
}

export interface ConsumerOptions {
  store: Store;
  logger: Logger;
  now: () => number;
  random?: Random;
  /** Called when a committed batch recorded alerts (they are sent right after). */
  onAlertsRecorded?: () => void;
  /** The R2 bucket payload chunks go to, written before each batch (src/store/blobs.ts). */
  bucket?: BlobBucket;
}

/** What one consumer invocation did, for logs and tests. */
export interface ConsumerSummary {
  committed: number;
  /** Messages whose receipt was already there (a redelivery): acknowledged, nothing written. */
  redelivered: number;
  /** Messages left to the queue's retry (and dead-letter) path. */
  retried: number;
  /** Committed works the quota refused. */
  refused: number;
  /** Whether the first attempt was one batch for all (false: one batch per message). */
  oneBatch: boolean;
}

interface Group {
  messages: QueueMessage<unknown>[];
  works: PreparedWork[];
}

interface Planned {
  messages: QueueMessage<unknown>[];
  commit: D1IngestCommit;
  statements: CompiledQuery[];
}

/** The receipts of the group's messages with sessions, in one plain INSERT: a receipt already there fails the batch. */
const RECEIPTS_SQL = 'INSERT INTO ingest_receipts (message_id, committed_at) SELECT value, ?1 FROM json_each(?2)';

/**
 * One PreparedWork for works of one project and UTC day, committed as if one after the
 * other: events in order (the first of a repeated event id counts, sampling ranks them in
 * that order), session updates folded latest-wins as the sessions table keeps them,
 * aggregates added. Received at the latest work's time.
 */
export function mergeWorks(works: PreparedWork[]): PreparedWork {
  if (works.length === 1) return works[0];
  return {
    projectId: works[0].projectId,
    receivedAt: Math.max(...works.map((w) => w.receivedAt)),
    events: works.flatMap((w) => w.events),
    sessions: works.flatMap((w) => w.sessions),
    aggregates: works.flatMap((w) => w.aggregates),
  };
}

/**
 * Messages whose works can be committed as one: the same project and UTC day of receipt
 * (usage is counted per day), and a project without a daily quota, since the quota refuses
 * a work whole and must see each request's work alone.
 */
function groupsOf(items: { message: QueueMessage<unknown>; work: IngestWork; prepared: PreparedWork }[]): Group[] {
  const groups = new Map<string, Group>();
  const out: Group[] = [];
  for (const { message, work, prepared } of items) {
    const key = work.project.daily_quota > 0 ? null : `${prepared.projectId}:${utcDay(prepared.receivedAt)}`;
    let group = key === null ? undefined : groups.get(key);
    if (!group) {
      group = { messages: [], works: [] };
      out.push(group);
      if (key !== null) groups.set(key, group);
    }
    group.messages.push(message);
    group.works.push(prepared);
  }
  return out;
}

function plan(group: Group, options: ConsumerOptions): Planned {
  const commit = buildD1IngestCommit(mergeWorks(group.works), {
    random: options.random ?? Math.random,
    compress: compressBlob,
    objectKey: options.bucket ? payloadObjectKey : undefined,
  });
  const additive = group.messages.filter((_, i) => needsReceipt(group.works[i]));
  if (additive.length === 0) return { messages: group.messages, commit, statements: commit.statements };
  const receipts = CompiledQuery.raw(RECEIPTS_SQL, [options.now(), JSON.stringify(additive.map((m) => m.id))]);
  return { messages: group.messages, commit, statements: [...commit.statements, receipts] };
}

/** Whether committing `work` twice would count something twice (session updates and aggregates add up; events are deduplicated). */
export function needsReceipt(work: PreparedWork): boolean {
  return work.sessions.length > 0 || work.aggregates.length > 0;
}

/** Consumes one delivered batch: see the header. Every message ends acknowledged or retried. */
export async function consumeIngestBatch(
  batch: MessageBatch<unknown>,
  options: ConsumerOptions,
): Promise<ConsumerSummary> {
  const { store, logger } = options;
  const summary: ConsumerSummary = { committed: 0, redelivered: 0, retried: 0, refused: 0, oneBatch: false };
  const ids = batch.messages.map((m) => m.id);
  const seen = new Set<string>();
  if (ids.length > 0) {
    // The ids travel as one JSON parameter: D1 binds at most 100 parameters a statement.
    const { rows } = await sql<{ message_id: string }>`
      SELECT message_id FROM ingest_receipts WHERE message_id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`.execute(
      store.db,
    );
    for (const r of rows) seen.add(r.message_id);
  }

  const retry = (message: QueueMessage<unknown>, err: unknown, what: string) => {
    logger.error({ err, message_id: message.id, attempts: message.attempts }, what);
    message.retry();
    summary.retried++;
  };
  const items: { message: QueueMessage<unknown>; work: IngestWork; prepared: PreparedWork }[] = [];
  for (const message of batch.messages) {
    if (seen.has(message.id)) {
      message.ack();
      summary.redelivered++;
      continue;
    }
    const work = workOf(message.body);
    if (!work) {
      retry(message, undefined, 'a queued ingest message has an unknown shape; left to the dead-letter queue');
      continue;
    }
    items.push({ message, work, prepared: prepareWork(work) });
  }
  if (items.length === 0) return summary;

  let alerts = 0;
  try {
    const planned = groupsOf(items).map((g) => plan(g, options));
    if (options.bucket)
      await putObjects(
        options.bucket,
        planned.flatMap((p) => p.commit.objects),
      );
    const results = await store.atomic(planned.flatMap((p) => p.statements));
    let at = 0;
    for (const p of planned) {
      const own = results.slice(at, at + p.statements.length);
      at += p.statements.length;
      alerts += settle(p, own as never, summary);
    }
    summary.oneBatch = true;
  } catch (err) {
    // A work that cannot be built or committed, or a receipt already there (a delivery
    // racing this one): each message alone, so only the one at fault waits for a retry.
    logger.warn({ err, messages: items.length }, 'the queue batch did not commit; committing its messages one by one');
    for (const item of items) {
      let one: Planned;
      try {
        one = plan({ messages: [item.message], works: [item.prepared] }, options);
      } catch (buildErr) {
        retry(item.message, buildErr, 'a queued ingest work cannot be committed; left to the dead-letter queue');
        continue;
      }
      try {
        if (options.bucket) await putObjects(options.bucket, one.commit.objects);
        alerts += settle(one, (await store.atomic(one.statements)) as never, summary);
      } catch (commitErr) {
        const receipt = await store.db
          .selectFrom('ingest_receipts')
          .select('message_id')
          .where('message_id', '=', item.message.id)
          .executeTakeFirst();
        if (receipt) {
          item.message.ack();
          summary.redelivered++;
        } else {
          retry(item.message, commitErr, 'a queued ingest work did not commit; the queue retries it');
        }
      }
    }
  }
  if (alerts > 0) options.onAlertsRecorded?.();
  return summary;
}

/** Acknowledges committed messages; the alerts their commit recorded. */
function settle(
  p: Planned,
  results: { rows: Record<string, unknown>[]; numAffectedRows?: bigint }[],
  summary: ConsumerSummary,
): number {
  for (const m of p.messages) m.ack();
  summary.committed += p.messages.length;
  if (p.commit.outcome(results).kind === 'quota_exceeded') summary.refused += p.messages.length;
  return p.commit.alertsRecorded(results);
}

function workOf(body: unknown): IngestWork | null {
  if (typeof body !== 'object' || body === null) return null;
  const m = body as Partial<IngestMessage>;
  if (m.v !== 1 || typeof m.work !== 'object' || m.work === null) return null;
  const w = m.work as Partial<IngestWork>;
  if (!w.project || !Array.isArray(w.events) || !Array.isArray(w.sessions) || !Array.isArray(w.aggregates)) return null;
  return w as IngestWork;
}
