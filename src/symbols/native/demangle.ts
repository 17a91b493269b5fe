// Name demangling for native frames. C++ (Itanium) and Rust (legacy and v0) names go through
// gecko-profiler-demangle, the Firefox profiler's build of the cpp_demangle and rustc-demangle
// crates as WebAssembly, so it runs the same in Node and in Workers. Swift names are kept as
// they are: no maintained JavaScript or WebAssembly Swift demangler exists on npm.
// The edition hands in the compiled wasm module, because only editions read files or rely
// on a bundler: Node compiles the package's file (src/editions/node/demangle.ts), the
// Worker imports it as a module that wrangler uploads beside the script
// (src/editions/workers/demangle.ts). The edition passes the Demangler it gets to the
// SymbolService, which hands it to the native kinds with each event (SymbolicationState).

import * as glue from 'gecko-profiler-demangle/index_bg.js';

export type Demangler = (name: string) => string;

// wasm-bindgen's glue module holds one instance for the whole process (or isolate), so
// it is instantiated once and later calls get the same Demangler.
let ready: Promise<Demangler> | null = null;

/** Instantiates the demangler (once per process or isolate). */
export function createDemangler(module: WebAssembly.Module): Promise<Demangler> {
  ready ??= (async () => {
    const instance = await WebAssembly.instantiate(module, {
      './index_bg.js': glue as unknown as WebAssembly.ModuleImports,
    });
    glue.__wbg_set_wasm(instance.exports);
    (instance.exports.__wbindgen_start as () => void)();
    return (name: string) => demangleName(name, glue.demangle_any);
  })();
  return ready;
}

/** True for the mangled C++ and Rust names the demangler understands. */
export function isMangled(name: string): boolean {
  return name.startsWith('_Z') || name.startsWith('__Z') || name.startsWith('_R');
}

function demangleName(name: string, demangleAny: (name: string) => string): string {
  if (!isMangled(name) || name.length > 4096) return name;
  try {
    const out = demangleAny(name.startsWith('__Z') ? name.slice(1) : name);
    // The library strips a leading underscore when it recognises nothing; keep such names as sent.
    return out === name.slice(1) || out === name.slice(2) || out === '' ? name : out;
  } catch {
    return name;
  }
}
