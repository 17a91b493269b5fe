// The layering rule of docs/architecture.md ("Domain code never imports HTTP code"),
// checked on the sources: no module of a domain folder imports the HTTP routes, the
// dashboard, the CLI or an edition (those adapt the domains, never the other way round).
// Type-only imports count too: a domain that names an HTTP type depends on its shape.
// And the one write path (docs/architecture.md "Rules", "One write path"): outside src/store and the
// editions no module opens a transaction or a D1 batch itself; statements that commit
// together go through `Store.atomic`. And no process-wide singletons for symbols
// (docs/architecture.md "Rules"): the kind handlers and the demangler are values an
// edition builds and passes to the SymbolService, so only editions import the list's builder.
// And the folder graph (docs/architecture.md "Rules"): folders rank as base modules
// (src/*.ts but context.ts) < src/store < the domains < the fronts (http, dashboard,
// cli, editions and context.ts, which composes them); an import from a lower rank to a
// higher one is an upward arrow, allowed only as listed with its reason, and no two
// folders import each other, directly or through others.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src');
const DOMAINS = [
  'ingest',
  'read',
  'store',
  'alerts',
  'monitors',
  'symbols',
  'uploads',
  'transfer',
  'attachments',
  'privacy',
  'feedback',
];
const FRONTS = ['http', 'dashboard', 'cli', 'editions'];
const DOMAIN_FOLDERS = [...DOMAINS.filter((d) => d !== 'store'), 'accounts', 'triage', 'minidump'];

/**
 * The upward arrows the layering allows, each with its reason (at most three). An arrow
 * is `from -> to` between nodes of the folder graph: a folder, or a module of src/ itself.
 */
const ALLOWED_UPWARD: Record<string, string> = {};

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

/** A file's node in the folder graph: its folder under src/, or the module itself when it sits in src/. */
function nodeOf(rel: string): string {
  const parts = rel.split(path.sep);
  return parts.length > 1 ? parts[0] : parts[0].replace(/\.ts$/, '');
}

/** The rank of a node: 0 base modules, 1 the store, 2 the domains, 3 the fronts. */
function rankOf(node: string): number {
  if (node === 'store') return 1;
  if (FRONTS.includes(node) || node === 'context') return 3;
  if (fs.existsSync(path.join(SRC, node)) && fs.statSync(path.join(SRC, node)).isDirectory()) return 2;
  return 0;
}

/** Edges between nodes (`from -> to`, each with the imports behind it), every relative import counted, type-only too. */
function folderGraph(files: { rel: string; text: string }[]): Map<string, string[]> {
  const edges = new Map<string, string[]>();
  for (const { rel, text } of files) {
    const from = nodeOf(rel);
    for (const m of text.matchAll(/\b(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
      const target = path.relative(SRC, path.resolve(path.dirname(path.join(SRC, rel)), m[1]));
      const to = nodeOf(target.replace(/\.js$/, '.ts'));
      if (to === from) continue;
      const key = `${from} -> ${to}`;
      edges.set(key, [...(edges.get(key) ?? []), `${rel.split(path.sep).join('/')} imports ${m[1]}`]);
    }
  }
  return edges;
}

/** The strongly connected groups of more than one node (Tarjan), each sorted: the folder cycles. */
function cycles(edges: Map<string, string[]>): string[][] {
  const next = new Map<string, string[]>();
  for (const key of edges.keys()) {
    const [from, to] = key.split(' -> ');
    next.set(from, [...(next.get(from) ?? []), to]);
    if (!next.has(to)) next.set(to, []);
  }
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const groups: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, index.size);
    low.set(v, index.get(v)!);
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v)!) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const v of [...next.keys()].sort()) if (!index.has(v)) visit(v);
  return groups.sort((a, b) => a[0].localeCompare(b[0]));
}

/** A cycle as its nodes and the imports between them: what a failure names to move or invert. */
function cycleReport(group: string[], edges: Map<string, string[]>): string {
  const inside = [...edges].filter(([key]) => key.split(' -> ').every((node) => group.includes(node)));
  return `${group.join(' ↔ ')}: ${inside.map(([key, why]) => `${key} (${why.join('; ')})`).join('; ')}`;
}

function upwardArrows(edges: Map<string, string[]>): string[] {
  return [...edges.keys()]
    .filter((key) => {
      const [from, to] = key.split(' -> ');
      return rankOf(from) < rankOf(to);
    })
    .sort();
}

function sourceTexts(): { rel: string; text: string }[] {
  return sources(SRC).map((f) => ({ rel: path.relative(SRC, f), text: fs.readFileSync(f, 'utf8') }));
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
    const offending = files.flatMap((f) =>
      importedFolders(f)
        .filter((folder) => FRONTS.includes(folder))
        .map((folder) => `${path.relative(SRC, f)} → src/${folder}`),
    );
    expect(offending).toEqual([]);
  });

  it('finds an import that breaks the rule (the check itself)', () => {
    const probe = path.join(SRC, 'read', 'probe.ts');
    expect(importedFolders(probe, "import { publicBaseUrl } from '../http/public-url.js';\n")).toEqual(['http']);
    expect(
      importedFolders(
        probe,
        "import type { Context } from '../dashboard/index.js';\nimport { x } from './params.js';\n",
      ),
    ).toEqual(['dashboard', 'read']);
  });

  it('outside src/store and src/editions, writes that commit together go through Store.atomic', () => {
    const files = sources(SRC).filter(
      (f) => !/^(store|editions)\//.test(path.relative(SRC, f).split(path.sep).join('/')),
    );
    const offending = files
      .filter((f) => ownWritePaths(fs.readFileSync(f, 'utf8')).length > 0)
      .map((f) => path.relative(SRC, f).split(path.sep).join('/'));
    expect(offending).toEqual([]);
  });

  it('finds a transaction or a batch opened outside the store (the check itself)', () => {
    expect(ownWritePaths('await db.transaction().execute(async (trx) => {});')).toEqual(['.transaction()']);
    expect(ownWritePaths('if (store.batch) await store.batch!(queries);')).toEqual(['store.batch', 'store.batch']);
    expect(ownWritePaths('// one db.batch() on D1\nawait this.batch(state);\nawait store.atomic(queries);')).toEqual(
      [],
    );
  });

  it('only src/editions builds the symbol kind list; no registry of kinds or installed demangler remains', () => {
    const rel = (f: string) => path.relative(SRC, f).split(path.sep).join('/');
    const files = sources(SRC).filter((f) => !rel(f).startsWith('editions/'));
    const importers = files.filter((f) => importsKindList(f)).map(rel);
    expect(importers).toEqual([]);
    const globals = files.filter((f) => globalSymbolState(fs.readFileSync(f, 'utf8')).length > 0).map(rel);
    expect(globals).toEqual([]);
    // The editions do build it (else the check would pass on a renamed module).
    expect(
      sources(path.join(SRC, 'editions'))
        .filter((f) => importsKindList(f))
        .map(rel)
        .sort(),
    ).toEqual(['editions/node/server.ts', 'editions/node/symbol-parse-thread-worker.ts', 'editions/workers/deps.ts']);
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

  it('no folder cycles', () => {
    const edges = folderGraph(sourceTexts());
    expect(cycles(edges).map((group) => cycleReport(group, edges))).toEqual([]);
  });

  it('src/store imports no domain folder, front or context.ts: only itself and the base modules', () => {
    const edges = folderGraph(sourceTexts());
    const offending = [...edges]
      .filter(([key]) => key.startsWith('store -> ') && rankOf(key.split(' -> ')[1]) !== 0)
      .flatMap(([, why]) => why);
    expect(offending).toEqual([]);
  });

  it('upward arrows are only the listed ones, at most three', () => {
    const edges = folderGraph(sourceTexts());
    const arrows = upwardArrows(edges);
    expect(arrows.map((a) => (a in ALLOWED_UPWARD ? a : `${a}: ${edges.get(a)!.join('; ')}`))).toEqual(
      Object.keys(ALLOWED_UPWARD).sort(),
    );
  });

  it('finds cycles and upward arrows (the check itself)', () => {
    const edges = folderGraph([
      {
        rel: path.join('store', 'a.ts'),
        text: "import { b } from '../ingest/b.js';\nimport { c } from '../clock.js';",
      },
      {
        rel: path.join('ingest', 'b.ts'),
        text: "import type { A } from '../store/a.js';\nimport { t } from './t.js';",
      },
      { rel: path.join('http', 'h.ts'), text: "import { d } from '../dashboard/d.js';" },
      { rel: path.join('dashboard', 'd.ts'), text: "import { r } from '../read/r.js';" },
      { rel: path.join('read', 'r.ts'), text: "import { h } from '../http/h.js';" },
      { rel: 'clock.ts', text: "import { x } from './context.js';" },
    ]);
    expect(cycles(edges)).toEqual([
      ['dashboard', 'http', 'read'],
      ['ingest', 'store'],
    ]);
    expect(cycleReport(['ingest', 'store'], edges)).toBe(
      'ingest ↔ store: store -> ingest (store/a.ts imports ../ingest/b.js); ingest -> store (ingest/b.ts imports ../store/a.js)',
    );
    expect(upwardArrows(edges)).toEqual(['clock -> context', 'read -> http', 'store -> ingest']);
    expect(DOMAIN_FOLDERS.every((d) => rankOf(d) === 2)).toBe(true);
  });
});

/** True when a file imports the kind list's builder (default-kinds.ts) or the old side-effect registration. */
function importsKindList(file: string, text = fs.readFileSync(file, 'utf8')): boolean {
  const specifiers = [...text.matchAll(/\b(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)].map((m) => m[1]);
  return specifiers.some((s) =>
    /^symbols\/(default-kinds|register)\.js$/.test(
      path
        .relative(SRC, path.resolve(path.dirname(file), s))
        .split(path.sep)
        .join('/'),
    ),
  );
}

/** Names of a process-wide kind registry or installed demangler in a file's code (comments left out). */
function globalSymbolState(text: string): string[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  return [...code.matchAll(/\b(?:registerSymbolKind|symbolKindHandlers?|currentDemangler)\b/g)].map((m) => m[0]);
}
