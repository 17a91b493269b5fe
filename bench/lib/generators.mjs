// Runs a load generator as a separate process and returns its numbers in one
// shape: wrk (Debian package, C, closed-loop) with bench/wrk/envelopes.lua when it
// is installed, else bench/loadgen.mjs. The open-loop fixed-rate mode is always
// bench/loadgen.mjs (wrk itself has no constant-rate mode).
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { procStats, track } from './proc.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const benchDir = path.resolve(here, '..');

export function wrkVersion() {
  try {
    // wrk -v prints its version and exits non-zero.
    execFileSync('wrk', ['-v'], { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const out = `${err.stdout ?? ''}${err.stderr ?? ''}`;
    const m = /wrk (\S+)/.exec(out);
    if (m) return m[1];
  }
  return null;
}

/**
 * Starts a load run. Options: generator ('wrk' | 'node'), mode ('closed' | 'open'),
 * url, path, templatesFile, prefix (16 hex), fingerprints, spreadSeconds, connections,
 * duration (s), rate (requests/s, open mode), events (stop after this many events;
 * node only), warmup (s, open mode: not recorded).
 * Returns { pid, started, stop(), result: Promise<normalised result> }.
 */
export function startLoad(opts) {
  return opts.generator === 'wrk' ? startWrk(opts) : startNode(opts);
}

function collectCpu(pid, holder) {
  const t = setInterval(() => {
    const s = procStats(pid);
    if (s) holder.cpu = s.cpu;
  }, 200);
  t.unref();
  return () => clearInterval(t);
}

function startWrk(opts) {
  const duration = opts.duration > 0 ? opts.duration : 24 * 3600; // unbounded runs are stopped with SIGINT
  const args = [
    '-t',
    String(opts.threads ?? 1),
    '-c',
    String(opts.connections),
    '-d',
    `${duration}s`,
    '--timeout',
    '30s',
    '-s',
    path.join(benchDir, 'wrk', 'envelopes.lua'),
    opts.url,
    '--',
    opts.templatesFile,
    opts.path,
    opts.prefix.slice(0, 12),
    String(opts.fingerprints),
    String(opts.spreadSeconds ?? 0),
    String(opts.sessionEvery ?? 10),
  ];
  const child = track(spawn('wrk', args, { stdio: ['ignore', 'pipe', 'pipe'] }));
  const started = performance.now();
  const holder = { cpu: 0 };
  const stopCpu = collectCpu(child.pid, holder);
  let out = '';
  let err = '';
  child.stdout.on('data', (c) => (out += c));
  child.stderr.on('data', (c) => (err += c));
  const result = new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      stopCpu();
      const line = out.split('\n').find((l) => l.startsWith('WRKJSON '));
      if (!line) return reject(new Error(`wrk failed (exit ${code}): ${err || out}`));
      const w = JSON.parse(line.slice('WRKJSON '.length));
      const e = w.errors;
      const socketErrors = e.connect + e.read + e.write + e.timeout;
      const seconds = w.duration_us / 1e6;
      resolve({
        generator: 'wrk',
        mode: 'closed',
        seconds,
        completed: w.requests,
        ok: w.requests - e.status,
        failed: e.status + socketErrors,
        statuses: { non_2xx: e.status, socket_errors: socketErrors },
        issued_events: w.issued_events,
        issued_sessions: w.issued_sessions,
        latency_ms: {
          p50: w.latency_us.p50 / 1000,
          p90: w.latency_us.p90 / 1000,
          p95: w.latency_us.p95 / 1000,
          p99: w.latency_us.p99 / 1000,
          max: w.latency_us.max / 1000,
        },
        generator_cpu_seconds: holder.cpu,
      });
    });
  });
  return { pid: child.pid, started, stop: () => child.kill('SIGINT'), result };
}

function startNode(opts) {
  const cfg = {
    url: opts.url,
    path: opts.path,
    templatesFile: opts.templatesFile,
    prefix: opts.prefix,
    fingerprints: opts.fingerprints,
    spreadSeconds: opts.spreadSeconds ?? 0,
    sessionEvery: opts.sessionEvery ?? 10,
    connections: opts.connections,
    mode: opts.mode ?? 'closed',
    duration: opts.duration ?? 0,
    rate: opts.rate ?? 0,
    events: opts.events ?? 0,
    warmup: opts.warmup ?? 0,
  };
  const child = track(
    spawn(process.execPath, [path.join(benchDir, 'loadgen.mjs'), JSON.stringify(cfg)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
  let started = performance.now();
  const holder = { cpu: 0 };
  const stopCpu = collectCpu(child.pid, holder);
  let out = '';
  let err = '';
  let resolveStarted;
  const startedPromise = new Promise((r) => (resolveStarted = r));
  child.stdout.on('data', (c) => {
    const first = !out.includes('START\n');
    out += c;
    if (first && out.includes('START\n')) {
      started = performance.now();
      resolveStarted(started);
    }
  });
  child.stderr.on('data', (c) => (err += c));
  const result = new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      stopCpu();
      resolveStarted(started);
      const line = out.split('\n').find((l) => l.startsWith('RESULT '));
      if (!line) return reject(new Error(`node load generator failed (exit ${code}): ${err || out}`));
      resolve({ ...JSON.parse(line.slice('RESULT '.length)), generator_cpu_seconds: holder.cpu });
    });
  });
  return {
    pid: child.pid,
    get started() {
      return started;
    },
    startedPromise,
    stop: () => child.kill('SIGINT'),
    result,
  };
}
