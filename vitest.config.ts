import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Store tests create their own databases, so files can run in parallel safely.
    fileParallelism: true,
    pool: 'forks',
  },
});
