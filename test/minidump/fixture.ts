// The committed Breakpad fixtures (test/fixtures/breakpad, rebuilt by `npm run fixtures`):
// a real minidump of a crashing program with Breakpad's client, its .sym, and what
// minidump_stackwalk answers about it.
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const BREAKPAD_FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/breakpad');

const TRUST: Record<string, string> = {
  'given as instruction pointer in context': 'context',
  'call frame info': 'cfi',
  "previous frame's frame pointer": 'fp',
  'stack scanning': 'scan',
};

/** minidump_stackwalk's full report → per thread, [address, trust] of each frame. */
export function stackwalkThreads(report: string): Array<Array<[string, string]>> {
  const threads: Array<Array<[string, string]>> = [];
  let pc = '';
  for (const line of report.split('\n')) {
    if (/^Thread \d+/.test(line)) threads.push([]);
    else if (line.startsWith('Loaded modules:')) break;
    const rip = /\b(?:rip|pc|eip) = (0x[0-9a-f]+)/.exec(line);
    if (rip) pc = `0x${BigInt(rip[1]).toString(16)}`;
    const found = /Found by: (.*)$/.exec(line);
    if (found) threads[threads.length - 1].push([pc, TRUST[found[1]] ?? found[1]]);
  }
  return threads;
}
