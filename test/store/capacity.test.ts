// The capacity rule alone: the share of the limit, and the warning from 80 % on.
import { describe, expect, it } from 'vitest';
import { CAPACITY_WARNING_RATIO, databaseCapacity } from '../../src/store/capacity.js';

const GB = 1024 ** 3;

describe('databaseCapacity', () => {
  it.each([
    [0, 10 * GB, 0, false],
    [7.99 * GB, 10 * GB, 0.799, false],
    [8 * GB, 10 * GB, 0.8, true],
    [10 * GB, 10 * GB, 1, true],
    [12 * GB, 10 * GB, 1.2, true],
  ])('%d bytes of %d: used %d, warns %s', (bytes, limit, used, warns) => {
    const c = databaseCapacity(bytes, limit);
    expect(c.used).toBe(used);
    expect(c.warning !== null).toBe(warns);
    expect(c.used >= CAPACITY_WARNING_RATIO).toBe(warns);
  });

  it('names the sizes and what to do', () => {
    expect(databaseCapacity(9 * GB, 10 * GB).warning).toMatch(
      /^the database holds 9\.00 GB of its 10\.00 GB limit \(90 %\): lower RETENTION_DAYS/,
    );
  });

  it('speaks in MB below a GB', () => {
    expect(databaseCapacity(450 * 1024 ** 2, 500 * 1024 ** 2).warning).toMatch(
      /^the database holds 450\.0 MB of its 500\.0 MB limit \(90 %\)/,
    );
  });

  it('never warns without a limit', () => {
    expect(databaseCapacity(5 * GB, 0)).toMatchObject({ used: 0, warning: null });
  });
});
