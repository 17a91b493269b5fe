// SQLite WAL checkpoints on a worker thread with its own connection, so the thread
// that commits ingest batches never stops to copy the WAL back into the database
// file and fsync it. SQLite's own automatic checkpoint runs inside the committing
// connection's COMMIT; at ingest rates that is a quarter of the writer's time
// (measured).
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * How often the worker looks at the WAL; a checkpoint of nothing costs a few µs.
 * Frequent checkpoints keep the writer's commits short: once a checkpoint has caught
 * up, the next commit starts the WAL over and fsyncs its header, and that fsync waits
 * for whatever the disk still has to write. Measured at 2 000 events/s after a burst:
 * 100 ms gives commits of 30-60 ms about every second and a p99 of 51-57 ms, 10 ms
 * 27-29 ms. But each checkpoint copies every page changed since the last one, so a
 * page that each batch touches (an index's last leaf, a hot issue) is copied once per
 * checkpoint: at 10 ms the checkpointer takes 0.16-0.17 cores at saturation, at 100 ms
 * 0.06. 40 ms against 10: saturation 4 498 against 4 178 requests/s on average, p99 at
 * 2 000 events/s after 30 s of saturation 46 ms against 48.
 */
export const CHECKPOINT_INTERVAL_MS = 40;

/**
 * While ingest commits one request per transaction (a low rate), the checkpointer waits
 * up to this many ticks, or this many transactions, between checkpoints. Each such
 * transaction writes some 30 pages to the WAL, most of them the same hot pages (index
 * ends, the issue, the hourly rows), and each checkpoint copies them again (measured
 * at 20 events/s: 512-522 KB of storage written per event at the plain pace, about 300
 * with this one). Under load transactions carry more requests and the pace stays at
 * CHECKPOINT_INTERVAL_MS, which the p99 at 2 000 events/s needs. The WAL's growth
 * cannot tell the two apart; the size of the transactions can.
 */
export const SMALL_TRANSACTIONS_TICKS = 12;
export const SMALL_TRANSACTIONS_MAX = 128;

/**
 * At saturation (transactions of LARGE_TRANSACTIONS_WORKS works or more on average) the
 * checkpointer waits this many ticks (200 ms): each checkpoint copies every page changed
 * since the one before, and the same hot pages are changed by every transaction.
 * Measured against 40 ms: +5 to +29 % requests/s (median +9 %), server CPU per request
 * 207-241 against 236-316 µs; p99 at saturation about 55 against 44 ms, at 2 000
 * events/s (transactions of 4-5 works, so still every 40 ms) 26.9 against 24.0 ms
 * (medians). Keyed to the transactions' size, not fixed, because a fixed 200 ms costs
 * the p99 at 2 000 events/s.
 */
export const LARGE_TRANSACTIONS_WORKS = 16;
export const LARGE_TRANSACTIONS_TICKS = 5;

/**
 * Ingest transactions committed and the works (one per request) they carried, counted
 * by the batch thread in memory the checkpointer's thread shares, so the checkpointer
 * can tell a low rate (one request per transaction) from load. Counters wrap; readers
 * take differences.
 */
/** The tally's slots; the checkpointer's worker program (WORKER_SOURCE) reads them by these indexes. */
const TRANSACTIONS_SLOT = 0;
const WORKS_SLOT = 1;

export class CommitTally {
  private readonly counts: Int32Array;
  constructor(readonly buffer: SharedArrayBuffer = new SharedArrayBuffer(8)) {
    this.counts = new Int32Array(buffer);
  }
  record(works: number): void {
    Atomics.add(this.counts, TRANSACTIONS_SLOT, 1);
    Atomics.add(this.counts, WORKS_SLOT, works);
  }
  /** The counts so far (they wrap at 2^31). */
  read(): { transactions: number; works: number } {
    return { transactions: Atomics.load(this.counts, TRANSACTIONS_SLOT), works: Atomics.load(this.counts, WORKS_SLOT) };
  }
}

/**
 * The committing connection's own automatic checkpoint, kept as a safety net for a
 * checkpointer that falls behind or dies: in pages, so the WAL stays below about 128 MB
 * whatever happens (8 KB pages, SQLITE_PAGE_SIZE; 64 MB in a database created with 4 KB
 * pages by an older version).
 */
export const WRITER_AUTOCHECKPOINT_PAGES = 16_384;

// The worker's whole program, evaluated from a string so it needs no file of its own
// (the same code runs from src/ under vitest and from dist/). PASSIVE never waits for
// the writer or readers: it copies what it can and tries again on the next tick.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.module);
const db = new Database(workerData.file, { fileMustExist: true });
db.pragma('journal_size_limit = ' + workerData.journalSizeLimit);
let stopped = false;
const tally = workerData.tally ? new Int32Array(workerData.tally) : null;
let seenTransactions = tally ? Atomics.load(tally, ${TRANSACTIONS_SLOT}) : 0;
let seenWorks = tally ? Atomics.load(tally, ${WORKS_SLOT}) : 0;
let waited = 0;
const timer = setInterval(() => {
  if (stopped) return;
  if (tally) {
    const transactions = Atomics.load(tally, ${TRANSACTIONS_SLOT});
    const works = Atomics.load(tally, ${WORKS_SLOT});
    const newTransactions = (transactions - seenTransactions) | 0;
    const newWorks = (works - seenWorks) | 0;
    // Ticks between checkpoints for the transactions since the last one: one request each
    // (a low rate), many (saturation), or anything else and none at all (every tick).
    const ticks =
      newTransactions === 0 ? 1
      : newWorks < 2 * newTransactions && newTransactions < workerData.smallMax ? workerData.smallTicks
      : newWorks >= workerData.largeWorks * newTransactions ? workerData.largeTicks
      : 1;
    if (++waited < ticks) return;
    seenTransactions = transactions;
    seenWorks = works;
    waited = 0;
  }
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch (err) {
    parentPort.postMessage({ error: String((err && err.message) || err) });
  }
}, workerData.intervalMs);
parentPort.on('message', (msg) => {
  if (msg !== 'stop') return;
  stopped = true;
  clearInterval(timer);
  try { db.close(); } catch {}
  parentPort.postMessage({ stopped: true });
});
`;

export interface WalCheckpointer {
  /** Stops the worker and closes its connection (the store's close then checkpoints the rest). */
  stop(): Promise<void>;
}

/**
 * Starts checkpointing `file` in the background. `onError` hears about failed
 * checkpoints (the writer's safety-net checkpoint still bounds the WAL).
 */
export function startWalCheckpointer(
  file: string,
  onError: (message: string) => void = () => {},
  tally?: CommitTally,
): WalCheckpointer {
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: {
      module: createRequire(import.meta.url).resolve('better-sqlite3'),
      file,
      intervalMs: CHECKPOINT_INTERVAL_MS,
      tally: tally?.buffer,
      smallTicks: SMALL_TRANSACTIONS_TICKS,
      smallMax: SMALL_TRANSACTIONS_MAX,
      largeWorks: LARGE_TRANSACTIONS_WORKS,
      largeTicks: LARGE_TRANSACTIONS_TICKS,
      // After a checkpoint has caught up, SQLite restarts the WAL from its start; this
      // truncates a file that grew during a burst back to a modest size.
      journalSizeLimit: 16 * 1024 * 1024,
    },
  });
  worker.unref();
  let exited = false;
  const exit = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  void exit.then(() => (exited = true));
  worker.on('message', (msg: { error?: string }) => {
    if (msg.error) onError(msg.error);
  });
  worker.on('error', (err) => onError(err.message));
  return {
    async stop() {
      if (exited) return;
      const stopped = new Promise<void>((resolve) =>
        worker.on('message', (m: { stopped?: boolean }) => m.stopped && resolve()),
      );
      worker.postMessage('stop');
      await Promise.race([stopped, exit, new Promise((r) => setTimeout(r, 2000).unref())]);
      await worker.terminate();
    },
  };
}
