// The type-aware lint: a few typescript-eslint rules that need the type checker and
// catch real bugs (a promise nobody awaits, a promise where a value or a callback's
// void is expected, an await on what is no promise). Biome (biome.json) keeps every
// other rule. `npm run lint` runs both; install this folder once: npm ci --prefix tools/lint
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export default tseslint.config(
  { ignores: ['**/dist/**', 'test/fixtures/**', '**/node_modules/**', '.wrangler/**'] },
  {
    files: ['src/**/*.ts', 'test/**/*.ts', 'bench/**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: path.join(root, 'tsconfig.json'), tsconfigRootDir: root },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': ['error', { ignoreVoid: true }],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
    },
  },
);
