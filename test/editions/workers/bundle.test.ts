// The Worker as `wrangler deploy` uploads it: within the size budget (well under the free
// plan's 3 MB compressed), measured as wrangler's "Total Upload" measures it and printed
// that way by `npm run worker:size`, the demangler's WebAssembly counted, with no
// Node built-in left in it (the edition runs without the nodejs_compat flag), and with
// the crons the scheduled handler knows.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { unstable_readConfig } from 'wrangler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKER_CRONS } from '../../../src/editions/workers/crons.js';
import {
  BUNDLE_BUDGET_GZIP_BYTES,
  REPO_ROOT,
  WRANGLER_CONFIG,
  buildWorkerBundle,
  type WorkerBundle,
} from '../../../src/editions/workers/local.js';
import { childEnv, ensureBuilt } from '../../helpers/cli.js';

describe('the Worker bundle', () => {
  let dir: string;
  let bundle: WorkerBundle;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-bundle-'));
    bundle = await buildWorkerBundle(dir);
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it(`stays under ${BUNDLE_BUDGET_GZIP_BYTES / 1024} KiB gzipped`, () => {
    expect(bundle.bytes).toBeGreaterThan(100 * 1024); // really the app, not an empty shell
    // The demangler's WebAssembly is uploaded beside the script and counts in the size.
    expect(bundle.modules.map((f) => path.basename(f))).toEqual([expect.stringMatching(/index_bg\.wasm$/)]);
    expect(bundle.bytes).toBe(fs.statSync(bundle.file).size + fs.statSync(bundle.modules[0]).size);
    expect(bundle.gzipBytes).toBeLessThan(BUNDLE_BUDGET_GZIP_BYTES);
  });

  it('measures the upload as `wrangler deploy --dry-run` reports it, and `npm run worker:size` prints that and explains its budget', () => {
    ensureBuilt();
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-dry-run-'));
    try {
      const wrangler = execFileSync(
        process.execPath,
        [
          path.join(REPO_ROOT, 'node_modules/wrangler/bin/wrangler.js'),
          'deploy',
          '--dry-run',
          '--config',
          WRANGLER_CONFIG,
          '--outdir',
          out,
        ],
        {
          cwd: REPO_ROOT,
          env: childEnv({ WRANGLER_SEND_METRICS: 'false', CI: '1' }),
          encoding: 'utf8',
        },
      );
      const reported = /Total Upload: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(wrangler);
      expect(reported, wrangler).not.toBeNull();
      const kib = (n: number) => (n / 1024).toFixed(2);
      expect([kib(bundle.bytes), kib(bundle.gzipBytes)]).toEqual([reported![1], reported![2]]);

      const size = execFileSync(process.execPath, [path.join(REPO_ROOT, 'dist/editions/workers/bundle-size.js')], {
        cwd: REPO_ROOT,
        env: childEnv({}),
        encoding: 'utf8',
      });
      expect(size).toContain(`${reported![1]} KiB, gzip ${reported![2]} KiB`);
      expect(size).toMatch(/Cloudflare's limit: 3072\.00 KiB gzipped on the free plan/);
      expect(size).toMatch(/budget: 1024\.00 KiB gzipped, this project's own cap/);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  }, 120_000);

  it('imports no Node built-in and no native driver', () => {
    // Without block comments: the unminified bundle keeps libraries' doc examples (`import … from 'node:fs'`).
    const code = fs.readFileSync(bundle.file, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '');
    expect(code).not.toMatch(
      /(from|import|require\()\s*["'](node:)?(fs|path|os|crypto|zlib|worker_threads|child_process|net|http)["']/,
    );
    expect(code).not.toMatch(/better-sqlite3|pg-pool|@hono\/node-server/);
  });

  it('wrangler.jsonc schedules exactly the crons the scheduled handler runs', () => {
    const config = unstable_readConfig({ config: WRANGLER_CONFIG });
    expect([...(config.triggers?.crons ?? [])].sort()).toEqual([...WORKER_CRONS].sort());
    expect(WORKER_CRONS).toHaveLength(3);
    expect(config.d1_databases.map((d: { binding: string }) => d.binding)).toEqual(['DB']);
  });
});
