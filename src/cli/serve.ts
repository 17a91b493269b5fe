// `faultline serve`: migrates the database, serves the HTTP API, logs one line
// saying where (after a warning when the address is open to the network without
// API keys), and on SIGTERM/SIGINT stops accepting, finishes in-flight
// requests and closes the database before exiting 0.
import { getHeapStatistics } from 'node:v8';
import type { Command } from 'commander';
import type { RunningServer } from '../editions/node/server.js';
import { openAccessWarning } from '../config.js';
import { anyUserExists, createSetupToken } from '../accounts/store.js';
import { CliError, type CliContext } from './context.js';

/** How long in-flight requests get after a stop signal before the process exits anyway. */
const SHUTDOWN_GRACE_MS = 30_000;

/** A listen error as one line naming the setting to change. */
function throwListenFailure(err: unknown, host: string, port: number): never {
  const code = (err as NodeJS.ErrnoException).code;
  const where = `${host}:${port}`;
  if (code === 'EADDRINUSE')
    throw new CliError(`cannot listen on ${where}: the port is already in use (stop the other process or set PORT)`);
  if (code === 'EACCES')
    throw new CliError(`cannot listen on ${where}: permission denied (ports below 1024 need privileges; set PORT)`);
  if (code === 'EADDRNOTAVAIL') throw new CliError(`cannot listen on ${where}: no such local address (check HOST)`);
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_FAIL' || code === 'EINVAL') {
    throw new CliError(
      `cannot listen on ${where}: HOST ${JSON.stringify(host)} is not an address or host name of this machine (check HOST)`,
    );
  }
  throw err;
}

export function register(program: Command, cli: CliContext): void {
  program
    .command('serve')
    .description('run the server (settings from the environment; see the README)')
    .action(async () => {
      const config = cli.config();
      const { buildNodeDeps, createLogger, startServer } = await import('../editions/node/server.js');
      const { checkListen } = await import('../editions/node/listen-check.js');
      // The port and HOST first: a taken port or a bad HOST leaves the database untouched.
      await checkListen(config.port, config.host).catch((err) => throwListenFailure(err, config.host, config.port));
      const logger = createLogger(config);
      const deps = await buildNodeDeps(config, { logger });
      let server: RunningServer;
      try {
        server = await startServer(deps, config.port, config.host, { background: true });
      } catch (err) {
        await deps.ingest.close().catch(() => {});
        await deps.store.close().catch(() => {});
        throwListenFailure(err, config.host, config.port);
      }
      let stopping = false;
      const stop = (signal: NodeJS.Signals) => {
        if (stopping) {
          logger.warn({ signal }, 'second stop signal: exiting without waiting');
          process.exit(1);
        }
        stopping = true;
        logger.info({ signal }, 'stopping: no new connections; finishing in-flight requests');
        const force = setTimeout(() => {
          logger.error({ grace_ms: SHUTDOWN_GRACE_MS }, 'in-flight requests did not finish in time; exiting');
          process.exit(1);
        }, SHUTDOWN_GRACE_MS);
        force.unref();
        server.close().then(
          () => {
            clearTimeout(force);
            logger.info('stopped');
            process.exit(0);
          },
          (err) => {
            logger.error({ err }, 'error while stopping');
            process.exit(1);
          },
        );
      };
      // Before the startup line: a supervisor may signal as soon as it reads it, and the
      // write can wake it before this process runs on (without a handler, SIGTERM kills).
      process.on('SIGTERM', stop);
      process.on('SIGINT', stop);
      // While no user exists, a one-time setup token (kept hashed in the database, so any
      // instance accepts it) lets the dashboard's setup page create the first admin.
      const usersExist = await anyUserExists(deps.store.db);
      if (!usersExist) {
        const token = await createSetupToken(deps.store.db, deps.clock.now());
        const setupUrl = `${(config.publicUrl ?? server.url).replace(/\/+$/, '')}/login/setup`;
        logger.info(
          { setup_url: setupUrl },
          `no user yet: create the first admin at ${setupUrl} with the one-time setup token ${token}, or run faultline users create`,
        );
      }
      // Before the startup line, so it is the last thing read before "listening on".
      // Users close the API as API_KEYS does (docs/api.md "Authentication").
      const openWarning = usersExist ? null : openAccessWarning(config);
      if (openWarning) logger.warn({ host: config.host }, openWarning);
      logger.info(
        {
          url: server.url,
          database: deps.store.description,
          version: cli.version,
          public_url: config.publicUrl ?? undefined,
          // Whether the process runs with the node options `npm start` gives it (README, Node options).
          node_options: process.execArgv.join(' '),
          heap_limit_mb: Math.round(getHeapStatistics().heap_size_limit / 2 ** 20),
          // glibc's allocator setting `npm start` gives it (README, Node options); null when unset.
          malloc_mmap_threshold: process.env.MALLOC_MMAP_THRESHOLD_ ?? null,
        },
        `faultline ${cli.version} listening on ${server.url} (database ${deps.store.description})`,
      );
    });
}
