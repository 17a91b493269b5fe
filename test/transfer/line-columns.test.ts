// The export lines carry what the tables' descriptors (src/store/tables.ts) export: a
// column given an export kind in a table no line type reads would silently never move.
import { describe, expect, it } from 'vitest';
import { TABLES, type TableDescriptor } from '../../src/store/tables.js';
import { lineColumns } from '../../src/transfer/format.js';
import { LINE_TYPES } from '../../src/transfer/line-types.js';

describe('line columns', () => {
  it('every table with exported columns has one line type, and every line type names such a table', () => {
    const exporting = Object.entries(TABLES as Record<string, TableDescriptor>)
      .filter(([, columns]) => Object.values(columns).some((c) => c.line !== undefined))
      .map(([table]) => table)
      .sort();
    const read = LINE_TYPES.flatMap((t) => (t.table ? [t.table] : [])).sort();
    expect(read).toEqual(exporting);
    expect(LINE_TYPES.filter((t) => !t.table).map((t) => t.type)).toEqual(['alert_rule_channel']);
  });

  it('come in descriptor order with their field names, and refuse a column the descriptor does not export', () => {
    expect(lineColumns('issue_hourly')).toEqual([
      { column: 'bucket', field: 'hour', kind: 'time' },
      { column: 'events', kind: 'count' },
    ]);
    expect(lineColumns('attachments', ['digest', 'event_id']).map((c) => c.column)).toEqual(['digest', 'event_id']);
    expect(() => lineColumns('issues', ['first_seen_id'])).toThrow(/issues\.first_seen_id/);
  });
});
