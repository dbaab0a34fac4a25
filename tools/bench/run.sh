#!/usr/bin/env bash
# `deno task bench` [PF-6]: runs every benchmark under tools/bench/ (each *_bench.ts prints its
# own report), then prints one table (measure, value, goal, ratio) and writes bench-results.json.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
deno="$repo/node_modules/deno/deno"
export DENO_NO_UPDATE_CHECK=1
# Like the launcher and the test command, a fresh checkout works: npm dependencies when missing or
# stale, and the UI bundle the servers under benchmark serve (they refuse to start without it).
# A symlinked node_modules is another checkout's install, shared: its age is not this lock's to judge
# (npm ci would replace the link and empty the shared directory under every checkout using it).
if [ ! -x "$deno" ] || [ ! -f node_modules/.package-lock.json ] ||
  { [ ! -L node_modules ] && [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
"$deno" run --quiet --allow-read="$repo" --allow-write="$repo" --allow-run="$repo/node_modules/.bin/esbuild" \
  --allow-env --no-prompt tools/build/ui.ts --if-stale --quiet
# [PF-3] grep_bench compares file/grep with `rg -j1` in the same run: install Debian's ripgrep
# when missing (as root with apt-get); without it that ratio is left out, nothing else changes.
if ! command -v rg >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq ripgrep >/dev/null 2>&1 ||
    echo "ripgrep could not be installed: the grep ÷ rg ratio is left out" >&2
fi
exec "$deno" run --config deno.json -A tools/bench/table.ts "$@"
