// The batch thread's program (see batch-thread.ts): its own SQLite connection; each
// transaction takes every batch request waiting, and each request is answered with
// its part of the result or the error.
import { parentPort, workerData } from 'node:worker_threads';
import { sql } from 'kysely';
import type { BatchThreadReply, BatchThreadRequest } from './batch-thread.js';
import { openStore } from './open-store.js';
import { ingestPlanner } from '../../ingest/plan.js';
import type { Store } from '../../store/database.js';
import { commitIngestBatch, type BatchResult } from '../../store/ingest-batch.js';
import { IssueCache } from '../../store/sqlite.js';
import { compress } from './codec.js';
import { CommitTally, WRITER_AUTOCHECKPOINT_PAGES } from './wal-checkpointer.js';

const port = parentPort!;
const send = (reply: BatchThreadReply) => port.postMessage(reply);

/** What the writer gives the thread (BatchThread's constructor). */
const { databaseUrl, maxItems, pageCacheMb, commitTally } = workerData as {
  databaseUrl: string;
  maxItems: number;
  pageCacheMb: number;
  commitTally?: SharedArrayBuffer;
};
/** Where the WAL checkpointer learns how many works (requests) each transaction carried: its pace. */
const tally = commitTally ? new CommitTally(commitTally) : null;

/**
 * The first waiting request, and the ones after it while the transaction stays within
 * the writer's maxBatchItems (a request alone may exceed it: a work is never split).
 */
function takeRequests(waiting: BatchThreadRequest[]): BatchThreadRequest[] {
  const taken = [waiting.shift()!];
  let items = taken[0].items;
  while (waiting.length > 0 && items + waiting[0].items <= maxItems) {
    items += waiting[0].items;
    taken.push(waiting.shift()!);
  }
  return taken;
}

/**
 * One transaction's result as one answer per merged request: each gets the outcomes of
 * its own works; the counts (used for the writer's statistics only) go with the first.
 */
function splitResult(result: BatchResult, taken: BatchThreadRequest[]): BatchResult[] {
  let at = 0;
  return taken.map((request, i) => {
    const outcomes = result.outcomes.slice(at, at + request.works.length);
    at += request.works.length;
    if (i === 0) return { ...result, outcomes };
    return { outcomes, accepted: 0, stored: 0, duplicates: 0, refused: 0, dropped: 0, sessionUpdates: 0, merged: true };
  });
}

function errorReply(err: unknown): { message: string; name: string; code?: string } {
  const e = err as { message?: string; name?: string; code?: unknown };
  return {
    message: String(e?.message ?? err),
    name: String(e?.name ?? 'Error'),
    code: typeof e?.code === 'string' ? e.code : undefined,
  };
}

async function main(): Promise<void> {
  let store: Store;
  try {
    store = await openStore(databaseUrl, { pageCacheMb });
    // The process's background checkpointer copies the WAL; this connection's own
    // automatic checkpoint is only the safety net.
    await sql.raw(`pragma wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`).execute(store.db);
  } catch (err) {
    send({ fatal: `the batch thread could not open the database: ${(err as Error).message}` });
    return;
  }
  // Requests that arrive while a transaction runs wait here, and the next transaction
  // takes all of them (up to maxItems): the thread never idles while the main
  // thread has handed work over, and a burst of small requests becomes one transaction.
  const waiting: BatchThreadRequest[] = [];
  // This connection writes nothing but ingest batches: the issue rows it wrote stay
  // valid until another connection commits (IssueCache checks).
  const issueCache = new IssueCache();
  const options = { planner: ingestPlanner, random: Math.random, compress, issueCache };
  let running = false;
  let closing = false;

  const finish = async () => {
    await store.close();
    port.close();
  };

  const commitAlone = async (request: BatchThreadRequest) => {
    try {
      send({ id: request.id, result: await commitIngestBatch(store, request.works, options) });
    } catch (err) {
      send({ id: request.id, error: errorReply(err) });
    }
  };

  const run = async () => {
    while (waiting.length > 0) {
      const taken = takeRequests(waiting);
      const works = taken.flatMap((request) => request.works);
      let result: BatchResult | null = null;
      try {
        result = await commitIngestBatch(store, works, options);
      } catch (err) {
        // Nothing was committed. Merged requests are tried again each on its own, so
        // one bad request does not fail the others (the writer then retries the failing
        // request's works one by one, as it does for a batch on its own thread).
        if (taken.length === 1) send({ id: taken[0].id, error: errorReply(err) });
        else for (const request of taken) await commitAlone(request);
      }
      if (result) {
        tally?.record(works.length);
        for (const [i, part] of splitResult(result, taken).entries()) send({ id: taken[i].id, result: part });
      }
      // Let requests posted meanwhile arrive before deciding what the next transaction takes.
      await new Promise((resolve) => setImmediate(resolve));
    }
    running = false;
    if (closing) await finish();
  };

  port.on('message', (msg: BatchThreadRequest | 'close') => {
    if (msg === 'close') {
      closing = true;
      if (!running) void finish();
      return;
    }
    waiting.push(msg);
    if (running) return;
    running = true;
    // One turn of this thread's event loop lets every request already posted join.
    setImmediate(() => void run());
  });
  send({ ready: true });
}

void main();
