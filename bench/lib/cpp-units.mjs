// Generated C++ for the native benches (dSYM, ELF), and the pool that compiles it: a shared header of inlined templates and compile
// units of many functions, each with its own record type, so DWARF has types, inlined
// frames and line tables in realistic proportion.

import { spawn } from 'node:child_process';

/** Runs the commands (argv arrays) `width` at a time; compiler errors go to stderr. */
export async function runPool(jobs, width) {
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const job = jobs[next++];
      await new Promise((resolve, reject) => {
        const p = spawn(job[0], job.slice(1), { stdio: ['ignore', 'ignore', 'inherit'] });
        p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${job.join(' ')} exited ${code}`))));
      });
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
}

export const COMMON_H = `#pragma once
template <typename T> struct Box { T value; __attribute__((always_inline)) T get() const { return value; } };
template <typename T> __attribute__((always_inline)) inline T mix(T a, T b) { return a * 31 + (b ^ (a >> 3)); }
template <typename A, typename B> struct Pair {
  __attribute__((always_inline)) static A combine(A x, const B &b) { return mix<A>(x, (A)b.a) + (A)b.c; }
};
static inline __attribute__((always_inline)) long fold(int a, int k) { long s = 0; for (int i = 0; i < k; i++) s += mix<long>(a, i); return s; }
`;

/** The lines of `namespace mod<unit>` with `functions` functions fn0…; every eighth is what an entry point calls. */
export function unitNamespace(unit, functions) {
  const out = [
    '#include "common.h"',
    `namespace mod${unit} {`,
    'struct Rec0 { int a; long b; double c; Box<int> box; };',
  ];
  for (let k = 0; k < functions; k++) {
    if (k > 0) out.push(`struct Rec${k} { int a; long b; double c; Box<int> box; Box<Rec${k - 1}*> link; };`);
    out.push(
      `__attribute__((noinline)) long fn${k}(long x) { Rec${k} r{}; r.a = (int)x; long s = mix<long>(x, ${k}); s += Pair<long, Rec${k}>::combine(s, r); return s + fold(r.a, ${k % 7}); }`,
    );
  }
  out.push('}');
  return out;
}
