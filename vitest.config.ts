import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          // Those run inside the Workers runtime (the project below).
          exclude: ['test/workers-runtime/**'],
          // Store tests create their own databases, so files can run in parallel safely.
          fileParallelism: true,
          pool: 'forks',
        },
      },
      // The serverless edition's tests inside workerd (@cloudflare/vitest-pool-workers).
      './vitest.workers.config.ts',
    ],
  },
});
