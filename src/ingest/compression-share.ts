// Which thread compresses the payloads of events sure to be stored, when SQLite
// batches run on the batch thread: the main thread as each request arrives, or the
// batch thread inside the batch. Either can be the busier one (the main thread
// parses and normalises, the batch thread runs SQLite), and which one is depends on
// the machine, the disk and the events; so the share of payloads compressed on the
// main thread follows the two threads' measured CPU time (src/store/thread-load.ts),
// moving work to whichever uses less. Compression is about a fifth of either
// thread's work at saturation, enough to even them out (BENCHMARKS.md, "Compression
// where there is room for it").

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
