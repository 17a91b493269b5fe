import os from 'node:os';
import { defineConfig } from 'vitest/config';

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
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          // Those run inside the Workers runtime (the project below).
          exclude: ['test/editions/workers/runtime/**'],
          // Store tests create their own databases, so files can run in parallel safely.
          fileParallelism: true,
          pool: 'forks',
          // Collects the tests skipped for a missing machine tool into one line at the end.
          globalSetup: ['test/helpers/tools-setup.ts'],
        },
      },
      // The serverless edition's tests inside workerd (@cloudflare/vitest-pool-workers).
      './vitest.workers.config.ts',
    ],
  },
});
