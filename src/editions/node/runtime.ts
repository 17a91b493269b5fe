// The Node parts of the ingest path (AppDeps.ingestRuntime): zlib for
// Content-Encoding and legacy /store/ bodies, node:crypto for the fingerprint MD5,
// setImmediate to let ready I/O run before a request is parsed (on PostgreSQL a few
// per turn of the event loop). The ingest and HTTP modules themselves use Web APIs
// only; another edition supplies its own (for example a pure-JS inflate and MD5).
import * as crypto from 'node:crypto';
import zlib from 'node:zlib';
import type { IngestRuntime } from '../../context.js';
import { DecodedTooLargeError, type CompressionFormat } from '../../ingest/decode.js';

function decompress(format: CompressionFormat, bytes: Uint8Array, maxOutputLength: number): Uint8Array {
  // maxOutputLength stops zlib as soon as the output passes the limit (a bomb never
  // allocates more), with ERR_BUFFER_TOO_LARGE.
  const opts = { maxOutputLength };
  try {
    switch (format) {
      case 'gzip':
        return zlib.gunzipSync(bytes, opts);
      case 'deflate':
        return zlib.inflateSync(bytes, opts);
      case 'deflate-raw':
        return zlib.inflateRawSync(bytes, opts);
      case 'br':
        return zlib.brotliDecompressSync(bytes, opts);
    }
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw new DecodedTooLargeError();
    throw err;
  }
}

// One-shot crypto.hash is faster; it exists from Node 20.12, older 20.x falls back.
const md5Hex: (text: string) => string =
  typeof crypto.hash === 'function'
    ? (text) => crypto.hash('md5', text, 'hex')
    : (text) => crypto.createHash('md5').update(text).digest('hex');

const yieldToIo = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * Parses released per turn of the event loop with pacedYieldToIo. A burst of request
 * bodies read in one poll phase is otherwise parsed all in the next check phase (80
 * requests, about 12 ms), and answers from PostgreSQL that arrived meanwhile wait for
 * the whole burst: a batch's reads take about a millisecond on the server, and the
 * project's next batch cannot start before the running one ends.
 */
export const PARSES_PER_TURN = 8;

const waiting: (() => void)[] = [];
let releaseScheduled = false;

function releaseSome(): void {
  releaseScheduled = false;
  // Taken before any runs: a parse that yields again waits for a later turn.
  const now = waiting.splice(0, PARSES_PER_TURN);
  if (waiting.length > 0) scheduleRelease();
  for (const resume of now) resume();
}

function scheduleRelease(): void {
  if (releaseScheduled) return;
  releaseScheduled = true;
  setImmediate(releaseSome);
}

/** yieldToIo that lets the poll phase run again after every PARSES_PER_TURN parses. */
const pacedYieldToIo = (): Promise<void> =>
  new Promise((resolve) => {
    waiting.push(resolve);
    scheduleRelease();
  });

export const nodeIngestRuntime: IngestRuntime = { decompress, md5Hex, yieldToIo };

/**
 * The runtime for a store on PostgreSQL, where ingest is as fast as one project's chain
 * of batches and a quicker hand-on of the database's answers lengthens it less
 * (measured: +8 % requests/s). On SQLite, whose two threads keep both cores busy,
 * pacing costs 6 % (the batch thread gets its work later), so it is not used there.
 */
export const postgresNodeIngestRuntime: IngestRuntime = { ...nodeIngestRuntime, yieldToIo: pacedYieldToIo };
