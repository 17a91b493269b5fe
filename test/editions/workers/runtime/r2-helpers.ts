// Helpers shared by the tests of bytes in R2 (r2.test.ts, r2-symbols.test.ts): the keys in
// the bucket, and export → import → export compared line by line.
import type { BlobBucket } from '../../../../src/store/blobs.js';
import type { Store } from '../../../../src/store/database.js';
import { prepareExport } from '../../../../src/transfer/export.js';
import type { TransferRuntime } from '../../../../src/transfer/line-type.js';

/** Every key under `prefix` in the bucket, page after page. */
export async function bucketKeys(bucket: BlobBucket, prefix: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor: string | undefined;
  for (;;) {
    const page = await bucket.list({ prefix, cursor });
    keys.push(...page.objects.map((o) => o.key));
    if (!page.truncated) return keys;
    cursor = page.cursor;
  }
}

/** Lines of an export of one project after its meta line. */
export async function exported(from: Store, runtime: TransferRuntime, slug: string): Promise<string[]> {
  const prepared = await prepareExport(from, runtime, { version: 'test', project: slug, snapshot: false });
  const decoder = new TextDecoder();
  let text = '';
  for await (const chunk of prepared.chunks()) text += decoder.decode(chunk, { stream: true });
  return text
    .split('\n')
    .filter((l) => l !== '')
    .slice(1);
}

/**
 * The lines as they compare across two projects of one database: the project line loses
 * its id and DSN key (the import into the same database gives new ones).
 */
export function comparable(lines: string[], slug: string, as: string): string[] {
  return lines.map((l) => {
    const line = JSON.parse(l.replaceAll(`"${slug}"`, `"${as}"`)) as Record<string, unknown>;
    if (line.type === 'project') {
      delete line.id;
      delete line.dsn_key;
    }
    return JSON.stringify(line);
  });
}

/** The text as the one chunk of a byte stream, as importNdjson reads a file. */
export async function* bytesOf(text: string) {
  yield new TextEncoder().encode(text);
}
