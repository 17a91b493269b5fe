// The ingest request path and the HTTP layer use Web APIs only, so a serverless
// edition can serve the same app; what needs Node (zlib, MD5) is injected by the
// edition through AppDeps.ingestRuntime. This reads the sources and fails on a
// Node built-in, Buffer or process in them.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');

const WEB_ONLY = [
  'context.ts',
  ...fs.readdirSync(path.join(SRC, 'http')).filter((f) => f.endsWith('.ts')).map((f) => `http/${f}`),
  ...['auth', 'decode', 'envelope', 'errors', 'grouping', 'normalize', 'pipeline', 'sessions', 'types'].map((f) => `ingest/${f}.ts`),
];

/** Source without comments, so prose about Buffer or node:zlib does not count. */
function code(file: string): string {
  return fs
    .readFileSync(path.join(SRC, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

describe('Web-API-only modules', () => {
  it.each(WEB_ONLY)('%s imports no Node built-in and uses no Buffer or process', (file) => {
    const text = code(file);
    expect(text).not.toMatch(/from\s+['"]node:|require\(|import\(['"]node:/);
    expect(text).not.toMatch(/from\s+['"](?:zlib|crypto|fs|os|path|buffer|stream|worker_threads)['"]/);
    expect(text).not.toMatch(/\bBuffer\b/);
    expect(text).not.toMatch(/\bprocess\./);
  });
});
