// The debug id sentry-cli gives an ELF file: its GNU build id's first 16 bytes as a GUID
// (first three fields little-endian), for the committed ELF fixtures' build-id.txt.
import fs from 'node:fs';

export function debugIdOfBuildId(hex: string): string {
  const b = hex.slice(0, 32).match(/../g)!;
  const swapped = [
    ...b.slice(0, 4).reverse(),
    ...b.slice(4, 6).reverse(),
    ...b.slice(6, 8).reverse(),
    ...b.slice(8),
  ].join('');
  return `${swapped.slice(0, 8)}-${swapped.slice(8, 12)}-${swapped.slice(12, 16)}-${swapped.slice(16, 20)}-${swapped.slice(20)}`;
}

/** The debug id of a fixture from its build-id.txt. */
export function fixtureDebugId(buildIdFile: string): string {
  return debugIdOfBuildId(fs.readFileSync(buildIdFile, 'utf8').trim());
}
