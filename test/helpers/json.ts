// Facts about parsed JSON values, computed without recursion (test inputs nest deeper
// than the call stack allows).

/** Depth of the deepest object or array (the root container is 1; a scalar is 0). */
export function depthOf(root: unknown): number {
  let max = 0;
  const stack: Array<[unknown, number]> = [[root, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    max = Math.max(max, d);
    for (const k of Object.keys(v)) stack.push([(v as Record<string, unknown>)[k], d + 1]);
  }
  return max;
}
