// The kinds this build knows, as the list an edition passes to the SymbolService: ProGuard,
// source maps, dSYM (Mach-O/DWARF), ELF, Breakpad and Dart symbol maps, which symbolicate;
// source bundles (source context); and the kept-only debug formats (PE, PDB, WebAssembly).
// Only editions call it (test/architecture/layers.test.ts): shared code gets the list it is given.
import { breakpadHandler } from './breakpad.js';
import { dartSymbolMapHandler } from './dart.js';
import { dsymHandler } from './dsym.js';
import { elfHandler } from './elf.js';
import { keptHandlers } from './kept.js';
import type { SymbolKindHandler } from './kinds.js';
import { proguardHandler } from './proguard.js';
import { sourceBundleHandler } from './sourcebundle.js';
import { sourceMapHandler } from './sourcemap.js';

/** A new list each call, in the order handlers rewrite frames at ingest: each works on the frames the previous one left. */
export function defaultSymbolKinds(): SymbolKindHandler[] {
  return [
    proguardHandler,
    sourceMapHandler,
    dsymHandler,
    elfHandler,
    // After the container formats: a Breakpad file serves the frames no dSYM or ELF file did.
    breakpadHandler,
    dartSymbolMapHandler,
    // Last: source context for the frames every other kind left.
    sourceBundleHandler,
    ...keptHandlers,
  ];
}
