// A real obfuscated Java program: compiled with `javac --release 8`, obfuscated by
// ProGuard 6 (with optimisation, so methods get inlined), run to get its real stack
// trace, and that trace retraced by ProGuard's own retrace.jar for comparison.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const SOURCE = `package com.example.app;

public class Main {
    public static void main(String[] args) {
        new Main().run(args.length);
    }

    void run(int n) {
        Repository repository = new Repository();
        repository.load(n + 1);
    }
}

class Repository {
    private final Parser parser = new Parser();

    void load(int n) {
        String input = "item-" + n;
        parser.parse(input);
    }

    void unused() {
        System.out.println("never called");
    }
}

class Parser {
    int parse(String s) {
        return validate(s) ? 1 : 0;
    }

    boolean validate(String s) {
        if (s.length() > 3) {
            throw new InvalidInputException("bad input: " + s);
        }
        return true;
    }
}

class InvalidInputException extends RuntimeException {
    InvalidInputException(String message) {
        super(message);
    }
}
`;

// ProGuard 6 cannot read the JDK 17 runtime's class files, so it runs without library
// jars (warnings ignored); the program only uses java.lang.
const RULES = `-injars in.jar
-outjars out.jar
-ignorewarnings
-printmapping mapping.txt
-keep public class com.example.app.Main { public static void main(java.lang.String[]); }
-keepattributes SourceFile,LineNumberTable
-renamesourcefileattribute SourceFile
`;

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

export function buildJavaFixture(): JavaFixture {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-java-'));
  fs.mkdirSync(path.join(dir, 'src'));
  fs.writeFileSync(path.join(dir, 'src', 'Main.java'), SOURCE);
  execFileSync('javac', ['--release', '8', '-d', 'classes', 'src/Main.java'], { cwd: dir, stdio: 'pipe' });
  execFileSync('jar', ['cf', 'in.jar', '-C', 'classes', '.'], { cwd: dir, stdio: 'pipe' });
  fs.writeFileSync(path.join(dir, 'rules.pro'), RULES);
  execFileSync('proguard', ['@rules.pro'], { cwd: dir, stdio: 'pipe' });
  const run = spawnSync('java', ['-cp', 'out.jar', 'com.example.app.Main'], { cwd: dir, encoding: 'utf8' });
  const trace = run.stderr;
  fs.writeFileSync(path.join(dir, 'trace.txt'), trace);
  const retraced = execFileSync('java', ['-jar', '/usr/share/java/retrace.jar', 'mapping.txt', 'trace.txt'], { cwd: dir, encoding: 'utf8' });
  const obf = parseTrace(trace);
  const orig = parseTrace(retraced);
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
export function javaEvent(fx: JavaFixture, opts: { release: string; proguardUuid?: string; timestamp?: number }): Record<string, unknown> {
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
