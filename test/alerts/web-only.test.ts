// src/alerts is domain code every edition runs: Web APIs only (fetch, Web Crypto,
// timers). DNS and node:http come from the edition (src/editions/node/alerts.ts).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/alerts');
const FILES = fs.readdirSync(DIR).filter((f) => f.endsWith('.ts'));

function code(file: string): string {
  return fs
    .readFileSync(path.join(DIR, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('src/alerts is web-only', () => {
  it('has modules to check', () => expect(FILES.length).toBeGreaterThan(5));
  it.each(FILES)('%s imports no Node built-in, no edition and no HTTP code', (file) => {
    const text = code(file);
    expect(text).not.toMatch(/from\s+['"]node:|require\(|import\(['"]node:/);
    expect(text).not.toMatch(/from\s+['"](?:zlib|crypto|fs|os|path|buffer|stream|dns|http|https|net)['"]/);
    expect(text).not.toMatch(/\bBuffer\b/);
    expect(text).not.toMatch(/\bprocess\./);
    expect(text).not.toMatch(/from\s+['"]\.\.\/(?:editions|http)\//);
  });
});
