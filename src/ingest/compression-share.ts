// Which thread compresses the payloads of events sure to be stored, when SQLite
// batches run on the batch thread: the main thread as each request arrives, or the
// batch thread inside the batch. Either can be the busier one (the main thread
// parses and normalises, the batch thread runs SQLite), and which one is depends on
// the machine, the disk and the events; so the share of payloads compressed on the
// main thread follows the two threads' measured CPU time, moving work to whichever
// uses less. Compression is about a fifth of either thread's work at saturation,
// enough to even them out (BENCHMARKS.md, "Compression where there is room for it").
import fs from 'node:fs';
import type { EventLoopUtilization } from 'node:perf_hooks';

/** How often the share follows the threads' load (the kernel counts CPU time in 10 ms ticks). */
export const SHARE_ADJUST_INTERVAL_MS = 500;
/** The share's step per adjustment: from all on one thread to all on the other in 5 s. */
export const SHARE_STEP = 0.1;
/** Busy-share differences below this leave the share where it is. */
export const SHARE_DEADBAND = 0.05;

/**
 * The fraction of payloads this (main) thread compresses, spread evenly over the
 * payloads: with a share of 0.3, three of every ten.
 */
export class CompressionShare {
  private carry = 0;

  constructor(private current = 0.5) {}

  get value(): number {
    return this.current;
  }

  /** Moves a step of the work toward the thread that was less busy (each a share of time, 0-1). */
  adjust(mainBusy: number, batchThreadBusy: number): void {
    if (mainBusy > batchThreadBusy + SHARE_DEADBAND) this.current = Math.max(0, this.current - SHARE_STEP);
    else if (batchThreadBusy > mainBusy + SHARE_DEADBAND) this.current = Math.min(1, this.current + SHARE_STEP);
  }

  /** Whether the next payload is compressed on the main thread. */
  compressHere(): boolean {
    this.carry += this.current;
    if (this.carry < 1 - 1e-9) return false;
    this.carry -= 1;
    return true;
  }
}

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
