// The array literals ingest sends PostgreSQL (src/store/pg-arrays.ts), read back by a
// real server: every value must come back exactly as it went in.
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore } from '../../src/editions/node/open-store.js';
import type { Store } from '../../src/store/database.js';
import { pgArrayLiteral } from '../../src/store/pg-arrays.js';
import { createTestDatabase, dialects, type TestDatabase } from '../helpers/server.js';

describe.skipIf(!dialects.includes('postgres'))('PostgreSQL array literals', () => {
  let database: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    database = await createTestDatabase('postgres');
    store = await openStore(database.url);
  });
  afterAll(async () => {
    await store.close();
    await database.drop();
  });

  async function roundTrip(values: unknown[], type: 'int8' | 'text' | 'bytea'): Promise<unknown[]> {
    const cast = sql.raw(type);
    const { rows } = await sql<{
      v: unknown;
    }>`select v from unnest(${pgArrayLiteral(values, type)}::${cast}[]) with ordinality as t(v, n) order by n`.execute(
      store.db,
    );
    return rows.map((r) => r.v);
  }

  it('keeps text with quotes, backslashes, braces, commas, blanks, NULL as a word and non-ASCII', async () => {
    const values = [
      'plain',
      '',
      ' ',
      'a,b',
      '{x}',
      'say "hi"',
      'C:\\path\\to',
      '\\"',
      'NULL',
      'null',
      null,
      'ünï ✓ 😀',
      'line\nbreak\ttab',
    ];
    expect(await roundTrip(values, 'text')).toEqual(values);
  });

  it('keeps 64-bit numbers, negative ones and nulls', async () => {
    const values = [0, -1, 42, 1_767_000_000_000, Number.MAX_SAFE_INTEGER, null];
    expect((await roundTrip(values, 'int8')).map((v) => (v === null ? null : Number(v)))).toEqual(values);
  });

  it('keeps bytes, empty ones and views into larger buffers', async () => {
    const big = Buffer.from([9, 0, 1, 255, 92, 34, 7]);
    const values = [Buffer.from([1, 2, 3]), Buffer.alloc(0), big.subarray(1, 6), null];
    const back = (await roundTrip(values, 'bytea')).map((v) => (v === null ? null : [...(v as Uint8Array)]));
    expect(back).toEqual([[1, 2, 3], [], [0, 1, 255, 92, 34], null]);
  });

  it('reads an empty list as an empty array', async () => {
    expect(await roundTrip([], 'text')).toEqual([]);
  });
});
