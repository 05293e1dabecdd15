#!/usr/bin/env bash
# Runs INSIDE the sched_ext guest (scripts/run): a mixed load, and the
# scheduler with a stats line per second, for DEMO_SECS seconds or until the
# scheduler exits, whichever comes first. Arguments go to the scheduler; a
# --stats among them (--stats N or --stats=N) replaces the demo's --stats 1.
# Exits with the scheduler's status.
set -uo pipefail

SECS=${DEMO_SECS:-20}
sched=$(pwd)/target/release/scx_fastpath
cd /tmp || exit 1

stats=(--stats 1)
for a in "$@"; do
	case $a in
	--) break ;;
	--stats | --stats=*) stats=() ;;
	esac
done

n=$(nproc)
echo "demo: $n CPUs; load: $n CPU hogs, one hog pinned to CPU 0, a pipe ping-pong; ${SECS} s"
loads=()
stress-ng --cpu "$n" --timeout "$((SECS + 5))s" --quiet &
loads+=($!)
taskset -c 0 stress-ng --cpu 1 --timeout "$((SECS + 5))s" --quiet &
loads+=($!)
stress-ng --pipe 1 --timeout "$((SECS + 5))s" --quiet &
loads+=($!)

start=$SECONDS
"$sched" "${stats[@]}" "$@" &
pid=$!
# Poll rather than sleep the whole time: a scheduler that exits early (bad
# arguments, failed to attach, ejected by the kernel) ends the demo at once.
while [ $((SECONDS - start)) -lt "$SECS" ] && kill -0 "$pid" 2>/dev/null; do
	sleep 0.5
done
if kill -0 "$pid" 2>/dev/null; then
	echo "demo: sched_ext state $(cat /sys/kernel/sched_ext/state), ops $(cat /sys/kernel/sched_ext/root/ops 2>/dev/null)"
	kill -INT "$pid"
else
	echo "demo: the scheduler exited after $((SECONDS - start)) s, before the demo's ${SECS} s were up"
fi
wait "$pid"
rc=$?
kill "${loads[@]}" 2>/dev/null
wait
echo "demo: scheduler exited with status $rc; sched_ext state now $(cat /sys/kernel/sched_ext/state)"
exit "$rc"
