// Node edition: compiles the demangler's WebAssembly from the installed package's file.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { createDemangler, type Demangler } from '../../symbols/native/demangle.js';

export async function loadNodeDemangler(): Promise<Demangler> {
  const path = createRequire(import.meta.url).resolve('gecko-profiler-demangle/index_bg.wasm');
  return createDemangler(await WebAssembly.compile(await readFile(path)));
}
