// Runs SQLite ingest batches (commitIngestBatch) on a worker thread with its own
// connection. better-sqlite3 is synchronous: on the main thread every batch stopped
// HTTP, parsing and normalising for as long as its statements ran. The thread also
// compresses the payloads it stores (src/store/payloads.ts). The main thread keeps
// the queue, the answers and the failure handling (writer.ts). Only for
// compiled code (dist/): the thread loads batch-thread-worker.js, which does not
// exist when the sources run under vitest; there the batch runs on the calling
// thread, as it does on PostgreSQL (whose driver does not block).
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { rawSource, type EventInput, type PreparedWork } from '../../store/write-set.js';
import type { BatchResult } from '../../store/ingest-batch.js';
import type { CommitTally } from './wal-checkpointer.js';

/** The compiled thread program beside this module (dist/store/ when running from dist/). */
export const BATCH_THREAD_FILE = new URL('./batch-thread-worker.js', import.meta.url);

/** What crosses to the thread for one event: its row fields and the payload's bytes. */
export type ThreadEventInput = Omit<EventInput, 'source'> & { source: { raw: Uint8Array } };

/**
 * The thread's old-generation limit. Not a tight cap (the thread keeps about 11 MB live
 * under load; payload bytes live outside the V8 heap), but V8 picks how far the old
 * generation grows between full collections from it: with the process default (GBs) up
 * to 4 times what survived the last one, with 256 MB or less 1.3 times. With the default
 * that is 45-50 MB of dead batches between collections; the limit takes 25 MB off the
 * server's peak RSS at saturation (measured).
 */
const BATCH_THREAD_OLD_GENERATION_MB = 256;
/**
 * The thread's young generation. V8's default lets it grow to tens of MB under load
 * (measured: the server's peak RSS at saturation is 286-298 MB with it and 254-264 MB
 * with 6-24 MB, at the same throughput).
 */
const BATCH_THREAD_YOUNG_GENERATION_MB = 12;
/**
 * The thread connection's SQLite page cache. A batch inserts at the ends of its indexes
 * and at random leaves that no cache of this size holds: 16 MB (the default) cost 14 MB
 * of RSS for no throughput (60 s of saturation, 330 000 events: 5 526 requests/s with
 * 16 MB, 5 636 with 4).
 */
const BATCH_THREAD_PAGE_CACHE_MB = 4;

export interface BatchThreadRequest {
  id: number;
  works: PreparedWork[];
  /** Events, sessions and aggregates of the works: bounds what the thread merges. */
  items: number;
}

export type BatchThreadReply =
  | { id: number; result: BatchResult }
  | { id: number; error: { message: string; name: string; code?: string } }
  | { ready: true }
  | { fatal: string };

/** True when the compiled worker program is there (not under vitest's TypeScript sources). */
export function batchThreadAvailable(file: URL = BATCH_THREAD_FILE): boolean {
  return file.protocol === 'file:' && fs.existsSync(fileURLToPath(file));
}

/** An error the thread reported, with the database's error code kept for logs. */
export class BatchThreadError extends Error {
  constructor(
    message: string,
    override readonly name: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

/** Only plain data crosses threads: the normalised event behind each row stays here. */
function forThread(work: PreparedWork): PreparedWork {
  const events = work.events.map((e) => {
    const moved: ThreadEventInput = { ...e, source: { raw: ownBytes(rawSource(e)) } };
    return moved as unknown as EventInput;
  });
  return { ...work, events };
}

/**
 * The bytes of a view in a buffer of their own. A payload is usually a view into the
 * request body (or a pooled slab), and posting a view copies its whole underlying
 * buffer: for a 20 MB envelope of 100 events, 20 MB per batch instead of the events.
 */
function ownBytes(view: Uint8Array): Uint8Array {
  if (view.byteOffset === 0 && view.byteLength === view.buffer.byteLength) return view;
  return new Uint8Array(view);
}

export class BatchThread {
  private readonly worker: Worker;
  private nextId = 1;
  private readonly pending = new Map<number, { resolve(r: BatchResult): void; reject(e: Error): void }>();
  private deadReason: string | null = null;
  private readonly ready: Promise<void>;
  private starting = true;
  private closing = false;

  /**
   * `databaseUrl` must name a SQLite file already migrated by this process. `file` is
   * the thread program; tests running the TypeScript sources point it at dist/.
   * `maxItems` bounds the transactions the thread makes by merging waiting requests.
   * `commitTally` (the store's) hears of every transaction the thread commits.
   */
  constructor(databaseUrl: string, file: URL = BATCH_THREAD_FILE, maxItems = 1_000, commitTally?: CommitTally) {
    this.worker = new Worker(file, {
      workerData: { databaseUrl, maxItems, pageCacheMb: BATCH_THREAD_PAGE_CACHE_MB, commitTally: commitTally?.buffer },
      resourceLimits: {
        maxYoungGenerationSizeMb: BATCH_THREAD_YOUNG_GENERATION_MB,
        maxOldGenerationSizeMb: BATCH_THREAD_OLD_GENERATION_MB,
      },
    });
    let readyResolve!: () => void;
    let readyReject!: (e: Error) => void;
    this.ready = new Promise<void>((resolve, reject) => {
      readyResolve = resolve;
      readyReject = reject;
    });
    // Rejections of `ready` are seen through commit(); none may go unhandled.
    this.ready.catch(() => {});
    this.worker.on('message', (msg: BatchThreadReply) => {
      if ('ready' in msg) {
        this.starting = false;
        this.holdProcessWhileAwaited();
        return readyResolve();
      }
      if ('fatal' in msg) {
        this.starting = false;
        this.die(msg.fatal);
        this.holdProcessWhileAwaited();
        return readyReject(new Error(msg.fatal));
      }
      const waiting = this.pending.get(msg.id);
      if (!waiting) return;
      this.pending.delete(msg.id);
      this.holdProcessWhileAwaited();
      if ('result' in msg) waiting.resolve(msg.result);
      else waiting.reject(new BatchThreadError(msg.error.message, msg.error.name, msg.error.code));
    });
    this.worker.on('error', (err) => {
      this.die(err.message);
      readyReject(err);
    });
    this.worker.on('exit', (code) => {
      this.die(`the batch thread exited (code ${code})`);
      readyReject(new Error(`the batch thread exited (code ${code})`));
    });
  }

  /** Null while the thread works; otherwise why it stopped (the caller then commits on its own thread). */
  get failure(): string | null {
    return this.deadReason;
  }

  /** Once the thread has started: true when it can take batches, false when it failed. */
  async usable(): Promise<boolean> {
    await this.ready.catch(() => {});
    return this.deadReason === null;
  }

  /** Commits the works on the thread; `items` (their events, sessions and aggregates) bounds merging. */
  async commit(works: PreparedWork[], items: number): Promise<BatchResult> {
    await this.ready;
    if (this.deadReason) throw new Error(this.deadReason);
    const id = this.nextId++;
    const request: BatchThreadRequest = { id, works: works.map(forThread), items };
    return new Promise<BatchResult>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.holdProcessWhileAwaited();
      try {
        this.worker.postMessage(request);
      } catch (err) {
        this.pending.delete(id);
        this.holdProcessWhileAwaited();
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  }

  /**
   * The thread keeps the process alive only while something waits for it: its start, a
   * batch or its close. An idle thread must not (a server's socket keeps the process);
   * without the start and the close counted, a process with nothing else to do exited
   * (code 13) in the middle of its first commit or of close().
   */
  private holdProcessWhileAwaited(): void {
    if (this.starting || this.closing || this.pending.size > 0) this.worker.ref();
    else this.worker.unref();
  }

  private die(reason: string): void {
    if (this.deadReason) return;
    this.deadReason = reason;
    const error = new Error(reason);
    for (const waiting of this.pending.values()) waiting.reject(error);
    this.pending.clear();
  }

  /** Closes the thread's connection and ends the thread; call when no commit is pending. */
  async close(): Promise<void> {
    if (this.deadReason) return;
    const exited = new Promise<void>((resolve) => this.worker.once('exit', () => resolve()));
    this.closing = true;
    this.holdProcessWhileAwaited();
    this.worker.postMessage('close');
    const timer = new Promise<void>((resolve) => setTimeout(resolve, 5000).unref());
    await Promise.race([exited, timer]);
    if (!this.deadReason) await this.worker.terminate();
  }
}
