#!/usr/bin/env bash
# The whole test suite, bootstrapping what it needs on a fresh machine:
# npm ci, Debian's chromium and git (when missing), the UI bundle; then fmt, lint,
# type check and every test with --parallel. Ends with one summary line.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
deno="$repo/node_modules/deno/deno"
export DENO_NO_UPDATE_CHECK=1

step() { printf '\n== %s\n' "$*"; }
fail() { printf '\nFAILED: %s\n' "$*"; echo "0 passed, 1 failed"; exit 1; }

step "dependencies"
# A symlinked node_modules is another checkout's install, shared: its age is not this lock's to judge
# (npm ci would replace the link and empty the shared directory under every checkout using it).
if [ ! -x "$deno" ] || [ ! -f node_modules/.package-lock.json ] ||
  { [ ! -L node_modules ] && [ package-lock.json -nt node_modules/.package-lock.json ]; }; then
  npm ci --no-audit --no-fund --loglevel=error || fail "npm ci"
fi
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null ||
      fail "apt-get install chromium"
  else
    fail "/usr/bin/chromium is missing (install Debian's chromium package)"
  fi
fi
# git: the file list below, and the runner's git status [CX-9] (tests/integration/git_status_test.ts).
if ! command -v git >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq git) >/dev/null ||
      fail "apt-get install git"
  else
    fail "git is missing (install Debian's git package)"
  fi
fi
"$deno" run --quiet -A tools/build/ui.ts || fail "UI bundle"
"$deno" run --quiet -A tools/build/worker.ts --if-stale --quiet || fail "worker bundle"

step "format, lint, type check"
"$deno" fmt --check || fail "deno fmt --check (run: node_modules/deno/deno fmt)"
"$deno" lint || fail "deno lint"
mapfile -t ts_files < <(git ls-files --cached --others --exclude-standard -- '*.ts' | sort)
"$deno" check --quiet "${ts_files[@]}" || fail "deno check"

step "tests"
# Where the kernel schedules the suite: CI starts it in the root task group (an empty
# /proc/self/autogroup), a shell in its own session's autogroup; sandboxes order themselves against
# either (docs/sandbox.md, tools/check/suite_in_root_group.sh).
if [ -e /proc/self/autogroup ]; then
  group="$(cat /proc/self/autogroup)"
  echo "scheduling: ${group:-the root task group (no autogroup)}, nice $(nice)"
fi
log="$(mktemp)"
# A test that hangs fails the run here, after 45 minutes (the suite takes 8–18 on 2 cores, as the
# machine's speed goes), instead of holding CI to its own limit of 90; `deno test` names what is
# still running every few minutes.
# shellcheck disable=SC2086
timeout --kill-after=30 2700 \
  "$deno" test --quiet --parallel -A ${TEST_FILTER:+--filter "$TEST_FILTER"} tests/ 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then echo "FAILED: the tests ran past 45 minutes (a test hangs)"; fi
summary=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^(ok|FAILED) \| [0-9]+ passed' | tail -1)
rm -f "$log"
passed=$(sed -E 's/.*\| ([0-9]+) passed.*/\1/' <<<"$summary")
failed=$(sed -E 's/.*\| ([0-9]+) failed.*/\1/' <<<"$summary")
[ -n "$passed" ] || passed=0
[ -n "$failed" ] || failed=0
if [ "$rc" -ne 0 ] && [ "$failed" = 0 ]; then failed=1; fi
echo
echo "${passed} passed, ${failed} failed"
exit "$rc"
