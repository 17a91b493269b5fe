// The share of payloads the main thread compresses when SQLite batches run on the
// batch thread: spread evenly over the payloads, and moved step by step toward the
// thread that was less busy.
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { busyMeter, CompressionShare, SHARE_DEADBAND, SHARE_STEP } from '../../src/ingest/compression-share.js';

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

describe('busyMeter', () => {
  it('reads the share of time the event loop was busy since the previous reading', async () => {
    const busy = busyMeter((current, previous) => performance.eventLoopUtilization(current, previous));
    const spinUntil = performance.now() + 120;
    while (performance.now() < spinUntil);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(busy()).toBeGreaterThan(0.7);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(busy()).toBeLessThan(0.3);
  });
});
