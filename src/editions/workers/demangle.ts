// Workers edition: the demangler's WebAssembly as a module of the Worker. Workers cannot
// compile WebAssembly from bytes at run time, so wrangler bundles the `.wasm` import as a
// precompiled module (its default CompiledWasm rule) that is uploaded beside the script.
import wasm from 'gecko-profiler-demangle/index_bg.wasm';
import { createDemangler, type Demangler } from '../../symbols/native/demangle.js';

export function loadWorkerDemangler(): Promise<Demangler> {
  return createDemangler(wasm);
}
