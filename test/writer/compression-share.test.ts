// The share of payloads the main thread compresses when SQLite batches run on the
// batch thread: spread evenly over the payloads, and moved step by step toward the
// thread that was less busy.
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { CompressionShare, SHARE_DEADBAND, SHARE_STEP } from '../../src/ingest/compression-share.js';
import { cpuMeter, currentThreadId, threadCpuSeconds, utilizationMeter } from '../../src/store/thread-load.js';

function takes(share: CompressionShare, n: number): number {
  let here = 0;
  for (let i = 0; i < n; i++) if (share.compressHere()) here += 1;
  return here;
}

describe('CompressionShare', () => {
  it('compresses its share of the payloads here, spread evenly', () => {
    expect(takes(new CompressionShare(0.3), 10)).toBe(3);
    expect(takes(new CompressionShare(0), 10)).toBe(0);
    expect(takes(new CompressionShare(1), 10)).toBe(10);
    // Half: every other payload, not the first five.
    const half = new CompressionShare(0.5);
    expect(Array.from({ length: 4 }, () => half.compressHere())).toEqual([false, true, false, true]);
  });

  it('moves work away from the busier thread, a step at a time, within 0 and 1', () => {
    const share = new CompressionShare(0.5);
    share.adjust(0.9, 0.6);
    expect(share.value).toBeCloseTo(0.5 - SHARE_STEP);
    for (let i = 0; i < 20; i++) share.adjust(0.9, 0.6);
    expect(share.value).toBe(0);
    expect(takes(share, 10)).toBe(0);
    for (let i = 0; i < 20; i++) share.adjust(0.4, 0.95);
    expect(share.value).toBe(1);
    expect(takes(share, 10)).toBe(10);
  });

  it('leaves the share alone when the threads are about as busy', () => {
    const share = new CompressionShare(0.5);
    share.adjust(0.7, 0.7 + SHARE_DEADBAND / 2);
    share.adjust(0.7 + SHARE_DEADBAND / 2, 0.7);
    expect(share.value).toBe(0.5);
  });
});

function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('utilizationMeter', () => {
  it('reads the share of time the event loop was busy since the previous reading', async () => {
    const busy = utilizationMeter((current, previous) => performance.eventLoopUtilization(current, previous));
    spin(120);
    await sleep(5);
    expect(busy()).toBeGreaterThan(0.7);
    await sleep(150);
    expect(busy()).toBeLessThan(0.3);
  });
});

describe.runIf(process.platform === 'linux')('cpuMeter (Linux)', () => {
  it('finds this thread in /proc and reads its CPU time', () => {
    const tid = currentThreadId();
    expect(tid).toBeGreaterThan(0);
    const before = threadCpuSeconds(tid!)!;
    spin(100);
    expect(threadCpuSeconds(tid!)! - before).toBeGreaterThanOrEqual(0.05);
  });

  it('reads the share of wall time the thread spent on a CPU, not waiting', async () => {
    const busy = cpuMeter(currentThreadId()!)!;
    spin(300);
    expect(busy()).toBeGreaterThan(0.6);
    await sleep(300);
    expect(busy()).toBeLessThan(0.3);
  });

  it('is null for a thread /proc does not know', () => {
    expect(threadCpuSeconds(2 ** 30)).toBeNull();
    expect(cpuMeter(2 ** 30)).toBeNull();
  });
});
