// Compression on a worker thread for the ingest writer: the same bytes as codec.ts's
// `compress`, without spending the main thread's time (HTTP, parsing and SQLite all
// run there). Kept apart from codec.ts so readers of stored blobs do not load
// worker_threads.
import { Worker } from 'node:worker_threads';
import { BROTLI_QUALITY, BROTLI_TAG, brotliChunkSize } from './codec.js';
import { WORKER_OLD_GENERATION_MB } from './worker-heap.js';

// The worker's whole program. Evaluated from a string so it needs no file of its own
// on disk (the same code runs from src/ under vitest and from dist/).
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
const zlib = require('node:zlib');
parentPort.on('message', (msg) => {
  try {
    const out = msg.items.map((bytes) => {
      const packed = zlib.brotliCompressSync(bytes, { chunkSize: (${brotliChunkSize.toString()})(bytes.byteLength), params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: ${BROTLI_QUALITY},
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength,
      } });
      const blob = Buffer.allocUnsafe(packed.length + 1);
      blob[0] = ${BROTLI_TAG};
      packed.copy(blob, 1);
      return blob;
    });
    parentPort.postMessage({ id: msg.id, out });
  } catch (err) {
    parentPort.postMessage({ id: msg.id, error: String(err && err.message || err) });
  }
});
`;

/**
 * The worker keeps nothing between messages: a small young generation, and the store's
 * worker old-generation limit (worker-heap.ts). Peak RSS on PostgreSQL at saturation
 * 159-161 -> 150-151 MB at the same throughput (BENCHMARKS.md).
 */
const WORKER_LIMITS = { maxYoungGenerationSizeMb: 2, maxOldGenerationSizeMb: WORKER_OLD_GENERATION_MB };

/** Items per message to the worker: enough to amortise messaging, small enough to start early. */
const WORKER_CHUNK = 64;

/**
 * Compression on a worker thread, so the main thread (HTTP, parsing, SQLite) does not
 * spend its time in zlib. Calls made in the same turn of the event loop travel in one
 * message. Output is identical to `compress`. If the worker fails, pending and later
 * calls reject and the caller compresses on its own thread instead.
 */
export class CompressionWorker {
  private worker: Worker | null = null;
  private failed = false;
  private nextId = 1;
  private outbox: { bytes: Uint8Array; resolve: (b: Buffer) => void; reject: (e: Error) => void }[] = [];
  private flushScheduled = false;
  private readonly waiting = new Map<number, { resolve: (b: Buffer) => void; reject: (e: Error) => void }[]>();

  /** Compressed `bytes`, as `compress` would return them. */
  compress(bytes: Uint8Array): Promise<Buffer> {
    if (this.failed) return Promise.reject(new Error('compression worker unavailable'));
    return new Promise((resolve, reject) => {
      this.outbox.push({ bytes, resolve, reject });
      if (this.outbox.length >= WORKER_CHUNK) this.flush();
      else if (!this.flushScheduled) {
        this.flushScheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(WORKER_SOURCE, { eval: true, resourceLimits: WORKER_LIMITS });
    worker.unref();
    worker.on('message', (msg: { id: number; out?: Uint8Array[]; error?: string }) => {
      const callbacks = this.waiting.get(msg.id);
      if (!callbacks) return;
      this.waiting.delete(msg.id);
      if (msg.out) callbacks.forEach((c, i) => c.resolve(Buffer.from(msg.out![i].buffer, msg.out![i].byteOffset, msg.out![i].byteLength)));
      else callbacks.forEach((c) => c.reject(new Error(msg.error ?? 'compression failed')));
    });
    const fail = (err: unknown) => {
      this.failed = true;
      this.worker = null;
      const error = err instanceof Error ? err : new Error(String(err));
      for (const callbacks of this.waiting.values()) callbacks.forEach((c) => c.reject(error));
      this.waiting.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => {
      if (this.worker === worker) fail(new Error(`compression worker exited with code ${code}`));
    });
    this.worker = worker;
    return worker;
  }

  private flush(): void {
    this.flushScheduled = false;
    while (this.outbox.length > 0) {
      const part = this.outbox.splice(0, WORKER_CHUNK);
      if (this.failed) {
        part.forEach((p) => p.reject(new Error('compression worker unavailable')));
        continue;
      }
      const id = this.nextId++;
      this.waiting.set(id, part);
      try {
        this.start().postMessage({ id, items: part.map((p) => p.bytes) });
      } catch (err) {
        this.waiting.delete(id);
        part.forEach((p) => p.reject(err instanceof Error ? err : new Error(String(err))));
      }
    }
  }

  /** Stops the worker; calls still pending reject. */
  async close(): Promise<void> {
    this.failed = true;
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
    for (const callbacks of this.waiting.values()) callbacks.forEach((c) => c.reject(new Error('compression worker closed')));
    this.waiting.clear();
  }
}
