#!/usr/bin/env node
// Moves the test folders so that test/ mirrors src/: the tests of src/X live in test/X
// (src/symbols/native in test/symbols/native, src/editions/workers in
// test/editions/workers, …). Folders move by rule, whole, so files added to them later
// move too; the two folders that mixed several domains (foundation, hardening) are split
// by file, and a file of theirs not named below goes to FALLBACK. Checks of the whole
// tree (the layering rules, web-only, self-containment) go to test/architecture: they
// test no one folder of src. Shared support files go to test/helpers.
//
// Then, for every moved file and every file that names one: relative imports, fixture
// paths resolved from the file's own folder (`path.resolve(dirname(…), '../fixtures')`,
// `new URL('../x', import.meta.url)`, `import.meta.dirname`), and repository paths
// written out in any tracked text file (`test/workers-runtime/…` in vitest configs,
// .ci, docs, comments) are rewritten. Moves use `git mv`. Idempotent: a second run finds
// nothing to move and changes nothing. CHANGELOG.md keeps the paths of its time.
//   node scripts/mirror-tests.mjs [--dry-run]
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const DRY = process.argv.includes('--dry-run');

/** Whole folders of test/ and where they go (relative to test/). */
const FOLDERS = {
  'ingest-unit': 'ingest',
  'symbols-native': 'symbols/native',
  'workers-runtime': 'editions/workers/runtime',
  workers: 'editions/workers',
  // The group-commit writer is src/editions/node/writer.ts.
  writer: 'editions/node',
  toolchain: 'packaging',
};

/** Files of the mixed folders, by name: where each goes (a folder, or a folder/new-name). */
const FILES = {
  foundation: {
    'cli-helpers.ts': 'helpers/cli.ts',
    'seed-rows.ts': 'helpers/seed-rows.ts',
    'cli.test.ts': 'cli',
    'open-access-warning.test.ts': 'cli',
    'config.test.ts': '.',
    'direct-ingest.test.ts': 'editions/node',
    'forwarded.test.ts': 'http',
    'health.test.ts': 'http',
    'http.test.ts': 'http',
    'shared-rate-limit.test.ts': 'http',
    'layers.test.ts': 'architecture',
    'web-only.test.ts': 'architecture',
    'self-contained.test.ts': 'architecture',
    'migrate-concurrency.test.ts': 'store',
    'migrations.test.ts': 'store',
    'projects.test.ts': 'store',
  },
  hardening: {
    'fuzz-config.ts': 'helpers/fuzz-config.ts',
    'client-abort.test.ts': 'http',
    'management-input.test.ts': 'http',
    'properties-http.test.ts': 'http',
    'properties.test.ts': 'ingest',
    'rotate-key.test.ts': 'store',
    'sdk-fidelity.test.ts': 'ingest',
  },
  // Support files of moved folders that other folders share.
  writer: { 'factory.ts': 'helpers/factory.ts' },
};
const FALLBACK = { foundation: 'http', hardening: 'http' };

const git = (...args) => execFileSync('git', args, { cwd: ROOT, encoding: 'utf8' });
const tracked = () => git('ls-files', '-z').split('\0').filter(Boolean);

// ---- The moves: repository-relative old path -> new path.
const moves = new Map();
const taken = new Set(tracked());
for (const file of tracked()) {
  const m = /^test\/([^/]+)\/(.+)$/.exec(file);
  if (!m) continue;
  const [, folder, rest] = m;
  let target;
  const named = FILES[folder]?.[rest];
  if (named) target = /\.[a-z]+$/.test(named) ? named : `${named}/${rest}`;
  else if (FOLDERS[folder]) target = `${FOLDERS[folder]}/${rest}`;
  else if (FALLBACK[folder]) target = `${FALLBACK[folder]}/${rest}`;
  else continue;
  let dest = path.posix.normalize(`test/${target}`);
  if (taken.has(dest) && !moves.has(dest)) {
    // A file of that name is already there (ingest/hygiene.test.ts): the newcomer takes
    // its old folder's name as a suffix.
    const suffix = folder.split('-').pop();
    dest = dest.replace(/(\.test)?\.(ts|mjs|js)$/, (end) => `-${suffix}${end}`);
  }
  if (taken.has(dest)) throw new Error(`${file}: ${dest} exists`);
  taken.add(dest);
  moves.set(file, dest);
}
if (moves.size === 0) {
  console.log('test/ mirrors src/ already: nothing to move');
  process.exit(0);
}

/** Where a repository path is after the moves (a file, or a folder with moved files in it). */
function mapped(repoPath) {
  if (moves.has(repoPath)) return moves.get(repoPath);
  // A moved file asked for without its extension or with .js for .ts.
  for (const ext of ['.ts', '.mjs']) {
    const asTs = repoPath.replace(/\.js$/, '') + ext;
    if (moves.has(asTs)) return moves.get(asTs).replace(/\.(ts|mjs)$/, repoPath.endsWith('.js') ? '.js' : '');
  }
  // A folder that moves whole.
  const m = /^test\/([^/]+)(\/.*)?$/.exec(repoPath);
  if (m && FOLDERS[m[1]]) return `test/${FOLDERS[m[1]]}${m[2] ?? ''}`;
  // A mixed folder named as a whole: where most of it went.
  if (m && FALLBACK[m[1]] && !m[2]) return `test/${FALLBACK[m[1]]}`;
  return repoPath;
}

const posixRel = (fromDir, to) => {
  let r = path.posix.relative(fromDir, to);
  if (!r.startsWith('.')) r = `./${r}`;
  return r;
};

/** Whether a repository path names a file or folder of the tree (or of dist/, once built). */
function present(repoPath) {
  if (repoPath === '.' || /^(dist|node_modules)(\/|$)/.test(repoPath)) return true;
  const full = path.join(ROOT, repoPath);
  return [full, full.replace(/\.js$/, '.ts'), `${full}.ts`].some((f) => fs.existsSync(f));
}

/** A relative path written in `oldFile`, rewritten for the file's new place and the target's. */
function rewriteRelative(spec, oldFile, newFile, dotted) {
  // A bundler's query (`../fixtures/x.envelope?raw`) stays as it is.
  const query = spec.indexOf('?');
  if (query >= 0) return rewriteRelative(spec.slice(0, query), oldFile, newFile, dotted) + spec.slice(query);
  const target = path.posix.normalize(path.posix.join(path.posix.dirname(oldFile), spec));
  // Only a path to something there (or built there): an import written inside a string
  // (a test's sample source) is left alone.
  if (target.startsWith('..') || !present(target)) return spec;
  const newTarget = mapped(target);
  if (newTarget === target && path.posix.dirname(oldFile) === path.posix.dirname(newFile)) return spec;
  let r = path.posix.relative(path.posix.dirname(newFile), newTarget) || '.';
  if (dotted && !r.startsWith('.')) r = `./${r}`;
  if (spec.endsWith('/') && !r.endsWith('/')) r += '/';
  return r;
}

const DIRNAME = String.raw`(?:path\.dirname\(fileURLToPath\(import\.meta\.url\)\)|import\.meta\.dirname|\bHERE\b|\bhere\b)`;
const SEGMENTS = String.raw`((?:\s*,\s*'[^'\n]*')+)`;

/** The source of `file` (repository path, old place) with its file-relative paths rewritten. */
function rewriteSource(text, oldFile, newFile) {
  const rel = (spec, dotted = true) => rewriteRelative(spec, oldFile, newFile, dotted);
  return text
    .replace(/(\bfrom\s*|\bimport\s*\(\s*|\bimport\s+|\bvi\.mock\(\s*|\/\/\/\s*<reference path=)(['"])(\.\.?\/[^'"\n]*)\2/g, (_, head, q, spec) => `${head}${q}${rel(spec)}${q}`)
    .replace(/new URL\((['"])(\.\.?\/[^'"\n]*)\1,\s*import\.meta\.url\)/g, (all, q, spec) => all.replace(spec, rel(spec)))
    .replace(new RegExp(`(path\\.(?:resolve|join)\\(\\s*${DIRNAME})${SEGMENTS}`, 'g'), (all, head, segs) => {
      const parts = [...segs.matchAll(/'([^']*)'/g)].map((p) => p[1]);
      const spec = path.posix.join(...parts);
      const next = rel(spec, false);
      return next === spec ? all : `${head}, '${next}'`;
    });
}

/** Repository paths written out (`test/workers-runtime/x.test.ts`, `test/writer/`), rewritten. */
function rewriteRepoPaths(text) {
  // Also after `--outDir x/` (a test compiled elsewhere keeps its path under test/).
  return text.replace(/(^|[^A-Za-z0-9_./-]|\.cache\/[a-z-]+\/)(test\/[A-Za-z0-9_.\-/*]*[A-Za-z0-9_*])/g, (all, before, p) => {
    const clean = p.replace(/\/\*.*$/, '');
    const tail = p.slice(clean.length);
    const next = mapped(clean);
    return next === clean ? all : `${before}${next}${tail}`;
  });
}

// ---- Apply: move, then rewrite every tracked text file.
const TEXT = /\.(ts|mts|mjs|js|json|jsonc|md|sh|yaml|yml|toml)$|^\.ci\/|(^|\/)Dockerfile$/;
const changed = [];
for (const file of tracked()) {
  if (!TEXT.test(file) || file === 'CHANGELOG.md' || file.startsWith('test/fixtures/') || file === 'scripts/mirror-tests.mjs') continue;
  const full = path.join(ROOT, file);
  if (!fs.existsSync(full)) continue;
  const before = fs.readFileSync(full, 'utf8');
  const newFile = moves.get(file) ?? file;
  let after = /\.(ts|mts|mjs|js)$/.test(file) ? rewriteSource(before, file, newFile) : before;
  after = rewriteRepoPaths(after);
  if (after !== before) {
    changed.push(file);
    if (!DRY) fs.writeFileSync(full, after);
  }
}
for (const [from, to] of moves) {
  console.log(`${from} -> ${to}`);
  if (DRY) continue;
  fs.mkdirSync(path.join(ROOT, path.dirname(to)), { recursive: true });
  git('mv', from, to);
}
// The folders left empty.
if (!DRY) {
  const prune = (dir) => {
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) return;
    for (const entry of fs.readdirSync(dir)) prune(path.join(dir, entry));
    if (fs.readdirSync(dir).length === 0) fs.rmdirSync(dir);
  };
  for (const folder of new Set([...moves.keys()].map((f) => f.split('/')[1]))) prune(path.join(ROOT, 'test', folder));
}
console.log(`${moves.size} files moved, ${changed.length} files rewritten${DRY ? ' (dry run: nothing written)' : ''}`);
