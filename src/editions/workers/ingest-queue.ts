// Ingest through a Cloudflare Queue (docs/architecture.md "Serverless edition"): when
// the Worker is bound to a queue (`INGEST_QUEUE`), an ingest request is answered once its
// work is enqueued, which Cloudflare keeps durably; the queue's consumer commits up to a
// batch of works in one D1 `db.batch()`, each work's statements built exactly as the
// direct path builds them (src/store/d1-ingest.ts), so a batch commits what the same
// works committed one request at a time would, in one transaction instead of many.
//
// Delivery is at least once. Each committed message leaves a receipt (ingest_receipts)
// inserted by the same batch, with a plain INSERT: a message whose receipt exists is
// acknowledged without committing again, and a batch racing another delivery of the same
// message fails as a whole on the receipt's key and is retried. Events are deduplicated by
// event id anyway; the receipts make session aggregates (additive) exact too.
//
// A failing batch is committed again one message at a time, so one message that cannot
// commit does not hold back the others; it is retried by the queue and, after the
// consumer's max_retries (wrangler.jsonc), moved to the dead-letter queue, never dropped.
// A work too large for a queue message (Cloudflare takes 128 KB) is committed directly,
// as without a queue.
import { CompiledQuery, sql } from 'kysely';
import type { Logger } from '../../logger.js';
import type { Random } from '../../ingest/plan.js';
import { prepareWork } from '../../ingest/prepare.js';
import type { IngestOutcome, IngestSink, IngestWork } from '../../ingest/types.js';
import type { Store } from '../../store/database.js';
import { buildD1IngestCommit, type D1IngestCommit } from '../../store/d1-ingest.js';
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

interface Prepared {
  message: QueueMessage<unknown>;
  commit: D1IngestCommit;
  statements: CompiledQuery[];
}

const RECEIPT_SQL = 'INSERT INTO ingest_receipts (message_id, committed_at) VALUES (?, ?)';

/** Consumes one delivered batch: see the header. Every message ends acknowledged or retried. */
export async function consumeIngestBatch(batch: MessageBatch<unknown>, options: ConsumerOptions): Promise<ConsumerSummary> {
  const { store, logger } = options;
  const summary: ConsumerSummary = { committed: 0, redelivered: 0, retried: 0, refused: 0, oneBatch: false };
  const ids = batch.messages.map((m) => m.id);
  const seen = new Set<string>();
  if (ids.length > 0) {
    // The ids travel as one JSON parameter: D1 binds at most 100 parameters a statement.
    const { rows } = await sql<{ message_id: string }>`
      SELECT message_id FROM ingest_receipts WHERE message_id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`.execute(store.db);
    for (const r of rows) seen.add(r.message_id);
  }

  const prepared: Prepared[] = [];
  for (const message of batch.messages) {
    if (seen.has(message.id)) {
      message.ack();
      summary.redelivered++;
      continue;
    }
    const work = workOf(message.body);
    if (!work) {
      logger.error({ message_id: message.id }, 'a queued ingest message has an unknown shape; left to the dead-letter queue');
      message.retry();
      summary.retried++;
      continue;
    }
    let commit: D1IngestCommit;
    try {
      commit = buildD1IngestCommit(prepareWork(work), { random: options.random ?? Math.random, compress: compressBlob });
    } catch (err) {
      logger.error({ err, message_id: message.id }, 'a queued ingest work cannot be committed; left to the dead-letter queue');
      message.retry();
      summary.retried++;
      continue;
    }
    const receipt = CompiledQuery.raw(RECEIPT_SQL, [message.id, options.now()]);
    prepared.push({ message, commit, statements: [...commit.statements, receipt] });
  }
  if (prepared.length === 0) return summary;

  let alerts = 0;
  try {
    const results = await store.atomic(prepared.flatMap((p) => p.statements));
    let at = 0;
    for (const p of prepared) {
      const own = results.slice(at, at + p.statements.length);
      at += p.statements.length;
      alerts += settle(p, own as never, summary);
    }
    summary.oneBatch = true;
  } catch (err) {
    logger.warn({ err, messages: prepared.length }, 'the queue batch did not commit; committing its messages one by one');
    for (const p of prepared) {
      try {
        alerts += settle(p, (await store.atomic(p.statements)) as never, summary);
      } catch (one) {
        const receipt = await store.db.selectFrom('ingest_receipts').select('message_id').where('message_id', '=', p.message.id).executeTakeFirst();
        if (receipt) {
          p.message.ack();
          summary.redelivered++;
        } else {
          logger.error({ err: one, message_id: p.message.id, attempts: p.message.attempts }, 'a queued ingest work did not commit; the queue retries it');
          p.message.retry();
          summary.retried++;
        }
      }
    }
  }
  if (alerts > 0) options.onAlertsRecorded?.();
  return summary;
}

/** Acknowledges a committed message; the alerts its commit recorded. */
function settle(p: Prepared, results: { rows: Record<string, unknown>[]; numAffectedRows?: bigint }[], summary: ConsumerSummary): number {
  p.message.ack();
  summary.committed++;
  if (p.commit.outcome(results).kind === 'quota_exceeded') summary.refused++;
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
