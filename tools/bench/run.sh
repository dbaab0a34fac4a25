#!/usr/bin/env bash
# `deno task bench` [PF-6]: runs every benchmark under tools/bench/ (each *_bench.ts prints its
# own report), then prints one table (measure, value, goal, ratio) and writes bench-results.json.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
exec node_modules/deno/deno run --config deno.json -A tools/bench/table.ts "$@"
