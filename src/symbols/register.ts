// The kinds this build knows. ProGuard and source maps are built in; the dSYM
// (Mach-O/DWARF) handler registers itself here when it is present. Until then a
// `dsym` upload is refused with 400 "dsym support not available" (upload.ts).
import { registerSymbolKind } from './kinds.js';
import { proguardHandler } from './proguard.js';
import { sourceMapHandler } from './sourcemap.js';

// Order matters at ingest: each handler works on the frames the previous one left.
registerSymbolKind(proguardHandler);
registerSymbolKind(sourceMapHandler);
