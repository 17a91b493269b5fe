// A source map whose `file` has a basename longer than PostgreSQL's btree row limit
// (about 2.7 KB) is stored and found, on SQLite and PostgreSQL: the index holds the
// basename's first MAX_INDEXED_BASENAME characters, and the lookup compares the full
// name, so two maps whose long basenames differ only past the cut each serve their own
// file. Rows SQLite stored whole before the cut are cut by migration 016 and found again.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrations } from '../../src/store/migrations.js';
import { findByRelease } from '../../src/symbols/storage.js';
import { MAX_INDEXED_BASENAME } from '../../src/limits.js';
import { dialects, startTestServer, type TestServer } from '../helpers/server.js';
import { makeProject } from '../ingest/helpers.js';
import { eventDetail, sendEvent, uploadOk, uploadSymbols } from './helpers.js';

// Incompressible, as real long names are: PostgreSQL compresses index entries first.
const common = Array.from({ length: 40 }, (_, i) => createHash('sha512').update(String(i)).digest('base64url')).join(
  '',
);
const urlOf = (tail: string) => `https://cdn.example.com/static/${common}${tail}.min.js`;
const mapOf = (tail: string, source: string) =>
  JSON.stringify({ version: 3, file: urlOf(tail), sources: [source], names: [], mappings: 'AAAA' });

describe.each(dialects)('a source map with a very long file name (%s)', (dialect) => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer(dialect);
  });
  afterAll(() => t?.close());

  const frameEvent = (url: string) => ({
    platform: 'javascript',
    release: 'web@1',
    exception: {
      values: [
        {
          type: 'Error',
          value: 'x',
          stacktrace: { frames: [{ abs_path: url, filename: url, function: 'a', lineno: 1, colno: 1 }] },
        },
      ],
    },
  });

  it('is stored, and each of two maps whose names differ past the cut serves its own file', async () => {
    const project = await makeProject(t);
    for (const [tail, source] of [
      ['-one', 'src/one.ts'],
      ['-two', 'src/two.ts'],
    ]) {
      const res = await uploadSymbols(t, project, {
        kind: 'sourcemap',
        release: 'web@1',
        files: [{ name: `map${tail}.js.map`, data: mapOf(tail, source) }],
      });
      expect(res.status, await res.clone().text()).toBe(201);
    }
    for (const [tail, source] of [
      ['-one', 'src/one.ts'],
      ['-two', 'src/two.ts'],
    ]) {
      const detail = await eventDetail(t, project, await sendEvent(t, project, frameEvent(urlOf(tail))));
      expect(detail.symbolicated).toBe(true);
      expect(detail.exceptions.at(-1).symbolicated_frames[0].filename).toBe(source);
    }
    const unknown = await eventDetail(t, project, await sendEvent(t, project, frameEvent(urlOf('-three'))));
    expect(unknown.symbolicated).toBe(false);
  });

  it.runIf(dialect === 'sqlite')(
    'a row stored whole before the cut is cut by its migration and found again',
    async () => {
      const project = await makeProject(t);
      const [file] = await uploadOk(t, project, {
        kind: 'sourcemap',
        release: 'web@2',
        files: [{ name: 'old.js.map', data: mapOf('-old', 'src/old.ts') }],
      });
      const db = t.deps.store.db;
      const basename = `${common}-old.min.js`;
      await db.updateTable('symbol_files').set({ serves_basename: basename }).where('id', '=', file.id).execute();
      const find = () => findByRelease(db, Number(project.id), 'sourcemap', 'web@2', { servesBasename: basename });
      expect(await find()).toEqual([]);
      await migrations('sqlite')['016_symbol_basenames_cut_for_the_index'].up(db as never);
      expect((await find()).map((r) => Number(r.id))).toEqual([file.id]);
      const row = await db
        .selectFrom('symbol_files')
        .select('serves_basename')
        .where('id', '=', file.id)
        .executeTakeFirstOrThrow();
      expect(row.serves_basename).toBe(basename.slice(0, MAX_INDEXED_BASENAME));
    },
  );
});
