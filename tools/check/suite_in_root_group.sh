#!/usr/bin/env bash
# Runs the whole test command on a fresh clone of HEAD the way CI starts it: from an init that
# never started a session, so the suite sits in the kernel's root task group — no autogroup, an
# empty /proc/self/autogroup, session id 0. A shell here has its own session (autogroup), so it
# cannot show that difference: release 0.2's first submission passed every run from a shell and
# failed in CI with every Worker refused (docs/sandbox.md, "Autogroups").
#
# How: the kernel runs a core-pattern helper as a child of a kernel worker, in the root task group.
# This script points kernel.core_pattern at a helper for the moment of one deliberate crash (a
# `sleep` killed by SIGSEGV), then puts the old pattern back at once, so no crash of the suite
# itself reaches the helper. Root only; it changes kernel.core_pattern for about a second.
#   bash tools/check/suite_in_root_group.sh
# Prints the run's summary line, its wall time and where the suite's autogroup file stood; keeps
# the log in a temporary directory named at the end. The helper gets this shell's environment.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
[ "$(id -u)" = 0 ] || {
  echo "root only (kernel.core_pattern)"
  exit 2
}
work="$(mktemp -d)"
# Searchable like any checkout: the sandboxes' unprivileged uid runs the toolchain from the clone.
chmod 0755 "$work"
git clone -q "$repo" "$work/clone" || exit 1
(umask 077 && export -p >"$work/env.sh")
cat >"$work/job.sh" <<EOF
#!/usr/bin/env bash
# Started by the kernel as a core-pattern helper: the dump arrives on stdin and is dropped.
exec 0</dev/null
(
  . "$work/env.sh"
  cd "$work/clone" || exit 1
  echo "autogroup=[\$(cat /proc/self/autogroup)] session=\$(ps -o sid= -p \$BASHPID | tr -d ' ')" >"$work/place"
  start=\$(date +%s)
  CI=true bash .ci/run >"$work/run.log" 2>&1 </dev/null
  echo "rc=\$? secs=\$((\$(date +%s) - start))" >"$work/done"
) >/dev/null 2>&1 &
exit 0
EOF
chmod 0700 "$work/job.sh"

old_pattern="$(cat /proc/sys/kernel/core_pattern)"
restore() { printf '%s\n' "$old_pattern" >/proc/sys/kernel/core_pattern; }
trap restore EXIT
printf '|%s\n' "$work/job.sh" >/proc/sys/kernel/core_pattern
bash -c 'ulimit -c unlimited; sleep 60 & kill -SEGV $!; wait' 2>/dev/null
restore
trap - EXIT

for _ in $(seq 1 100); do [ -s "$work/place" ] && break; sleep 0.1; done
[ -s "$work/place" ] || {
  echo "the helper did not start (is kernel.core_pattern writable here?)"
  exit 1
}
echo "suite started in the root task group: $(cat "$work/place")"
while [ ! -s "$work/done" ]; do sleep 5; done
echo "$(tail -1 "$work/run.log") ($(cat "$work/done"); log: $work/run.log)"
grep -q '^rc=0 ' "$work/done"
