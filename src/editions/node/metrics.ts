// The Node edition's metrics (docs/operations.md "Metrics"): prom-client with a Registry
// of its own per app instance (never the process-wide default registry, so two apps in
// one process, as in the tests, never share or clash). Counters and histograms are fed
// by the app as things happen; gauges that read the database (its size, alert
// deliveries by state, the re-symbolication backlog) and the writer's queue are read
// when Prometheus scrapes.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { AppMetrics } from '../../metrics.js';
import type { Store } from '../../store/database.js';
import type { IngestStats } from '../../ingest/types.js';
import { databaseBytes } from '../../privacy/usage.js';

export interface NodeMetricsDeps {
  store: Store;
  /** The writer's counters (its queue), once it exists. */
  ingestStats: () => IngestStats | undefined;
}

export function createNodeMetrics(deps: NodeMetricsDeps): AppMetrics {
  const registry = new Registry();
  // Process and runtime metrics, event-loop lag (nodejs_eventloop_lag_seconds) among them.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 20 });

  const ingest = new Counter({
    name: 'faultline_ingest_requests_total',
    help: 'Ingest requests by outcome (accepted, unauthorized, rate_limited, quota_exceeded, too_large, bad_request, disk_low, unavailable, client_closed).',
    labelNames: ['reason'],
    registers: [registry],
  });
  const events = new Counter({
    name: 'faultline_ingest_events_total',
    help: 'Event items of accepted ingest requests.',
    registers: [registry],
  });
  const commit = new Histogram({
    name: 'faultline_ingest_commit_seconds',
    help: 'Time to commit one ingest batch (group commit).',
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const symbolication = new Histogram({
    name: 'faultline_symbolication_seconds',
    help: 'Time to load the symbol files one ingest request needs (parsed files are cached).',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10],
    registers: [registry],
  });
  const minidump = new Histogram({
    name: 'faultline_minidump_processing_seconds',
    help: 'Time to turn one minidump into its event (read, unwind info, stack walk), by result (processed, unreadable).',
    labelNames: ['result'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  new Gauge({
    name: 'faultline_ingest_queue_depth',
    help: 'Ingest works waiting for the writer.',
    registers: [registry],
    collect() {
      this.set(deps.ingestStats()?.queued ?? 0);
    },
  });
  new Gauge({
    name: 'faultline_database_bytes',
    help: 'Size of the database (SQLite pages, PostgreSQL pg_database_size).',
    registers: [registry],
    async collect() {
      const bytes = await databaseBytes(deps.store.db, deps.store.dialect);
      if (bytes !== null) this.set(bytes);
    },
  });
  new Gauge({
    name: 'faultline_alert_deliveries',
    help: 'Alert deliveries kept in the database, by result (pending, sent, failed).',
    labelNames: ['result'],
    registers: [registry],
    async collect() {
      const rows = await deps.store.db
        .selectFrom('alert_deliveries')
        .select(['state', (eb) => eb.fn.countAll<number>().as('n')])
        .groupBy('state')
        .execute();
      this.reset();
      for (const state of ['pending', 'sent', 'failed']) this.set({ result: state }, 0);
      for (const r of rows) this.set({ result: r.state }, Number(r.n));
    },
  });
  new Gauge({
    name: 'faultline_resymbolication_backlog',
    help: 'Re-symbolication runs not done yet.',
    registers: [registry],
    async collect() {
      const row = await deps.store.db
        .selectFrom('symbol_jobs')
        .select((eb) => eb.fn.countAll<number>().as('n'))
        .where('state', '=', 'pending')
        .executeTakeFirst();
      this.set(Number(row?.n ?? 0));
    },
  });

  return {
    ingestOutcome(reason, n) {
      ingest.inc({ reason });
      if (reason === 'accepted' && n > 0) events.inc(n);
    },
    observeCommit(seconds) {
      commit.observe(seconds);
    },
    observeSymbolication(seconds) {
      symbolication.observe(seconds);
    },
    observeMinidump(seconds, processed) {
      minidump.observe({ result: processed ? 'processed' : 'unreadable' }, seconds);
    },
    render: () => registry.metrics(),
    contentType: registry.contentType,
  };
}
