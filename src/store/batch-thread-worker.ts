// The batch thread's program (see batch-thread.ts): its own SQLite connection,
// one ingest batch per message, answered with the batch's result or its error.
import { parentPort, workerData } from 'node:worker_threads';
import { sql } from 'kysely';
import type { BatchThreadReply, BatchThreadRequest } from './batch-thread.js';
import { openStore, type Store } from './database.js';
import { commitIngestBatch, compressRaw } from './ingest-batch.js';
import { WRITER_AUTOCHECKPOINT_PAGES } from './wal-checkpointer.js';

const port = parentPort!;
const send = (reply: BatchThreadReply) => port.postMessage(reply);

async function main(): Promise<void> {
  let store: Store;
  try {
    store = await openStore((workerData as { databaseUrl: string }).databaseUrl);
    // The process's background checkpointer copies the WAL; this connection's own
    // automatic checkpoint is only the safety net.
    await sql.raw(`pragma wal_autocheckpoint = ${WRITER_AUTOCHECKPOINT_PAGES}`).execute(store.db);
  } catch (err) {
    send({ fatal: `the batch thread could not open the database: ${(err as Error).message}` });
    return;
  }
  // Messages are handled one at a time: the writer sends the next batch only after
  // this one's answer, and SQLite has one writer anyway.
  let chain = Promise.resolve();
  port.on('message', (msg: BatchThreadRequest | 'close') => {
    chain = chain.then(async () => {
      if (msg === 'close') {
        await store.close();
        port.close();
        return;
      }
      for (const work of msg.works) {
        for (const e of work.events) {
          // Buffers arrive as plain Uint8Arrays; the driver binds blobs from Buffers.
          if (e.raw !== null) e.raw = Buffer.from(e.raw.buffer, e.raw.byteOffset, e.raw.byteLength);
        }
        // Payloads sure to be stored are compressed before the transaction, so the write
        // lock (which the main thread's writes also wait for) is not held meanwhile.
        for (const e of work.eager) compressRaw(e);
      }
      try {
        const result = await commitIngestBatch(store, msg.works, { random: Math.random });
        send({ id: msg.id, result });
      } catch (err) {
        const e = err as { message?: string; name?: string; code?: unknown };
        send({
          id: msg.id,
          error: { message: String(e?.message ?? err), name: String(e?.name ?? 'Error'), code: typeof e?.code === 'string' ? e.code : undefined },
        });
      }
    });
  });
  send({ ready: true });
}

void main();
