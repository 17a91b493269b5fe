// Parses symbol files (the kinds with a `parse`: source maps) on a worker thread, so the
// seconds a 50 MB map takes never stop the event loop: /health and every other request go
// on while it parses. The thread builds plain data (typed arrays, strings) and transfers
// it back; the kind wraps it on this side (docs/architecture.md "Symbolication"). The
// thread has its own old-generation limit: a map that needs more ends the thread with an
// out-of-memory error (the file is then skipped as broken), not the process. Only for
// compiled code (dist/), as the batch thread: under vitest's TypeScript sources there is
// no thread program and the service parses inline.
import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import v8 from 'node:v8';
import { Worker } from 'node:worker_threads';
import type { SymbolParser } from '../../symbols/kinds.js';
import type { SymbolFileRow, SymbolKind } from '../../symbols/storage.js';
import { DEFAULT_SYMBOL_CACHE_BYTES } from '../../symbols/service.js';

/** The compiled thread program beside this module. */
export const SYMBOL_PARSE_THREAD_FILE = new URL('./symbol-parse-thread-worker.js', import.meta.url);

export interface SymbolParseRequest {
  id: number;
  kind: SymbolKind;
  file: SymbolFileRow;
  bytes: Uint8Array;
  index: Uint8Array | null;
}

export type SymbolParseReply = { id: number; data: unknown } | { id: number; error: { message: string; name: string } };

/** True when the compiled thread program is there (not under vitest's TypeScript sources). */
export function symbolParseThreadAvailable(file: URL = SYMBOL_PARSE_THREAD_FILE): boolean {
  return file.protocol === 'file:' && fs.existsSync(fileURLToPath(file));
}

const MB = 1024 * 1024;
/** An idle parse thread ends after this long (see stopWhenIdle). */
const IDLE_THREAD_MS = 5_000;

/** The process's V8 heap limit (`--max-old-space-size`, else V8's default for the machine). */
function heapLimitBytes(): number {
  return v8.getHeapStatistics().heap_size_limit;
}

/**
 * The parsed-file cache's bound for this process: a quarter of the heap limit, at most
 * DEFAULT_SYMBOL_CACHE_BYTES, so a server started with a small heap keeps room for requests.
 */
export function symbolCacheBytesForHeap(heapLimit: number = heapLimitBytes()): number {
  return Math.max(8 * MB, Math.min(DEFAULT_SYMBOL_CACHE_BYTES, Math.floor(heapLimit / 4)));
}

/** Error a parse in the thread failed with (the kind's message, e.g. a SymbolInputError's). */
export class SymbolParseError extends Error {
  constructor(
    message: string,
    override readonly name: string,
  ) {
    super(message);
  }
}

/** The ArrayBuffers of the typed arrays inside `value` (moved, not copied, across threads). */
export function transferablesOf(value: unknown, out: Set<ArrayBuffer> = new Set(), depth = 0): ArrayBuffer[] {
  if (depth > 6 || value === null || typeof value !== 'object') return [...out];
  if (ArrayBuffer.isView(value)) {
    if (value.buffer instanceof ArrayBuffer) out.add(value.buffer);
  } else if (Array.isArray(value)) {
    for (const v of value) if (v !== null && typeof v === 'object') transferablesOf(v, out, depth + 1);
  } else {
    for (const v of Object.values(value)) if (v !== null && typeof v === 'object') transferablesOf(v, out, depth + 1);
  }
  return [...out];
}

export class SymbolParseThread implements SymbolParser {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, { resolve(data: unknown): void; reject(err: Error): void }>();
  private nextId = 1;
  private idleTimer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly file: URL = SYMBOL_PARSE_THREAD_FILE,
    /** The thread's old-generation limit: half the process's heap limit, at least 64 MB. */
    private readonly oldGenerationMb = Math.max(64, Math.floor(heapLimitBytes() / MB / 2)),
  ) {}

  parse(kind: SymbolKind, file: SymbolFileRow, bytes: Uint8Array, index: Uint8Array | null): Promise<unknown> {
    const worker = this.started();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) worker.ref();
      const request: SymbolParseRequest = { id, kind, file, bytes, index };
      // The bytes move to the thread: the caller read them for this parse only.
      worker.postMessage(request, transferablesOf([bytes, index]));
    });
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(this.file, { resourceLimits: { maxOldGenerationSizeMb: this.oldGenerationMb } });
    worker.on('message', (reply: SymbolParseReply) => {
      const waiting = this.pending.get(reply.id);
      if (!waiting) return;
      this.pending.delete(reply.id);
      if (this.pending.size === 0) {
        worker.unref();
        this.stopWhenIdle(worker);
      }
      if ('error' in reply) waiting.reject(new SymbolParseError(reply.error.message, reply.error.name));
      else waiting.resolve(reply.data);
    });
    const failAll = (err: Error) => {
      if (this.worker === worker) this.worker = null;
      const waiting = [...this.pending.values()];
      this.pending.clear();
      for (const w of waiting) w.reject(err);
    };
    // Out of memory (ERR_WORKER_OUT_OF_MEMORY) or a crash: the parses in flight fail, the next one starts a new thread.
    worker.on('error', failAll);
    worker.on('exit', (code) => failAll(new Error(`the symbol parse thread stopped (exit code ${code})`)));
    worker.unref();
    this.worker = worker;
    return worker;
  }

  /**
   * Ends an idle thread after IDLE_THREAD_MS: what a parse left in its heap (hundreds of MB
   * after a big map, collected only when V8 needs room) goes back to the system, and the
   * next parse starts a thread again (tens of ms against seconds of parsing).
   */
  private stopWhenIdle(worker: Worker): void {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      this.idleTimer = null;
      if (this.worker !== worker || this.pending.size > 0) return;
      this.worker = null;
      void worker.terminate();
    }, IDLE_THREAD_MS);
    this.idleTimer.unref();
  }

  async close(): Promise<void> {
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const worker = this.worker;
    this.worker = null;
    if (worker) await worker.terminate();
  }
}
