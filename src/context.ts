// The dependencies every part of the app receives, built by an edition
// (src/editions) and injected, so route and domain code never reach for
// process-wide singletons and the serverless edition can supply its own.
import type { Config } from './config.js';
import type { DecompressBlob } from './store/stored-payload.js';
import type { CompressBlob } from './store/payloads.js';
import type { PipelineDeps } from './ingest/pipeline.js';
import type { AlertRuntime } from './alerts/transport.js';
import type { CreateSha1 } from './uploads/assemble.js';
import type { SymbolService } from './symbols/service.js';
import type { TransferHttpDeps } from './transfer/http.js';

export type { RateLimitDecision, RateLimiter } from './store/rate-limits.js';

export type { IngestRuntime } from './ingest/types.js';

/**
 * What ingest takes (store, clock, logger, rate limiter, sink, runtime, the minidump step,
 * metrics, disk guard, bucket: src/ingest/pipeline.ts PipelineDeps) and the rest.
 */
export interface AppDeps extends Omit<PipelineDeps, 'symbols'> {
  config: Config;
  /** Decodes the store's compressed blobs (event payloads) for the read API (Node: src/editions/node/codec.ts). */
  decompressBlob: DecompressBlob;
  /**
   * The inverse of decompressBlob, for rewriting stored blobs (end-user deletion blanks a
   * user's payloads inside shared chunks). Editions without it cannot erase end users.
   */
  compressBlob?: CompressBlob;
  /**
   * Reads a request's body straight from the edition's own request object, when it
   * has a cheaper way than the Web stream (Node: the IncomingMessage; creating the
   * Web Request and ReadableStream cost more than the rest of an ingest request).
   * Returns undefined to fall back to the Web stream. Throws PayloadTooLargeError past `limit`.
   */
  readRequestBody?: (request: Request, env: unknown, limit: number) => Promise<Uint8Array> | undefined;
  /**
   * The network address of the peer that sent a request, supplied by the edition
   * (Node: the socket's remote address; `env` is what the server adapter passes as
   * the app's env). Used to key the open management API's rate limit.
   */
  clientAddress?: (request: Request, env: unknown) => string | undefined;
  /**
   * How alerts reach channels (Node: src/editions/node/alerts.ts, which checks the
   * addresses a webhook's name resolves to as it connects). Default: fetch, literal
   * hosts checked only.
   */
  alertRuntime?: AlertRuntime;
  /**
   * An incremental SHA-1 for checking assembled uploads (Node: node:crypto, several
   * times faster than the portable one in src/uploads/assemble.ts used without it).
   */
  createSha1?: CreateSha1;
  /**
   * How long a sentry-cli assemble request waits for its assembly before answering
   * `created` and letting it finish after the answer (default 20 s, DEFAULT_ASSEMBLE_WAIT_MS).
   * The serverless edition waits for the end (Infinity): a Worker's work stops once it
   * has answered.
   */
  assembleWaitMs?: number;
  /** Symbol files and symbolication (src/symbols): upload, matching, the parsed-file cache, re-symbolication. */
  symbols?: SymbolService;
  /**
   * Export and import over HTTP (`GET /api/export`, `POST /api/import`), on editions that
   * serve them (the serverless edition; the server edition has the CLI).
   */
  transfer?: Omit<TransferHttpDeps, 'store'>;
}
