#!/usr/bin/env bash
# `deno task bench` [PF-6]: runs every benchmark under tools/bench/ (each *_bench.ts prints its
# own report), then prints one table (measure, value, goal, ratio) and writes bench-results.json.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
# [PF-3] grep_bench compares file/grep with `rg -j1` in the same run: install Debian's ripgrep
# when missing (as root with apt-get); without it that ratio is left out, nothing else changes.
if ! command -v rg >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep >/dev/null 2>&1 ||
    echo "ripgrep could not be installed: the grep ÷ rg ratio is left out" >&2
fi
exec node_modules/deno/deno run --config deno.json -A tools/bench/table.ts "$@"
