# shellcheck shell=bash
# Area: RT tasks
# Tests with real-time tasks beside ours (sourced by integration.sh, which
# defines NCPU and sources lib.sh): an RT hog, RT mutex threads on every
# CPU, and an RT hog on each CPU in turn (a fault case).

# An RT (SCHED_FIFO) busy loop on the last CPU for RT_SECS (15) while
# nproc unpinned CPU hogs and the sleeper probe run; prints "probe: " and
# the sleeper's worst wait (ms).
rt_workload() {
	local secs=${RT_SECS:-15} rt hog
	# A bash loop: stress-ng took 5-10 s of this guest to start its worker.
	taskset -c $((NCPU - 1)) chrt -f 10 bash -c 'while :; do :; done' &
	rt=$!
	stress-ng --temp-path "$WORK" --cpu "$NCPU" --timeout "${secs}s" --quiet &
	hog=$!
	sleep 1
	echo "probe: $(sleeper_probe $((secs - 3)))"
	kill "$rt"
	wait "$rt" "$hog"
}

timer_burst_workload() {
	stress-ng --temp-path "$WORK" --timerfd "$NCPU" --sleep "$NCPU" --timeout 6s --quiet
}

# Shows: an RT (SCHED_FIFO) hog takes the last CPU for 15 s (RT_SECS) while
# unpinned CPU hogs and the sleeper probe run (rt_workload). A wakee whose
# CPU the RT task holds goes to a CPU that runs ours (`wake_rt_away`), and
# the other CPU takes what is queued on the RT CPU (`rt_rescued`): by
# default both must move, and with --ablate rt-away,rt-rescue neither can.
# The sleeper's worst wait is reported for both, not bounded: a run with
# RT away read 541 ms (a whole 0.5 s sleep period lost, as in half the runs
# without it), so a bound would only flake. A run before both has no RT
# task of ours: timer wakeups that come in bursts (stress-ng timerfd and
# sleep), where a CPU that an earlier wakeup of the same interrupt has
# just claimed out of idle runs none of ours for a moment. `wake_rt_away`
# must stay under 0.25% of `enq_queued` there (the kernel's own stop and
# RT threads may hold a CPU now and then: 1 of 3,625).
# Fails: a CPU not held by RT reads held (a version that took "not running
# ours" for RT sent 41 of 3,647 away in the timer run, and 2.5-14% under
# each stressor alone: docs/decisions.md, "RT away only where RT holds the
# CPU"), the counters do not follow the switches, or the scheduler is
# ejected.
test_rt_hog() {
	local m ok=0 probe mode away enq
	m=$(dmesg_mark)
	SCHED_ARGS="" run_under_sched timer_burst_workload || ok=1
	away=$(say_counters wake_rt_away 2>/dev/null) enq=$(say_counters enq_queued 2>/dev/null)
	say "rt_away, no RT task: timerfd and sleep stressors: wake_rt_away=$away of enq_queued=$enq"
	[ "$enq" -gt 0 ] && [ $((400 * away)) -le "$enq" ] ||
		{ say "wakees were sent away with no RT task running"; ok=1; }
	detached_on_request || ok=1
	for mode in on off; do
		if [ "$mode" = on ]; then
			SCHED_ARGS="" run_under_sched rt_workload || ok=1
		else
			SCHED_ARGS="--ablate rt-away,rt-rescue" run_under_sched rt_workload || ok=1
		fi
		probe=$(sed -n 's/^probe: //p' "$WORK/workload.log")
		say "rt_away and rt_rescue $mode: RT hog on CPU $((NCPU - 1)), $NCPU CPU hogs: sleeper's worst wait ${probe:-?} ms"
		if [ "$mode" = on ]; then
			[ "$(say_counters wake_rt_away)" -gt 0 ] || { say "no wakee was sent away from the RT CPU"; ok=1; }
			[ "$(say_counters rt_rescued)" -gt 0 ] || { say "no task was taken from the RT CPU's queue"; ok=1; }
		else
			[ "$(say_counters wake_rt_away rt_rescued)" -eq 0 ] ||
				{ say "an RT counter moved with --ablate rt-away,rt-rescue"; ok=1; }
		fi
		detached_on_request || ok=1
	done
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Shows: stress-ng's mutex stressor, as root, runs its threads at
# SCHED_FIFO and keeps every CPU of the 2-vCPU guest busy for the whole
# run: our tasks, the stressors' own SCHED_OTHER parents among them, run
# only in the kernel's ext deadline server (50 ms a second where RT
# throttling is off, as on 7.3). `stress-ng --mutex 2` for 4 s, MUTEX_RUNS
# (5) runs, the scheduler restarted for each (the hang that --rt-release
# caused came at the first or second; see docs/decisions.md, "Moving tasks
# off an RT-held CPU in ops.enqueue"): every run ends and the scheduler
# stays attached.
# Fails: a run is still going MUTEX_GUARD (30) s after its start: the
# machine would have hung. The FIFO threads stop only when their starved
# parent tells them, so a SCHED_FIFO 99 guard kills every stress-ng still
# running then: a hang is a failure with a message, not a guest that never
# comes back.
test_rt_mutex() {
	local m ok=0 i runs=${MUTEX_RUNS:-5} guard=${MUTEX_GUARD:-30} t0 sp gp hung=$WORK/mutex.hung
	m=$(dmesg_mark)
	for i in $(seq "$runs"); do
		rm -f "$hung"
		start_sched || return 1
		t0=$SECONDS
		stress-ng --temp-path "$WORK" --mutex 2 --timeout 4s --quiet &
		sp=$!
		# shellcheck disable=SC2016 # expanded by the guard's shell
		chrt -f 99 bash -c 'sleep "$1"; kill -0 "$2" 2>/dev/null || exit 0
			echo hung >"$3"; pkill -KILL stress-ng' _ "$guard" "$sp" "$hung" 2>/dev/null &
		gp=$!
		wait "$sp"
		# Ending the guard's sleep ends the guard: stress-ng is gone.
		pkill -P "$gp" sleep
		wait "$gp" 2>/dev/null
		if [ -e "$hung" ]; then
			say "run $i: stress-ng still ran ${guard} s after its start: killed (state $(state))"
			ok=1
		else
			say "run $i: stress-ng --mutex 2 --timeout 4s took $((SECONDS - t0)) s"
		fi
		still_attached "run $i" || ok=1
		stop_sched || ok=1
		[ "$ok" = 0 ] || break
	done
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# One step of test_rt_each_cpu: 2 x nproc unpinned busy loops (plain bash
# processes, so each is one task whose CPU time /proc/PID/stat has), then
# a SCHED_FIFO busy loop pinned to CPU $1 and the sleeper probe for $2
# seconds. Prints the probe's worst wait (ms), the least-served loop's CPU
# time as a share of its fair share of the CPUs RT leaves (%), and the RT
# loop's share of the window (%).
rt_on_cpu() {
	local c=$1 secs=$2 rt i pids=() before=() used=() rt_used span=0 fair share min=1000000 probe
	for i in $(seq $((2 * NCPU))); do
		bash -c 'while :; do :; done' &
		pids+=($!)
	done
	sleep 2
	# A bash loop, not stress-ng: stress-ng took 5-10 s of this guest to
	# start its worker, most of the window.
	taskset -c "$c" chrt -f 10 bash -c 'while :; do :; done' &
	rt=$!
	for i in "${!pids[@]}"; do before[i]=$(cpu_ticks "${pids[i]}"); done
	rt_used=$(cpu_ticks "$rt")
	probe=$(sleeper_probe $((secs - 2)))
	rt_used=$(($(cpu_ticks "$rt") - rt_used))
	for i in "${!pids[@]}"; do used[i]=$(($(cpu_ticks "${pids[i]}") - before[i])); done
	kill "${pids[@]}" "$rt"
	wait "${pids[@]}" "$rt" 2>/dev/null
	# The window, in ticks of one CPU: what the RT loop and the busy loops
	# ran, over the CPUs (they keep every CPU busy; the tick-sampled
	# /proc/stat and the wall clock both lag this accounting under TCG).
	span=$rt_used
	for i in "${!used[@]}"; do span=$((span + used[i])); done
	span=$((span / NCPU))
	# Each loop's fair share of the CPUs the RT loop leaves.
	fair=$(((NCPU - 1) * span / (2 * NCPU)))
	for i in "${!used[@]}"; do
		share=$((used[i] * 100 / (fair > 0 ? fair : 1)))
		[ "$share" -lt "$min" ] && min=$share
	done
	# Unless the RT loop held its CPU, the loops' shares mean nothing.
	echo "$probe $min $((rt_used * 100 / (span > 0 ? span : 1)))"
}

# Shows: an RT hog on each CPU in turn: a SCHED_FIFO busy loop pinned to
# CPU c for RT_EACH_SECS (10) while 2 x nproc unpinned busy loops and the
# sleeper probe run (rt_on_cpu); then CPU 0 again under the other RT
# throttling setting (sched_rt_runtime_us 950000 if the kernel's is
# unthrottled, else -1). What RT displaces must run elsewhere: every loop
# gets at least half its fair share of the CPUs RT leaves (nproc - 1) over
# the window, the probe never waits RT_EACH_BOUND ms (1000, as in
# mixed_load: a sleeper waits under a second), and nothing is ejected.
# Fails: a loop below half its share (a task stranded on the RT CPU gets
# only the kernel's ext server's few milliseconds a second), a sleeper
# over the bound, an ejection, or an RT loop that did not run half the
# window (it read 67-89%, with RT rescue and without; a stress-ng RT hog,
# used before, had not even started): the rest then proves nothing.
test_rt_each_cpu() {
	local m ok=0 c out probe min rt_share secs=${RT_EACH_SECS:-10} bound=${RT_EACH_BOUND:-1000} rt_runtime other
	m=$(dmesg_mark)
	[ "$NCPU" -ge 2 ] || { say "needs 2 CPUs"; return 1; }
	# The share bound holds only with RT rescue (on by default): without it
	# the least-served loop got 10-17% (docs/decisions.md, "RT rescue").
	# RT_EACH_ARGS="--ablate rt-rescue" runs it without.
	# shellcheck disable=SC2086 # word-split on purpose: flags
	start_sched ${RT_EACH_ARGS-} || return 1
	rt_runtime=$(cat /proc/sys/kernel/sched_rt_runtime_us)
	if [ "$rt_runtime" = -1 ] || [ "$rt_runtime" -ge "$(cat /proc/sys/kernel/sched_rt_period_us)" ]; then
		other=950000
	else
		other=-1
	fi
	for c in $(seq 0 $((NCPU - 1))) other; do
		if [ "$c" = other ]; then
			echo "$other" >/proc/sys/kernel/sched_rt_runtime_us || { say "cannot set sched_rt_runtime_us $other"; ok=1; }
			out=$(rt_on_cpu 0 "$secs")
			echo "$rt_runtime" >/proc/sys/kernel/sched_rt_runtime_us || ok=1
			c="0 (sched_rt_runtime_us $other)"
		else
			out=$(rt_on_cpu "$c" "$secs")
			c="$c (sched_rt_runtime_us $rt_runtime)"
		fi
		read -r probe min rt_share <<<"$out"
		say "RT hog on CPU $c for ${secs} s (it ran ${rt_share}% of the time), $((2 * NCPU)) busy loops: the least got ${min}% of its fair share of the other CPUs; sleeper's worst wait ${probe} ms"
		[ "$rt_share" -ge 50 ] || { say "the RT hog did not hold its CPU"; ok=1; }
		[ "$min" -ge 50 ] || { say "a loop was left behind the RT task"; ok=1; }
		[ "$probe" -lt "$bound" ] || { say "the sleeper waited ${probe} ms (bound ${bound})"; ok=1; }
		still_attached "after the RT hog on CPU $c" || ok=1
	done
	stop_sched || ok=1
	say_counters disp_stolen wake_rt_away rt_rescued >/dev/null
	check_no_kernel_errors "$m" || ok=1
	return $ok
}
