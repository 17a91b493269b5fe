// Node server edition: wires better-sqlite3/pg, pino and @hono/node-server
// around the shared app, with the direct ingest listener (src/editions/node/ingest.ts) in front.
import { createHash } from 'node:crypto';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { getRequestListener } from '@hono/node-server';
import pino, { type Logger } from 'pino';
import { systemClock, type Clock } from '../../clock.js';
import type { Config } from '../../config.js';
import type { AppDeps } from '../../context.js';
import { createApp } from '../app.js';
import { localBaseUrl } from '../../http/public-url.js';
import { MemoryRateLimiter } from '../../http/rate-limit.js';
import { createIngestWriter } from './writer.js';
import { compress, decompress } from './codec.js';
import { migrate } from '../../store/database.js';
import { openStore } from './open-store.js';
import { SharedRateLimiter } from '../../store/rate-limits.js';
import { startRetentionJob } from '../../store/retention.js';
import { RETENTION_DOMAINS } from '../retention.js';
import { startMonitorJob } from '../../monitors/job.js';
import { AlertDispatcher, SPIKE_CHECK_INTERVAL_MS, type DispatcherOptions } from '../../alerts/dispatcher.js';
import { nodeAlertRuntimeFor } from './alerts.js';
import { storedPayloads } from './payloads.js';
import { defaultSymbolKinds } from '../../symbols/default-kinds.js';
import { SymbolService } from '../../symbols/service.js';
import { expandMinidumpEnvelope } from '../../minidump/ingest.js';
import { endTimeSnoozes } from '../../triage/snooze.js';
import type { UploadLimits } from '../../symbols/upload.js';
import { incomingOf, readNodeRequestBody } from './body.js';
import { directIngestListener } from './ingest.js';
import { loadNodeDemangler } from './demangle.js';
import { nodeDiskGuard } from './disk.js';
import { createNodeMetrics } from './metrics.js';
import { nodeIngestRuntime, postgresNodeIngestRuntime } from './runtime.js';
import { SymbolParseThread, symbolCacheBytesForHeap, symbolParseThreadAvailable } from './symbol-parse-thread.js';

export interface NodeDepsOptions {
  clock?: Clock;
  logger?: Logger;
  /** Symbol upload limits lower than src/limits.ts's (tests reach them with small files). */
  symbolUploadLimits?: UploadLimits;
}

export function createLogger(config: Config): Logger {
  return pino({ level: config.logLevel, base: undefined, timestamp: pino.stdTimeFunctions.isoTime });
}

/** Opens and migrates the database and builds every dependency of the app. */
export async function buildNodeDeps(config: Config, options: NodeDepsOptions = {}): Promise<AppDeps> {
  const logger = options.logger ?? createLogger(config);
  const clock = options.clock ?? systemClock;
  const store = await openStore(config.databaseUrl, {
    backgroundCheckpoints: true,
    onCheckpointError: (message) =>
      logger.warn({ error: message }, 'background WAL checkpoint failed; the writer checkpoints itself'),
  });
  try {
    const { applied, version } = await migrate(store);
    if (applied.length > 0) logger.info({ applied, version, database: store.description }, 'database schema migrated');
  } catch (err) {
    await store.close();
    throw err;
  }
  // The metrics read the writer's queue once it exists.
  let writer: ReturnType<typeof createIngestWriter> | undefined;
  const metrics = createNodeMetrics({ store, ingestStats: () => writer?.stats() });
  const ingest = createIngestWriter({ store, clock, logger, onCommit: (seconds) => metrics.observeCommit(seconds) });
  writer = ingest;
  const ingestRuntime = store.dialect === 'postgres' ? postgresNodeIngestRuntime : nodeIngestRuntime;
  // Native frames get readable C++/Rust names; without the demangler they keep mangled ones.
  const demangle = await loadNodeDemangler().catch((err: unknown) => {
    logger.warn({ err }, 'C++/Rust demangler unavailable; native names stay mangled');
    return undefined;
  });
  return {
    config,
    store,
    clock,
    logger,
    // SQLite serves one process; on PostgreSQL several instances share the limit.
    rateLimiter:
      store.dialect === 'postgres'
        ? new SharedRateLimiter(store, config.rateLimit, logger)
        : new MemoryRateLimiter(config.rateLimit),
    ingest,
    ingestRuntime,
    expandMinidump: expandMinidumpEnvelope,
    decompressBlob: decompress,
    compressBlob: compress,
    diskGuard: nodeDiskGuard(config),
    metrics,
    readRequestBody: readNodeRequestBody,
    clientAddress: (_request, env) => incomingOf(env)?.socket?.remoteAddress,
    alertRuntime: nodeAlertRuntimeFor(config),
    createSha1: () => {
      const hash = createHash('sha1');
      return { update: (bytes) => void hash.update(bytes), digestHex: () => hash.digest('hex') };
    },
    symbols: new SymbolService({
      store,
      kinds: defaultSymbolKinds(),
      demangle,
      clock,
      logger,
      md5Hex: ingestRuntime.md5Hex,
      readPayloads: storedPayloads,
      uploadLimits: options.symbolUploadLimits,
      cacheBytes: symbolCacheBytesForHeap(),
      // A SQLite database serves one process: half-written uploads there at start are a dead one's.
      soleWriter: store.dialect === 'sqlite',
      // Source maps parse on a thread (dist/ only), so a big one does not stop every request.
      parser: symbolParseThreadAvailable() ? new SymbolParseThread() : undefined,
    }),
  };
}

/** How long an idle keep-alive connection stays open (see startServer). */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;

export interface RunningServer {
  url: string;
  port: number;
  /** The alert dispatcher, unless turned off. */
  alerts: AlertDispatcher | null;
  /** Stops accepting, finishes in-flight requests, flushes the writer, closes the database. */
  close(): Promise<void>;
}

export interface StartServerOptions {
  /** Run the housekeeping `serve` does (hourly retention, the minutely cron monitor check). Off for embedded and test servers. */
  background?: boolean;
  /**
   * The alert dispatcher (src/alerts/dispatcher.ts): on unless false; options override
   * its defaults (tests shorten the retry delays). With `background` it also checks
   * crash spikes every 10 minutes.
   */
  alerts?: Partial<DispatcherOptions> | false;
}

export async function startServer(
  deps: AppDeps,
  port = deps.config.port,
  host = deps.config.host,
  options: StartServerOptions = {},
): Promise<RunningServer> {
  const app = createApp(deps);
  // SDK ingest skips Hono on this edition (src/editions/node/ingest.ts); the rest is the app.
  const server = await new Promise<HttpServer>((resolve, reject) => {
    // Hono's listener answers its own errors (500), so its promise is not awaited here.
    const honoListener = getRequestListener(app.fetch, { hostname: host });
    const s = createServer(directIngestListener(deps, (req, res) => void honoListener(req, res)));
    s.once('error', reject);
    s.listen(port, host, () => resolve(s));
  });
  // Node closes a keep-alive connection after 5 s idle by default. A client that sends on
  // it just then (SDKs and proxies keep connections longer) gets ECONNRESET for a request
  // the server never read (measured: 5 of 66 667 benchmark requests fail that way). Idle
  // connections are kept 65 s, longer than common client and load-balancer idle timeouts
  // (60 s), so the client is the one that closes them.
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.headersTimeout = KEEP_ALIVE_TIMEOUT_MS + 1_000;
  const address = server.address() as AddressInfo;
  const url = localBaseUrl(host, address.port);
  let closing: Promise<void> | null = null;
  // Re-symbolication runs left pending by a stop mid-way go on.
  deps.symbols?.start();
  const retention = options.background
    ? startRetentionJob({
        store: deps.store,
        clock: deps.clock,
        logger: deps.logger,
        retentionDays: deps.config.retentionDays,
        ...RETENTION_DOMAINS,
      })
    : null;
  const alerts =
    options.alerts === false
      ? null
      : new AlertDispatcher(
          {
            store: deps.store,
            clock: deps.clock,
            logger: deps.logger,
            config: deps.config,
            runtime: deps.alertRuntime ?? nodeAlertRuntimeFor(deps.config),
            endTimeSnoozes,
          },
          { spikeCheckMs: options.background ? SPIKE_CHECK_INTERVAL_MS : null, ...options.alerts },
        ).start();
  // Cron monitors are checked every minute (missed and timed-out runs); the dispatcher sends their alerts.
  const monitors = options.background
    ? startMonitorJob({ store: deps.store, clock: deps.clock, logger: deps.logger, onAlerts: () => alerts?.wake() })
    : null;
  return {
    url,
    port: address.port,
    alerts,
    close() {
      closing ??= (async () => {
        const retentionStopped = retention?.stop();
        const monitorsStopped = monitors?.stop();
        const alertsStopped = alerts?.stop();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
        await retentionStopped;
        await monitorsStopped;
        await alertsStopped;
        await deps.symbols?.close();
        await deps.ingest.close();
        await deps.store.close();
      })();
      return closing;
    },
  };
}
