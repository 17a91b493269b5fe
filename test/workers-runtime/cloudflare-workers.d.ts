// The one thing these tests take from the Workers runtime's `cloudflare:workers`
// module (typed in full by @cloudflare/workers-types, which is not installed).
declare module 'cloudflare:workers' {
  export const env: Record<string, unknown>;
}

// Fixtures imported as text by Vite (`?raw`): the Workers runtime has no file system.
declare module '*?raw' {
  const text: string;
  export default text;
}
