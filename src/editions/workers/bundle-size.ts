// `npm run worker:size`: builds the Worker as `wrangler deploy --minify` would upload
// it and prints the upload's size (the script and its WebAssembly module), raw and
// gzipped (Cloudflare's limits count the compressed size: 3 MB on the free plan, 10 MB
// paid). Exits 1 past BUNDLE_BUDGET_GZIP_BYTES.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUNDLE_BUDGET_GZIP_BYTES, buildWorkerBundle } from './local.js';

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-size-'));
  try {
    const b = await buildWorkerBundle(dir, { minify: true });
    const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`;
    process.stdout.write(`worker bundle: ${kib(b.bytes)}, gzip ${kib(b.gzipBytes)} (budget ${kib(BUNDLE_BUDGET_GZIP_BYTES)})\n`);
    if (b.gzipBytes > BUNDLE_BUDGET_GZIP_BYTES) process.exitCode = 1;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
