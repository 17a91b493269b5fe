// How a frame mapped through a source map reads (docs/api.md "Symbolication"): the file
// names it shows, and the function name it takes. Pure rules over strings; the map
// lookups they need are passed in, so sourcemap.ts keeps its parsing and caching.
//
// File: `abs_path` is the source as the map writes it in `sources`
// (`webpack:///./src/cart.js`); `filename` is the path people read: the webpack scheme
// and namespace, other URL schemes, leading `/`, `./` and `../` removed (`src/cart.js`).
//
// Function: Sentry names a frame after the function that encloses it in the minified
// file, resolved through the map at that function's definition (the name token of
// `function Is(t){…}` maps to `onBuyClick`), not after the token at the caller's call
// site (`fn.apply(…)` gave a click handler the name `apply`). The minified file itself is
// not stored here, so the definition is found from the frame's own minified name: the
// nearest mapping before the frame, on its line of the minified file, that carries a name
// and whose original position is the definition of a function of that name in the
// original source (`function onBuyClick(`, `onBuyClick(…) {`, `onBuyClick = (…) =>`).
// When there is none (no sources content, an anonymous function), the SDK's name stays.

/** A source path as people read it: `webpack://app/./src/a.js` → `src/a.js`. */
export function displayPath(source: string): string {
  return source
    .replace(/^webpack:\/\/[^/]*\//, '')
    .replace(/^[a-z][a-z0-9+.-]*:\/\/\/?/i, '')
    .replace(/^\/+(?=\.\.?\/)/, '')
    .replace(/^(\.\.?\/)+/, '')
    .replace(/\/\.(?=\/)/g, '');
}

/** The file fields of a mapped frame for a source of the map. */
export function frameFiles(source: string): { abs_path: string; filename: string } {
  return { abs_path: source, filename: displayPath(source) };
}

// Names that say nothing about the function (Sentry passes over them too).
const USELESS_NAMES = new Set(['', '?', '<anonymous>', 'anonymous', '__webpack_require__', '__webpack_modules__']);

/**
 * The minified function name a browser gives a frame, without the receiver Chrome puts
 * before it (`HTMLButtonElement.Is` → `Is`, `new Xs` → `Xs`); '' when it has none.
 */
export function minifiedName(sdkFunction: string | undefined): string {
  if (!sdkFunction) return '';
  const name = sdkFunction.replace(/^(?:new|async)\s+/, '').replace(/\s*\[as [^\]]*\]$/, '');
  const last = name.slice(name.lastIndexOf('.') + 1);
  return /^[A-Za-z_$][\w$]*$/.test(last) && !USELESS_NAMES.has(last) ? last : '';
}

const KEYWORDS = new Set([
  'if',
  'for',
  'while',
  'switch',
  'catch',
  'with',
  'return',
  'typeof',
  'new',
  'await',
  'yield',
  'super',
  'function',
]);

/** Offsets where the lines of a text start. */
export function lineStartsOf(content: string): number[] {
  const starts = [0];
  for (let i = content.indexOf('\n'); i >= 0; i = content.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

/** Offset of a 1-based line and column in a text (its line starts given, or found); -1 when outside it. */
function offsetOf(
  content: string,
  line: number,
  column: number,
  starts: readonly number[] = lineStartsOf(content),
): number {
  if (!(line >= 1 && line <= starts.length)) return -1;
  const offset = starts[line - 1];
  const end = line < starts.length ? starts[line] - 1 : content.length;
  const at = offset + column - 1;
  return column >= 1 && at <= end ? at : -1;
}

/** Index just after the `)` that closes the `(` at `open`; -1 when it does not close soon. */
function closeParen(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length && i < open + 2000; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i + 1;
  }
  return -1;
}

/**
 * Whether the original source defines a function named `name` at 1-based `line` and
 * `column`: a declaration or named expression (`function name(`), a method
 * (`name(…) {`), or a function assigned to a name or property (`name = (…) =>`,
 * `name: function`).
 */
export function definesFunctionAt(
  content: string,
  line: number,
  column: number,
  name: string,
  lineStarts?: readonly number[],
): boolean {
  if (!/^[A-Za-z_$][\w$]*$/.test(name)) return false;
  const at = offsetOf(content, line, column, lineStarts);
  if (at < 0 || content.slice(at, at + name.length) !== name) return false;
  if (/[\w$]/.test(content[at + name.length] ?? '') || /[\w$]/.test(content[at - 1] ?? '')) return false;
  const before = content.slice(Math.max(0, at - 40), at);
  if (/\bfunction\s*\*?\s*$/.test(before)) return true;
  const after = content.slice(at + name.length, at + name.length + 400);
  if (/^\s*[=:]\s*(?:async\s+)?(?:function\b|[A-Za-z_$][\w$]*\s*=>|\([^()]*\)\s*(?::[^=;{}()]*)?=>)/.test(after))
    return true;
  const call = /^\s*(?:<[^<>]*>)?\s*\(/.exec(after);
  if (call && !/(?:\.|\bnew\s+)\s*$/.test(before) && !KEYWORDS.has(name)) {
    const closed = closeParen(after, call[0].length - 1);
    if (closed > 0 && /^\s*(?::[^;{}=]*)?\{/.test(after.slice(closed))) return true;
  }
  return false;
}

/** One mapping of the minified file: where it starts there and the original it names. */
export interface NamedMapping {
  /** 1-based column in the minified line where the mapping starts. */
  column: number;
  /** Columns until the next mapping (the width of the minified token and what follows). */
  width: number;
  source: number;
  /** 1-based original line and column. */
  line: number;
  originalColumn: number;
  name: string;
}

/** Columns a definition's name token may be followed by before the next mapping (`(){`). */
const MAX_GAP_AFTER_NAME = 3;

/**
 * The original name of the function that encloses a frame: walks the mappings of the
 * frame's minified line backwards from the frame (`mappingsBefore`, nearest first) to the
 * first named one that is the definition of a function in the original source and is as
 * wide as the frame's minified name token (plus at most MAX_GAP_AFTER_NAME). null when none
 * is found.
 */
export function enclosingFunctionName(
  sdkFunction: string | undefined,
  mappingsBefore: Iterable<NamedMapping>,
  sourceContent: (source: number) => string | null,
): string | null {
  const minified = minifiedName(sdkFunction);
  if (minified === '') return null;
  // Each source's lines are found once, however many of its mappings are checked.
  const lineStarts = new Map<number, number[]>();
  for (const m of mappingsBefore) {
    // A minifier maps each name token on its own, and the next mapping starts right after
    // it (at a parameter, `(`, `=` or the body): a width far from the name's length is
    // another token, not the minified name.
    if (m.width < minified.length || m.width > minified.length + MAX_GAP_AFTER_NAME) continue;
    const content = sourceContent(m.source);
    if (content === null) continue;
    let starts = lineStarts.get(m.source);
    if (!starts) lineStarts.set(m.source, (starts = lineStartsOf(content)));
    if (definesFunctionAt(content, m.line, m.originalColumn, m.name, starts)) return m.name;
  }
  return null;
}

/** The function name a mapped frame shows: the enclosing function's original name, else the SDK's. */
export function mappedFunctionName(sdkFunction: string | undefined, enclosing: string | null): string | undefined {
  return enclosing !== null && !USELESS_NAMES.has(enclosing) ? enclosing : sdkFunction;
}

/** An original position a minified position maps to, as the loaded map looks it up. */
export type MapLookup = (
  line: number,
  column: number,
) => {
  source: number;
  line: number;
  column: number;
  name: string | null /** 1-based column where the segment starts, when known. */;
  generatedColumn?: number;
} | null;

/** How far back (columns of the minified line) the enclosing function's name is looked for, so a frame costs a bounded number of lookups; a longer function keeps the SDK's name. */
export const MAX_SCAN_COLUMNS = 4000;

/**
 * The named mappings of a minified line before a 1-based column, nearest first, found by
 * looking up each column backwards (at most `maxColumns` of them): a mapping starts where
 * the lookup's answer changes.
 */
export function* namedMappingsBefore(
  lookup: MapLookup,
  line: number,
  column: number,
  maxColumns = MAX_SCAN_COLUMNS,
): Generator<NamedMapping> {
  let current = lookup(line, column);
  let nextStart = column + 1;
  const stop = Math.max(1, column - maxColumns);
  const same = (a: ReturnType<MapLookup>, b: ReturnType<MapLookup>) =>
    a === b ||
    (a !== null &&
      b !== null &&
      a.source === b.source &&
      a.line === b.line &&
      a.column === b.column &&
      a.name === b.name);
  for (let c = column - 1; c >= stop - 1; c--) {
    // Every column from where the current segment starts maps as it does: skip to the one before.
    const starts = current?.generatedColumn;
    if (starts !== undefined && starts - 1 < c) c = Math.max(starts - 1, stop - 1);
    const here = c >= 1 ? lookup(line, c) : null;
    if (c >= 1 && same(here, current)) {
      // The same original position: one mapping, which may start further back.
      current = here;
      continue;
    }
    // `current` starts at c + 1.
    if (current !== null && current.name !== null && c + 1 < column) {
      yield {
        column: c + 1,
        width: nextStart - (c + 1),
        source: current.source,
        line: current.line,
        originalColumn: current.column,
        name: current.name,
      };
    }
    nextStart = c + 1;
    current = here;
  }
}
