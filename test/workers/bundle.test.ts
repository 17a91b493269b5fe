// The Worker as `wrangler deploy --minify` uploads it: within the size budget (well
// under the free plan's 3 MB compressed), the demangler's WebAssembly counted, with no
// Node built-in left in it (the edition runs without the nodejs_compat flag), and with
// the crons the scheduled handler knows.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { unstable_readConfig } from 'wrangler';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WORKER_CRONS } from '../../src/editions/workers/crons.js';
import { BUNDLE_BUDGET_GZIP_BYTES, WRANGLER_CONFIG, buildWorkerBundle, type WorkerBundle } from '../../src/editions/workers/local.js';

describe('the Worker bundle', () => {
  let dir: string;
  let bundle: WorkerBundle;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-minified-'));
    bundle = await buildWorkerBundle(dir, { minify: true });
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

  it('imports no Node built-in and no native driver', () => {
    const code = fs.readFileSync(bundle.file, 'utf8');
    expect(code).not.toMatch(/(from|import|require\()\s*["'](node:)?(fs|path|os|crypto|zlib|worker_threads|child_process|net|http)["']/);
    expect(code).not.toMatch(/better-sqlite3|pg-pool|@hono\/node-server/);
  });

  it('wrangler.jsonc schedules exactly the crons the scheduled handler runs', () => {
    const config = unstable_readConfig({ config: WRANGLER_CONFIG });
    expect([...(config.triggers?.crons ?? [])].sort()).toEqual([...WORKER_CRONS].sort());
    expect(WORKER_CRONS).toHaveLength(3);
    expect(config.d1_databases.map((d: { binding: string }) => d.binding)).toEqual(['DB']);
  });
});
