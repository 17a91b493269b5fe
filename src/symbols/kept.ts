// Kept-only symbol kinds: PE, PDB and WebAssembly debug files that
// sentry-cli uploads with the rest of a build folder. Faultline stores them (with the
// debug id the client names them by), lists, finds, deletes and exports them like any
// symbol file, and symbolicates nothing with them: their handlers look nothing up. A
// file is of its kind when its first bytes carry the format's magic.
import {
  SymbolInputError,
  type FileInspector,
  type InspectedFile,
  type LoadedSymbols,
  type SymbolKindHandler,
} from './kinds.js';
import { KEPT_SYMBOL_KINDS, type KeptSymbolKind } from './storage.js';

/** Enough of a file's start to tell every kept format apart. */
const HEAD_BYTES = 32;

const FORMAT_NAMES: Record<KeptSymbolKind, string> = {
  pe: 'PE',
  pdb: 'PDB',
  wasm: 'WebAssembly',
};

function startsWith(head: Uint8Array, magic: string): boolean {
  if (head.byteLength < magic.length) return false;
  for (let i = 0; i < magic.length; i++) if (head[i] !== magic.charCodeAt(i)) return false;
  return true;
}

/** The kept kind (or `elf`, `breakpad`, `sourcebundle`) a file's first bytes (up to 32) say it is, or null. */
export function keptKindOf(head: Uint8Array): KeptSymbolKind | 'elf' | 'breakpad' | 'sourcebundle' | null {
  if (startsWith(head, '\x7fELF')) return 'elf';
  if (startsWith(head, 'MZ')) return 'pe';
  if (startsWith(head, '\0asm')) return 'wasm';
  if (startsWith(head, 'Microsoft C/C++ MSF 7.00')) return 'pdb';
  if (startsWith(head, 'MODULE ')) return 'breakpad';
  if (startsWith(head, 'SYSB')) return 'sourcebundle';
  return null;
}

class KeptInspector implements FileInspector {
  private head = new Uint8Array(0);

  constructor(
    private readonly kind: KeptSymbolKind,
    private readonly name: string,
  ) {}

  push(chunk: Uint8Array): void {
    if (this.head.byteLength >= HEAD_BYTES) return;
    const next = new Uint8Array(Math.min(HEAD_BYTES, this.head.byteLength + chunk.byteLength));
    next.set(this.head);
    next.set(chunk.subarray(0, next.byteLength - this.head.byteLength), this.head.byteLength);
    this.head = next;
  }

  finish(): InspectedFile[] {
    if (keptKindOf(this.head) !== this.kind)
      throw new SymbolInputError(`${JSON.stringify(this.name)} is not a ${FORMAT_NAMES[this.kind]} file`);
    return [{ meta: { format: this.kind, symbolicated: false } }];
  }
}

const NOTHING: LoadedSymbols = { memoryBytes: 0 };

function keptHandler(kind: KeptSymbolKind): SymbolKindHandler {
  return {
    kind,
    recognises: (_name, head) => keptKindOf(head) === kind,
    inspect: (name) => new KeptInspector(kind, name),
    load: () => NOTHING,
    lookups: () => [],
    symbolicate: () => undefined,
  };
}

export const keptHandlers: SymbolKindHandler[] = KEPT_SYMBOL_KINDS.map(keptHandler);
