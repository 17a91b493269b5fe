// Native frame symbolication (docs/api.md "How an address is resolved"): a frame's image is found among the
// event's `debug_meta.images` of its type (`macho`, `elf`), its address becomes
// `instruction_addr - image_addr + the object's base` (a Mach-O slice's __TEXT vmaddr, an
// ELF file's first PT_LOAD address), every frame but the innermost
// of a stacktrace (the one that was executing) goes one byte back into its call instruction,
// and one frame comes out per inlined function, caller first as Sentry orders frames.
// Pure functions: the caller loads the indexes (by debug id) before calling.

import { basenameOf } from '../storage.js';
import type { Demangler } from './demangle.js';
import { debugIdOfCodeId } from './elf.js';
import type { NativeIndex } from './lookup-index.js';

export type JsonObject = Record<string, unknown>;

export interface MachoImage {
  debugId: string;
  imageAddr: number;
  imageSize: number | null;
  codeFile: string | null;
}

/** "0x100a3c1f4", "4305698292" or a number → the address, else null. */
export function parseAddress(value: unknown): number | null {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : null;
  if (typeof value !== 'string') return null;
  const text = value.trim().toLowerCase();
  const n = /^0x[0-9a-f]{1,16}$/.test(text)
    ? parseInt(text.slice(2), 16)
    : /^[0-9]{1,20}$/.test(text)
      ? Number(text)
      : NaN;
  return Number.isSafeInteger(n) ? n : null;
}

/** A Mach-O debug id as stored: lowercase dashed UUID (an age appendix is dropped). */
export function normaliseDebugId(value: unknown): string | null {
  if (typeof value !== 'string') return null;
  const hex = value.toLowerCase().replace(/-/g, '');
  if (!/^[0-9a-f]{32}/.test(hex)) return null;
  const h = hex.slice(0, 32);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The Mach-O images of `debug_meta.images` (type `macho`; `debug_id`, or the older `uuid`). */
export function machoImages(images: unknown[]): MachoImage[] {
  return nativeImages(images, 'macho');
}

/**
 * The images of one type of `debug_meta.images`; ELF images without a `debug_id` are
 * named by their `code_id` (the build id), as Sentry derives one from the other.
 */
export function nativeImages(images: unknown[], ...types: string[]): MachoImage[] {
  const out: MachoImage[] = [];
  for (const raw of images) {
    if (!raw || typeof raw !== 'object') continue;
    const image = raw as JsonObject;
    if (!types.includes(image.type as string)) continue;
    const debugId =
      normaliseDebugId(image.debug_id ?? image.uuid) ??
      (image.type === 'elf' && typeof image.code_id === 'string' ? debugIdOfCodeId(image.code_id) : null);
    const imageAddr = parseAddress(image.image_addr);
    if (!debugId || imageAddr === null) continue;
    const size = parseAddress(image.image_size);
    out.push({
      debugId,
      imageAddr,
      imageSize: size && size > 0 ? size : null,
      codeFile: typeof image.code_file === 'string' ? image.code_file : null,
    });
  }
  return out;
}

/** The image a frame's address lies in: by the frame's own image_addr, else by address range. */
export function imageForFrame(frame: JsonObject, images: MachoImage[]): MachoImage | null {
  const addr = parseAddress(frame.instruction_addr);
  if (addr === null) return null;
  const own = parseAddress(frame.image_addr);
  if (own !== null) {
    const byAddr = images.find((i) => i.imageAddr === own);
    if (byAddr) return byAddr;
  }
  let best: MachoImage | null = null;
  for (const image of images) {
    if (addr < image.imageAddr) continue;
    if (image.imageSize !== null && addr >= image.imageAddr + image.imageSize) continue;
    if (!best || image.imageAddr > best.imageAddr) best = image;
  }
  return best;
}

/** The debug ids of the images the exceptions' frames fall in: the symbol files an event needs. */
export function debugIdsOfFrames(exceptions: { frames: unknown[] }[], images: MachoImage[]): string[] {
  if (images.length === 0) return [];
  const ids = new Set<string>();
  for (const e of exceptions) {
    for (const f of e.frames) {
      const image = imageForFrame(f as JsonObject, images);
      if (image) ids.add(image.debugId);
    }
  }
  return [...ids];
}

/**
 * The frames one native frame expands to (caller first), or null when its image or address
 * is unknown to the index. Fields the SDK sent are kept; symbol fields are filled in.
 */
export function symbolicateNativeFrame(
  frame: JsonObject,
  image: MachoImage,
  index: NativeIndex,
  isCaller: boolean,
  demangle?: Demangler,
): JsonObject[] | null {
  const addr = parseAddress(frame.instruction_addr);
  if (addr === null || addr < image.imageAddr) return null;
  const relative = addr - image.imageAddr + index.textVmaddr - (isCaller ? 1 : 0);
  const found = index.lookup(relative);
  if (found.length === 0) return null;
  const out: JsonObject[] = [];
  for (let i = found.length - 1; i >= 0; i--) {
    const loc = found[i];
    const symbolicated: JsonObject = { ...frame };
    if (loc.function) {
      const readable = demangle ? demangle(loc.function) : loc.function;
      symbolicated.function = readable;
      if (readable !== loc.function) symbolicated.symbol = loc.function;
    }
    if (loc.file) {
      symbolicated.filename = basenameOf(loc.file);
      symbolicated.abs_path = loc.file;
    }
    if (loc.line > 0) symbolicated.lineno = loc.line;
    else delete symbolicated.lineno;
    if (image.codeFile && symbolicated.package === undefined) symbolicated.package = image.codeFile;
    out.push(symbolicated);
  }
  return out;
}

/**
 * Rewrites every stacktrace of `state` whose frames lie in `images`: `indexOf` names the
 * index of an image (null: unknown, the frame stays as sent).
 */
export function symbolicateFrames(
  state: { frames: JsonObject[][]; changed: boolean; nativeDone?: WeakSet<object> },
  images: MachoImage[],
  indexOf: (image: MachoImage) => NativeIndex | null,
  demangle?: Demangler,
): void {
  const done = (state.nativeDone ??= new WeakSet());
  for (let i = 0; i < state.frames.length; i++) {
    const frames = state.frames[i];
    let out: JsonObject[] | null = null;
    for (let j = 0; j < frames.length; j++) {
      const frame = frames[j];
      const image = done.has(frame) ? null : imageForFrame(frame, images);
      const index = image ? indexOf(image) : null;
      // Frames are oldest call first: the last one was executing, every other one is a
      // return address and is looked up one byte back, inside its call instruction.
      const expanded =
        image && index ? symbolicateNativeFrame(frame, image, index, j !== frames.length - 1, demangle) : null;
      if (expanded) {
        out ??= frames.slice(0, j);
        out.push(...expanded);
        for (const f of expanded) done.add(f);
      } else if (out) out.push(frames[j]);
    }
    if (out) {
      state.frames[i] = out;
      state.changed = true;
    }
  }
}
