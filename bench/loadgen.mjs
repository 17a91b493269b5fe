// Node load generator for the benchmark, run as its own process so its CPU is not
// the server's. Two modes:
//   closed: `connections` workers each send the next request as soon as the last
//           one was answered (like wrk); stops after `duration` s or `events` events.
//   open:   requests start on a fixed schedule of `rate` per second whatever the
//           server does (wrk2-style); latency is measured from the scheduled start,
//           so a stalled server shows up in the percentiles (no coordinated omission).
// Config is one JSON argument; the result is one JSON line on stdout. SIGINT stops
// sending, waits for requests in flight, then reports.
//
// HTTP/1.1 is spoken over plain sockets (keep-alive, chunked request bodies, one
// request at a time per connection): `http.request` cost this process about half a
// core at 2 200 requests/s, CPU the server on the same two cores then lacked.
import net from 'node:net';
import { createFiller, readTemplateFile } from './lib/payloads.mjs';
import { percentiles } from './lib/stats.mjs';

const cfg = JSON.parse(process.argv[2]);
const url = new URL(cfg.url);
const templates = readTemplateFile(cfg.templatesFile);
const filler = createFiller({
  templates,
  prefix: cfg.prefix,
  fingerprints: cfg.fingerprints,
  spreadSeconds: cfg.spreadSeconds ?? 0,
  sessionEvery: cfg.sessionEvery ?? 10,
});
const requestHead =
  `POST ${cfg.path} HTTP/1.1\r\nHost: ${url.host}\r\nUser-Agent: sentry.javascript.node/11.12.0\r\n` +
  'Connection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n';

/** One keep-alive connection carrying one request at a time. */
class Connection {
  constructor(pool) {
    this.pool = pool;
    this.pending = null;
    this.buffer = '';
    this.closed = false;
    this.socket = net.connect({ host: url.hostname, port: Number(url.port) });
    this.socket.setNoDelay(true);
    this.socket.setEncoding('latin1');
    this.socket.on('data', (chunk) => this.onData(chunk));
    this.socket.on('error', (err) => this.finish(err, true));
    this.socket.on('close', () => this.finish(new Error('connection closed by the server'), true));
  }

  send(body, done) {
    this.pending = done;
    this.buffer = '';
    this.socket.write(`${requestHead}${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`);
  }

  onData(chunk) {
    this.buffer += chunk;
    const headEnd = this.buffer.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const head = this.buffer.slice(0, headEnd).toLowerCase();
    const length = /\r\ncontent-length:\s*(\d+)/.exec(head);
    let complete;
    if (length) complete = this.buffer.length >= headEnd + 4 + Number(length[1]);
    else if (/\r\ntransfer-encoding:\s*chunked/.test(head)) complete = this.buffer.endsWith('\r\n0\r\n\r\n');
    else complete = true; // no body framing: only a status line and headers are expected
    if (!complete) return;
    const status = Number(this.buffer.slice(9, 12));
    const close = /\r\nconnection:\s*close/.test(head);
    this.finish(status, close);
  }

  finish(result, close) {
    const done = this.pending;
    this.pending = null;
    this.buffer = '';
    if (close && !this.closed) {
      this.closed = true;
      this.socket.destroy();
      this.pool.forget(this);
    }
    if (done) done(result);
    if (!close) this.pool.release(this);
  }
}

/** Up to `max` connections; a request waits for a free one when all are busy. */
class Pool {
  constructor(max) {
    this.max = max;
    this.all = new Set();
    this.idle = [];
    this.waiting = [];
  }

  request(body) {
    return new Promise((resolve) => {
      const connection = this.idle.pop() ?? (this.all.size < this.max ? this.open() : null);
      if (connection) connection.send(body, resolve);
      else this.waiting.push({ body, resolve });
    });
  }

  open() {
    const connection = new Connection(this);
    this.all.add(connection);
    return connection;
  }

  release(connection) {
    const next = this.waiting.shift();
    if (next) connection.send(next.body, next.resolve);
    else this.idle.push(connection);
  }

  forget(connection) {
    this.all.delete(connection);
    const i = this.idle.indexOf(connection);
    if (i >= 0) this.idle.splice(i, 1);
    const next = this.waiting.shift();
    if (next) this.open().send(next.body, next.resolve);
  }

  destroy() {
    for (const connection of this.all) {
      connection.closed = true;
      connection.socket.destroy();
    }
  }
}

const pool = new Pool(cfg.connections);

let stopping = false;
let inFlight = 0;
let issuedEvents = 0;
let issuedSessions = 0;
let completed = 0;
let ok = 0;
let failed = 0;
const statuses = {};
const latencies = [];
let firstError = null;
let unfinished = 0;
let overloaded = false;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms).unref());

/** Resolves with the status code, or with the error that ended the request. */
function send(body) {
  return pool.request(body);
}

// Requests scheduled during the warm-up (new connections, JIT) are sent but not recorded.
let recordFrom = 0;

function record(result, startedAt) {
  if (startedAt < recordFrom) return;
  completed++;
  latencies.push(performance.now() - startedAt);
  if (typeof result === 'number') {
    statuses[result] = (statuses[result] ?? 0) + 1;
    if (result >= 200 && result < 300) ok++;
    else failed++;
  } else {
    failed++;
    statuses.socket_error = (statuses.socket_error ?? 0) + 1;
    firstError ??= String(result?.message ?? result);
  }
}

function nextBody() {
  const r = filler.next();
  if (r.kind === 'event') issuedEvents++;
  else issuedSessions++;
  return r.body;
}

const limitReached = () => stopping || (cfg.events > 0 && issuedEvents >= cfg.events);

async function closedLoop() {
  const worker = async () => {
    while (!limitReached()) {
      const body = nextBody();
      const t = performance.now();
      inFlight++;
      const r = await send(body);
      inFlight--;
      record(r, t);
    }
  };
  await Promise.all(Array.from({ length: cfg.connections }, worker));
}

async function openLoop() {
  const interval = 1000 / cfg.rate;
  const maxInFlight = Math.max(1000, cfg.rate * 5);
  const start = performance.now();
  let scheduled = 0;
  const pending = new Set();
  const pendingIntended = new Map();
  await new Promise((resolve) => {
    const tick = () => {
      const now = performance.now();
      // A server far behind the schedule would pile up unbounded queued requests here;
      // past `maxInFlight` the run stops early and says so (its latencies are already huge).
      if (inFlight > maxInFlight) {
        overloaded = true;
        stopping = true;
      }
      while (!limitReached() && start + scheduled * interval <= now) {
        const intended = start + scheduled * interval;
        scheduled++;
        inFlight++;
        const p = send(nextBody()).then((r) => {
          inFlight--;
          record(r, intended);
          pending.delete(p);
          pendingIntended.delete(p);
        });
        pending.add(p);
        pendingIntended.set(p, intended);
      }
      if (limitReached()) resolve();
      else setTimeout(tick, 1);
    };
    tick();
  });
  // A server that fell behind could take minutes to answer the queue: wait at most
  // drainSeconds, then count what is left as failed with the time waited so far.
  const drain = Promise.all([...pending]);
  const timedOut = await Promise.race([
    drain.then(() => false),
    sleep((cfg.drainSeconds ?? 30) * 1000).then(() => true),
  ]);
  if (timedOut) {
    unfinished = pending.size;
    for (const intended of pendingIntended.values()) {
      if (intended >= recordFrom) {
        completed++;
        failed++;
        latencies.push(performance.now() - intended);
      }
    }
    statuses.unfinished = unfinished;
  }
}

process.on('SIGINT', () => {
  stopping = true;
});
let started = performance.now();
recordFrom = started + (cfg.warmup ?? 0) * 1000;
process.stdout.write('START\n');
let timer;
if (cfg.duration > 0) timer = setTimeout(() => (stopping = true), ((cfg.warmup ?? 0) + cfg.duration) * 1000);
setTimeout(
  () => {
    started = recordFrom;
    issuedAtRecordStart = { events: issuedEvents, sessions: issuedSessions };
  },
  (cfg.warmup ?? 0) * 1000,
).unref();
let issuedAtRecordStart = { events: 0, sessions: 0 };
await (cfg.mode === 'open' ? openLoop() : closedLoop());
clearTimeout(timer);
const seconds = (performance.now() - started) / 1000;
pool.destroy();
// Requests abandoned after the drain timeout must not be answered into a torn-down report.
if (unfinished > 0)
  firstError ??= `${unfinished} requests still unanswered ${cfg.drainSeconds ?? 30} s after the schedule ended`;
const p = percentiles(latencies, [50, 90, 95, 99, 100]);
process.stdout.write(
  `RESULT ${JSON.stringify({
    generator: 'node',
    mode: cfg.mode,
    seconds,
    completed,
    ok,
    failed,
    statuses,
    first_error: firstError,
    issued_events: issuedEvents,
    issued_sessions: issuedSessions,
    overloaded,
    warmup_events: issuedAtRecordStart.events,
    warmup_sessions: issuedAtRecordStart.sessions,
    latency_ms: { p50: p[0], p90: p[1], p95: p[2], p99: p[3], max: p[4] },
  })}\n`,
);
process.exit(0);
