// Bad input: truncated lines, lines that are not JSON, known types with missing or wrong
// fields, a file from a newer format, duplicate lines, lines out of order (an event
// before its project), unknown types. Each is reported with its line number or counted,
// and the database ends up holding exactly what it held plus the valid rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImportRefusedError } from '../../src/transfer/import.js';
import { dialects, type TestServer } from '../helpers/server.js';
import { bodyLines, emptyStore, exportText, filledSource, importText, type EmptyStore } from './support.js';

describe.each(dialects)('importing bad input on %s', (dialect) => {
  let t: TestServer;
  let full: string[];
  let demoOnly: string;
  let target: EmptyStore;

  beforeAll(async () => {
    let file: string;
    ({ t, file } = await filledSource(dialect));
    full = bodyLines(file);
    demoOnly = await exportText(t.deps.store, { project: 'demo' });
  }, 60_000);

  afterAll(async () => {
    await target?.close();
    await t?.close();
  });

  it('reports each bad line by number, imports the rest, and holds exactly its rows plus the valid ones', async () => {
    target = await emptyStore(dialect);
    await importText(target.store, demoOnly);
    const meta = JSON.stringify({ type: 'meta', format: 1, exported_at: new Date().toISOString(), source: {} });
    const parsed = full.map((l) => JSON.parse(l));
    const webIndex = (type: string, nth = 0) =>
      parsed.map((l, i) => [l, i] as const).filter(([l]) => l.type === type && l.project === 'web')[nth][1];
    const demoEvent = parsed.findIndex((l) => l.type === 'event' && l.project === 'demo');

    const dropped = new Set<number>();
    const lines = full.slice();
    const replace = (index: number, text: string) => {
      lines[index] = text;
      dropped.add(index);
    };
    // A line of a known type with a field missing, and one with a field of the wrong type.
    const hour = { ...parsed[webIndex('release_hour')] };
    delete hour.total;
    replace(webIndex('release_hour'), JSON.stringify(hour));
    replace(webIndex('event', 1), JSON.stringify({ ...parsed[webIndex('event', 1)], is_crash: 'yes' }));
    // Not JSON; truncated in the middle.
    replace(webIndex('issue_hour'), 'this is not JSON');
    replace(webIndex('session'), full[webIndex('session')].slice(0, 40));
    // Out of order: a web event moved in front of everything (its project comes later).
    const early = webIndex('event', 0);
    dropped.add(early);
    // The file: meta, the early event, then every line (with the damage), duplicates of a
    // demo event and a web session line, an unknown type, and a last line cut short.
    const file = [
      meta,
      full[early],
      ...lines.filter((_, i) => i !== early),
      full[demoEvent],
      full[webIndex('session', 1)],
      JSON.stringify({ type: 'dashboard_widget', project: 'web', name: 'x' }),
    ];
    const cut = full[webIndex('session', 1)].slice(0, -10);
    const text = file.join('\n') + '\n' + cut;

    const summary = await importText(target.store, text, { batchLines: 20 });
    const numberOf = (line: string) => file.indexOf(line) + 1;
    const messages = summary.problems.map((p) => [p.line, p.message]);
    expect(messages).toEqual([
      [2, expect.stringContaining('project "web" is not in the database')],
      [numberOf(lines[webIndex('issue_hour')]), expect.stringContaining('not JSON')],
      [numberOf(JSON.stringify(hour)), expect.stringMatching(/^release_hour: total: /)],
      [numberOf(lines[webIndex('event', 1)]), expect.stringMatching(/^event: is_crash: /)],
      [numberOf(lines[webIndex('session')]), expect.stringContaining('not JSON')],
      [file.length + 1, expect.stringContaining('not JSON')],
    ]);
    expect(summary.problemCount).toBe(6);
    expect(summary.unknown).toEqual({ dashboard_widget: 1 });
    expect(summary.lines).toBe(file.length + 1);

    // Exactly the demo project's rows plus every valid line of the file.
    const expected = full.filter((_, i) => !dropped.has(i));
    expect(bodyLines(await exportText(target.store)).sort()).toEqual(expected.sort());

    // Imported again, the out-of-order event now finds its project; nothing else is added.
    const again = await importText(target.store, text);
    expect(
      Object.entries(again.types)
        .filter(([, c]) => c.added > 0)
        .map(([type, c]) => [type, c.added]),
    ).toEqual([['event', 1]]);
    expect(again.problems.map((p) => p.line)).toEqual(summary.problems.slice(1).map((p) => p.line));
    expect(bodyLines(await exportText(target.store)).sort()).toEqual(
      full.filter((_, i) => !dropped.has(i) || i === early).sort(),
    );
  }, 60_000);

  it('refuses a file from a newer format, or one that is not an export, before writing anything', async () => {
    const before = bodyLines(await exportText(target.store));
    const newer = [
      JSON.stringify({ type: 'meta', format: 2, exported_at: new Date().toISOString(), source: {} }),
      ...full,
    ].join('\n');
    await expect(importText(target.store, newer)).rejects.toThrow(ImportRefusedError);
    await expect(importText(target.store, newer)).rejects.toThrow(/format 2, written by a newer faultline/);
    await expect(importText(target.store, full.join('\n'))).rejects.toThrow(
      /line 1: the file does not start with an export's meta line/,
    );
    await expect(importText(target.store, '')).rejects.toThrow(/empty/);
    await expect(importText(target.store, '{"type":"met')).rejects.toThrow(ImportRefusedError);
    expect(bodyLines(await exportText(target.store))).toEqual(before);
  });

  it('reads lines split anywhere across the input chunks, with CRLF endings', async () => {
    const empty = await emptyStore(dialect);
    try {
      const text = (await exportText(t.deps.store, { project: 'web' })).replaceAll('\n', '\r\n');
      const pieces: string[] = [];
      for (let i = 0; i < text.length; i += 997) pieces.push(text.slice(i, i + 997));
      const summary = await importText(empty.store, pieces);
      expect(summary.problems).toEqual([]);
      expect(bodyLines(await exportText(empty.store))).toEqual(
        bodyLines(await exportText(t.deps.store, { project: 'web' })),
      );
    } finally {
      await empty.close();
    }
  }, 30_000);
});
