// Global setup of the node test project: a folder where test files record the tools they
// skipped for (test/helpers/tools.ts), and at the end of the run one line naming them and
// the command that installs them.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { installCommand, SKIPS_DIR_ENV, skippedTools } from './tools.js';

export default function setup(): () => void {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'faultline-tool-skips-'));
  process.env[SKIPS_DIR_ENV] = dir;
  return () => {
    const skipped = skippedTools(dir);
    fs.rmSync(dir, { recursive: true, force: true });
    if (skipped.length > 0) {
      console.log(
        `\nSkipped the tests that need ${skipped.join(', ')} (not installed): ${installCommand(skipped)} runs them; FAULTLINE_REQUIRE_TOOLS=1 fails instead.`,
      );
    }
  };
}
