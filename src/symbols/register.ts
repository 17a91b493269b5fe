// The kinds this build knows: ProGuard, source maps, dSYM (Mach-O/DWARF) and Dart symbol maps, which
// symbolicate, and the kept-only debug formats (ELF, PE, PDB, Breakpad, WebAssembly).
import { dartSymbolMapHandler } from './dart.js';
import { dsymHandler } from './dsym.js';
import { keptHandlers } from './kept.js';
import { registerSymbolKind } from './kinds.js';
import { proguardHandler } from './proguard.js';
import { sourceMapHandler } from './sourcemap.js';

// Order matters at ingest: each handler works on the frames the previous one left.
registerSymbolKind(proguardHandler);
registerSymbolKind(sourceMapHandler);
registerSymbolKind(dsymHandler);
registerSymbolKind(dartSymbolMapHandler);
for (const handler of keptHandlers) registerSymbolKind(handler);
