// A `.wasm` import in the Worker is a compiled module (wrangler's CompiledWasm rule).
declare module '*.wasm' {
  const module: WebAssembly.Module;
  export default module;
}
