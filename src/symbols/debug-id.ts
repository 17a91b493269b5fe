// Which debug id a stored symbol file is found by, when the uploader names one (sentry-cli's
// assemble request, an artifact bundle's manifest header) and the file carries its own (a
// Mach-O LC_UUID, an ELF build id, a map's `debug_id` field). One rule for every route
// (docs/api.md "Which debug id a file is stored under"), as Sentry applies it:
// object files name themselves, the uploader's id is only a hint (a fat Mach-O's slices
// each have their own, one named id can be right for one at most); ProGuard mappings and
// source maps are indexed by the id the uploader names (ProGuard's UUID is the one the
// app's events carry; Sentry indexes an artifact bundle by its manifest's `debug-id`
// headers, not by what the map says inside).
import type { SymbolKind } from './storage.js';

/** Kinds whose file says what it is: its own id wins over the uploader's. */
const NAMES_ITSELF: ReadonlySet<SymbolKind> = new Set<SymbolKind>([
  'dsym',
  'elf',
  'breakpad',
  'sourcebundle',
  'pe',
  'pdb',
  'wasm',
]);

/** The debug id a file of `kind` is stored under: `named` by the uploader, `own` read from the file. */
export function storedDebugId(
  kind: SymbolKind,
  named: string | undefined,
  own: string | undefined,
): string | undefined {
  return NAMES_ITSELF.has(kind) ? (own ?? named) : (named ?? own);
}
