// Export and import (src/transfer) serve the CLI and a serverless edition's
// /api/export and /api/import, so they and every module they load use Web APIs only;
// the blob codec comes in through TransferRuntime. This follows the value imports of
// src/transfer through the sources and fails on a Node built-in, Buffer or process.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

/** Source without comments, so prose about Buffer or node:zlib does not count. */
function code(file: string): string {
  return fs
    .readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** Every source file src/transfer loads at run time (type-only imports are erased). */
function closure(): string[] {
  const seen = new Set<string>();
  const queue = fs.readdirSync(path.join(SRC, 'transfer')).filter((f) => f.endsWith('.ts')).map((f) => path.join(SRC, 'transfer', f));
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const m of code(file).matchAll(/^\s*(import|export)\s+(?!type\b)[^;]*?from\s+['"](\.[^'"]+)['"]/gm)) {
      queue.push(path.resolve(path.dirname(file), m[2].replace(/\.js$/, '.ts')));
    }
  }
  return [...seen].map((f) => path.relative(SRC, f)).sort();
}

describe('src/transfer is Web-API-only', () => {
  const files = closure();

  it('follows its imports into the store only where those are Web-API-only too', () => {
    expect(files).toContain('transfer/import.ts');
    expect(files).not.toContain('store/codec.ts');
    expect(files).not.toContain('store/database.ts');
  });

  it.each(files)('%s imports no Node built-in and uses no Buffer or process', (file) => {
    const text = code(path.join(SRC, file));
    expect(text).not.toMatch(/from\s+['"]node:|require\(|import\(['"]node:/);
    expect(text).not.toMatch(/from\s+['"](?:zlib|crypto|fs|os|path|buffer|stream|worker_threads|better-sqlite3|pg)['"]/);
    expect(text).not.toMatch(/\bBuffer\b/);
    expect(text).not.toMatch(/\bprocess\./);
  });
});
