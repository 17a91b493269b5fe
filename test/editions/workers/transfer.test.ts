// Export and import on the serverless edition: the Worker (bundled as deployed, run by
// Miniflare on a local D1) serves GET /api/export and POST /api/import, and the CLI
// moves a filled server edition (SQLite) to it and back (docs/api.md "Export file format":
// export → import → export gives the same lines, whatever the edition on either side).
// Every statement the import sends to D1 passes the D1 store's limit checks (100 bound
// parameters, 100 KB), which throw otherwise.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt, REPO, runCli } from '../../helpers/cli.js';
import type { TestServer } from '../../helpers/server.js';
import { bodyLines, emptyStore, exportText, filledSource, importText, typeCounts } from '../../transfer/support.js';
import { startTestWorker, type TestWorker } from './harness.js';

const KEY = 'worker-transfer-key';
const packageJson = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')) as { version: string };

/** Follows a Worker export's cursors with `limit` lines per request; the parts joined. */
async function exportInParts(
  w: TestWorker,
  limit: number,
  project?: string,
): Promise<{ text: string; requests: number }> {
  let text = '';
  let cursor: string | null = null;
  let requests = 0;
  do {
    const params = new URLSearchParams({ limit: String(limit) });
    if (project) params.set('project', project);
    if (cursor) params.set('cursor', cursor);
    const res = await w.api(`/api/export?${params}`);
    expect(res.status, await res.clone().text()).toBe(200);
    requests++;
    cursor = null;
    for (const line of (await res.text()).split('\n')) {
      if (line === '') continue;
      if (line.startsWith('{"type":"continue"')) cursor = (JSON.parse(line) as { cursor: string }).cursor;
      else text += line + '\n';
    }
  } while (cursor);
  return { text, requests };
}

describe('export and import on the serverless edition', () => {
  let t: TestServer;
  let file: string;

  beforeAll(async () => {
    ensureBuilt();
    ({ t, file } = await filledSource('sqlite'));
  }, 120_000);

  afterAll(async () => {
    await t?.close();
  });

  it('moves a server edition to the Worker and back with the same lines, and a second import adds nothing', async () => {
    const w = await startTestWorker({ API_KEYS: KEY });
    try {
      const imported = await runCli(
        ['import', '--to', w.url, '--api-key', KEY, '--request-lines', '300'],
        {},
        REPO,
        file,
      );
      expect(imported.code, imported.stderr).toBe(0);
      expect(imported.stdout).toMatch(/^ {2}event +\d+ added, 0 kept$/m);
      expect(imported.stdout).toMatch(/^ {2}symbol_chunk +\d+ added, 0 kept$/m);

      const exported = await runCli(['export', '--from', w.url, '--api-key', KEY]);
      expect(exported.code, exported.stderr).toBe(0);
      const meta = JSON.parse(exported.stdout.slice(0, exported.stdout.indexOf('\n')));
      expect(meta.source).toEqual({ faultline: packageJson.version, database: 'sqlite', project: null });
      expect(bodyLines(exported.stdout)).toEqual(bodyLines(file));
      expect(typeCounts(exported.stdout)).toEqual(typeCounts(file));

      // Back into a new server edition database: the same lines again.
      const back = await emptyStore('sqlite');
      try {
        const summary = await importText(back.store, exported.stdout);
        expect(summary.problemCount).toBe(0);
        expect(bodyLines(await exportText(back.store))).toEqual(bodyLines(file));
      } finally {
        await back.close();
      }

      // The moved project answers on the Worker: its DSN key and id, its symbol files.
      const demo = (await (await w.api('/api/projects/demo')).json()) as { id: number; dsn: string };
      const source = (await (await t.api('/api/projects/demo')).json()) as { id: number; dsn: string };
      expect(demo.id).toBe(source.id);
      expect(new URL(demo.dsn).username).toBe(new URL(source.dsn).username);
      const symbols = (await (await w.api('/api/projects/demo/symbols')).json()) as { symbols: { kind: string }[] };
      expect(symbols.symbols.map((s) => s.kind).sort()).toEqual(['elf', 'proguard', 'sourcebundle', 'sourcemap']);

      const again = await runCli(['import', '--to', w.url, '--api-key', KEY], {}, REPO, file);
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).not.toMatch(/[1-9]\d* added/);
      expect(bodyLines((await runCli(['export', '--from', w.url, '--api-key', KEY])).stdout)).toEqual(bodyLines(file));

      // Small parts follow cursors to the same lines; one project alone too.
      const parts = await exportInParts(w, 97);
      expect(parts.requests).toBeGreaterThan(5);
      expect(bodyLines(parts.text)).toEqual(bodyLines(file));
      const web = await exportInParts(w, 5, 'web');
      expect(bodyLines(web.text)).toEqual(bodyLines(await exportText(t.deps.store, { project: 'web' })));
      expect((await w.api('/api/export?project=nope')).status).toBe(404);
      expect((await w.api('/api/export?limit=0')).status).toBe(400);
      expect((await w.api('/api/export?cursor=garbage')).status).toBe(400);
      expect((await fetch(`${w.url}/api/export`)).status).toBe(401);
      expect((await fetch(`${w.url}/api/import`, { method: 'POST', body: file })).status).toBe(401);
    } finally {
      await w.close();
    }
  }, 240_000);

  it('finishes an interrupted import when it is run again, and refuses what is not an export', async () => {
    const w = await startTestWorker({ API_KEYS: KEY });
    try {
      // An import stopped mid-way: the file up to the middle of a line, well into the events.
      const lines = file.split('\n');
      const firstEvent = lines.findIndex((l) => l.startsWith('{"type":"event"'));
      const cut = firstEvent + Math.floor((lines.length - firstEvent) / 2);
      const interrupted = [...lines.slice(0, cut), lines[cut].slice(0, 40)].join('\n');
      const first = await runCli(
        ['import', '--to', w.url, '--api-key', KEY, '--request-lines', '150'],
        {},
        REPO,
        interrupted,
      );
      expect(first.code).toBe(1); // the cut line is reported
      expect(first.stdout).toMatch(new RegExp(`line ${cut + 1}: not JSON`));
      const partial = await exportInParts(w, 2000);
      expect(bodyLines(partial.text).length).toBeLessThan(bodyLines(file).length);
      expect(bodyLines(partial.text).length).toBeGreaterThan(firstEvent - 1);

      const resumed = await runCli(['import', '--to', w.url, '--api-key', KEY], {}, REPO, file);
      expect(resumed.code, resumed.stderr).toBe(0);
      expect(resumed.stdout).toMatch(/^ {2}event +\d+ added, [1-9]\d* kept$/m);
      expect(bodyLines((await exportInParts(w, 2000)).text)).toEqual(bodyLines(file));

      const newer = await w.api('/api/import', { method: 'POST', body: '{"type":"meta","format":99}\n' });
      expect(newer.status).toBe(400);
      expect(((await newer.json()) as { error: string }).error).toMatch(
        /nothing written: the file is export format 99/,
      );
      const notExport = await w.api('/api/import', { method: 'POST', body: 'hello\n' });
      expect(notExport.status).toBe(400);
    } finally {
      await w.close();
    }
  }, 240_000);
});
