// The layering rule of docs/architecture.md ("Domain code never imports HTTP code"),
// checked on the sources: no module of a domain folder imports the HTTP routes, the
// dashboard, the CLI or an edition (those adapt the domains, never the other way round).
// Type-only imports count too: a domain that names an HTTP type depends on its shape.
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
});
