// Process helpers for the benchmark: free ports, spawning and stopping child
// processes, and reading a process's memory and CPU time from /proc (Linux).
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

// Every child this harness starts, so an interrupted run does not leave servers or generators behind.
const children = new Set();
export function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}
process.once('exit', () => {
  for (const c of children) c.kill('SIGKILL');
});
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.once(sig, () => {
    for (const c of children) c.kill('SIGTERM');
    setTimeout(() => process.exit(130), 2000).unref();
  });
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

let clockTicks = null;
function ticksPerSecond() {
  if (clockTicks === null) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** utime + stime in seconds from a `/proc/<pid>/stat` line. */
function cpuSecondsOf(stat) {
  // Fields after the command name (which may contain spaces) start at index 2 (state).
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
}

/**
 * Bytes a process has caused to be written to storage (`write_bytes` of /proc/<pid>/io:
 * counted when a page cache page first turns dirty, so a page rewritten before the
 * kernel writes it back counts once), or null where that is not readable.
 */
function bytesWrittenOf(pid) {
  try {
    const m = /^write_bytes:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/io`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Memory (bytes), CPU seconds and storage writes (bytes) of a live process, or null when it is gone or /proc is absent. */
export function procStats(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name) => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) * 1024 : null;
    };
    const cpu = cpuSecondsOf(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return { rss: kb('VmRSS'), hwm: kb('VmHWM'), cpu, written: bytesWrittenOf(pid) };
  } catch {
    return null;
  }
}

/**
 * CPU seconds and storage writes (bytes; null where /proc/<pid>/io is not readable) of
 * every process whose command name is `name` (e.g. the local PostgreSQL server's
 * processes), or null without /proc. A database elsewhere counts nothing here.
 */
export function usageOfProcessesNamed(name) {
  let cpu = 0;
  let written = 0;
  let entries;
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return null;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) !== name) continue;
      cpu += cpuSecondsOf(stat);
      const bytes = bytesWrittenOf(entry);
      written = written === null || bytes === null ? null : written + bytes;
    } catch {
      // the process ended meanwhile
    }
  }
  return { cpu, written };
}

/**
 * Samples a process every `intervalMs`: the highest RSS seen since the last `mark()`
 * and the latest CPU time, so numbers survive the process exiting.
 */
export function sampler(pid, intervalMs = 200) {
  let peak = 0;
  let last = procStats(pid);
  const timer = setInterval(() => {
    const s = procStats(pid);
    if (!s) return;
    last = s;
    if (s.rss > peak) peak = s.rss;
  }, intervalMs);
  timer.unref();
  return {
    now() {
      const s = procStats(pid);
      if (s) {
        last = s;
        if (s.rss > peak) peak = s.rss;
      }
      return last;
    },
    /** Peak RSS since the previous mark, and resets it. */
    mark() {
      this.now();
      const p = peak;
      peak = last?.rss ?? 0;
      return p;
    },
    stop() {
      clearInterval(timer);
    },
  };
}

/** Spawns a process with stdout/stderr appended to `logFile`; resolves its first stdout line matching `readyLine` if given. */
export function startProcess(command, args, { env, logFile, cwd }) {
  const log = fs.openSync(logFile, 'a');
  const child = track(spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', log] }));
  let stdoutBuf = '';
  const lineWaiters = [];
  child.stdout.on('data', (chunk) => {
    fs.writeSync(log, chunk);
    stdoutBuf += chunk.toString();
    let idx;
    while ((idx = stdoutBuf.indexOf('\n')) >= 0) {
      const line = stdoutBuf.slice(0, idx);
      stdoutBuf = stdoutBuf.slice(idx + 1);
      for (const w of [...lineWaiters]) {
        if (w.test(line)) {
          lineWaiters.splice(lineWaiters.indexOf(w), 1);
          w.resolve(line);
        }
      }
    }
  });
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  exited.then(() => {
    fs.closeSync(log);
    for (const w of lineWaiters.splice(0))
      w.reject(new Error(`${command} exited before printing the expected line (see ${logFile})`));
  });
  return {
    child,
    pid: child.pid,
    exited,
    waitForLine(test) {
      return new Promise((resolve, reject) => lineWaiters.push({ test, resolve, reject }));
    },
    /** Sends `signal`, waits up to `timeoutMs`, then SIGKILL. */
    async stop(signal = 'SIGTERM', timeoutMs = 20_000) {
      if (child.exitCode !== null || child.signalCode !== null) return exited;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
}

export async function waitForHealth(url, proc, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    if (proc.child.exitCode !== null)
      throw new Error(`server exited with code ${proc.child.exitCode} before it answered /health`);
    try {
      const r = await fetch(`${url}/health`);
      if (r.ok) return;
      lastError = `status ${r.status}`;
    } catch (err) {
      lastError = err.message;
    }
    await sleep(100);
  }
  throw new Error(`server at ${url} did not answer /health within ${timeoutMs / 1000} s (${lastError})`);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
