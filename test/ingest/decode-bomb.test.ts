// A gzip bomb must be refused without its decoded size ever being allocated.
// Own file: vitest runs each file in its own process (pool: forks), so the
// process's peak memory here reflects this test only.
import { gzipSync } from 'node:zlib';
import { expect, it } from 'vitest';
import { decodeContent } from '../../src/ingest/decode.js';
import { MAX_BODY_BYTES } from '../../src/limits.js';
import { PayloadTooLargeError } from '../../src/errors.js';
import { nodeIngestRuntime } from '../../src/editions/node/runtime.js';

const { decompress } = nodeIngestRuntime;

it('refuses a 1 MB gzip that decodes to 1 GB with less than 200 MB of peak memory growth', () => {
  // 50 concatenated gzip members of 20 MB of zeros each: ~1 MB on the wire, 1000 MB decoded.
  const member = gzipSync(new Uint8Array(MAX_BODY_BYTES), { level: 9 });
  const bomb = Buffer.concat(Array.from({ length: 50 }, () => member));
  expect(bomb.byteLength).toBeLessThan(2 * 1024 * 1024);

  const peakBeforeKb = process.resourceUsage().maxRSS;
  expect(() => decodeContent(bomb, 'gzip', MAX_BODY_BYTES, decompress)).toThrow(PayloadTooLargeError);
  const grownMb = (process.resourceUsage().maxRSS - peakBeforeKb) / 1024;
  expect(grownMb).toBeLessThan(200);
});
