#!/usr/bin/env bash
# Runs INSIDE the sched_ext guest: wakeup latency of a 1 ms periodic
# SCHED_OTHER sleeper (cyclictest) against nproc and 2 x nproc CPU hogs,
# under the default scheduler and under scx_fastpath, alternating, for
# ROUNDS rounds. Usage: scripts/vm -- scripts/guest/latency.sh [SCHED ARGS]
set -uo pipefail

sched=$(pwd)/target/release/scx_fastpath
cd /tmp || exit 1
n=$(nproc)

measure() {
	local label=$1 hogs=$2 avg
	stress-ng --cpu "$hogs" --timeout 12s --quiet &
	local sp=$!
	sleep 1
	avg=$(cyclictest --policy=other -i 1000 -D 8 -q -t 1 2>/dev/null | sed -n 's/.*Avg: *\([0-9]*\) Max: *\([0-9]*\).*/avg \1 us, max \2 us/p')
	wait "$sp"
	printf '%-10s %2d hogs: %s\n' "$label" "$hogs" "$avg"
}

for r in $(seq "${ROUNDS:-2}"); do
	echo "round $r"
	measure default "$n"
	measure default $((2 * n))
	"$sched" "$@" >/tmp/latency-sched.log 2>&1 &
	pid=$!
	while [ "$(cat /sys/kernel/sched_ext/state)" != enabled ]; do sleep 0.2; done
	measure fastpath "$n"
	measure fastpath $((2 * n))
	kill -INT "$pid"
	wait "$pid"
	while [ "$(cat /sys/kernel/sched_ext/state)" != disabled ]; do sleep 0.2; done
done
