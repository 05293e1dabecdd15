#!/usr/bin/env bash
# Runs INSIDE the sched_ext guest: wakeup latency of a 1 ms periodic
# SCHED_OTHER sleeper (cyclictest) against nproc and 2 x nproc CPU hogs,
# under the default scheduler and under scx_fastpath, alternating, for
# ROUNDS rounds. Usage: scripts/vm -- scripts/guest/latency.sh [SCHED ARGS]
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
n=$(nproc)

measure() {
	local label=$1 hogs=$2 avg sp
	stress-ng --temp-path "$WORK" --cpu "$hogs" --timeout 12s --quiet &
	sp=$!
	sleep 1
	avg=$(cyclictest --policy=other -i 1000 -D 8 -q -t 1 2>/dev/null | sed -n 's/.*Avg: *\([0-9]*\) Max: *\([0-9]*\).*/avg \1 us, max \2 us/p')
	wait "$sp"
	printf '%-10s %2d hogs: %s\n' "$label" "$hogs" "$avg"
}

for r in $(seq "${ROUNDS:-2}"); do
	echo "round $r"
	measure default "$n"
	measure default $((2 * n))
	start_sched "$@" || exit 1
	measure fastpath "$n"
	measure fastpath $((2 * n))
	cleanup_sched
done
