// The uploader's SymbolPort on symbol storage (src/symbols).
import type { AppDeps } from '../context.js';
import type { SymbolPort } from './symbol-port.js';

export function symbolPortFor(_deps: AppDeps): SymbolPort {
  return {
    kinds: () => new Set<string>(),
    storeAll: async () => [],
    findByDebugId: async () => [],
  };
}
