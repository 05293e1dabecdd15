# shellcheck shell=bash
# Area: Machine shapes and mixed load
# Tests that scripts/test also runs in a guest per simulated machine shape
# (TOPOLOGIES there; sourced by integration.sh, which defines NCPU and
# LOAD_SECS and sources lib.sh): the shape itself, and everything at once.

# A CPU hog pinned to each CPU for $1 seconds, added to the caller's pids.
start_pinned_hogs() {
	local c
	for c in $(seq 0 $((NCPU - 1))); do
		taskset -c "$c" stress-ng --temp-path "$WORK" --cpu 1 --timeout "${1}s" --quiet &
		pids+=($!)
	done
}

# Shows: LOAD_SECS (35) s of 2 x nproc CPU hogs, a hog pinned to every CPU,
# fork churn and an execl loop, with a sleeper that measures how long it
# waits to run: the scheduler stays attached, keeps every task running,
# and its counters move.
# Fails: the scheduler is ejected, a sleeper is kept off the CPU for a
# second, a counter of direct_local, pinned, enq_queued, disp_cpu_dsq and
# disp_stolen did not move, or the kernel log has a sched_ext error or
# stall.
test_mixed_load() {
	local m probe_max pids=() name total ok=0
	m=$(dmesg_mark)
	start_sched || return 1

	stress-ng --temp-path "$WORK" --cpu $((2 * NCPU)) --timeout "${LOAD_SECS}s" --quiet &
	pids+=($!)
	start_pinned_hogs "$LOAD_SECS"
	stress-ng --temp-path "$WORK" --fork 1 --timeout "${LOAD_SECS}s" --quiet &
	pids+=($!)
	start_exec_loop "$LOAD_SECS"
	say "load: $((2 * NCPU)) CPU hogs, $NCPU pinned hogs (one per CPU), fork churn, an execl loop, ${LOAD_SECS} s"

	probe_max=$(sleeper_probe $((LOAD_SECS - 2)))
	say "sleeper probe: worst wait beyond its 0.5 s sleep: ${probe_max} ms"

	wait_load || ok=1

	if [ "$(state)" != enabled ] || ! kill -0 "$SCHED_PID" 2>/dev/null; then
		say "scheduler not attached after the load (state $(state))"
		sed 's/^/    | /' "$SCHED_LOG" | tail -n 20
		return 1
	fi
	say "after load: state $(state), root/ops '$(ops)', loader alive"
	say "last stats: $(sample_summary)"

	kill -INT "$SCHED_PID"
	wait_exit "$SCHED_PID" || { say "loader exited non-zero"; ok=1; }
	SCHED_PID=
	say "totals: $(sample_summary)"
	for name in direct_local pinned enq_queued disp_cpu_dsq disp_stolen; do
		total=$(counter_total "$name")
		if [ "${total:-0}" -le 0 ]; then
			say "counter $name did not move (${total:-missing})"
			ok=1
		fi
	done
	# Five seconds is the watchdog timeout; a sleeper kept off the CPU
	# for a whole second under this load is starvation by any standard.
	if [ "$probe_max" -gt 1000 ]; then
		say "sleeper waited ${probe_max} ms to run"
		ok=1
	fi
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# How many CPUs a cpulist ("0-3,8,10-11") names.
cpulist_count() {
	local r n=0 rs
	IFS=, read -ra rs <<<"$1"
	for r in "${rs[@]}"; do
		if [[ $r == *-* ]]; then n=$((n + ${r#*-} - ${r%-*} + 1)); else n=$((n + 1)); fi
	done
	echo "$n"
}

# Steals, LLC first (llc_steal): the same steal-heavy load (CPU hogs beside
# context-switching pairs, more tasks than CPUs, some idling now and then)
# under the default and under --ablate llc-steal. The loader must see the LLCs
# sysfs shows. Where there are several, by default steal_near_kept moves
# (a near head taken over a far one that had waited longer) and a smaller
# share of steals cross LLCs than with --ablate llc-steal, under which
# steal_near_kept stays 0; where there is one, nothing counts as far.
llc_steal_check() {
	local llcs seen args stolen far kept share ok=0 shares=()
	llcs=$(nr_llcs)
	for args in "" "--ablate llc-steal"; do
		# shellcheck disable=SC2086 # args is a word list
		start_sched $args || return 1
		seen=$(grep -o '[0-9]* LLCs)' "$SCHED_LOG" | grep -o '^[0-9]*')
		[ "$seen" = "$llcs" ] || { say "the loader saw ${seen:-no} LLCs, sysfs shows $llcs"; ok=1; }
		stress-ng --temp-path "$WORK" --cpu "$NCPU" --switch $((NCPU / 2)) --timeout 8s --quiet
		stop_sched || ok=1
		stolen=$(counter_total disp_stolen) far=$(counter_total disp_stolen_far)
		kept=$(counter_total steal_near_kept)
		share=$((100 * ${far:-0} / (${stolen:-0} > 0 ? stolen : 1)))
		shares+=("$share")
		say "${args:-default}: $llcs LLCs; steals $stolen, from another LLC $far ($share%), near kept over far $kept"
		if [ "$llcs" -le 1 ]; then
			[ "${far:-0}" -eq 0 ] && [ "${kept:-0}" -eq 0 ] || { say "steals counted as far with one LLC"; ok=1; }
		elif [ -n "$args" ]; then
			[ "${kept:-0}" -eq 0 ] || { say "steal_near_kept moved with --ablate llc-steal"; ok=1; }
		else
			[ "${kept:-0}" -gt 0 ] || { say "steal_near_kept did not move"; ok=1; }
		fi
	done
	if [ "$llcs" -gt 1 ] && [ "${shares[0]}" -ge "${shares[1]}" ]; then
		say "LLC first did not lower the share of steals from another LLC (${shares[0]}% against ${shares[1]}%)"
		ok=1
	fi
	return $ok
}

# Shows: the guest has the shape scripts/test asked for (EXPECT_CPUS vCPUs,
# EXPECT_NODES NUMA nodes, EXPECT_THREADS threads per core, EXPECT_POSSIBLE
# possible CPUs), so that the tests run after this one (mixed_load) ran on
# that shape and not on a default 2-vCPU guest; the scheduler attaches
# there, sees every CPU and stays attached under a hog per CPU. Then
# llc_steal_check: the loader counts the LLCs sysfs shows; under a
# steal-heavy load, with several LLCs `steal_near_kept` moves by default
# and stays 0 with --ablate llc-steal, and a smaller share of steals
# crosses LLCs; with one LLC no steal counts as far.
# Fails: a shape QEMU did not apply, the scheduler does not attach or is
# ejected, or a steal check above does not hold.
test_topology() {
	local m nodes siblings threads possible_list possible llc n ok=0 got what have want
	m=$(dmesg_mark)
	possible_list=$(cat /sys/devices/system/cpu/possible)
	possible=$(cpulist_count "$possible_list")
	nodes=$(find /sys/devices/system/node -maxdepth 1 -name 'node[0-9]*' | wc -l)
	siblings=$(cat /sys/devices/system/cpu/cpu0/topology/thread_siblings_list)
	threads=$(cpulist_count "$siblings")
	llc=$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list 2>/dev/null || echo none)
	say "vCPUs $NCPU (possible $possible_list); NUMA nodes $nodes:" \
		"$(for n in /sys/devices/system/node/node[0-9]*; do printf '%s=%s ' "${n##*/}" "$(cat "$n/cpulist")"; done)"
	say "threads per core $threads (cpu0's siblings $siblings); cpu0's LLC is shared with $llc"
	for got in "cpus $NCPU ${EXPECT_CPUS:-}" "nodes $nodes ${EXPECT_NODES:-}" "threads $threads ${EXPECT_THREADS:-}" \
		"possible-CPUs $possible ${EXPECT_POSSIBLE:-}"; do
		read -r what have want <<<"$got"
		[ -z "$want" ] || [ "$have" = "$want" ] || { say "expected $want $what, the guest has $have"; ok=1; }
	done
	start_sched || return 1
	stress-ng --temp-path "$WORK" --cpu "$NCPU" --timeout 5s --quiet
	still_attached "after $NCPU hogs for 5 s" || ok=1
	stop_sched || ok=1
	n=$(counter_total disp_stolen)
	say "tasks taken from another CPU's DSQ: ${n:-missing}"
	llc_steal_check || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}
