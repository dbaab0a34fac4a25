#!/usr/bin/env bash
# The suite must never flake [#14]: runs the whole test command N times in a row (default 3) while
# CPU-bound busy loops run beside it (default one per core, same priority as the suite), and stops
# at the first red run. Each run's summary line and wall time go to stdout; the full logs are kept
# in a temporary directory named at the end.
#   bash tools/check/suite_under_load.sh [RUNS] [BUSY_LOOPS]
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
runs="${1:-3}"
busy="${2:-$(nproc)}"
logs="$(mktemp -d)"

pids=()
stop_load() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  wait 2>/dev/null
}
trap stop_load EXIT
for _ in $(seq 1 "$busy"); do
  # A shell spinning in a loop: pure user CPU, no I/O, no memory.
  bash -c 'while :; do :; done' &
  pids+=("$!")
done
echo "load: ${busy} busy loop(s) beside the suite on $(nproc) core(s)"

for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  bash tools/test.sh >"$logs/run-$i.log" 2>&1
  rc=$?
  secs=$(($(date +%s) - start))
  read -r load1 _ </proc/loadavg
  echo "run $i: $(tail -1 "$logs/run-$i.log") in ${secs} s (1-minute load average at the end ${load1})"
  if [ "$rc" -ne 0 ]; then
    echo "run $i is red: see $logs/run-$i.log"
    exit 1
  fi
done
echo "all ${runs} runs passed under load (logs: $logs)"
