// Group-commit writer: turns queued IngestWork from concurrent requests into
// shared database transactions, answering each request after its commit. The
// transactions are src/store/ingest-batch.ts's (one module per database); this file
// owns the queue, batching, failure handling and counters. docs/architecture.md ("The ingest
// writer (group commit)") describes the design.
import type { Logger } from '../../logger.js';
import type { Clock } from '../../clock.js';
import { BATCH_THREAD_FILE, BatchThread, batchThreadAvailable } from './batch-thread.js';
import type { NodeStore } from './open-store.js';
import { commitIngestBatch } from '../../store/ingest-batch.js';
import { compress } from './codec.js';
import { ingestPlanner } from '../../ingest/plan.js';
import { prepareWork } from '../../ingest/prepare.js';
import type { PreparedWork } from '../../store/write-set.js';
import { DATABASE_UNAVAILABLE, IngestUnavailableError } from '../../errors.js';
import type { IngestOutcome, IngestSink, IngestStats, IngestWork } from '../../ingest/types.js';

export interface WriterDeps {
  store: NodeStore;
  clock: Clock;
  logger: Logger;
  /** Told how long each committed batch took (the commit latency metric). */
  onCommit?: (seconds: number) => void;
}

export interface WriterOptions {
  /** Uniform draw in [0, 1) for sampling; tests inject a fixed sequence. */
  random?: () => number;
  /**
   * Upper bound on items (events + session updates + aggregate buckets) per
   * transaction. A single work larger than this still goes in one transaction.
   */
  maxBatchItems?: number;
  /**
   * How long a batch may take before its requests are answered 503 anyway (a
   * PostgreSQL connection that hangs without failing). Default 30 s.
   */
  batchDeadlineMs?: number;
  /**
   * SQLite: run each batch's transaction on a worker thread with its own connection
   * (src/editions/node/batch-thread.ts). Default: on for a SQLite file when the compiled thread
   * program exists and no `random` is injected.
   */
  batchThread?: boolean;
  /** The thread program to run (default: the compiled one beside batch-thread.js). */
  batchThreadFile?: URL;
}

export const DEFAULT_MAX_BATCH_ITEMS = 1000;

/**
 * With the batch thread, queued work is handed over as soon as this many items wait,
 * not only at the end of the event loop's turn. Requests arrive in bursts (the clients
 * answered by one commit send their next requests together). Handed over only at the
 * end of the turn, a burst would reach the thread once the main thread had parsed all
 * of it, and the two threads would take turns instead of working at once (measured:
 * 51 % and 74 % busy, a third of the cores idle). Handing over every 16 items lets the
 * thread start on the first ones; it still merges whatever waits into one transaction.
 */
export const THREAD_HANDOVER_ITEMS = 16;

/** Batches handed to the batch thread and not yet answered, at most. */
const THREAD_MAX_IN_FLIGHT = 64;
export const DEFAULT_BATCH_DEADLINE_MS = 30_000;

/**
 * Whether the batch committed is unknown: it ran past its deadline (and may still
 * commit), or the batch thread died while it ran. Its works are not retried one by
 * one; SDKs resend, and resent events are recognised by event_id.
 */
class BatchOutcomeUnknownError extends Error {
  override name = 'BatchOutcomeUnknownError';
}

/** The SQLite file behind the store, as a DATABASE_URL; null for :memory: and PostgreSQL. */
function sqliteFileUrl(store: NodeStore): string | null {
  if (store.dialect !== 'sqlite' || store.description === 'sqlite::memory:') return null;
  return store.description;
}

export interface IngestWriter extends IngestSink {
  stats(): IngestStats;
}

interface Pending {
  work: PreparedWork;
  items: number;
  resolve(outcome: IngestOutcome): void;
  reject(err: unknown): void;
}

export function createIngestWriter(deps: WriterDeps, options: WriterOptions = {}): IngestWriter {
  const random = options.random ?? Math.random;
  const maxBatchItems = Math.max(1, options.maxBatchItems ?? DEFAULT_MAX_BATCH_ITEMS);
  const batchDeadlineMs = options.batchDeadlineMs ?? DEFAULT_BATCH_DEADLINE_MS;
  const fileUrl = sqliteFileUrl(deps.store);
  const threadFile = options.batchThreadFile ?? BATCH_THREAD_FILE;
  const useThread =
    (options.batchThread ?? (options.random === undefined && batchThreadAvailable(threadFile))) && fileUrl !== null;
  let thread: BatchThread | null = null;
  if (useThread) {
    try {
      thread = new BatchThread(fileUrl, threadFile, maxBatchItems, deps.store.commitTally);
    } catch (err) {
      deps.logger.error({ err }, 'the ingest batch thread did not start; batches commit on the main thread');
    }
  }
  if (thread) deps.logger.debug('ingest batches commit on a worker thread');
  let threadFailureLogged = false;
  // With the batch thread, batches are handed over while one commits, so the thread
  // never waits for the main thread to notice an answer; the thread merges whatever
  // waits into its next transaction (batch-thread-worker.ts). On this thread there is
  // nothing to overlap.
  const maxInFlight = thread ? THREAD_MAX_IN_FLIGHT : 1;
  const queue: Pending[] = [];
  let closed = false;
  let drained: (() => void)[] = [];
  const counters = {
    batchesCommitted: 0,
    batchesFailed: 0,
    worksCommitted: 0,
    worksFailed: 0,
    eventsReceived: 0,
    eventsAccepted: 0,
    eventsStored: 0,
    eventsDuplicate: 0,
    eventsRefused: 0,
    sessionUpdates: 0,
    largestBatchItems: 0,
    itemsCommitted: 0,
    batchesOnThread: 0,
  };

  function takeBatch(): Pending[] {
    const batch: Pending[] = [];
    let items = 0;
    while (queue.length > 0 && (batch.length === 0 || items + queue[0].items <= maxBatchItems)) {
      const next = queue.shift()!;
      items += next.items;
      queuedItems -= next.items;
      batch.push(next);
    }
    return batch;
  }

  /** The batch's commit, or a BatchOutcomeUnknownError once it has taken longer than the deadline. */
  function commitWithDeadline(works: PreparedWork[], items: number) {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new BatchOutcomeUnknownError(`the database did not finish the batch within ${batchDeadlineMs} ms`)),
        batchDeadlineMs,
      );
    });
    // A batch that commits after its deadline was answered 503: SDKs resend, and the
    // resent events are recognised by event_id and counted once.
    return Promise.race([commit(works, items), deadline]).finally(() => clearTimeout(timer));
  }

  /** The batch on the batch thread while it lives, else on this thread. */
  async function commit(works: PreparedWork[], items: number) {
    if (thread && (await thread.usable())) {
      try {
        const result = await thread.commit(works, items);
        // Batches the thread merged into one transaction count as one.
        if (!result.merged) counters.batchesOnThread += 1;
        return result;
      } catch (err) {
        if (!thread.failure) throw err;
        throw new BatchOutcomeUnknownError(`the batch thread stopped during the batch: ${thread.failure}`, {
          cause: err,
        });
      }
    }
    if (thread && !threadFailureLogged) {
      threadFailureLogged = true;
      deps.logger.error(
        { reason: thread.failure },
        'the ingest batch thread stopped; batches now commit on the main thread',
      );
    }
    return commitIngestBatch(deps.store, works, { planner: ingestPlanner, random, compress });
  }

  async function runBatch(batch: Pending[]): Promise<void> {
    const works = batch.map((p) => p.work);
    const items = batch.reduce((n, p) => n + p.items, 0);
    let result;
    const started = performance.now();
    try {
      result = await commitWithDeadline(works, items);
      deps.onCommit?.((performance.now() - started) / 1000);
    } catch (err) {
      counters.batchesFailed += 1;
      // One work the database refuses (a bad value, a trigger) must not cost every
      // other request of its batch a 503 on each resend: while the database still
      // answers, the works are committed one by one and only the culprit fails. Not
      // when the batch may have committed, nor after a deadline: whatever held the
      // batch up would hold each work up again.
      if (batch.length > 1 && !(err instanceof BatchOutcomeUnknownError) && (await deps.store.ping(2000))) {
        deps.logger.warn(
          { err, works: batch.length, items },
          'ingest batch failed and was rolled back; retrying its works one by one',
        );
        for (const p of batch) await runBatch([p]);
        return;
      }
      counters.worksFailed += batch.length;
      deps.logger.error(
        { err, works: batch.length, items },
        'ingest batch failed and was rolled back; its requests are answered 503',
      );
      const failure = new IngestUnavailableError(DATABASE_UNAVAILABLE, { cause: err });
      for (const p of batch) p.reject(failure);
      return;
    }
    if (result.dropped > 0) {
      deps.logger.warn({ items: result.dropped }, 'ingest work of a project deleted meanwhile was dropped');
    }
    if (!result.merged) counters.batchesCommitted += 1;
    counters.worksCommitted += batch.length;
    counters.itemsCommitted += items;
    counters.largestBatchItems = Math.max(counters.largestBatchItems, items);
    counters.eventsReceived += works.reduce((n, w) => n + w.events.length, 0);
    counters.eventsAccepted += result.accepted;
    counters.eventsStored += result.stored;
    counters.eventsDuplicate += result.duplicates;
    counters.eventsRefused += result.refused;
    counters.sessionUpdates += result.sessionUpdates;
    batch.forEach((p, i) => p.resolve(result.outcomes[i]));
  }

  async function runGuarded(batch: Pending[]): Promise<void> {
    try {
      await runBatch(batch);
    } catch (err) {
      // runBatch settles its promises itself; this guard keeps the loop alive and
      // no request waiting if anything else ever throws (settling twice is a no-op).
      deps.logger.error({ err }, 'ingest writer loop failed');
      const failure = new IngestUnavailableError('the ingest writer failed; nothing was stored, send again later', {
        cause: err,
      });
      for (const p of batch) p.reject(failure);
    }
  }

  let inFlight = 0;
  let pumpScheduled = false;
  /** Items of the works in `queue`. */
  let queuedItems = 0;

  /**
   * Hands queued works over as batches while fewer than maxInFlight run. Called one turn
   * of the event loop after work arrives or a batch ends, so every request already read
   * joins the batch; works arriving while batches run go out as soon as a slot is free.
   * With the batch thread also as soon as THREAD_HANDOVER_ITEMS items wait.
   */
  function pump(): void {
    pumpScheduled = false;
    while (queue.length > 0 && inFlight < maxInFlight) {
      inFlight += 1;
      void runGuarded(takeBatch()).finally(() => {
        inFlight -= 1;
        if (queue.length > 0) kick();
        else if (inFlight === 0) {
          const waiting = drained;
          drained = [];
          for (const w of waiting) w();
        }
      });
    }
  }

  function kick(): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    setImmediate(pump);
  }

  return {
    submit(work: IngestWork): Promise<IngestOutcome> {
      if (closed) return Promise.reject(new IngestUnavailableError('the server is shutting down; send again later'));
      let prepared: PreparedWork;
      try {
        prepared = prepareWork(work);
      } catch (err) {
        return Promise.reject(err);
      }
      const items = prepared.events.length + prepared.sessions.length + prepared.aggregates.length;
      if (items === 0) return Promise.resolve({ kind: 'ok' });
      return new Promise<IngestOutcome>((resolve, reject) => {
        queue.push({ work: prepared, items, resolve, reject });
        queuedItems += items;
        if (thread && queuedItems >= THREAD_HANDOVER_ITEMS) pump();
        else kick();
      });
    },

    async close(): Promise<void> {
      closed = true;
      if (inFlight > 0 || queue.length > 0) await new Promise<void>((resolve) => drained.push(resolve));
      await thread?.close();
    },

    stats(): IngestStats {
      const batches = counters.batchesCommitted;
      return {
        ...counters,
        queued: queue.length,
        averageBatchWorks: batches === 0 ? 0 : counters.worksCommitted / batches,
        averageBatchItems: batches === 0 ? 0 : counters.itemsCommitted / batches,
        averageBatchEvents: batches === 0 ? 0 : counters.eventsReceived / batches,
      };
    },
  };
}
