// How busy a thread is: its CPU time from /proc on Linux, or its event-loop
// utilization elsewhere. The ingest writer reads both for the main thread and the
// SQLite batch thread to decide which of them compresses the payloads
// (src/ingest/compression-share.ts); the batch thread tells its id when it starts.
import fs from 'node:fs';
import type { EventLoopUtilization } from 'node:perf_hooks';

/** A thread's CPU seconds so far, from /proc (Linux); null where that cannot be read. */
export function threadCpuSeconds(tid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
    // utime and stime, the 14th and 15th fields; the name before them may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    // /proc counts in USER_HZ, which Linux fixes at 100 for user space.
    return Number.isFinite(ticks) ? ticks / 100 : null;
  } catch {
    return null;
  }
}

/** The calling thread's id as /proc knows it (Linux); null elsewhere. */
export function currentThreadId(): number | null {
  try {
    const tid = Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
    return Number.isInteger(tid) && tid > 0 ? tid : null;
  } catch {
    return null;
  }
}

/**
 * A thread's CPU time as a share of the wall time since the previous call: what the
 * share follows. Event-loop utilization cannot tell the threads apart at saturation:
 * on two cores both read close to 100 %, because a thread waiting for a core counts
 * as busy (the share then stayed at 0-0.2 and ingest was 10 % slower than with all
 * payloads left to the batch thread). Null when /proc cannot be read.
 */
export function cpuMeter(tid: number, now: () => number = () => performance.now()): (() => number) | null {
  let lastCpu = threadCpuSeconds(tid);
  if (lastCpu === null) return null;
  let lastAt = now();
  return () => {
    const cpu = threadCpuSeconds(tid) ?? lastCpu!;
    const at = now();
    const busy = at > lastAt ? (cpu - lastCpu!) / ((at - lastAt) / 1000) : 0;
    lastCpu = cpu;
    lastAt = at;
    return busy;
  };
}

/**
 * A thread's busy share of the time since the previous call, from Node's event-loop
 * utilization (the main thread's `performance.eventLoopUtilization`, or a worker's
 * `worker.performance.eventLoopUtilization`): the fallback where /proc is absent.
 */
export function utilizationMeter(read: (current?: EventLoopUtilization, previous?: EventLoopUtilization) => EventLoopUtilization): () => number {
  let last = read();
  return () => {
    const now = read();
    const delta = read(now, last);
    last = now;
    return delta.utilization;
  };
}

/** A thread to measure (a BatchThread is one): its id in /proc (null where unknown) and its event-loop utilization. */
export interface MeasuredThread {
  readonly threadId: number | null;
  eventLoopUtilization(current?: EventLoopUtilization, previous?: EventLoopUtilization): EventLoopUtilization;
}

/**
 * One busy meter per thread, all of one kind so they compare: CPU time when /proc
 * tells it for every thread, else event-loop utilization for all.
 */
export function busyMeters(threads: MeasuredThread[]): (() => number)[] {
  const cpu = threads.map((t) => (t.threadId === null ? null : cpuMeter(t.threadId)));
  if (cpu.every((meter) => meter !== null)) return cpu as (() => number)[];
  return threads.map((t) => utilizationMeter((current, previous) => t.eventLoopUtilization(current, previous)));
}
