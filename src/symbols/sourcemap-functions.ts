// React Native function maps (docs/api.md "Symbolication", React Native Hermes): Metro
// writes `x_facebook_sources` into its source maps, one entry per `sources` entry (null,
// or a list whose first element is `{ names, mappings }`), and React Native's map
// composition keeps it. `mappings` lists where each function scope starts in the original
// source: segments of up to three VLQ numbers (column, name index, line; all deltas),
// separated by `,`, in groups separated by `;` that restart the column at 0; lines are
// 1-based. A frame's original position then takes the name of the last scope that starts
// at or before it — the name Hermes bytecode frames lack (minified or anonymous functions:
// `order.items.map$argument_0`). Pure functions over strings and typed arrays.

/** One source's function map: scope starts as (line, column, name index) triples, sorted. */
export interface FunctionMap {
  names: string[];
  starts: Int32Array;
}

const BASE64 = new Int8Array(128).fill(-1);
'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/'
  .split('')
  .forEach((c, i) => (BASE64[c.charCodeAt(0)] = i));

/** The VLQ numbers of one segment; null when it is not valid base64 VLQ. */
function vlqSegment(text: string): number[] | null {
  const out: number[] = [];
  let value = 0;
  let shift = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    const digit = code < 128 ? BASE64[code] : -1;
    if (digit < 0 || shift > 30) return null;
    value += (digit & 31) * 2 ** shift;
    if (digit & 32) {
      shift += 5;
      continue;
    }
    out.push(value & 1 ? -Math.floor(value / 2) : Math.floor(value / 2));
    value = 0;
    shift = 0;
  }
  return shift === 0 ? out : null;
}

/** Decodes one `{ names, mappings }` function map; null when it is malformed (then it is not used). */
export function decodeFunctionMap(entry: unknown): FunctionMap | null {
  if (typeof entry !== 'object' || entry === null) return null;
  const { names, mappings } = entry as { names?: unknown; mappings?: unknown };
  if (!Array.isArray(names) || !names.every((n) => typeof n === 'string') || typeof mappings !== 'string') return null;
  const starts: number[] = [];
  let line = 1;
  let name = 0;
  for (const group of mappings.split(';')) {
    let column = 0;
    for (const segment of group.split(',')) {
      if (segment === '') continue;
      const nums = vlqSegment(segment);
      if (!nums || nums.length === 0 || nums.length > 3) return null;
      column += nums[0];
      name += nums[1] ?? 0;
      line += nums[2] ?? 0;
      if (column < 0 || line < 1 || name < 0 || name >= names.length) return null;
      const n = starts.length;
      // Scopes come in source order; one out of order means the map is not what Metro writes.
      if (n > 0 && (starts[n - 3] > line || (starts[n - 3] === line && starts[n - 2] > column))) return null;
      starts.push(line, column, name);
    }
  }
  return { names: names as string[], starts: Int32Array.from(starts) };
}

/** The function maps of a map's sources (by index; null where a source has none or it is malformed). */
export function functionMapsOf(xFacebookSources: unknown, sourceCount: number): (FunctionMap | null)[] | null {
  if (!Array.isArray(xFacebookSources)) return null;
  const maps: (FunctionMap | null)[] = [];
  for (let i = 0; i < sourceCount; i++) {
    const entry: unknown = xFacebookSources[i];
    maps.push(Array.isArray(entry) ? decodeFunctionMap(entry[0]) : null);
  }
  return maps.some((m) => m !== null) ? maps : null;
}

/** The name of the scope enclosing a 1-based line and 0-based column of the original source; null before the first. */
export function functionNameAt(map: FunctionMap, line: number, column: number): string | null {
  const s = map.starts;
  let lo = 0;
  let hi = s.length / 3 - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const l = s[mid * 3];
    if (l < line || (l === line && s[mid * 3 + 1] <= column)) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return found < 0 ? null : (map.names[s[found * 3 + 2]] ?? null);
}
