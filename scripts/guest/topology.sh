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

# Steals follow the topology: the same steal-heavy load (CPU hogs beside
# switch pairs). The loader must see the LLCs sysfs shows. With one LLC no
# steal counts as far; with several, the share of steals from another LLC
# must be below what a steal blind to the topology would take from there
# (the other LLCs' share of the other CPUs).
llc_steal_check() {
	local llcs llc_cpus seen stolen far share blind ok=0
	llcs=$(nr_llcs)
	llc_cpus=$(cpulist_count "$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list 2>/dev/null || echo 0-$((NCPU - 1)))")
	start_sched || return 1
	seen=$(grep -o '[0-9]* LLCs)' "$SCHED_LOG" | grep -o '^[0-9]*')
	[ "$seen" = "$llcs" ] || { say "the loader saw ${seen:-no} LLCs, sysfs shows $llcs"; ok=1; }
	stress-ng --temp-path "$WORK" --cpu "$NCPU" --switch $((NCPU / 2)) --timeout 8s --quiet
	stop_sched || ok=1
	stolen=$(counter_total disp_stolen) far=$(counter_total disp_stolen_far)
	share=$((100 * ${far:-0} / (${stolen:-0} > 0 ? stolen : 1)))
	blind=$((100 * (NCPU - llc_cpus) / (NCPU > 1 ? NCPU - 1 : 1)))
	say "$llcs LLCs of $llc_cpus CPUs; steals $stolen, from another LLC $far ($share%; blind to the topology: $blind%)"
	if [ "$llcs" -le 1 ]; then
		[ "${far:-0}" -eq 0 ] || { say "steals counted as far with one LLC"; ok=1; }
	elif [ "$share" -ge "$blind" ]; then
		say "steals crossed LLCs as often as a topology-blind choice would"
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
# steal-heavy load, with several LLCs a smaller share of steals crosses
# LLCs than a choice blind to the topology would take; with one LLC no
# steal counts as far.
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

# One run of the rebalance load: NCPU busy loops started on CPUs $1 (the
# first LLC), then allowed on every CPU (stress-ng's workers exit when
# their affinity changes); after 2 s to settle, prints each hog's
# share of a CPU over the next 8 s, in percent, from its own CPU time
# (utime + stime, which the kernel scales to its precise run time; the
# per-CPU times of /proc/stat lose ticks when the host deschedules a vCPU).
task_ticks() {
	local stat f
	read -r stat <"/proc/$1/stat" || return 1
	read -ra f <<<"${stat##*) }"
	TICKS=$((f[11] + f[12])) TICKS_AT=${EPOCHREALTIME/./}
}

rebalance_run() {
	local llc0=$1 pid pids=() t0=() at0=() i hz
	hz=$(getconf CLK_TCK)
	for i in $(seq "$NCPU"); do
		taskset -c "$llc0" sh -c 'while :; do :; done' &
		pids+=($!)
	done
	sleep 1
	for pid in "${pids[@]}"; do
		taskset -p -c "0-$((NCPU - 1))" "$pid" >/dev/null
	done
	sleep 2
	# Builtins only from here (no fork, which takes long on a loaded
	# guest), and each hog's own window.
	for pid in "${pids[@]}"; do
		task_ticks "$pid" || return 1
		t0+=("$TICKS") at0+=("$TICKS_AT")
	done
	read -r -t 8 <> <(:) || true
	i=0
	for pid in "${pids[@]}"; do
		task_ticks "$pid" &&
			echo $((100 * 1000000 * (TICKS - t0[i]) / (hz * (TICKS_AT - at0[i]))))
		i=$((i + 1))
	done
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
}

# Shows: busy LLCs rebalance. In a guest with several LLCs (scripts/test's
# numa-2x4), as many CPU hogs as CPUs are forked on the first LLC's CPUs
# and then allowed on all; after 2 s each must get at least 80% of an even
# share (one CPU each), under scx_fastpath; the default scheduler's shares
# are printed for reference.
# Fails: the other LLC's CPUs stay idle while the first LLC's queue two
# hogs each (a steal that never looks past its own LLC, or an idle CPU
# that nobody kicks): the hogs get half a CPU each.
test_rebalance() {
	local m llc0 line pct min n ok=0 what
	m=$(dmesg_mark)
	[ "$(nr_llcs)" -gt 1 ] || { say "one LLC: nothing to rebalance (run it in a guest with several)"; return 1; }
	llc0=$(cat /sys/devices/system/cpu/cpu0/cache/index3/shared_cpu_list)
	for what in default fastpath; do
		if [ "$what" = fastpath ]; then
			start_sched || return 1
		fi
		min=100 line="" n=0
		while read -r pct; do
			line+=" $pct%" n=$((n + 1))
			[ "$pct" -lt "$min" ] && min=$pct
		done < <(rebalance_run "$llc0")
		say "$what: $NCPU hogs forked on CPUs $llc0, then allowed on all; each one's share of a CPU:$line"
		[ "$n" -eq "$NCPU" ] || { say "measured $n hogs, not $NCPU"; ok=1; }
		if [ "$what" = fastpath ]; then
			still_attached "after the load" || ok=1
			stop_sched || ok=1
			[ "$min" -ge 80 ] || { say "a hog got $min% of a CPU, under 80% of an even share"; ok=1; }
		fi
	done
	check_no_kernel_errors "$m" || ok=1
	return $ok
}
