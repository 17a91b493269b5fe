// The machine tools some tests drive (Chromium, clang/lld/llvm, ProGuard, a JDK), found the
// same way for every test file. A test file that needs a missing one skips those tests
// (`describe.skipIf(lacks('chromium'))`) and records the skip, so the run ends with one line
// naming what is missing and how to install it (tools-setup.ts); FAULTLINE_REQUIRE_TOOLS=1
// (set by CI) turns a missing tool into a failure instead. Everything else the tests need
// from these tools is committed under test/fixtures/ (`npm run fixtures` rebuilds it).
import fs from 'node:fs';
import path from 'node:path';

export type Tool = 'chromium' | 'clang' | 'proguard' | 'java';

/** The Chromium the browser tests launch (Debian's package unless CHROMIUM_PATH names another). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Where tests record the tools they skipped for; set by tools-setup.ts for the run. */
export const SKIPS_DIR_ENV = 'FAULTLINE_TOOL_SKIPS_DIR';

interface ToolNeeds {
  /** Commands found on the PATH, also as Debian's versioned names (`ld64.lld-14`). */
  commands: string[];
  files: string[];
  /** The Debian packages that provide it. */
  packages: string;
}

const NEEDS: Record<Tool, ToolNeeds> = {
  chromium: { commands: [], files: [CHROMIUM], packages: 'chromium' },
  clang: {
    commands: [
      'clang',
      'clang++',
      'ld64.lld',
      'ld.lld',
      'dsymutil',
      'llvm-lipo',
      'llvm-symbolizer',
      'llvm-dwarfdump',
      'llvm-objdump',
      'llvm-nm',
      'llvm-objcopy',
    ],
    files: [],
    packages: 'clang lld llvm',
  },
  proguard: { commands: ['proguard'], files: ['/usr/share/java/retrace.jar'], packages: 'proguard-cli' },
  java: { commands: ['java', 'javac', 'jar'], files: [], packages: 'default-jdk-headless' },
};

function onPath(name: string): boolean {
  const versioned = new RegExp(`^${name.replace(/[.+]/g, '\\$&')}-\\d+$`);
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    try {
      if (fs.readdirSync(dir).some((entry) => entry === name || versioned.test(entry))) return true;
    } catch {
      // A PATH entry that does not exist.
    }
  }
  return false;
}

const found = new Map<Tool, boolean>();

export function hasTool(tool: Tool): boolean {
  let ok = found.get(tool);
  if (ok === undefined) {
    ok = NEEDS[tool].commands.every(onPath) && NEEDS[tool].files.every((f) => fs.existsSync(f));
    found.set(tool, ok);
  }
  return ok;
}

export function installCommand(tools: Tool[]): string {
  return `apt-get install ${tools.map((t) => NEEDS[t].packages).join(' ')}`;
}

/**
 * True when one of `tools` is missing, so the tests needing it skip; the skip is recorded
 * for the run's summary line. Throws instead when FAULTLINE_REQUIRE_TOOLS=1.
 */
export function lacks(...tools: Tool[]): boolean {
  const missing = tools.filter((t) => !hasTool(t));
  if (missing.length === 0) return false;
  if (process.env.FAULTLINE_REQUIRE_TOOLS === '1') {
    throw new Error(`FAULTLINE_REQUIRE_TOOLS=1 and ${missing.join(', ')} missing: ${installCommand(missing)}`);
  }
  const dir = process.env[SKIPS_DIR_ENV];
  if (dir) for (const t of missing) fs.writeFileSync(path.join(dir, t), '');
  return true;
}

/** The tools recorded as skipped in `dir`, in a stable order. */
export function skippedTools(dir: string): Tool[] {
  const names = new Set(fs.existsSync(dir) ? fs.readdirSync(dir) : []);
  return (Object.keys(NEEDS) as Tool[]).filter((t) => names.has(t));
}
