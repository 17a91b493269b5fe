// The crash-spike rule on hourly counts, without a database: the floor of 10, the
// factor of 3 over the 24 hours before, and partly covered hours in proportion.
import { describe, expect, it } from 'vitest';
import { evaluateCrashSpike, type HourCrashes } from '../../src/alerts/spike.js';

const HOUR = 3_600_000;
const H = Date.UTC(2026, 4, 1, 12); // on the hour

function hours(recent: number, perHourBefore: number, at = H): HourCrashes[] {
  const rows: HourCrashes[] = [{ bucket: at - HOUR, crashes: recent }];
  for (let h = 2; h <= 25; h++) rows.push({ bucket: at - h * HOUR, crashes: perHourBefore });
  return rows;
}

describe('crash spike rule', () => {
  it('needs at least 10 crashes in the last 60 minutes', () => {
    expect(evaluateCrashSpike(hours(9, 0), H)).toEqual({ recent: 9, baseline: 0, fires: false });
    expect(evaluateCrashSpike(hours(10, 0), H)).toEqual({ recent: 10, baseline: 0, fires: true });
  });

  it('needs at least 3 × the hourly average of the 24 hours before', () => {
    expect(evaluateCrashSpike(hours(14, 5), H)).toEqual({ recent: 14, baseline: 5, fires: false });
    expect(evaluateCrashSpike(hours(15, 5), H)).toEqual({ recent: 15, baseline: 5, fires: true });
    const uneven = hours(30, 0);
    uneven.push({ bucket: H - 3 * HOUR, crashes: 241 }); // average 241/24 ≈ 10.04
    expect(evaluateCrashSpike(uneven, H).fires).toBe(false);
  });

  it('ignores hours outside the 25 it looks at', () => {
    const rows = hours(10, 0);
    rows.push({ bucket: H - 26 * HOUR, crashes: 10_000 });
    expect(evaluateCrashSpike(rows, H)).toEqual({ recent: 10, baseline: 0, fires: true });
  });

  it('between hours: the current hour counts whole, the hour before for its minutes inside the window', () => {
    const now = H + 20 * 60_000;
    // 10 crashes in the 20 minutes of the current hour: all recent.
    expect(evaluateCrashSpike([{ bucket: H, crashes: 10 }], now)).toMatchObject({ recent: 10, fires: true });
    // 12 in the hour before: 40 of its 60 minutes are inside the last 60 → 8.
    expect(evaluateCrashSpike([{ bucket: H - HOUR, crashes: 12 }], now)).toMatchObject({ recent: 8, fires: false });
    // and its other 20 minutes belong to the baseline: 4 / 24.
    expect(evaluateCrashSpike([{ bucket: H - HOUR, crashes: 12 }], now).baseline).toBeCloseTo(4 / 24, 2);
  });
});
