// Builds the AppDeps of the serverless edition from a Worker's env: settings from its
// vars and secrets (the same names as the server's environment, parsed by
// src/config.ts), the store on the D1 binding `DB`, the console JSON logger, a rate
// limiter shared by every isolate through D1, the ingest sink (on D1, or through the
// ingest queue when one is bound), symbol files and
// symbolication (re-symbolication in bounded steps), export and import routes, the
// pure-JS codecs, and the R2 bucket `BLOBS` chunk bytes go to when one is bound
// (src/store/blobs.ts). The sink and the symbol service report the work they leave in D1 (alerts
// recorded, re-symbolication runs) to the isolate's AfterAnswer, which the entry runs after
// the answer (background.ts). Built once per isolate; the schema is migrated before the
// first request is served, and the C++/Rust demangler (demangle.ts) loads meanwhile.
import type { Hono } from 'hono';
import { systemClock } from '../../clock.js';
import { loadConfig } from '../../config.js';
import type { AppDeps } from '../../context.js';
import { createApp } from '../app.js';
import {
  WORKER_MAX_SOURCE_MAP_BYTES,
  WORKER_MAX_SYMBOL_FILE_BYTES,
  WORKER_RESYMBOLICATE_STEP_EVENTS,
} from '../../limits.js';
import type { BlobBucket } from '../../store/blobs.js';
import { readStoredPayloads } from '../../store/payloads.js';
import { openD1Store, type D1Binding } from '../../store/d1.js';
import { migrate } from '../../store/migrate.js';
import { SharedRateLimiter } from '../../store/rate-limits.js';
import { AfterAnswer } from './background.js';
import { loadWorkerDemangler } from './demangle.js';
import { QueueIngestSink, type QueueBinding } from './ingest-queue.js';
import { D1IngestSink } from './ingest-sink.js';
import { createWorkerLogger } from './logger.js';
import { compressBlob, decompressBlob, workersIngestRuntime } from './runtime.js';
import { defaultSymbolKinds } from '../../symbols/default-kinds.js';
import { SymbolService } from '../../symbols/service.js';
import { expandMinidumpEnvelope } from '../../minidump/ingest.js';
import { UPLOAD_LIMITS, type UploadLimits } from '../../symbols/upload.js';
import { workersTransferRuntime } from './transfer-runtime.js';
import { VERSION } from '../../version.js';

/**
 * What the Worker is bound to: the D1 database `DB`, optionally the ingest queue
 * `INGEST_QUEUE` (ingest-queue.ts) and the R2 bucket `BLOBS` (src/store/blobs.ts), and
 * the settings as vars and secrets.
 */
export interface WorkerEnv {
  DB: D1Binding;
  INGEST_QUEUE?: QueueBinding;
  BLOBS?: BlobBucket;
  [setting: string]: unknown;
}

/** The vars and secrets that are text, i.e. the settings; bindings are objects. */
export function settingsOf(env: WorkerEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) if (typeof value === 'string') out[name] = value;
  return out;
}

/** Parsed symbol files an isolate keeps (an isolate has 128 MB). */
const SYMBOL_CACHE_BYTES = 32 * 1024 * 1024;
/** The largest symbol files an isolate can parse (src/limits.ts). */
export const SYMBOL_UPLOAD_LIMITS: UploadLimits = {
  ...UPLOAD_LIMITS,
  maxFileBytes: WORKER_MAX_SYMBOL_FILE_BYTES,
  maxFileBytesByKind: { sourcemap: WORKER_MAX_SOURCE_MAP_BYTES },
};
/** Lines per export answer: a part reads and encodes within a request's CPU time. */
const EXPORT_PART_LINES = 2000;
/**
 * An import batch (one atomic D1 batch): 100 lines or 4 MB of line text, so a batch of
 * events is a few hundred statements and one of symbol chunks (base64 lines of 700 KB)
 * a handful of 512 KiB values.
 */
const IMPORT_BATCH = { lines: 100, chars: 4 * 1024 * 1024 };

export function buildWorkerDeps(env: WorkerEnv, afterAnswer: AfterAnswer = new AfterAnswer()): AppDeps {
  const config = loadConfig(settingsOf(env));
  const logger = createWorkerLogger(config.logLevel);
  const blobs = env.BLOBS;
  const store = openD1Store(env.DB, 'DB', blobs);
  const direct = new D1IngestSink(store, Math.random, afterAnswer.alertsRecorded, blobs);
  // Native frames get readable C++/Rust names once it is loaded (symbolication waits for it);
  // without it they keep mangled ones.
  const demangle = loadWorkerDemangler().catch((err: unknown) => {
    logger.warn({ err }, 'C++/Rust demangler unavailable; native names stay mangled');
    return undefined;
  });
  return {
    config,
    store,
    clock: systemClock,
    logger,
    // Isolates come and go and serve in parallel: the limit lives in D1 (rate_limit_windows).
    rateLimiter: new SharedRateLimiter(store, config.rateLimit, logger),
    // With a queue, requests are answered once their work is enqueued and the consumer
    // commits works in batches (index.ts `queue`); without one, each request commits.
    ingest: env.INGEST_QUEUE ? new QueueIngestSink(env.INGEST_QUEUE, direct, logger) : direct,
    ingestRuntime: workersIngestRuntime,
    expandMinidump: expandMinidumpEnvelope,
    decompressBlob,
    compressBlob,
    blobs,
    clientAddress: (request) => request.headers.get('cf-connecting-ip') ?? undefined,
    // Symbol upload, listing, deletion and symbolication at ingest (before the sink).
    // Re-symbolication of stored events goes in bounded steps (an isolate lives only
    // while it serves): one after the upload's answer, the rest by cron. Files the
    // sentry-cli routes store have the same limits as the Symbols routes' (what an
    // isolate can parse).
    symbols: new SymbolService({
      store,
      kinds: defaultSymbolKinds(),
      demangle,
      clock: systemClock,
      logger,
      cacheBytes: SYMBOL_CACHE_BYTES,
      uploadLimits: SYMBOL_UPLOAD_LIMITS,
      md5Hex: workersIngestRuntime.md5Hex,
      readPayloads: (db, rows) => readStoredPayloads(db, rows, decompressBlob, blobs),
      steps: { batchEvents: WORKER_RESYMBOLICATE_STEP_EVENTS, scheduled: afterAnswer.resymbolicationScheduled },
    }),
    // Promises still pending when a Worker has answered are cancelled (only waitUntil keeps
    // them, for 30 s): an assembly is answered when it is done, never `created` and left
    // to finish, so a large one is bounded by the request's CPU time only.
    assembleWaitMs: Number.POSITIVE_INFINITY,
    transfer: {
      runtime: blobs ? { ...workersTransferRuntime, blobs } : workersTransferRuntime,
      version: VERSION,
      // D1 has no read transaction across statements: an export's parts are as
      // consistent as their reads (docs/architecture.md "Export and import").
      snapshot: false,
      partLines: EXPORT_PART_LINES,
      importBatch: IMPORT_BATCH,
    },
  };
}

export interface WorkerInstance {
  deps: AppDeps;
  app: Hono;
  /** Work the isolate's requests left, run after an answer (background.ts). */
  afterAnswer: AfterAnswer;
  /** Settles once the schema is current; rejects when migrating failed (retried by the next request). */
  ready: Promise<void>;
}

let current: { env: WorkerEnv; instance: WorkerInstance } | null = null;

/**
 * The isolate's app for this env. A fresh database is migrated by the first request
 * that meets it; two isolates starting on it at once can race on a migration, so a
 * failed attempt is tried once more (the other isolate has usually finished) and
 * otherwise left for the next request.
 */
export function workerInstance(env: WorkerEnv): WorkerInstance {
  if (current && current.env === env) return current.instance;
  const afterAnswer = new AfterAnswer();
  const deps = buildWorkerDeps(env, afterAnswer);
  const instance: WorkerInstance = { deps, app: createApp(deps), afterAnswer, ready: prepare(deps) };
  instance.ready.catch(() => {
    if (current?.instance === instance) current = null;
  });
  current = { env, instance };
  return instance;
}

/** What the isolate needs before it serves: a current schema. */
async function prepare(deps: AppDeps): Promise<void> {
  await migrateOnce(deps);
}

async function migrateOnce(deps: AppDeps): Promise<void> {
  try {
    await migrateAndLog(deps);
  } catch (first) {
    deps.logger.warn({ err: first }, 'migrating D1 failed; trying once more');
    await new Promise((resolve) => setTimeout(resolve, 250));
    await migrateAndLog(deps);
  }
}

async function migrateAndLog(deps: AppDeps): Promise<void> {
  const { applied, version } = await migrate(deps.store);
  if (applied.length > 0)
    deps.logger.info({ applied, version, database: deps.store.description }, 'database schema migrated');
}
