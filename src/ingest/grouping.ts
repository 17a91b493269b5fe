// Grouping (docs/ingest-normalisation.md "Grouping"): turns an event's facts into the input of its
// fingerprint and hashes it. Pure and deterministic: the same facts always give
// the same 32-hex fingerprint, on any instance and across restarts. The MD5 itself
// is injected (Node: node:crypto, src/editions/node/runtime.ts): Web Crypto has no
// MD5 and is asynchronous, and hashing runs once per event on the hot path.
import type { NormalizedException, NormalizedFrame } from './types.js';

/** What grouping needs from an event, as normalizeEvent extracted it. */
export interface GroupingFacts {
  platform: string;
  /** The main exception (see mainExceptionIndex), or null when the event has none. */
  main: NormalizedException | null;
  /** The event message (logentry / message), used by message grouping. */
  message: string;
  /** debug_meta.images, for native frames without a function. */
  images: Record<string, unknown>[];
}

const MAX_GROUPING_FRAMES = 5;

/** MD5 of the UTF-8 bytes of `text` as 32 lowercase hex characters, synchronously. */
export type Md5Hex = (text: string) => string;

// `{{ default }}` in any case and spacing.
const DEFAULT_MARK = /^\s*\{\{\s*default\s*\}\}\s*$/i;

// Frames of the Sentry SDKs themselves, by file path / image path...
const SDK_PATH =
  /(?:^|[/\\])(?:node_modules[/\\]@sentry(?:-internal)?[/\\]|(?:site|dist)-packages[/\\]sentry_sdk[/\\]|vendor[/\\]sentry[/\\]sentry[/\\]|gems[/\\]sentry-[a-z_]+-\d|Sentry\.framework[/\\])|^package:sentry(?:_[a-z_]+)?\/|getsentry[/\\]sentry-go[/\\@]/;
// ...and by module / namespace (Node, Python, Java/Android, .NET, Dart, Go).
const SDK_MODULE =
  /^(?:@sentry[./:]|sentry_sdk(?:\.|$)|io\.sentry\.|Sentry\.|package:sentry(?:_[a-z_]+)?\/|github\.com\/getsentry\/sentry-go)/;

// Names that stand for "no name" (anonymous functions, stripped symbols).
const PLACEHOLDER_NAME = /^(?:\?|<[^>]*>|\[native code\]|native|anonymous)?$/i;

// Numbers, hex and UUIDs in messages and values, replaced by <n>. Hex words need a
// digit so ordinary words ("face", "bad") survive.
const PARAM =
  /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\b0x[0-9a-f]+\b|\b[0-9a-f]*\d[0-9a-f]*\b|\d+/gi;

// Class names the JVM invents per run (lambdas, reflection accessors, proxies, CGLIB).
const JVM_GENERATED =
  /\$\$Lambda\$[^.$]*(?:\/0x[0-9a-f]+)?|GeneratedMethodAccessor\d+|\$Proxy\d+|\$\$EnhancerByCGLIB\$\$[0-9a-f]+/gi;

/** Replaces numbers, hex and UUIDs with `<n>`. */
export function normalizeGroupingText(text: string): string {
  return text.replace(PARAM, '<n>');
}

function isSdkFrame(f: NormalizedFrame): boolean {
  return (
    (f.module !== undefined && SDK_MODULE.test(f.module)) ||
    (f.filename !== undefined && SDK_PATH.test(f.filename)) ||
    (f.abs_path !== undefined && SDK_PATH.test(f.abs_path)) ||
    (f.package !== undefined && SDK_PATH.test(f.package))
  );
}

function hasName(s: string | undefined): boolean {
  return s !== undefined && !PLACEHOLDER_NAME.test(s.trim());
}

/** `<anonymous>`-like function without file, line or address: nothing to group on. */
function isPlaceholderFrame(f: NormalizedFrame): boolean {
  return (
    !hasName(f.function) &&
    !hasName(f.filename) &&
    !hasName(f.abs_path) &&
    !hasName(f.module) &&
    f.lineno === undefined &&
    !f.instruction_addr
  );
}

/** The frames grouping and location may use: SDK frames and placeholder frames removed. */
export function usableFrames(frames: NormalizedFrame[]): NormalizedFrame[] {
  let out: NormalizedFrame[] | null = null;
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i];
    const skip = isSdkFrame(f) || isPlaceholderFrame(f);
    if (skip && out === null) out = frames.slice(0, i);
    else if (!skip && out !== null) out.push(f);
  }
  return out ?? frames;
}

/** Last path segment of a file name or URL, without query or fragment. */
export function basename(path: string): string {
  let end = path.length;
  const q = path.search(/[?#]/);
  if (q >= 0) end = q;
  while (end > 0 && (path[end - 1] === '/' || path[end - 1] === '\\')) end--;
  let start = end;
  while (start > 0 && path[start - 1] !== '/' && path[start - 1] !== '\\') start--;
  return path.slice(start, end);
}

/** Basename of the frame's file: filename, else abs_path; '' when neither is a real file. */
export function frameFileBasename(f: NormalizedFrame): string {
  const p = hasName(f.filename) ? f.filename : hasName(f.abs_path) ? f.abs_path : undefined;
  return p === undefined ? '' : basename(p);
}

function stableModule(module: string): string {
  return module.includes('$') || module.includes('Generated') ? module.replace(JVM_GENERATED, '<auto>') : module;
}

function parseAddr(v: unknown): bigint | null {
  try {
    if (typeof v === 'string' && v !== '') return BigInt(v.startsWith('0x') || v.startsWith('0X') ? v : `0x${v}`);
    if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return BigInt(v);
  } catch {
    // not an address
  }
  return null;
}

/**
 * `<image debug_id>+0x<offset>` for a native frame without a function: the
 * offset inside the image is the same on every run, the absolute address is not
 * (ASLR). The image is the one containing the address (missing size: up to the
 * next image); without images, the frame's own image_addr and package.
 */
function nativeAddress(f: NormalizedFrame, images: Record<string, unknown>[]): string {
  const addr = parseAddr(f.instruction_addr);
  if (addr === null) return '';
  let best: Record<string, unknown> | null = null;
  let bestBase = -1n;
  for (const img of images) {
    const base = parseAddr(img.image_addr);
    if (base === null || base > addr || base <= bestBase) continue;
    const size = parseAddr(img.image_size);
    if (size !== null && size > 0n && addr >= base + size) continue;
    best = img;
    bestBase = base;
  }
  if (best) {
    const id =
      best.debug_id ??
      best.uuid ??
      best.code_id ??
      (typeof best.code_file === 'string' ? basename(best.code_file) : '');
    return `${String(id).toLowerCase()}+0x${(addr - bestBase).toString(16)}`;
  }
  const frameBase = parseAddr(f.image_addr);
  const pkg = f.package ? basename(f.package) : '<unknown>';
  if (frameBase !== null && frameBase <= addr) return `${pkg}+0x${(addr - frameBase).toString(16)}`;
  return `${pkg}+0x${addr.toString(16)}`;
}

function frameComponent(f: NormalizedFrame, images: Record<string, unknown>[], withLine: boolean): string {
  const where = f.module ? stableModule(f.module) : frameFileBasename(f);
  let fn = f.function?.trim() ?? '';
  if (fn.includes('$')) fn = fn.replace(JVM_GENERATED, '<auto>');
  if (f.instruction_addr && !hasName(fn)) fn = nativeAddress(f, images);
  return withLine && f.lineno !== undefined ? `${where}|${fn}|${f.lineno}` : `${where}|${fn}`;
}

// ANRs and app hangs as the mobile SDKs report them: sentry-java's `ApplicationNotResponding`
// (mechanisms `ANR`, and `AppExitInfo` for ANR v2), sentry-cocoa's `App Hanging` / `App Hang …`
// (mechanism `AppHang`); React Native and Flutter send their native SDK's.
const ANR_TYPE = /^(?:ApplicationNotResponding|App ?Hang(?:ing)?(?: .*)?|Fatal App Hang.*)$/;
const ANR_MECHANISM = /^(?:ANR|ANRv2|AppHang|app\.hang|mx_hang_diagnostic)$/i;

/** Whether the exception is an ANR or app hang: grouped by the main thread's stack. */
export function isAnrException(e: NormalizedException | null): boolean {
  if (!e) return false;
  const mechanism = typeof e.mechanism?.type === 'string' ? e.mechanism.type : '';
  return (
    ANR_TYPE.test(e.type) ||
    ANR_MECHANISM.test(mechanism) ||
    (mechanism === 'AppExitInfo' && e.type === 'ApplicationNotResponding')
  );
}

function isSynthetic(e: NormalizedException): boolean {
  return e.mechanism?.synthetic === true;
}

/**
 * The default grouping input (docs/ingest-normalisation.md "Grouping"): (1) the main exception's
 * stack, (2) the main exception's type and normalized value, (3) the message.
 * A synthetic exception (what SDKs attach to captureMessage, often without a
 * type) is grouped by the message, like a message sent without a stack.
 */
export function defaultGroupingInput(facts: GroupingFacts): string[] {
  const { platform, main } = facts;
  if (main && !isSynthetic(main)) {
    const usable = usableFrames(main.frames);
    if (usable.length > 0) {
      let chosen = usable.filter((f) => f.in_app === true);
      if (chosen.length === 0) chosen = usable;
      if (chosen.length > MAX_GROUPING_FRAMES) chosen = chosen.slice(-MAX_GROUPING_FRAMES);
      const withLine = usable.length === 1;
      // An ANR (or app hang) is the main thread's stack when the app stopped answering:
      // whatever the SDK calls it (foreground, background, fully blocked…), the same
      // stack is the same problem.
      const out = isAnrException(main) ? ['anr', platform] : ['stack', platform, main.type];
      for (const f of chosen) out.push(frameComponent(f, facts.images, withLine));
      return out;
    }
    if (main.type !== '' || main.value !== '') {
      return ['exception', platform, main.type, normalizeGroupingText(main.value)];
    }
  }
  const message = facts.message !== '' ? facts.message : (main?.value ?? '');
  return ['message', platform, normalizeGroupingText(message)];
}

/** The SDK's `fingerprint` as strings, or null when it is absent or only `{{ default }}`. */
function sdkFingerprint(event: Record<string, unknown>): string[] | null {
  const fp = event.fingerprint;
  if (!Array.isArray(fp) || fp.length === 0) return null;
  const parts: string[] = [];
  let custom = false;
  for (const v of fp) {
    let s: string;
    if (typeof v === 'string') s = v;
    else if (typeof v === 'number' || typeof v === 'boolean') s = String(v);
    else continue;
    parts.push(s);
    if (!DEFAULT_MARK.test(s)) custom = true;
  }
  return custom ? parts : null;
}

/** What the fingerprint hashes: the SDK fingerprint with `{{ default }}` expanded, else the default input. */
export function groupingInput(event: Record<string, unknown>, facts: GroupingFacts): string[] {
  const custom = sdkFingerprint(event);
  if (!custom) return defaultGroupingInput(facts);
  const out = ['fingerprint'];
  let defaults: string[] | null = null;
  for (const part of custom) {
    if (DEFAULT_MARK.test(part)) out.push(...(defaults ??= defaultGroupingInput(facts)));
    else out.push(part);
  }
  return out;
}

/** 32 lowercase hex characters: MD5 of the JSON-encoded input list. */
export function hashGroupingInput(input: string[], md5Hex: Md5Hex): string {
  return md5Hex(JSON.stringify(input));
}

/** The event's fingerprint (32 lowercase hex). `event` is the parsed payload (for its `fingerprint`). */
export function computeFingerprint(event: Record<string, unknown>, facts: GroupingFacts, md5Hex: Md5Hex): string {
  return hashGroupingInput(groupingInput(event, facts), md5Hex);
}

/**
 * Index of the main exception, as Sentry picks it: the last element of the list (SDKs
 * list causes first, so that is the outermost error), whatever `exception_id` and
 * `parent_id` say. Exception groups (`mechanism.is_exception_group`) follow Sentry's
 * rule for them: starting at the root (`exception_id` 0), groups are looked through to
 * the first exceptions below them that are not groups; when those all group alike
 * (the same default grouping input), that exception is the main one, else the last
 * element stays. -1 when there is none. Iterative: the input's depth is the client's.
 */
export function mainExceptionIndex(exceptions: NormalizedException[]): number {
  const last = exceptions.length - 1;
  if (!exceptions.some((e) => e.mechanism?.is_exception_group === true)) return last;
  const children = new Map<unknown, number[]>();
  let root = -1;
  for (let i = 0; i < exceptions.length; i++) {
    const m = exceptions[i].mechanism;
    if (m?.exception_id === 0 && root < 0) root = i;
    const parent = m?.parent_id;
    if (parent === undefined || parent === null) continue;
    const list = children.get(parent);
    if (list) list.push(i);
    else children.set(parent, [i]);
  }
  if (root < 0) return last;
  const topLevel: number[] = [];
  const visited = new Set<number>();
  const stack = [root];
  while (stack.length > 0) {
    const i = stack.pop()!;
    if (visited.has(i)) continue;
    visited.add(i);
    const m = exceptions[i].mechanism;
    if (m?.is_exception_group === true) {
      for (const child of children.get(m.exception_id) ?? []) stack.push(child);
    } else {
      topLevel.push(i);
    }
  }
  if (topLevel.length === 0) return last;
  const key = (i: number) =>
    JSON.stringify(defaultGroupingInput({ platform: '', main: exceptions[i], message: '', images: [] }));
  const first = key(topLevel[0]);
  if (topLevel.some((i) => key(i) !== first)) return last;
  return Math.max(...topLevel);
}

/** The file, module or package a frame names for a location; '' when it has none. */
function frameLocationBase(f: NormalizedFrame): string {
  return frameFileBasename(f) || (hasName(f.module) ? f.module! : '') || (f.package ? basename(f.package) : '');
}

/**
 * error_location: the innermost in-app usable frame that names a file (module or
 * package) as `basename:lineno`, or `basename:function` without a line; the
 * innermost usable frame with a file when no in-app one has it. Built-ins without
 * a file (`JSON.parse`, `<anonymous>`) are passed over as Sentry's culprit does;
 * when no frame has a file at all, the innermost in-app (else innermost) frame's
 * function alone.
 */
export function locationOf(main: NormalizedException | null): string {
  if (!main || main.frames.length === 0) return '';
  const usable = usableFrames(main.frames);
  const innermost = (pick: (f: NormalizedFrame) => boolean): NormalizedFrame | undefined => {
    for (let i = usable.length - 1; i >= 0; i--) if (pick(usable[i])) return usable[i];
    return undefined;
  };
  const f =
    innermost((x) => x.in_app === true && frameLocationBase(x) !== '') ?? innermost((x) => frameLocationBase(x) !== '');
  let loc: string;
  if (f) {
    const base = frameLocationBase(f);
    loc = f.lineno !== undefined ? `${base}:${f.lineno}` : `${base}:${f.function ?? ''}`;
  } else {
    loc = (innermost((x) => x.in_app === true) ?? usable[usable.length - 1])?.function ?? '';
  }
  return loc.length > 200 ? loc.slice(0, 200) : loc;
}
