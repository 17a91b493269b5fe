// The kinds this build knows: ProGuard, source maps, dSYM (Mach-O/DWARF) and ELF, which
// symbolicate, and the kept-only debug formats (PE, PDB, Breakpad, WebAssembly).
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
for (const handler of keptHandlers) registerSymbolKind(handler);
