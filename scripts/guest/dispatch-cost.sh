#!/usr/bin/env bash
# Runs INSIDE the sched_ext guest: what each scx_fastpath callback costs in
# BPF nanoseconds per call (the kernel's bpf_stats: run_time_ns / run_cnt
# of each struct_ops program), under the same load per CPU whatever the
# guest's size: a half-busy CPU hog per CPU (stress-ng --cpu-load 50, so
# that CPUs run dry and look for work) and a pipe pair per two CPUs.
#
# SCHEDS="NAME=PATH ..." are the builds to compare, run in turn, ROUNDS
# rounds of SECS seconds each. Prints one line per build, round and
# callback: "cost NAME ROUND CALLBACK CALLS NS_PER_CALL".
# Usage: scripts/vm --cpus N -- scripts/guest/dispatch-cost.sh
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

SCHEDS=${SCHEDS:-fastpath=$SCHED}
ROUNDS=${ROUNDS:-3}
SECS=${SECS:-8}
n=$(nproc)

# The struct_ops programs of the scheduler attached now, as "CALLBACK CALLS
# RUN_TIME_NS" lines (callback: the program's name without "fastpath_";
# bpftool shows at most 15 characters of it).
prog_stats() {
	bpftool -j prog show | jq -r '.[] | select(.type == "struct_ops")
		| select(.name | startswith("fastpath_"))
		| "\(.name | ltrimstr("fastpath_")) \(.run_cnt // 0) \(.run_time_ns // 0)"'
}

sysctl -q -w kernel.bpf_stats_enabled=1 || { echo "cannot enable bpf_stats"; exit 1; }
# The LLCs: the distinct CPU sets that share a CPU's last cache level.
llcs=$(for c in /sys/devices/system/cpu/cpu[0-9]*/cache; do
	last=$(find "$c" -maxdepth 1 -name 'index*' | sort -V | tail -n 1)
	cat "$last/shared_cpu_list"
done | sort -u | wc -l)
echo "guest: kernel $(uname -r), $n vCPUs, $llcs LLCs; load: $n hogs at 50%, $((n / 2 > 0 ? n / 2 : 1)) pipe pairs, $SECS s"
for r in $(seq "$ROUNDS"); do
	for s in $SCHEDS; do
		name=${s%%=*} SCHED=${s#*=}
		# shellcheck disable=SC2119 # the scheduler's defaults
		start_sched >/dev/null || exit 1
		sleep 1
		before=$(prog_stats)
		stress-ng --temp-path "$WORK" --cpu "$n" --cpu-load 50 \
			--pipe $((n / 2 > 0 ? n / 2 : 1)) --timeout "${SECS}s" --quiet
		after=$(prog_stats)
		join <(sort <<<"$before") <(sort <<<"$after") |
			awk -v name="$name" -v r="$r" '{
				calls = $4 - $2; ns = $5 - $3
				if (calls > 0)
					printf "cost %s %d %s %d %.0f\n", name, r, $1, calls, ns / calls
			}'
		cleanup_sched
	done
done
sysctl -q -w kernel.bpf_stats_enabled=0
