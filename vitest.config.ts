import os from 'node:os';
import { defineConfig } from 'vitest/config';

// Test files that need a process of their own: they read process-wide state that any
// earlier file in a shared worker would have changed. Every other node test file shares
// its worker's module cache (isolate: false), so the app is imported once per worker
// instead of once per file (that import was a third of the suite's time).
const OWN_PROCESS = [
  // The process's peak RSS (maxRSS) must reflect this test only.
  'test/ingest/decode-bomb.test.ts',
  // Counts the uses of the ingest write's text per process (src/store/pg-statements.ts).
  'test/editions/node/named-write.test.ts',
];

const node = {
  include: ['test/**/*.test.ts'],
  // Those run inside the Workers runtime (the workers project).
  exclude: ['test/editions/workers/runtime/**'],
  // Store tests create their own databases, so files can run in parallel safely.
  fileParallelism: true,
  pool: 'forks' as const,
};

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Files spend much of their time waiting on servers, child processes and databases, so
    // two run at once even on two cores (vitest's default is one fewer than the cores).
    maxWorkers: Math.max(2, os.availableParallelism() - 1),
    projects: [
      {
        extends: true,
        // Files may not mock modules, stub globals or leave process.env, fake timers or
        // spies changed: the next file in the worker would see it. OWN_PROCESS is for the rest.
        test: {
          ...node,
          name: 'node',
          exclude: [...node.exclude, ...OWN_PROCESS],
          isolate: false,
          // Collects the tests skipped for a missing machine tool into one line at the end
          // (the OWN_PROCESS files drive no tool).
          globalSetup: ['test/helpers/tools-setup.ts'],
        },
      },
      { extends: true, test: { ...node, name: 'node-own-process', include: OWN_PROCESS, isolate: true } },
      // The serverless edition's tests inside workerd (@cloudflare/vitest-pool-workers).
      './vitest.workers.config.ts',
    ],
  },
});
