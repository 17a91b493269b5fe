// The sourcebundle kind: source bundles (`SYSB` header + ZIP with `manifest.json`) from
// `sentry-cli debug-files upload --include-sources` and `debug-files bundle-jvm`
// (docs/api.md "Source context"). They are stored under the debug id their manifest
// names and never refused (a bundle whose manifest cannot be read is kept without one).
// At ingest they give source lines (`pre_context`, `context_line`, `post_context`) to
// native frames, by the frame's image debug id and its `abs_path` (the path the manifest
// records, or its tail), and to JVM frames, by the `jvm` images' debug ids and the frame's
// class (`com.acme.Checkout` → `…/com/acme/Checkout.jvm`), as Sentry's symbolicator does.
// Registered last: it works on the frames the symbolicating kinds left.
import { unzipSync } from 'fflate';
import type { EventView, FileInspector, LoadedSymbols, SymbolKindHandler, SymbolLookup } from './kinds.js';
import { imageForFrame, nativeImages, normaliseDebugId, type JsonObject } from './native/frames.js';
import { readZipDirectory, readZipEntryBytes } from './zip.js';
import { concatBytes } from '../bytes.js';
import type { NormalizedFrame } from '../ingest/types.js';

/** Lines of context on each side of the frame's line, and the longest line kept (as for source maps). */
const CONTEXT_LINES = 5;
const MAX_LINE_CHARS = 300;
/** A bundle's files: each at most 16 MB, 256 MB in all (what is past that gives no context). */
const MAX_FILE_BYTES = 16 * 1024 * 1024;
const MAX_BUNDLE_BYTES = 256 * 1024 * 1024;
const MAX_MANIFEST_BYTES = 16 * 1024 * 1024;

export class LoadedSourceBundle implements LoadedSymbols {
  readonly memoryBytes: number;
  private readonly lines = new Map<string, string[]>();
  constructor(
    /** Source path or URL (without `~/`) → ZIP entry bytes. */
    private readonly files: Map<string, Uint8Array>,
    size: number,
  ) {
    this.memoryBytes = size;
  }

  private linesOf(key: string): string[] {
    let lines = this.lines.get(key);
    if (!lines) {
      lines = new TextDecoder().decode(this.files.get(key)).split(/\r?\n/);
      this.lines.set(key, lines);
    }
    return lines;
  }

  /** The source of a native frame's path: exact, without `./`, else the file whose path ends like it. */
  sourceFor(path: string): string[] | null {
    const clean = path.replace(/^(\.\/)+/, '');
    for (const key of [path, clean]) if (this.files.has(key)) return this.linesOf(key);
    for (const key of this.files.keys()) {
      const k = key.replace(/^(\.\/)+/, '');
      if (k.endsWith(`/${clean}`) || clean.endsWith(`/${k}`)) return this.linesOf(key);
    }
    return null;
  }

  /** The source of a JVM class (`com.acme.Checkout`, inner classes to their outer one). */
  sourceForClass(className: string): string[] | null {
    const tail = `/${className.replace(/\$.*$/, '').replace(/\./g, '/')}.jvm`;
    for (const key of this.files.keys()) if (`/${key}`.endsWith(tail)) return this.linesOf(key);
    return null;
  }
}

/**
 * The files a bundle's manifest names, by path and by URL. Read whole with fflate's
 * unzipSync, not zip.ts's ranged reader: `load` is synchronous, and what it reads is a
 * stored file within the bundle limits here; a bundle it cannot read only gives no
 * source context.
 */
export function readSourceBundle(bytes: Uint8Array): Map<string, Uint8Array> {
  let total = 0;
  const entries = unzipSync(bytes, {
    filter: (f) => {
      if (f.name === 'manifest.json') return f.originalSize <= MAX_MANIFEST_BYTES;
      if (f.originalSize > MAX_FILE_BYTES || total + f.originalSize > MAX_BUNDLE_BYTES) return false;
      total += f.originalSize;
      return true;
    },
  });
  const files = new Map<string, Uint8Array>();
  const manifestBytes = entries['manifest.json'];
  if (!manifestBytes) return files;
  const manifest = JSON.parse(new TextDecoder().decode(manifestBytes)) as {
    files?: Record<string, { type?: string; path?: string; url?: string }>;
  };
  for (const [name, info] of Object.entries(manifest.files ?? {})) {
    const data = entries[name];
    if (!data || !info || (info.type !== undefined && info.type !== 'source')) continue;
    if (typeof info.path === 'string') files.set(info.path, data);
    if (typeof info.url === 'string') files.set(info.url.replace(/^~\//, ''), data);
  }
  return files;
}

function inspect(): FileInspector {
  let head: Uint8Array = new Uint8Array(0);
  return {
    push(chunk) {
      if (head.byteLength < 4) head = concatBytes([head, chunk.subarray(0, 4 - head.byteLength)]);
    },
    async finish(stored) {
      // Never refused: a bundle whose manifest cannot be read is kept, named by the uploader.
      let debugId: string | undefined;
      if (stored) {
        try {
          const entry = (await readZipDirectory(stored)).find((e) => e.name === 'manifest.json');
          if (entry) {
            const manifest = JSON.parse(
              new TextDecoder().decode(await readZipEntryBytes(stored, entry, MAX_MANIFEST_BYTES)),
            ) as Record<string, unknown>;
            debugId = normaliseDebugId(manifest.debug_id) ?? undefined;
          }
        } catch {
          debugId = undefined;
        }
      }
      return [{ ...(debugId ? { debugId } : {}), meta: { format: 'sourcebundle', features: ['sources'] } }];
    },
  };
}

const NATIVE_TYPES = ['elf', 'macho', 'pe'];

function jvmDebugIds(images: Record<string, unknown>[]): string[] {
  return images
    .filter((i) => i && i.type === 'jvm')
    .map((i) => normaliseDebugId(i.debug_id))
    .filter((id): id is string => id !== null);
}

function bundlesNeeded(event: EventView): string[] {
  const ids = new Set<string>(jvmDebugIds(event.images));
  const images = nativeImages(event.images, ...NATIVE_TYPES);
  if (images.length > 0) {
    for (const e of event.exceptions) {
      for (const f of e.frames) {
        const image = imageForFrame(f as JsonObject, images);
        if (image) ids.add(image.debugId);
      }
    }
  }
  return [...ids];
}

function withContext(frame: JsonObject, lines: string[]): JsonObject | null {
  const lineno = typeof frame.lineno === 'number' ? frame.lineno : 0;
  if (lineno < 1 || lineno > lines.length) return null;
  const cut = (l: string) => (l.length > MAX_LINE_CHARS ? l.slice(0, MAX_LINE_CHARS) : l);
  return {
    ...frame,
    pre_context: lines.slice(Math.max(0, lineno - 1 - CONTEXT_LINES), lineno - 1).map(cut),
    context_line: cut(lines[lineno - 1]),
    post_context: lines.slice(lineno, lineno + CONTEXT_LINES).map(cut),
  };
}

export const sourceBundleHandler: SymbolKindHandler<LoadedSourceBundle> = {
  kind: 'sourcebundle',
  recognises: (_name, head) =>
    head.byteLength >= 4 && head[0] === 0x53 && head[1] === 0x59 && head[2] === 0x53 && head[3] === 0x42,
  inspect,
  load(_file, bytes) {
    return new LoadedSourceBundle(readSourceBundle(bytes), bytes.byteLength);
  },
  lookups(event) {
    return bundlesNeeded(event).map(
      (debugId) => ({ kind: 'sourcebundle', by: 'debug_id', debugId }) satisfies SymbolLookup,
    );
  },
  symbolicate(event, state, resolve) {
    const images = nativeImages(event.images, ...NATIVE_TYPES);
    const jvm = jvmDebugIds(event.images).flatMap((debugId) =>
      resolve({ kind: 'sourcebundle', by: 'debug_id', debugId }),
    );
    if (images.length === 0 && jvm.length === 0) return;
    for (let i = 0; i < state.frames.length; i++) {
      let changed = false;
      const frames = state.frames[i].map((raw) => {
        const frame = raw as JsonObject;
        if (typeof frame.context_line === 'string') return raw;
        let lines: string[] | null = null;
        const image = images.length > 0 ? imageForFrame(frame, images) : null;
        if (image && typeof frame.abs_path === 'string') {
          for (const bundle of resolve({ kind: 'sourcebundle', by: 'debug_id', debugId: image.debugId })) {
            lines = bundle.sourceFor(frame.abs_path);
            if (lines) break;
          }
        } else if (jvm.length > 0 && typeof frame.module === 'string') {
          for (const bundle of jvm) {
            lines = bundle.sourceForClass(frame.module);
            if (lines) break;
          }
        }
        const out = lines ? withContext(frame, lines) : null;
        if (!out) return raw;
        changed = true;
        return out as NormalizedFrame;
      });
      if (changed) {
        state.frames[i] = frames;
        state.changed = true;
      }
    }
  },
};
