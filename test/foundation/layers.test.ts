// The layering rule of docs/architecture.md ("Domain code never imports HTTP code"),
// checked on the sources: no module of a domain folder imports the HTTP routes, the
// dashboard, the CLI or an edition (those adapt the domains, never the other way round).
// Type-only imports count too: a domain that names an HTTP type depends on its shape.
// And the one write path (docs/architecture.md "Store"): outside src/store and the
// editions no module opens a transaction or a D1 batch itself; statements that commit
// together go through `Store.atomic`. And no process-wide singletons for symbols
// (docs/architecture.md "Rules"): the kind handlers and the demangler are values an
// edition builds and passes to the SymbolService, so only editions import the list's builder.
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
    expect(offending).toEqual([]);
  });

  it('finds a transaction or a batch opened outside the store (the check itself)', () => {
    expect(ownWritePaths('await db.transaction().execute(async (trx) => {});')).toEqual(['.transaction()']);
    expect(ownWritePaths('if (store.batch) await store.batch!(queries);')).toEqual(['store.batch', 'store.batch']);
    expect(ownWritePaths('// one db.batch() on D1\nawait this.batch(state);\nawait store.atomic(queries);')).toEqual([]);
  });

  it('only src/editions builds the symbol kind list; no registry of kinds or installed demangler remains', () => {
    const rel = (f: string) => path.relative(SRC, f).split(path.sep).join('/');
    const files = sources(SRC).filter((f) => !rel(f).startsWith('editions/'));
    const importers = files.filter((f) => importsKindList(f)).map(rel);
    expect(importers).toEqual([]);
    const globals = files.filter((f) => globalSymbolState(fs.readFileSync(f, 'utf8')).length > 0).map(rel);
    expect(globals).toEqual([]);
    // The editions do build it (else the check would pass on a renamed module).
    expect(sources(path.join(SRC, 'editions')).filter((f) => importsKindList(f)).map(rel).sort()).toEqual([
      'editions/node/server.ts',
      'editions/node/symbol-parse-thread-worker.ts',
      'editions/workers/deps.ts',
    ]);
  });

  it('finds an import of the kind list or a global registry outside the editions (the check itself)', () => {
    const probe = path.join(SRC, 'uploads', 'probe.ts');
    expect(importsKindList(probe, "import { defaultSymbolKinds } from '../symbols/default-kinds.js';\n")).toBe(true);
    expect(importsKindList(probe, "import '../symbols/register.js';\n")).toBe(true);
    expect(importsKindList(probe, "import { handlerOf } from '../symbols/kinds.js';\n")).toBe(false);
    expect(globalSymbolState('registerSymbolKind(proguardHandler);')).toEqual(['registerSymbolKind']);
    expect(globalSymbolState('const d = currentDemangler();')).toEqual(['currentDemangler']);
    expect(globalSymbolState('// registerSymbolKind is gone\nhandlerOf(kinds, k);')).toEqual([]);
  });
});

/** True when a file imports the kind list's builder (default-kinds.ts) or the old side-effect registration. */
function importsKindList(file: string, text = fs.readFileSync(file, 'utf8')): boolean {
  const specifiers = [...text.matchAll(/\b(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]);
  return specifiers.some((s) => /^symbols\/(default-kinds|register)\.js$/.test(path.relative(SRC, path.resolve(path.dirname(file), s)).split(path.sep).join('/')));
}

/** Names of a process-wide kind registry or installed demangler in a file's code (comments left out). */
function globalSymbolState(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return [...code.matchAll(/\b(?:registerSymbolKind|symbolKindHandlers?|currentDemangler)\b/g)].map((m) => m[0]);
}
