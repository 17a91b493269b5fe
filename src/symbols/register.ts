// The kinds this build knows: ProGuard, source maps, dSYM (Mach-O/DWARF), ELF, Breakpad and
// Dart symbol maps, which symbolicate, and the kept-only debug formats (PE, PDB, WebAssembly).
import { breakpadHandler } from './breakpad.js';
import { dartSymbolMapHandler } from './dart.js';
import { dsymHandler } from './dsym.js';
import { elfHandler } from './elf.js';
import { keptHandlers } from './kept.js';
import { registerSymbolKind } from './kinds.js';
import { proguardHandler } from './proguard.js';
import { sourceMapHandler } from './sourcemap.js';

// Order matters at ingest: each handler works on the frames the previous one left.
registerSymbolKind(proguardHandler);
registerSymbolKind(sourceMapHandler);
registerSymbolKind(dsymHandler);
registerSymbolKind(elfHandler);
// After the container formats: a Breakpad file serves the frames no dSYM or ELF file did.
registerSymbolKind(breakpadHandler);
registerSymbolKind(dartSymbolMapHandler);
for (const handler of keptHandlers) registerSymbolKind(handler);
