// `npm run worker:size`: builds the Worker as `wrangler deploy` uploads it with this
// wrangler.jsonc (not minified: the configuration does not ask for it) and prints the
// upload's size, the script and its WebAssembly module, raw and gzipped, measured as
// wrangler's "Total Upload" line measures it, so the two agree. Cloudflare's limits
// count the gzipped size (3 MiB on the free plan, 10 MiB paid); the budget is this
// project's own, lower cap. Exits 1 past BUNDLE_BUDGET_GZIP_BYTES.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  BUNDLE_BUDGET_GZIP_BYTES,
  CLOUDFLARE_FREE_GZIP_BYTES,
  CLOUDFLARE_PAID_GZIP_BYTES,
  buildWorkerBundle,
} from './local.js';

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-worker-size-'));
  try {
    const b = await buildWorkerBundle(dir);
    const kib = (n: number) => `${(n / 1024).toFixed(2)} KiB`;
    const over = b.gzipBytes > BUNDLE_BUDGET_GZIP_BYTES;
    process.stdout.write(
      [
        `worker upload (what \`wrangler deploy\` sends, as its "Total Upload" counts it): ${kib(b.bytes)}, gzip ${kib(b.gzipBytes)}`,
        `Cloudflare's limit: ${kib(CLOUDFLARE_FREE_GZIP_BYTES)} gzipped on the free plan, ${kib(CLOUDFLARE_PAID_GZIP_BYTES)} on paid plans`,
        `budget: ${kib(BUNDLE_BUDGET_GZIP_BYTES)} gzipped, this project's own cap (a third of the free plan's limit, room for what is still to come): ` +
          (over
            ? `${kib(b.gzipBytes - BUNDLE_BUDGET_GZIP_BYTES)} over`
            : `${kib(BUNDLE_BUDGET_GZIP_BYTES - b.gzipBytes)} left`),
      ].join('\n') + '\n',
    );
    if (over) process.exitCode = 1;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(1);
});
