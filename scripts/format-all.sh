#!/usr/bin/env bash
# Formats every file Biome covers (biome.json: src, test, bench, the root's .ts files).
# Biome settles a few nested template literals only on a second pass, so it runs twice;
# the last call checks that nothing is left.
set -euo pipefail
cd "$(dirname "$0")/.."
npx biome format --write
npx biome format --write
npx biome format
