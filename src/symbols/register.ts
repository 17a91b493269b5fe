// The kinds this build knows: ProGuard, source maps and dSYM (Mach-O/DWARF), which
// symbolicate, and the kept-only debug formats (ELF, PE, PDB, Breakpad, WebAssembly).
import { dsymHandler } from './dsym.js';
import { keptHandlers } from './kept.js';
import { registerSymbolKind } from './kinds.js';
import { proguardHandler } from './proguard.js';
import { sourceMapHandler } from './sourcemap.js';

// Order matters at ingest: each handler works on the frames the previous one left.
registerSymbolKind(proguardHandler);
registerSymbolKind(sourceMapHandler);
registerSymbolKind(dsymHandler);
for (const handler of keptHandlers) registerSymbolKind(handler);
