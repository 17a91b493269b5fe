// Tests that run inside the Workers runtime (workerd) with the bindings of
// wrangler.jsonc: the D1 store driven from where it runs in production. A project of
// vitest.config.ts, so `npm test` runs them; alone: `npx vitest run --project workers`.
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  // cf: false: Miniflare would fetch a real request.cf from Cloudflare.
  plugins: [cloudflareTest({ wrangler: { configPath: './wrangler.jsonc' }, miniflare: { cf: false } })],
  test: {
    name: 'workers',
    include: ['test/editions/workers/runtime/**/*.test.ts'],
    testTimeout: 30_000,
    // cron-parser is CommonJS that requires luxon; pre-bundled (as the Worker's own bundle
    // is by esbuild) its require finds luxon's CommonJS build instead of the ES module.
    deps: { optimizer: { ssr: { enabled: true, include: ['cron-parser/dist/CronExpressionParser.js'] } } },
  },
});
