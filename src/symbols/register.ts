// The kinds this build knows: ProGuard, source maps and dSYM (Mach-O/DWARF).
import { dsymHandler } from './dsym.js';
import { registerSymbolKind } from './kinds.js';
import { proguardHandler } from './proguard.js';
import { sourceMapHandler } from './sourcemap.js';

// Order matters at ingest: each handler works on the frames the previous one left.
registerSymbolKind(proguardHandler);
registerSymbolKind(sourceMapHandler);
registerSymbolKind(dsymHandler);
