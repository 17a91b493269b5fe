// The statement sizes the store derives from each database's description
// (src/store/dialect.ts): pure, no database.
import { describe, expect, it } from 'vitest';
import { D1_CAPABILITIES } from '../../src/store/d1.js';
import { chunks, inListSize, insertRowCounts } from '../../src/store/dialect.js';
import { EVENT_COLUMNS } from '../../src/store/ingest-rows.js';
import { POSTGRES_CAPABILITIES } from '../../src/store/postgres.js';
import { SQLITE_CAPABILITIES } from '../../src/store/sqlite.js';

describe('dialect descriptions', () => {
  it('only D1 lacks interactive transactions (Store.atomic is one db.batch() there)', () => {
    expect([SQLITE_CAPABILITIES, POSTGRES_CAPABILITIES, D1_CAPABILITIES].map((d) => d.supportsInteractiveTransactions)).toEqual([true, true, false]);
  });

  it('SQLite inserts events 512, 128, 32, 8 or 1 rows at a time: the largest power of two whose parameters fit', () => {
    expect(EVENT_COLUMNS.length * 512).toBeLessThanOrEqual(SQLITE_CAPABILITIES.maxBoundParameters);
    expect(EVENT_COLUMNS.length * 1024).toBeGreaterThan(SQLITE_CAPABILITIES.maxBoundParameters);
    expect(insertRowCounts(SQLITE_CAPABILITIES, EVENT_COLUMNS.length)).toEqual([512, 128, 32, 8, 1]);
  });

  it('on D1 a row of the widest table fits twice in 100 parameters, so its inserts take 2 or 1 rows', () => {
    expect(insertRowCounts(D1_CAPABILITIES, EVENT_COLUMNS.length)).toEqual([2, 1]);
    expect(insertRowCounts(D1_CAPABILITIES, 3)).toEqual([32, 8, 1]);
  });

  it('an in-list leaves room for the statement’s other parameters', () => {
    expect(inListSize(SQLITE_CAPABILITIES, 1)).toBe(32_765);
    expect(inListSize(D1_CAPABILITIES, 1)).toBe(99);
  });

  it('chunks cut a list into parts of at most the size, and nothing into nothing', () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunks([1, 2], 5)).toEqual([[1, 2]]);
    expect(chunks([], 5)).toEqual([]);
  });
});
