// The one debug-id rule (src/symbols/debug-id.ts) both upload routes apply: object files
// name themselves, ProGuard mappings and source maps take the id their uploader names.
import { describe, expect, it } from 'vitest';
import { storedDebugId } from '../../src/symbols/debug-id.js';
import type { SymbolKind } from '../../src/symbols/storage.js';

const NAMED = '11111111-1111-1111-1111-111111111111';
const OWN = '22222222-2222-2222-2222-222222222222';

describe('storedDebugId', () => {
  it.each<[SymbolKind, string | undefined, string | undefined, string | undefined]>([
    // The uploader's id wins: ProGuard (the UUID the app's events carry), source maps (an
    // artifact bundle's manifest header, as Sentry indexes bundles), Dart symbol maps.
    ['proguard', NAMED, OWN, NAMED],
    ['sourcemap', NAMED, OWN, NAMED],
    ['dartsymbolmap', NAMED, OWN, NAMED],
    // The file's own id wins: a slice's LC_UUID, a build id, a MODULE line, a bundle's manifest.
    ['dsym', NAMED, OWN, OWN],
    ['elf', NAMED, OWN, OWN],
    ['breakpad', NAMED, OWN, OWN],
    ['sourcebundle', NAMED, OWN, OWN],
    ['pe', NAMED, OWN, OWN],
    ['pdb', NAMED, OWN, OWN],
    ['wasm', NAMED, OWN, OWN],
    // With one of them only, that one; with neither, none.
    ['sourcemap', undefined, OWN, OWN],
    ['proguard', undefined, OWN, OWN],
    ['dsym', NAMED, undefined, NAMED],
    ['sourcemap', NAMED, undefined, NAMED],
    ['elf', undefined, undefined, undefined],
  ])('%s named %s, own %s → %s', (kind, named, own, want) => {
    expect(storedDebugId(kind, named, own)).toBe(want);
  });
});
