// The layering rule of docs/architecture.md ("Domain code never imports HTTP code"),
// checked on the sources: no module of a domain folder imports the HTTP routes, the
// dashboard, the CLI or an edition (those adapt the domains, never the other way round).
// Type-only imports count too: a domain that names an HTTP type depends on its shape.
// And the one write path (docs/architecture.md "Rules", "One write path"): outside src/store and the
// editions no module opens a transaction or a D1 batch itself; statements that commit
// together go through `Store.atomic`.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const DOMAINS = ['ingest', 'read', 'store', 'alerts', 'monitors', 'symbols', 'uploads', 'transfer', 'attachments', 'privacy', 'feedback'];
const FRONTS = ['http', 'dashboard', 'cli', 'editions'];

function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/** The src-relative folder each relative import of a file (its text as given, or as on disk) lands in. */
function importedFolders(file: string, text = fs.readFileSync(file, 'utf8')): string[] {
  const specifiers = [...text.matchAll(/\b(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]);
  return specifiers.map((s) => path.relative(SRC, path.resolve(path.dirname(file), s)).split(path.sep)[0]);
}

/** Transactions and batches a file's code (comments left out) opens on a database or store. */
function ownWritePaths(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return [...code.matchAll(/\.transaction\(\s*\)|\b(?:store|db|binding|target)\.batch\b/gi)].map((m) => m[0]);
}

/**
 * Files that still open their own transactions, each with its reason. alerts/store.ts:
 * its four transactions read between writes (rule filters, cooldown claims) and are not
 * yet statements for `Store.atomic`, so on D1 they run one statement at a time.
 */
const OWN_WRITE_PATH_EXCEPTIONS = ['alerts/store.ts'];

describe('layers', () => {
  it.each(DOMAINS)('src/%s imports no HTTP, dashboard, CLI or edition code', (domain) => {
    const files = sources(path.join(SRC, domain));
    expect(files.length).toBeGreaterThan(0);
    const offending = files.flatMap((f) => importedFolders(f).filter((folder) => FRONTS.includes(folder)).map((folder) => `${path.relative(SRC, f)} → src/${folder}`));
    expect(offending).toEqual([]);
  });

  it('finds an import that breaks the rule (the check itself)', () => {
    const probe = path.join(SRC, 'read', 'probe.ts');
    expect(importedFolders(probe, "import { publicBaseUrl } from '../http/public-url.js';\n")).toEqual(['http']);
    expect(importedFolders(probe, "import type { Context } from '../dashboard/index.js';\nimport { x } from './params.js';\n")).toEqual(['dashboard', 'read']);
  });

  it('outside src/store and src/editions, writes that commit together go through Store.atomic', () => {
    const files = sources(SRC).filter((f) => !/^(store|editions)\//.test(path.relative(SRC, f).split(path.sep).join('/')));
    const offending = files.filter((f) => ownWritePaths(fs.readFileSync(f, 'utf8')).length > 0).map((f) => path.relative(SRC, f).split(path.sep).join('/'));
    expect(offending).toEqual(OWN_WRITE_PATH_EXCEPTIONS);
  });

  it('finds a transaction or a batch opened outside the store (the check itself)', () => {
    expect(ownWritePaths('await db.transaction().execute(async (trx) => {});')).toEqual(['.transaction()']);
    expect(ownWritePaths('if (store.batch) await store.batch!(queries);')).toEqual(['store.batch', 'store.batch']);
    expect(ownWritePaths('// one db.batch() on D1\nawait this.batch(state);\nawait store.atomic(queries);')).toEqual([]);
  });
});
