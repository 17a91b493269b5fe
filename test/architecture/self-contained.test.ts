// A fresh clone runs its tests on its own: nothing in the sources, tests or bench
// scripts names a path in the folder beside the checkout (../shared and the other
// worktrees), and the captured client requests the tests replay are in the repository.
// Comments cite the project's own docs/ for the product rules, never a file the
// repository does not hold (the product decisions of the folder beside it).
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { FIXTURES_DIR, fixtureNames } from '../ingest/fixtures.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** Every source, test and bench file (and vitest.config.ts) but this one. */
function checkedFiles(): string[] {
  return ['src', 'test', 'bench', 'vitest.config.ts']
    .flatMap((p) =>
      fs.statSync(path.join(ROOT, p)).isDirectory() ? filesUnder(path.join(ROOT, p)) : [path.join(ROOT, p)],
    )
    .filter((file) => file !== fileURLToPath(import.meta.url));
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'fixtures' && entry.name !== 'node_modules') out.push(...filesUnder(full));
    } else if (/\.(?:ts|mts|mjs|js|lua|json)$/.test(entry.name)) out.push(full);
  }
  return out;
}

describe('the checkout is self-contained', () => {
  it('reads the client captures from inside the repository', () => {
    expect(path.relative(ROOT, FIXTURES_DIR).startsWith('..')).toBe(false);
    expect(fixtureNames().length).toBeGreaterThan(10);
  });

  it('names no path outside the checkout in src, test or bench', () => {
    const offenders = checkedFiles()
      .filter((file) => /(?:\.\.\/)+shared\/|\/work\/wt\//.test(fs.readFileSync(file, 'utf8')))
      .map((file) => path.relative(ROOT, file));
    expect(offenders).toEqual([]);
  });

  it('cites no outside decisions file in src, test or bench: the rules are in docs/', () => {
    const offenders = checkedFiles().flatMap((file) =>
      fs
        .readFileSync(file, 'utf8')
        .split('\n')
        .flatMap((line, i) =>
          /DECISIONS/.test(line) ? [`${path.relative(ROOT, file)}:${i + 1}: ${line.trim()}`] : [],
        ),
    );
    expect(offenders).toEqual([]);
  });
});
