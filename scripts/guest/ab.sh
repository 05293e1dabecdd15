#!/usr/bin/env bash
# Same-guest A/B of scx_fastpath variants against the default scheduler,
# with the causes beside the throughput: per workload, its result, context
# switches per second (/proc/stat), idle ticks, rescheduling and
# function-call IPIs (/proc/interrupts), and each variant's non-zero
# counters (first round). Quicker than scripts/bench for trying a policy
# change; not a benchmark (no noise floor, few rounds). Run as
#   scripts/vm -- scripts/guest/ab.sh
# with, as --env:
#   VARIANTS  "NAME=BINARY ARGS|NAME=BINARY ARGS" (default fastpath=target/release/scx_fastpath);
#             a BINARY not named scx_fastpath is a peer, run without stats
#   W         "WORKLOAD N;..." where WORKLOAD is a stress-ng stressor (N
#             instances, ops/s) or hbpipe, hbsock (hackbench seconds),
#             perfpipe (perf bench sched pipe us/op), cyclic (cyclictest
#             average latency in us against 2 hogs), forksleep (seconds for
#             32 children a CPU to sleep 1 ms N times each, scripts/bench.d),
#             epoll (perf bench epoll wait ops/s, N unpinned waiters a CPU);
#             N is ignored for the others
#   FORKSLEEP the forksleep binary (scripts/bench builds it into its cache)
#   T         seconds per stress-ng run (default 4); R rounds (default 2)
#   COST      1: turn on kernel.bpf_stats_enabled and print, after each
#             variant's run, each of its struct_ops programs' calls and ns
#             a call over that run (lines "COST NAME WORKLOAD-xN PROG
#             calls=C ns/call=N"; from lib.sh's bpf_snapshot, as
#             scripts/bench's cost table; bpf_stats' own clock reads are
#             in the figures)
# Lines "RES NAME WORKLOAD-xN value=V ..." are for scripts/ab-report.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

ctxt() { awk '/^ctxt/ {print $2}' /proc/stat; }
idle_ticks() { awk '/^cpu / {print $5}' /proc/stat; }
# Rescheduling and function-call IPIs, summed over CPUs.
ipis() {
	awk '/RES:|CAL:/ {s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; printf "%d ", s}' /proc/interrupts
}

W=${W:-"switch 1;yield 1;tee 1;futex 2;tee 2"}
T=${T:-4}

# One run of workload $2 ($3 instances) under whatever is loaded, as $1.
one() {
	local tag=$1 w=$2 n=$3 r c0 c1 i0 i1 d0 d1 hog
	c0=$(ctxt) i0=$(ipis) d0=$(idle_ticks)
	case $w in
	hbpipe) r=$({ /usr/bin/time -f %e hackbench -p -g 2 -l 50 >/dev/null; } 2>&1 | tail -n 1) ;;
	hbsock) r=$({ /usr/bin/time -f %e hackbench -g 2 -l 50 >/dev/null; } 2>&1 | tail -n 1) ;;
	perfpipe) r=$(perf bench sched pipe -l 5000 | awk '/usecs\/op/ {print $1}') ;;
	epoll) r=$(perf bench epoll wait -n -t $(($(nproc) * n)) -r "$T" | awk '/Averaged/ {print $2}') ;;
	forksleep) r=$("${FORKSLEEP:?FORKSLEEP is not set}" $(($(nproc) * 32)) "$n" | awk '/^seconds/ {print $2}') ;;
	cyclic)
		stress-ng --temp-path "$WORK" --cpu 2 -t 9s --quiet &
		hog=$!
		sleep 0.5
		r=$(cyclictest --policy=other -i 1000 -t 1 -q -D 6 | sed -n 's/.*Avg: *\([0-9]*\).*/\1/p' | tail -n 1)
		kill "$hog"
		wait "$hog"
		;;
	*) r=$(stress-ng --temp-path "$WORK" --"$w" "$n" --timeout "${T}s" --metrics-brief 2>&1 |
		awk -v s="$w" '$4 == s {print $(NF - 1)}' | head -n 1) ;;
	esac
	c1=$(ctxt) i1=$(ipis) d1=$(idle_ticks)
	echo "RES $tag $w-x$n value=$r ctxt/s=$(((c1 - c0) / T)) idle_ticks=$((d1 - d0)) res,cal=[$i0] -> [$i1]"
}

# Another sched_ext scheduler (a peer, as scripts/bench stages them) as a
# variant: no stats, and its counters are not ours to summarise.
start_peer() {
	SCHED_LOG=$(mktemp -p "$WORK" peer.XXXXXX.log) || return 1
	"$SCHED" "$@" >"$SCHED_LOG" 2>&1 &
	SCHED_PID=$!
	wait_state enabled 90 "$SCHED_PID"
}

IFS=';' read -ra ws <<<"$W"
if [ "${COST:-0}" = 1 ]; then
	sysctl -qw kernel.bpf_stats_enabled=1 || { echo "cannot turn on bpf_stats"; exit 1; }
fi
IFS='|' read -ra vs <<<"${VARIANTS:-fastpath=target/release/scx_fastpath}"
for round in $(seq "${R:-2}"); do
	for w in "${ws[@]}"; do
		one default "${w% *}" "${w#* }"
		for v in "${vs[@]}"; do
			spec=${v#*=} SCHED=${spec%% *} args="" ours=0
			[ "$spec" != "$SCHED" ] && args=${spec#* }
			[ "${SCHED##*/}" = scx_fastpath ] && ours=1
			# shellcheck disable=SC2086 # ARGS are words
			if [ "$ours" = 1 ]; then start_sched $args >/dev/null; else start_peer $args; fi ||
				{ echo "start failed: $v"; cat "$SCHED_LOG"; exit 1; }
			[ "${COST:-0}" = 1 ] && bpf_snapshot "$SCHED_PID" >"$WORK/cost.before"
			one "${v%%=*}" "${w% *}" "${w#* }"
			if [ "${COST:-0}" = 1 ]; then
				bpf_snapshot "$SCHED_PID" >"$WORK/cost.after"
				bpf_diff "$WORK/cost.before" "$WORK/cost.after" |
					awk -v t="${v%%=*}" -v w="${w% *}-x${w#* }" \
						'{ printf "COST %s %s %s calls=%d ns/call=%d\n", t, w, $1, $3, $2 / $3 }'
			fi
			cleanup_sched
			if [ "$round" = 1 ] && [ "$ours" = 1 ]; then sample_summary; fi
		done
	done
done
