#!/usr/bin/env bash
# The type-aware lint (tools/lint/eslint.config.mjs): installs tools/lint on first use
# (it carries its own TypeScript, see tools/lint/package.json), then lints src, test and
# bench. A cache in node_modules/.cache/eslint makes a rerun check only changed files.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ ! -x tools/lint/node_modules/.bin/eslint ]]; then
  npm ci --prefix tools/lint --ignore-scripts --no-audit --no-fund
fi
exec tools/lint/node_modules/.bin/eslint -c tools/lint/eslint.config.mjs \
  --cache --cache-location node_modules/.cache/eslint/ --cache-strategy content "$@" src test bench
