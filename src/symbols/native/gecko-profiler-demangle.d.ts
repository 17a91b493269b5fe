// Types for the wasm-bindgen glue of gecko-profiler-demangle (the package ships none for it).
declare module 'gecko-profiler-demangle/index_bg.js' {
  export function __wbg_set_wasm(exports: WebAssembly.Exports): void;
  export function demangle_any(name: string): string;
}
