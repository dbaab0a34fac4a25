#!/usr/bin/env bash
# Runs every benchmark under tools/bench/ (each *_bench.ts prints its own report).
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
shopt -s nullglob
for b in tools/bench/*_bench.ts; do
  echo "== $b"
  node_modules/deno/deno run --config deno.json -A "$b"
done
