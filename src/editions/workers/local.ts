// `npm run worker`: the serverless edition on this machine. The Worker is bundled by
// wrangler exactly as `wrangler deploy` bundles it (wrangler.jsonc), then served by
// Miniflare (the Workers runtime, workerd, from npm) on 127.0.0.1 with a local D1
// under WORKER_DATA_DIR (default ./data/worker), the ingest queue of wrangler.jsonc
// (WORKER_QUEUE=0: without it) and its R2 bucket, kept under the same folder's `r2`
// (WORKER_BLOBS=0: without it, bytes in D1). Settings come from the environment
// as for `npm start`; the crons of wrangler.jsonc run on timers. SIGTERM or SIGINT
// (to this process or to `npm run worker`) stops it and workerd cleanly. Node code: it runs beside the Worker, never inside it. Tests use
// the same functions.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import { gzipSync } from 'node:zlib';
import { Log, LogLevel, Miniflare } from 'miniflare';
import { unstable_getMiniflareWorkerOptions } from 'wrangler';
import { loadConfig } from '../../config.js';
import { ALERTS_CRON, RESYMBOLICATE_CRON, RETENTION_CRON } from './crons.js';

/** The repository root (this file is src/editions/workers/local.ts, or its build in dist/). */
export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
export const WRANGLER_CONFIG = path.join(REPO_ROOT, 'wrangler.jsonc');
const WRANGLER_BIN = path.join(REPO_ROOT, 'node_modules/wrangler/bin/wrangler.js');

/**
 * The compressed upload size this project keeps the Worker under: its own cap, a third of
 * the 3 MiB Cloudflare takes on the free plan (10 MiB on paid plans), so the domains
 * still to come fit.
 */
export const BUNDLE_BUDGET_GZIP_BYTES = 1024 * 1024;
/** Cloudflare's limits on a Worker's compressed upload. */
export const CLOUDFLARE_FREE_GZIP_BYTES = 3 * 1024 * 1024;
export const CLOUDFLARE_PAID_GZIP_BYTES = 10 * 1024 * 1024;

export interface WorkerBundle {
  dir: string;
  /** The script (the main module). */
  file: string;
  /** The other modules it imports, uploaded beside it (the demangler's WebAssembly). */
  modules: string[];
  /** The upload's size, script and modules, raw and gzipped as wrangler reports it ("Total Upload"). */
  bytes: number;
  gzipBytes: number;
}

/**
 * Bundles the Worker with `wrangler deploy --dry-run` into `outdir`: the bundle a
 * deploy would upload, built offline (nothing is sent anywhere).
 */
export async function buildWorkerBundle(outdir: string, options: { minify?: boolean } = {}): Promise<WorkerBundle> {
  const args = [WRANGLER_BIN, 'deploy', '--dry-run', '--config', WRANGLER_CONFIG, '--outdir', outdir];
  if (options.minify) args.push('--minify');
  await promisify(execFile)(process.execPath, args, {
    cwd: REPO_ROOT,
    env: { ...process.env, WRANGLER_SEND_METRICS: 'false', CI: '1' },
    maxBuffer: 16 * 1024 * 1024,
  });
  const file = path.join(outdir, 'index.js');
  // Besides the script, the outdir holds wrangler's README and the source map, which a deploy does not upload.
  const modules = fs
    .readdirSync(outdir)
    .filter((name) => name.endsWith('.wasm'))
    .map((name) => path.join(outdir, name));
  // Measured as wrangler measures its "Total Upload": the modules, then the script, as one gzip stream.
  const upload = Buffer.concat([...modules, file].map((f) => fs.readFileSync(f)));
  return { dir: outdir, file, modules, bytes: upload.length, gzipBytes: gzipSync(upload).length };
}

export interface LocalWorkerOptions {
  bundle: WorkerBundle;
  /** Where the local D1 keeps its files. */
  dataDir: string;
  host?: string;
  /** 0 picks a free port. */
  port: number;
  /** The settings (vars and secrets), by the names the server reads from its environment. */
  settings: Record<string, string>;
  /** Print the Worker's log lines (its console) and Miniflare's notices. */
  log?: boolean;
  /**
   * Bind the ingest queue of wrangler.jsonc (Miniflare runs it locally, kept in memory:
   * what is enqueued and not yet consumed is lost with the process). Default false: the
   * direct path, each request committing its own D1 batch before it is answered.
   */
  queue?: boolean;
  /**
   * Bind the R2 bucket of wrangler.jsonc (Miniflare keeps it under dataDir/r2). False:
   * payload chunks stay in D1.
   */
  blobs?: boolean;
}

export interface LocalWorker {
  url: string;
  miniflare: Miniflare;
  /** Runs the Worker's scheduled handler for a cron expression of wrangler.jsonc. */
  runCron(cron: string): Promise<void>;
  close(): Promise<void>;
}

export async function startLocalWorker(options: LocalWorkerOptions): Promise<LocalWorker> {
  const { workerOptions } = unstable_getMiniflareWorkerOptions(WRANGLER_CONFIG);
  if (options.queue !== true) {
    delete workerOptions.queueProducers;
    delete workerOptions.queueConsumers;
  }
  if (options.blobs === false) delete workerOptions.r2Buckets;
  const vars = (workerOptions.bindings ?? {}) as Record<string, unknown>;
  const host = options.host ?? '127.0.0.1';
  const miniflare = new Miniflare({
    ...workerOptions,
    modules: true,
    modulesRoot: options.bundle.dir,
    scriptPath: options.bundle.file,
    bindings: { ...vars, ...options.settings },
    d1Persist: options.dataDir,
    r2Persist: path.join(options.dataDir, 'r2'),
    // The placeholder request.cf: Miniflare would otherwise fetch a real one from Cloudflare.
    cf: false,
    host,
    port: options.port,
    log: new Log(options.log ? LogLevel.INFO : LogLevel.NONE),
    handleRuntimeStdio: options.log
      ? undefined
      : (stdout: Readable, stderr: Readable) => {
          stdout.resume();
          stderr.resume();
        },
  });
  const ready = await miniflare.ready;
  const url = `http://${host}:${ready.port}`;
  return {
    url,
    miniflare,
    async runCron(cron) {
      // Typed by @cloudflare/workers-types' Fetcher, which this repository does not install.
      const worker = (await miniflare.getWorker()) as unknown as {
        scheduled(o: { cron: string; scheduledTime: Date }): Promise<unknown>;
      };
      await worker.scheduled({ cron, scheduledTime: new Date() });
    },
    close: () => miniflare.dispose(),
  };
}

/** The environment's variables as Worker settings (the Worker reads the ones it knows, like `serve`). */
function settingsFromEnvironment(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value !== undefined && /^[A-Z][A-Z0-9_]*$/.test(name)) out[name] = value;
  }
  return out;
}

const MINUTE_MS = 60_000;

/** How often the process checks that whoever started it (npm, a shell) is still there. */
const PARENT_CHECK_MS = 1000;

async function main(): Promise<void> {
  const settings = settingsFromEnvironment();
  const config = loadConfig(settings); // a bad setting stops here, with its name
  const dataDir = path.resolve(process.env.WORKER_DATA_DIR || './data/worker');

  // Stopping is set up before anything starts: a signal while wrangler bundles or workerd
  // starts still ends both processes. `npm run worker` gets SIGTERM and passes it to the
  // shell that runs this script, not to this process: the shell exits and leaves this
  // process to init, so losing the parent stops it as a signal does.
  let worker: LocalWorker | null = null;
  const timers: ReturnType<typeof setTimeout>[] = [];
  let stopping = false;
  const stop = (reason: string) => {
    if (stopping) return;
    stopping = true;
    for (const t of timers) clearTimeout(t);
    process.stderr.write(`${reason}: stopping\n`);
    // Without a worker yet, the startup below sees `stopping` and closes what it started.
    worker?.close().then(
      () => process.exit(0),
      (err) => {
        process.stderr.write(`stopping failed: ${(err as Error).message}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGHUP', () => stop('SIGHUP'));
  const parent = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid !== parent) stop('the process that started it exited');
  }, PARENT_CHECK_MS);
  watch.unref();
  timers.push(watch);

  fs.mkdirSync(dataDir, { recursive: true });
  const bundle = await buildWorkerBundle(path.join(REPO_ROOT, 'dist/worker'));
  if (stopping) process.exit(0);
  const started = await startLocalWorker({
    bundle,
    dataDir,
    port: config.port,
    settings,
    log: true,
    queue: process.env.WORKER_QUEUE !== '0',
    blobs: process.env.WORKER_BLOBS !== '0',
  });
  worker = started;
  if (stopping) {
    await started.close();
    process.exit(0);
  }
  process.stderr.write(`faultline (serverless edition) listening on ${started.url}, D1 in ${dataDir}\n`);

  const cron = (expression: string) => () =>
    void started
      .runCron(expression)
      .catch((err) => process.stderr.write(`cron ${expression} failed: ${(err as Error).message}\n`));
  // The crons of wrangler.jsonc: retention a minute after start and then daily, alerts
  // every 10 minutes, re-symbolication steps every minute.
  timers.push(
    setTimeout(cron(RETENTION_CRON), MINUTE_MS),
    setInterval(cron(RETENTION_CRON), 24 * 60 * MINUTE_MS),
    setInterval(cron(ALERTS_CRON), 10 * MINUTE_MS),
    setInterval(cron(RESYMBOLICATE_CRON), MINUTE_MS),
  );
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((err) => {
    process.stderr.write(`faultline worker: ${(err as Error).message}\n`);
    process.exit(1);
  });
}
