// A real obfuscated Java program, committed under test/fixtures/java (`npm run fixtures`
// rebuilds it): src/Main.java compiled with `javac --release 8`, obfuscated by ProGuard 6
// (with optimisation, so methods get inlined; rules.pro), run to get its real stack trace
// (trace.txt), and that trace retraced by ProGuard's own retrace.jar (retraced.txt).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const JAVA_FIXTURES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/java');

export interface JavaFrame {
  module: string;
  function: string;
  filename: string;
  lineno: number;
}

export interface JavaFixture {
  dir: string;
  mapping: Buffer;
  /** The obfuscated trace as the JVM printed it. */
  trace: string;
  exceptionType: string;
  exceptionValue: string;
  /** Innermost first, as the JVM prints them. */
  frames: JavaFrame[];
  /** retrace.jar's answer: exception class and frames, innermost first. */
  retracedType: string;
  retracedFrames: JavaFrame[];
}

const AT = /^\s+at ([\w.$]+)\.([\w$<>]+)\(([^:)]*)(?::(\d+))?\)/;

function parseTrace(text: string): { type: string; value: string; frames: JavaFrame[] } {
  const lines = text.split('\n');
  const head = /^Exception in thread "[^"]*" ([\w.$]+): (.*)$/.exec(lines[0])!;
  const frames: JavaFrame[] = [];
  for (const line of lines.slice(1)) {
    const m = AT.exec(line);
    if (m) frames.push({ module: m[1], function: m[2], filename: m[3], lineno: Number(m[4] ?? 0) });
  }
  return { type: head[1], value: head[2], frames };
}

/**
 * The fixture read from `root` (the committed one, or a fresh build's), copied into a
 * temporary `dir` the caller may write in and remove.
 */
export function buildJavaFixture(root = JAVA_FIXTURES): JavaFixture {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-java-'));
  for (const name of ['mapping.txt', 'trace.txt', 'retraced.txt', 'out.jar'])
    fs.copyFileSync(path.join(root, name), path.join(dir, name));
  const trace = fs.readFileSync(path.join(dir, 'trace.txt'), 'utf8');
  const obf = parseTrace(trace);
  const orig = parseTrace(fs.readFileSync(path.join(dir, 'retraced.txt'), 'utf8'));
  return {
    dir,
    mapping: fs.readFileSync(path.join(dir, 'mapping.txt')),
    trace,
    exceptionType: obf.type,
    exceptionValue: obf.value,
    frames: obf.frames,
    retracedType: orig.type,
    retracedFrames: orig.frames,
  };
}

/** The event the Sentry Java SDK sends for the trace: type and package split, frames oldest first. */
export function javaEvent(
  fx: JavaFixture,
  opts: { release: string; proguardUuid?: string; timestamp?: number },
): Record<string, unknown> {
  const dot = fx.exceptionType.lastIndexOf('.');
  return {
    platform: 'java',
    level: 'error',
    release: opts.release,
    ...(opts.timestamp ? { timestamp: opts.timestamp / 1000 } : {}),
    exception: {
      values: [
        {
          type: fx.exceptionType.slice(dot + 1),
          module: fx.exceptionType.slice(0, dot),
          value: fx.exceptionValue,
          mechanism: { type: 'UncaughtExceptionHandler', handled: false },
          stacktrace: { frames: [...fx.frames].reverse().map((f) => ({ ...f, in_app: true })) },
        },
      ],
    },
    ...(opts.proguardUuid ? { debug_meta: { images: [{ type: 'proguard', uuid: opts.proguardUuid }] } } : {}),
  };
}
