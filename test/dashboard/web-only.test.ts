// The dashboard runs in every edition (Workers too): its sources use Web APIs
// only, like src/http. Reads each file of src/dashboard and fails on a Node
// built-in, Buffer or process.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/dashboard');

function files(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

/** Source without comments, so prose about Buffer or node: modules does not count. */
function code(file: string): string {
  return fs
    .readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('src/dashboard uses Web APIs only', () => {
  const all = files(DIR);
  it('has sources to check', () => {
    expect(all.length).toBeGreaterThan(5);
  });
  it.each(all.map((f) => path.relative(DIR, f)))('%s imports no Node built-in and uses no Buffer or process', (file) => {
    const text = code(path.join(DIR, file));
    expect(text).not.toMatch(/from\s+['"]node:|require\(|import\(['"]node:/);
    expect(text).not.toMatch(/from\s+['"](?:zlib|crypto|fs|os|path|buffer|stream|worker_threads|pino)['"]/);
    expect(text).not.toMatch(/\bBuffer\b/);
    expect(text).not.toMatch(/\bprocess\./);
    expect(text).not.toMatch(/from\s+['"][./]*\/(?:editions|cli)\//);
  });
});
