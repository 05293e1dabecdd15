#!/usr/bin/env bash
# Runs INSIDE the sched_ext guest (scripts/run): a mixed load, and the
# scheduler with a stats line per second, for DEMO_SECS seconds.
set -uo pipefail

SECS=${DEMO_SECS:-20}
sched=$(pwd)/target/release/scx_fastpath
cd /tmp || exit 1

n=$(nproc)
echo "demo: $n CPUs; load: $n CPU hogs, one hog pinned to CPU 0, a pipe ping-pong; ${SECS} s"
stress-ng --cpu "$n" --timeout "$((SECS + 5))s" --quiet &
taskset -c 0 stress-ng --cpu 1 --timeout "$((SECS + 5))s" --quiet &
stress-ng --pipe 1 --timeout "$((SECS + 5))s" --quiet &

"$sched" --stats 1 "$@" &
pid=$!
sleep "$SECS"
echo "demo: sched_ext state $(cat /sys/kernel/sched_ext/state), ops $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
kill -INT "$pid"
wait "$pid"
rc=$?
wait
echo "demo: scheduler exited with $rc; sched_ext state now $(cat /sys/kernel/sched_ext/state)"
exit "$rc"
