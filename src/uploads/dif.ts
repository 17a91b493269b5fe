// Debug information files as sentry-cli names them: which symbol kind an uploaded file
// is (by its name and first bytes), and the `dif` object sentry-cli prints after an
// upload (docs/api.md "Assemble": objectName, cpuName and sha1 are what sentry-cli requires; `data.type`
// left out, since only a fixed list of values deserialises).
import { iso } from '../clock.js';
import { keptKindOf } from '../symbols/kept.js';
import { isSymbolKind } from '../symbols/storage.js';
import type { StoredSymbolFile } from './symbol-port.js';

/** Sentry's pattern for ProGuard mappings sent through the DIF routes. */
const PROGUARD_NAME = /(?:^|\/)proguard\/(?:mapping-)?(.*?)\.txt$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The mapping UUID a ProGuard file name carries, lowercase, or null. */
export function proguardUuidOf(name: string): string | null {
  const m = PROGUARD_NAME.exec(name);
  if (!m) return null;
  const uuid = m[1].toLowerCase();
  return UUID.test(uuid) ? uuid : null;
}

const MACHO_MAGICS = new Set([0xfeedface, 0xfeedfacf, 0xcefaedfe, 0xcffaedfe]);
const FAT_MAGICS = new Set([0xcafebabe, 0xbebafeca, 0xcafebabf]);

export type DifFormat =
  | 'proguard'
  | 'macho'
  | 'elf'
  | 'pe'
  | 'pdb'
  | 'wasm'
  | 'breakpad'
  | 'sourcebundle'
  | 'dartsymbolmap'
  | 'unknown';

/** A JSON array of strings: a Dart symbol map, as `sentry-cli dart-symbol-map upload` assembles it (docs/api.md). */
const JSON_STRING_ARRAY = /^\uFEFF?\s*\[\s*"/;

/** The format of a debug file from its name and first bytes (at least 8 when the file has them). */
export function difFormat(name: string, head: Uint8Array): DifFormat {
  if (proguardUuidOf(name)) return 'proguard';
  if (head.byteLength >= 4) {
    const magic = new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(0, false);
    if (MACHO_MAGICS.has(magic)) return 'macho';
    // 0xcafebabe is also a Java class file; a fat Mach-O has a small architecture count there.
    if (FAT_MAGICS.has(magic) && head.byteLength >= 8) {
      const count = new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(4, false);
      if (count > 0 && count < 32) return 'macho';
    }
    if (head[0] === 0x53 && head[1] === 0x59 && head[2] === 0x53 && head[3] === 0x42) return 'sourcebundle';
  }
  if (JSON_STRING_ARRAY.test(new TextDecoder().decode(head.subarray(0, 64)))) return 'dartsymbolmap';
  return keptKindOf(head) ?? 'unknown';
}

/**
 * The symbol kind a format is stored as: ProGuard, Mach-O, ELF and Breakpad symbolicate; PE, PDB,
 * WebAssembly and source bundles are kept-only kinds of their own name; null
 * for unknown files, which are refused.
 */
export function symbolKindOf(format: DifFormat): string | null {
  if (format === 'proguard') return 'proguard';
  if (format === 'macho') return 'dsym';
  return isSymbolKind(format) ? format : null;
}

/** Sentry's `symbolType` of a stored kind. */
function symbolTypeOf(kind: string): string {
  if (kind === 'dsym') return 'macho';
  return kind;
}

/** The `dif` object of an assemble answer and of the legacy upload's array. */
export function difJson(file: StoredSymbolFile, checksum: string, objectName: string) {
  const meta = file.meta;
  const arch =
    typeof meta.arch === 'string'
      ? meta.arch
      : typeof meta.cpu === 'string'
        ? meta.cpu
        : file.kind === 'proguard'
          ? 'any'
          : 'unknown';
  return {
    id: String(file.id),
    uuid: file.debugId || null,
    debugId: file.debugId || null,
    codeId: typeof meta.code_id === 'string' ? meta.code_id : null,
    objectName: file.kind === 'proguard' ? 'proguard-mapping' : objectName,
    cpuName: arch,
    symbolType: symbolTypeOf(file.kind),
    headers: {},
    size: file.size,
    sha1: checksum,
    dateCreated: iso(file.uploadedAt),
    data: {
      features: Array.isArray(meta.features)
        ? meta.features
        : file.kind === 'proguard'
          ? ['mapping']
          : file.kind === 'sourcebundle'
            ? ['sources']
            : ['debug', 'symtab'],
    },
  };
}

export type DifJson = ReturnType<typeof difJson>;
