// Builds real Mach-O debug files with the machine's LLVM tools: clang for Apple targets,
// ld64.lld to link, dsymutil for the .dSYM bundle, llvm-lipo for a universal file. The
// program has several C and C++ compile units and always_inline functions nested two deep,
// so every inline-chain shape occurs. Used once per test file, in beforeAll.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const SOURCES: Record<string, string> = {
  'util.h': `#pragma once
static inline __attribute__((always_inline)) int clamp_add(int a, int b) {
  int s = a + b;
  if (s > 1000) s = 1000;
  return s;
}
static inline __attribute__((always_inline)) int twice_clamped(int a) {
  return clamp_add(a, a) * 2;
}
`,
  'main.c': `#include "util.h"
int compute(int);
int shape_area(int);
volatile int sink;
__attribute__((noinline)) static int local_helper(int x) {
  for (int i = 0; i < x; i++) sink += twice_clamped(i);
  return sink;
}
int main(int argc, char **argv) {
  int v = twice_clamped(argc);
  v += local_helper(argc);
  v += compute(v);
  v += shape_area(v);
  return v;
}
`,
  'compute.c': `#include "util.h"
extern volatile int sink;
static inline __attribute__((always_inline)) int step(int x) {
  if (x & 1) return twice_clamped(x) + 3;
  return clamp_add(x, 7);
}
int compute(int n) {
  int acc = 0;
  for (int i = 0; i < n; i++) {
    acc += step(i);
    sink = acc;
  }
  return acc;
}
`,
  'shapes.cpp': `namespace geo {
struct Shape { virtual ~Shape() {} virtual int area() const = 0; };
struct Rect : Shape {
  int w, h;
  Rect(int w, int h) : w(w), h(h) {}
  __attribute__((always_inline)) int area() const override { return w * h; }
};
template <typename T> __attribute__((always_inline)) inline T scale(T v, T k) { return v * k + 1; }
__attribute__((noinline)) int total(const Shape &s, int n) {
  int t = 0;
  for (int i = 0; i < n; i++) t += scale<int>(s.area(), i);
  return t;
}
}
extern "C" int shape_area(int n) {
  geo::Rect r(n, n + 1);
  return geo::total(r, n) + geo::scale<long>(r.area(), 2);
}
`,
};

export function run(cmd: string, args: string[], cwd: string): string {
  return execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 1 << 28 }).toString();
}

export interface BuiltDsym {
  arch: string;
  /** The DWARF file inside the bundle (what llvm-symbolizer reads). */
  dwarfFile: string;
  bundle: string;
}

/** Compiles the program for one Apple target and links it into an executable plus a .dSYM. */
export function buildDsym(dir: string, target: string, arch: string, platform: string[], dwarf: string[] = []): BuiltDsym {
  const tag = `${arch}${dwarf.join('')}`;
  const objects: string[] = [];
  for (const file of ['main.c', 'compute.c', 'shapes.cpp']) {
    const out = `${tag}-${file.replace(/\.\w+$/, '')}.o`;
    const cxx = file.endsWith('.cpp');
    run(cxx ? 'clang++' : 'clang', [
      '-target', target, '-g', ...dwarf, '-O2', ...(cxx ? ['-fno-exceptions', '-fno-rtti'] : []), '-c', file, '-o', out,
    ], dir);
    objects.push(out);
  }
  const exe = `App-${tag}`;
  run('ld64.lld-14', ['-arch', arch, '-platform_version', ...platform, '-e', '_main', '-undefined', 'dynamic_lookup', ...objects, '-o', exe], dir);
  run('dsymutil', [exe, '-o', `${exe}.dSYM`], dir);
  return { arch, bundle: path.join(dir, `${exe}.dSYM`), dwarfFile: path.join(dir, `${exe}.dSYM/Contents/Resources/DWARF/${exe}`) };
}

/** Compiles one source to a Mach-O object (DWARF read straight from it, no link step). */
export function buildObject(dir: string, target: string, file: string, flags: string[]): string {
  const out = `${target}-${flags.join('')}-${file.replace(/\.\w+$/, '')}.o`;
  const cxx = file.endsWith('.cpp');
  run(cxx ? 'clang++' : 'clang', ['-target', target, '-g', ...flags, '-O2', ...(cxx ? ['-fno-exceptions', '-fno-rtti'] : []), '-c', file, '-o', out], dir);
  return path.join(dir, out);
}

export function sourceDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-dsym-'));
  for (const [name, text] of Object.entries(SOURCES)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

export function lipo(dir: string, inputs: string[], output: string): string {
  run('llvm-lipo-14', ['-create', ...inputs, '-output', output], dir);
  return path.join(dir, output);
}

/** A fat64 universal file by hand: llvm-lipo 14 cannot write one. */
export function fat64(slices: Array<{ bytes: Uint8Array; cpuType: number; cpuSubtype: number }>): Uint8Array {
  const align = 1 << 14;
  let offset = align;
  const placed = slices.map((s) => {
    const at = offset;
    offset = Math.ceil((at + s.bytes.length) / align) * align;
    return at;
  });
  const out = new Uint8Array(offset);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0xcafebabf);
  view.setUint32(4, slices.length);
  slices.forEach((s, i) => {
    const base = 8 + 32 * i;
    view.setUint32(base, s.cpuType);
    view.setUint32(base + 4, s.cpuSubtype);
    view.setBigUint64(base + 8, BigInt(placed[i]));
    view.setBigUint64(base + 16, BigInt(s.bytes.length));
    view.setUint32(base + 24, 14);
    out.set(s.bytes, placed[i]);
  });
  return out;
}

export interface SymbolizerFrame {
  FunctionName: string;
  FileName: string;
  Line: number;
}

/** llvm-symbolizer's answer for each address: innermost frame first. */
export function symbolize(file: string, addrs: number[], opts: { arch?: string; demangle?: boolean } = {}): SymbolizerFrame[][] {
  const args = [`--obj=${file}`, '--inlining', '--output-style=JSON'];
  if (opts.demangle === false) args.push('--no-demangle');
  if (opts.arch) args.push(`--default-arch=${opts.arch}`);
  const out = JSON.parse(run('llvm-symbolizer', [...args, ...addrs.map((a) => `0x${a.toString(16)}`)], path.dirname(file)));
  return (out as Array<{ Symbol?: SymbolizerFrame[] }>).map((entry) => entry.Symbol ?? []);
}
