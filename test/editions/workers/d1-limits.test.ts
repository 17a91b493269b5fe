// D1's statement limits, checked by the dialect itself (local D1 under Miniflare
// enforces neither): over 100 parameters the values are written into the SQL as
// literals; what still does not fit fails naming the limit.
import { describe, expect, it } from 'vitest';
import { D1LimitError, D1_MAX_BOUND_PARAMETERS, fitToD1 } from '../../../src/store/d1.js';

const placeholders = (n: number) => Array.from({ length: n }, () => '?').join(', ');

describe('fitToD1', () => {
  it('leaves statements within 100 parameters as they are', () => {
    const q = {
      sql: `select * from t where id in (${placeholders(100)})`,
      parameters: Array.from({ length: 100 }, (_, i) => i),
    };
    expect(fitToD1(q)).toEqual({ sql: q.sql, parameters: q.parameters });
  });

  it('inlines numbers, text, null, booleans and bytes past 100 parameters, leaving quoted ? and comments alone', () => {
    const values: unknown[] = [1, -2.5, "it's", null, true, new Uint8Array([0, 255]), 10n];
    while (values.length < 101) values.push(values.length);
    const sql = `select '?' as "a?b", [c?] -- what?\n from t /* it's ? */ where x in (${placeholders(101)})`;
    const fitted = fitToD1({ sql, parameters: values });
    expect(fitted.parameters).toEqual([]);
    expect(fitted.sql).toBe(
      `select '?' as "a?b", [c?] -- what?\n from t /* it's ? */ where x in (1, -2.5, 'it''s', NULL, 1, X'00ff', 10, ${values.slice(7).join(', ')})`,
    );
  });

  it('keeps what has no literal bound, and refuses a statement that still binds too many', () => {
    const values = Array.from({ length: 120 }, (_, i) => (i < 5 ? `nul\0${i}` : i));
    const fitted = fitToD1({ sql: `select ${placeholders(120)}`, parameters: values });
    expect(fitted.parameters).toEqual(values.slice(0, 5));
    const tooMany = Array.from({ length: D1_MAX_BOUND_PARAMETERS + 1 }, (_, i) => `\0${i}`);
    expect(() => fitToD1({ sql: `select ${placeholders(tooMany.length)}`, parameters: tooMany })).toThrow(D1LimitError);
  });

  it('refuses statements over 100 KB and placeholder counts that do not match', () => {
    expect(() => fitToD1({ sql: `select '${'x'.repeat(100 * 1024)}'`, parameters: [] })).toThrow(/at most 102400/);
    expect(() => fitToD1({ sql: `select ${placeholders(101)}, ?`, parameters: Array(101).fill(1) })).toThrow(
      D1LimitError,
    );
  });
});
