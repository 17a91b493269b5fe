// The statement sizes the store derives from each database's description
// (src/store/dialect.ts): the derivations as properties over any description, and each
// description's parameter limit against the real database (SQLite always, PostgreSQL when
// TEST_DATABASE_URL is set; D1's is checked in workerd by d1.test.ts of the Workers tests).
import BetterSqlite3 from 'better-sqlite3';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { chunks, type DialectCapabilities, inListSize, insertRowCounts } from '../../src/store/dialect.js';
import { EVENT_COLUMNS } from '../../src/store/ingest-rows.js';
import { POSTGRES_CAPABILITIES } from '../../src/store/postgres.js';
import { SQLITE_CAPABILITIES } from '../../src/store/sqlite.js';

const described = (maxBoundParameters: number): DialectCapabilities => ({
  supportsInteractiveTransactions: true,
  maxBoundParameters,
  maxStatementBytes: 1_000_000,
  maxValueBytes: 1_000_000,
});

describe('statement sizes derived from a description', () => {
  it('insert row counts: the largest power of two that fits, quarters of it down to 8, then 1', () => {
    for (const limit of [1, 7, 100, 999, 32_766, 65_535]) {
      for (let width = 1; width <= 70; width++) {
        const counts = insertRowCounts(described(limit), width);
        const [top] = counts;
        const label = `limit ${limit}, width ${width}: ${counts}`;
        for (const n of counts) expect(n * width <= limit || n === 1, label).toBe(true);
        if (top * width <= limit) expect(top * 2 * width, label).toBeGreaterThan(limit);
        for (let i = 1; i < counts.length; i++) expect(counts[i], label).toBeLessThan(counts[i - 1]);
        expect(counts.at(-1), label).toBe(1);
        for (const n of counts.slice(1, -1)) expect(n === top / 4 ** counts.indexOf(n) && n >= 8, label).toBe(true);
      }
    }
  });

  it('an in-list and the statement’s other parameters together fill the limit exactly', () => {
    for (const limit of [100, 32_766]) {
      for (const others of [0, 1, 5]) expect(inListSize(described(limit), others) + others).toBe(limit);
    }
  });

  it('SQLite inserts events 512, 128, 32, 8 or 1 rows at a time (the numbers docs/architecture.md gives)', () => {
    expect(insertRowCounts(SQLITE_CAPABILITIES, EVENT_COLUMNS.length)).toEqual([512, 128, 32, 8, 1]);
  });

  it('chunks cut a list into parts of at most the size, and nothing into nothing', () => {
    expect(chunks([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(chunks([1, 2], 5)).toEqual([[1, 2]]);
    expect(chunks([], 5)).toEqual([]);
  });
});

const placeholders = (n: number, mark: (i: number) => string) => Array.from({ length: n }, (_, i) => mark(i)).join(',');

describe('each description’s parameter limit is the real database’s', () => {
  it('SQLite (better-sqlite3) binds maxBoundParameters parameters and refuses one more', () => {
    const db = new BetterSqlite3(':memory:');
    try {
      const n = SQLITE_CAPABILITIES.maxBoundParameters;
      const sql = (count: number) =>
        `select count(*) as c from (select 1) where 1 in (${placeholders(count, () => '?')})`;
      expect(db.prepare(sql(n)).get(...Array.from({ length: n }, () => 1))).toEqual({ c: 1 });
      expect(() => db.prepare(sql(n + 1))).toThrow(/too many SQL variables/);
    } finally {
      db.close();
    }
  });

  it.skipIf(!process.env.TEST_DATABASE_URL)(
    'PostgreSQL binds maxBoundParameters parameters and refuses one more',
    async () => {
      const client = new pg.Client({ connectionString: process.env.TEST_DATABASE_URL });
      await client.connect();
      try {
        const n = POSTGRES_CAPABILITIES.maxBoundParameters;
        const sql = (count: number) => `select 1 = any(array[${placeholders(count, (i) => `$${i + 1}::int`)}]) as ok`;
        const values = (count: number) => Array.from({ length: count }, () => 1);
        expect((await client.query(sql(n), values(n))).rows).toEqual([{ ok: true }]);
        await expect(client.query(sql(n + 1), values(n + 1))).rejects.toThrow();
      } finally {
        await client.end();
      }
    },
  );
});
