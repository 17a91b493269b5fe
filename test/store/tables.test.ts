// The tables are described once (src/store/tables.ts) and the database enforces them:
// every descriptor must match the schema the migrations leave, on SQLite and on
// PostgreSQL (the same tables, columns, nullability, kinds, defaults and computed
// columns), and each column's export kind must suit what it holds. The comparison is a
// pure function, checked here on a hand-made mismatch as well.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openStore } from '../../src/editions/node/open-store.js';
import { migrate, type Store } from '../../src/store/database.js';
import { type ColumnDescriptor, type LineKind, TABLES, type TableDescriptor } from '../../src/store/tables.js';
import { createTestDatabase, dialects } from '../helpers/server.js';

interface LiveColumn {
  table: string;
  name: string;
  /** The declared type, lower case (SQLite's declared type, PostgreSQL's udt_name). */
  type: string;
  nullable: boolean;
  /** The database fills it when an insert leaves it out (a default, an identity or rowid). */
  filled: boolean;
  computed: boolean;
}

const KYSELY_TABLES = new Set(['kysely_migration', 'kysely_migration_lock']);

const TYPES: Record<ColumnDescriptor['kind'], string[]> = {
  int: ['integer', 'bigint', 'int8', 'int4'],
  real: ['real', 'float8'],
  text: ['text'],
  json: ['text'],
  blob: ['blob', 'bytea'],
};

/**
 * Columns whose database fills them on one dialect only, with why: PostgreSQL's ingest
 * gives a payload chunk the id of its first event (migration 008), so the column has no
 * sequence there.
 */
const FILLED_ON_SQLITE_ONLY = new Set(['payload_chunks.id']);

/** What differs between the descriptors and a live schema, one sentence per difference. */
function schemaDifferences(
  tables: Readonly<Record<string, TableDescriptor>>,
  live: LiveColumn[],
  dialect: 'sqlite' | 'postgres',
): string[] {
  const problems: string[] = [];
  const byTable = new Map<string, Map<string, LiveColumn>>();
  for (const c of live) {
    if (KYSELY_TABLES.has(c.table)) continue;
    let columns = byTable.get(c.table);
    if (!columns) byTable.set(c.table, (columns = new Map()));
    columns.set(c.name, c);
  }
  for (const table of byTable.keys())
    if (!(table in tables)) problems.push(`${table}: a table no descriptor describes`);
  for (const [table, descriptor] of Object.entries(tables)) {
    const columns = byTable.get(table);
    if (!columns) {
      problems.push(`${table}: described, not in the database`);
      continue;
    }
    for (const name of columns.keys())
      if (!(name in descriptor)) problems.push(`${table}.${name}: a column the descriptor leaves out`);
    for (const [name, d] of Object.entries(descriptor)) {
      const c = columns.get(name);
      const at = `${table}.${name}`;
      if (!c) {
        problems.push(`${at}: described, not in the database`);
        continue;
      }
      if (!TYPES[d.kind].includes(c.type)) problems.push(`${at}: described as ${d.kind}, the database has ${c.type}`);
      if (Boolean(d.computed) !== c.computed)
        problems.push(
          `${at}: ${d.computed ? 'described as computed, the database stores it' : 'computed by the database'}`,
        );
      if (d.computed) continue;
      if (Boolean(d.nullable) !== c.nullable)
        problems.push(
          `${at}: described as ${d.nullable ? 'nullable' : 'not null'}, the database has it ${c.nullable ? 'nullable' : 'not null'}`,
        );
      const filled = c.filled || c.nullable || (dialect === 'postgres' && FILLED_ON_SQLITE_ONLY.has(at));
      if (d.default && !filled) problems.push(`${at}: described with a default, the database has none`);
      if (!d.default && c.filled && !c.nullable)
        problems.push(`${at}: the database fills it, the descriptor says no default`);
    }
  }
  return problems;
}

async function liveColumns(store: Store): Promise<LiveColumn[]> {
  if (store.dialect === 'postgres') {
    const { rows } = await sql<{
      table: string;
      name: string;
      type: string;
      nullable: string;
      dflt: string | null;
      identity: string;
      generated: string;
    }>`select table_name as "table", column_name as name, udt_name as type, is_nullable as nullable,
         column_default as dflt, is_identity as identity, is_generated as generated
       from information_schema.columns where table_schema = current_schema()`.execute(store.db);
    return rows.map((r) => ({
      table: r.table,
      name: r.name,
      type: r.type.toLowerCase(),
      nullable: r.nullable === 'YES',
      filled: r.dflt !== null || r.identity === 'YES',
      computed: r.generated === 'ALWAYS',
    }));
  }
  // table_xinfo also lists generated columns (hidden 2 virtual, 3 stored). A primary key
  // column is never null: SQLite lets a non-integer one be only for old files' sake, and
  // every insert here names it.
  const { rows } = await sql<{
    table: string;
    name: string;
    type: string;
    notnull: number;
    dflt_value: string | null;
    pk: number;
    hidden: number;
  }>`select m.name as "table", c.name, c.type, c."notnull", c.dflt_value, c.pk, c.hidden
     from sqlite_master m, pragma_table_xinfo(m.name) c
     where m.type = 'table' and m.name not like 'sqlite\\_%' escape '\\'`.execute(store.db);
  const singleKey = new Map<string, number>();
  for (const r of rows) if (r.pk > 0) singleKey.set(r.table, (singleKey.get(r.table) ?? 0) + 1);
  return rows.map((r) => {
    const rowid = r.pk > 0 && singleKey.get(r.table) === 1 && r.type.toLowerCase() === 'integer';
    return {
      table: r.table,
      name: r.name,
      type: r.type.toLowerCase(),
      nullable: r.notnull === 0 && r.pk === 0,
      filled: r.dflt_value !== null || rowid,
      computed: r.hidden === 2 || r.hidden === 3,
    };
  });
}

describe('table descriptors', () => {
  for (const dialect of dialects) {
    it(`match the schema the migrations leave on ${dialect}`, async () => {
      const database = await createTestDatabase(dialect);
      const store = await openStore(database.url);
      try {
        await migrate(store);
        const live = await liveColumns(store);
        expect(live.length).toBeGreaterThan(100);
        expect(schemaDifferences(TABLES, live, dialect)).toEqual([]);
      } finally {
        await store.close();
        await database.drop();
      }
    });
  }

  it('name what a schema does not match', () => {
    const described: Record<string, TableDescriptor> = {
      things: {
        id: { kind: 'int', default: true },
        name: { kind: 'text' },
        note: { kind: 'text', nullable: true },
        gone: { kind: 'blob' },
      },
      missing: { id: { kind: 'int' } },
    };
    const live: LiveColumn[] = [
      { table: 'things', name: 'id', type: 'integer', nullable: false, filled: false, computed: false },
      { table: 'things', name: 'name', type: 'integer', nullable: true, filled: false, computed: false },
      { table: 'things', name: 'note', type: 'text', nullable: true, filled: false, computed: false },
      { table: 'things', name: 'extra', type: 'text', nullable: false, filled: true, computed: false },
      { table: 'other', name: 'id', type: 'integer', nullable: false, filled: false, computed: false },
    ];
    expect(schemaDifferences(described, live, 'sqlite')).toEqual([
      'other: a table no descriptor describes',
      'things.extra: a column the descriptor leaves out',
      'things.id: described with a default, the database has none',
      'things.name: described as text, the database has integer',
      'things.name: described as not null, the database has it nullable',
      'things.gone: described, not in the database',
      'missing: described, not in the database',
    ]);
  });

  /** What each export kind needs of the column it carries. */
  const LINE_NEEDS: Record<LineKind, { kinds: ColumnDescriptor['kind'][]; nullable: boolean }> = {
    int: { kinds: ['int'], nullable: false },
    count: { kinds: ['int'], nullable: false },
    'count?': { kinds: ['int'], nullable: true },
    'counter-added': { kinds: ['int'], nullable: false },
    number: { kinds: ['real', 'int'], nullable: false },
    text: { kinds: ['text'], nullable: false },
    'text?': { kinds: ['text'], nullable: true },
    time: { kinds: ['int'], nullable: false },
    'time?': { kinds: ['int'], nullable: true },
    bool: { kinds: ['int'], nullable: false },
    json: { kinds: ['json'], nullable: false },
    'json?': { kinds: ['json'], nullable: true },
    list: { kinds: ['json'], nullable: false },
    'text-added': { kinds: ['text', 'json'], nullable: true },
    'count-added': { kinds: ['int'], nullable: true },
    'time-added': { kinds: ['int'], nullable: true },
    bytes: { kinds: ['blob'], nullable: false },
  };

  it('give each exported column an export kind that suits what it holds', () => {
    const problems: string[] = [];
    for (const [table, descriptor] of Object.entries(TABLES as Record<string, TableDescriptor>))
      for (const [name, d] of Object.entries(descriptor)) {
        if (!d.line) continue;
        const needs = LINE_NEEDS[d.line];
        if (!needs.kinds.includes(d.kind) || needs.nullable !== Boolean(d.nullable))
          problems.push(`${table}.${name}: ${d.line} does not suit a ${d.nullable ? 'nullable ' : ''}${d.kind} column`);
      }
    expect(problems).toEqual([]);
  });
});
