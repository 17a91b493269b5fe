// The web-only rule, checked on what the shared app reaches: esbuild follows every
// import of src/editions/app.ts as a Workers bundler would (type-only imports are erased,
// packages resolve with the workerd/worker/browser conditions and are followed into
// node_modules), and the test fails on any Node built-in or Node-edition package in
// that closure, and on Node globals in its source files. Node things reach the app
// only as values injected through AppDeps (src/context.ts) by src/editions, which the
// app imports as types.
import fs from 'node:fs';
import { builtinModules } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Packages only the Node edition may load (drivers, its logger and HTTP server). */
const NODE_EDITION_PACKAGES = ['better-sqlite3', 'pg', 'pino', '@hono/node-server'];

const NODE_BUILTINS = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));

/** Node globals a Workers isolate lacks (without its Node compatibility flag). */
const NODE_GLOBALS: [string, RegExp][] = [
  ['Buffer', /\bBuffer\b/],
  ['process', /\bprocess\./],
  ['setImmediate', /\bsetImmediate\b/],
  ['__dirname', /\b__dirname\b/],
  ['__filename', /\b__filename\b/],
  ['require', /\brequire\(/],
];

interface Closure {
  /** Files reached (relative to the checkout, node_modules included). */
  files: string[];
  /** Each violation with the shortest import chain that reaches it from the entry. */
  violations: string[];
}

/** Source without comments, so prose about Buffer or node:zlib does not count. */
/**
 * A file's code without comments and without the text of its string literals (a
 * template's `${…}` expressions stay): `'./process.js'` or a `require('@sentry/node')`
 * inside a set-up snippet is text, not a use of a Node global.
 */
function code(file: string): string {
  const src = fs.readFileSync(path.join(ROOT, file), 'utf8');
  let out = '';
  // Nesting of template literals and the `${` expressions inside them.
  const stack: ('template' | 'expr')[] = [];
  let braces = 0;
  for (let i = 0; i < src.length; i++) {
    const ch = src[i];
    const inTemplate = stack[stack.length - 1] === 'template';
    if (inTemplate) {
      if (ch === '\\') i++;
      else if (ch === '`') stack.pop();
      else if (ch === '$' && src[i + 1] === '{') {
        stack.push('expr');
        braces = 0;
        i++;
      }
      continue;
    }
    if (ch === '/' && src[i + 1] === '/') {
      while (i < src.length && src[i] !== '\n') i++;
      out += '\n';
      continue;
    }
    if (ch === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? src.length : end + 1;
      continue;
    }
    if (ch === "'" || ch === '"') {
      for (i++; i < src.length && src[i] !== ch; i++) if (src[i] === '\\') i++;
      out += `${ch}${ch}`;
      continue;
    }
    if (ch === '`') {
      stack.push('template');
      out += '``';
      continue;
    }
    if (stack.length > 0 && ch === '{') braces++;
    if (stack.length > 0 && ch === '}') {
      if (braces === 0) {
        stack.pop();
        continue;
      }
      braces--;
    }
    out += ch;
  }
  return out;
}

async function closureOf(entry: string): Promise<Closure> {
  const result = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: [entry],
    bundle: true,
    write: false,
    metafile: true,
    logLevel: 'silent',
    platform: 'neutral',
    format: 'esm',
    conditions: ['workerd', 'worker', 'browser'],
    mainFields: ['browser', 'module', 'main'],
    // Built-ins stay unresolved, so they show up as external imports of whoever reaches them.
    external: ['node:*', 'cloudflare:*', ...builtinModules],
  });
  const inputs = result.metafile.inputs;

  // Breadth first from the entry, so each file's chain is a shortest one.
  const parent = new Map<string, string | null>([[entry, null]]);
  const queue = [entry];
  for (let i = 0; i < queue.length; i++) {
    for (const imported of inputs[queue[i]]?.imports ?? []) {
      if (parent.has(imported.path)) continue;
      parent.set(imported.path, queue[i]);
      if (!imported.external) queue.push(imported.path);
    }
  }
  const chain = (file: string): string => {
    const steps: string[] = [];
    for (let at: string | null | undefined = file; at; at = parent.get(at)) steps.unshift(at);
    return steps.join(' -> ');
  };
  const packageOf = (file: string) => NODE_EDITION_PACKAGES.find((name) => file.includes(`node_modules/${name}/`));

  const violations: string[] = [];
  for (const file of queue) {
    const pkg = packageOf(file);
    if (pkg) {
      // Reported once, where the package is entered; what it loads in turn is its own business.
      if (packageOf(parent.get(file) ?? '') !== pkg) violations.push(`Node-edition package ${pkg}: ${chain(file)}`);
      continue;
    }
    for (const imported of inputs[file].imports) {
      if (imported.external && NODE_BUILTINS.has(imported.path))
        violations.push(`Node built-in ${imported.path}: ${chain(file)} -> ${imported.path}`);
    }
    if (!file.includes('node_modules/')) {
      const text = code(file);
      for (const [name, pattern] of NODE_GLOBALS)
        if (pattern.test(text)) violations.push(`Node global ${name}: ${chain(file)}`);
    }
  }
  return { files: queue, violations };
}

describe('web-only rule on the import closure of the shared app', () => {
  it('src/editions/app.ts reaches no Node built-in, Node-edition package or Node global', async () => {
    const { files, violations } = await closureOf('src/editions/app.ts');
    // The closure is the whole app, not a stub: every route module and the domain code behind it.
    expect(files).toEqual(
      expect.arrayContaining([
        'src/http/read.ts',
        'src/http/ingest.ts',
        'src/read/events.ts',
        'src/ingest/pipeline.ts',
        'src/store/projects.ts',
      ]),
    );
    expect(violations).toEqual([]);
  });

  it('src/transfer/http.ts (export and import, mounted by the serverless edition) reaches none either', async () => {
    const { files, violations } = await closureOf('src/transfer/http.ts');
    expect(files).toEqual(
      expect.arrayContaining([
        'src/transfer/export.ts',
        'src/transfer/import.ts',
        'src/transfer/line-types.ts',
        'src/transfer/event-line-type.ts',
      ]),
    );
    expect(violations).toEqual([]);
  });

  // The Store contract, migrations, the dialect modules and the ingest rules are what a
  // new edition builds on: each of them alone, not only what the app happens to reach.
  it('every module of src/store and src/ingest reaches none either (Node machinery is in src/editions/node)', async () => {
    const modules = ['src/store', 'src/ingest'].flatMap((dir) =>
      fs
        .readdirSync(path.join(ROOT, dir))
        .filter((f) => f.endsWith('.ts'))
        .map((f) => `${dir}/${f}`),
    );
    expect(modules).toEqual(
      expect.arrayContaining([
        'src/store/database.ts',
        'src/store/migrate.ts',
        'src/store/ingest-batch.ts',
        'src/ingest/plan.ts',
      ]),
    );
    const violations = (await Promise.all(modules.map(closureOf))).flatMap((c) => c.violations);
    // PostgreSQL is opened only by the Node edition (pg is a Node package), so its array
    // literals may use Buffer's hex encoder, several times faster than one in JS.
    const allowed = (v: string) => /^Node global Buffer: .*src\/store\/pg-arrays\.ts$/.test(v);
    expect([...new Set(violations.filter((v) => !allowed(v)))]).toEqual([]);
  });

  it('finds what the Node edition reaches, so the checks above can fail', async () => {
    const { violations } = await closureOf('src/editions/node/server.ts');
    const text = violations.join('\n');
    expect(text).toMatch(/Node built-in node:zlib: src\/editions\/node\/server\.ts -> .* -> node:zlib/);
    expect(text).toContain(
      'Node built-in node:crypto: src/editions/node/server.ts -> src/editions/node/runtime.ts -> node:crypto',
    );
    for (const pkg of NODE_EDITION_PACKAGES) expect(text).toContain(`Node-edition package ${pkg}:`);
    expect(text).toContain('Node global setImmediate: src/editions/node/server.ts -> src/editions/node/runtime.ts');
  });
});
