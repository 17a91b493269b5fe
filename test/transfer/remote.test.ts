// `faultline export --from <url>` and `faultline import --to <url>` against the
// handlers a serverless edition mounts as GET /api/export and POST /api/import
// (src/transfer/http.ts), served here by a small Hono app over a test database: the
// export comes in several parts following cursors, the import goes in several requests,
// failed requests are sent again, and the lines arrive as a local export gives them.
import { serve, type ServerType } from '@hono/node-server';
import { Hono } from 'hono';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeTransferRuntime } from '../../src/editions/node/transfer.js';
import type { Store } from '../../src/store/database.js';
import { exportResponse, importResponse } from '../../src/transfer/http.js';
import { ensureBuilt, REPO, runCli } from '../helpers/cli.js';
import { dialects, type TestServer } from '../helpers/server.js';
import { bodyLines, emptyStore, exportText, filledSource } from './support.js';

const KEY = 'remote-key';

interface Remote {
  url: string;
  requests: string[];
  close(): Promise<void>;
}

/** The transfer routes over `store`, behind an API key; every third request first fails with 503. */
async function serveRemote(store: Store, partLines: number): Promise<Remote> {
  const deps = { store, runtime: nodeTransferRuntime, version: 'test' };
  const requests: string[] = [];
  let n = 0;
  const app = new Hono();
  app.use('*', async (c, next) => {
    if (c.req.header('authorization') !== `Bearer ${KEY}`) return c.json({ error: 'missing or wrong API key' }, 401);
    requests.push(`${c.req.method} ${new URL(c.req.url).search}`);
    if (++n % 3 === 0) return c.json({ error: 'try again' }, 503);
    await next();
  });
  app.get('/api/export', (c) => {
    const url = new URL(c.req.url);
    if (!url.searchParams.has('limit')) url.searchParams.set('limit', String(partLines));
    return exportResponse(deps, url);
  });
  app.post('/api/import', (c) => importResponse(deps, c.req.raw));
  const server: ServerType = await new Promise((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe.each(dialects)('moving to and from a remote instance on %s', (dialect) => {
  let t: TestServer;
  let file: string;

  beforeAll(async () => {
    ensureBuilt();
    ({ t, file } = await filledSource(dialect));
  }, 90_000);

  afterAll(async () => {
    await t?.close();
  });

  it('export --from follows the cursors of a split export and writes the same lines', async () => {
    const remote = await serveRemote(t.deps.store, 100);
    try {
      const result = await runCli(['export', '--from', remote.url, '--api-key', KEY]);
      expect(result.code, result.stderr).toBe(0);
      expect(bodyLines(result.stdout)).toEqual(bodyLines(file));
      expect(result.stdout.split('\n').filter((l) => l.includes('"type":"meta"')).length).toBe(1);
      expect(result.stdout).not.toContain('"type":"continue"');
      expect(remote.requests.filter((r) => r.includes('cursor=')).length).toBeGreaterThan(4);
      expect(result.stderr).toMatch(/trying again/);

      const web = await runCli(['export', 'web', '--from', remote.url, '--api-key', KEY]);
      expect(bodyLines(web.stdout)).toEqual(bodyLines(await exportText(t.deps.store, { project: 'web' })));
      const denied = await runCli(['export', '--from', remote.url, '--api-key', 'wrong']);
      expect(denied.code).toBe(1);
      expect(denied.stderr).toMatch(/refused the API key/);
    } finally {
      await remote.close();
    }
  }, 60_000);

  it('import --to sends the file in parts, resends failed ones, and a second run adds nothing', async () => {
    const target = await emptyStore(dialect);
    const remote = await serveRemote(target.store, 300);
    try {
      const result = await runCli(
        ['import', '--to', remote.url, '--api-key', KEY, '--request-lines', '200'],
        {},
        REPO,
        file,
      );
      expect(result.code, result.stderr).toBe(0);
      expect(remote.requests.filter((r) => r.startsWith('POST')).length).toBeGreaterThan(1);
      expect(result.stdout).toMatch(/^ {2}event +\d+ added, 0 kept$/m);
      expect(bodyLines(await exportText(target.store))).toEqual(bodyLines(file));

      const again = await runCli(
        ['import', '--to', remote.url, '--api-key', KEY, '--request-lines', '200'],
        {},
        REPO,
        file,
      );
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).not.toMatch(/[1-9]\d* added/);

      // Line numbers of problems are the file's, not the part's.
      const lines = file.split('\n');
      const at = Math.floor(lines.length * 0.7);
      const bad = [...lines.slice(0, at), 'not json', ...lines.slice(at)].join('\n');
      const partly = await runCli(
        ['import', '--to', remote.url, '--api-key', KEY, '--request-lines', '200'],
        {},
        REPO,
        bad,
      );
      expect(partly.code).toBe(1);
      expect(partly.stdout).toMatch(new RegExp(`^ {2}line ${at + 1}: not JSON`, 'm'));

      const newer = await runCli(
        ['import', '--to', remote.url, '--api-key', KEY, '--request-lines', '200'],
        {},
        REPO,
        '{"type":"meta","format":7}\n' + lines.slice(1).join('\n'),
      );
      expect(newer.code).toBe(1);
      expect(newer.stderr).toMatch(/import refused, nothing written: the file is export format 7/);
    } finally {
      await remote.close();
      await target.close();
    }
  }, 90_000);
});
