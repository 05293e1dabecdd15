# shellcheck shell=bash
# Area: Storms
# Storms of sleepers and hogs (sourced by integration.sh, which defines
# NCPU and sources lib.sh): once in the default set and four times more in
# the fault matrix, so that one --faults run shows each 5 of 5.

# Many short sleepers on every CPU wake and block constantly, so holds start,
# catch, expire and get redirected wakeups all at once, for HOLD_SECS.
hold_race_workload() {
	stress-ng --temp-path "$WORK" --sleep $((4 * NCPU)) --sleep-max 64 \
		--cyclic 1 --cyclic-policy rr --cyclic-sleep 200000 \
		--pipe "$NCPU" --timeout "${HOLD_SECS:-60}s" --metrics-brief
}

# Shows: the storm (hold_race_workload) under the default settings (no idle
# hold), the load that exposed the vtime-floor starvation
# (docs/decisions.md, "The starvation guard runs every starved task"): 60 s
# of 512 short sleeper threads, a cyclic RT sleeper and pipe ping-pongs on
# 2 CPUs. Every stress-ng worker completes, no ejection; the log's
# `starvation guard:` lines name the tasks the guard ran and count no more
# than `starve_rescue`.
# Fails: a worker does not complete, the watchdog ejects the scheduler, or
# a rescue is not named.
test_sleeper_storm() { HOLD_US=0 test_hold_races; }

# Shows: `sleeper_storm`'s load with `--idle-hold-us 1000` (HOLD_US): holds
# start, catch, expire and get redirected wakeups all at once; the same
# checks, and holds must start.
# Fails: as `sleeper_storm`, or no hold started.
test_hold_races() {
	local m ok=0
	m=$(dmesg_mark)
	SCHED_ARGS="--idle-hold-us ${HOLD_US:-1000}" run_under_sched hold_race_workload || ok=1
	say "$((4 * NCPU)) sleepers x 64 threads, pipe ping-pongs, ${HOLD_SECS:-60} s with --idle-hold-us ${HOLD_US:-1000}:"
	say "     hold_start=$(counter_total hold_start) hold_caught=$(counter_total hold_caught)" \
		"hold_expired=$(counter_total hold_expired) hold_redirect=$(counter_total hold_redirect)"
	say "     stress-ng: $(grep -E 'successful run|unsuccessful|failed' "$WORK/workload.log" | tail -n 1)"
	grep -q 'successful run completed' "$WORK/workload.log" || { say "stress-ng did not complete every worker"; ok=1; }
	detached_on_request || ok=1
	check_rescues_traced || ok=1
	if [ "${HOLD_US:-1000}" -gt 0 ] && [ "$(counter_total hold_start)" -eq 0 ]; then
		say "no hold started"
		ok=1
	fi
	# Every hold ends one way or the other. (No totals when the scheduler
	# never attached: 0, not an arithmetic error that ends the test run.)
	[ "$(say_counters hold_start 2>/dev/null)" -eq "$(say_counters hold_caught hold_expired 2>/dev/null)" ] ||
		say "note: holds in flight at exit: start != caught + expired"
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Shows: 1,000 CPU hogs (STORM_HOGS) confined to CPU 0 by taskset, started
# as uid 65534 (an unprivileged user: anyone can), for 30 s (STORM_SECS): a
# round over them takes seconds however short the slices (a CPU notices a
# used-up slice at its tick), and the kernel's watchdog must still see
# every one of them run in time. Every worker completes, deep-queue slices
# apply (`slice_short` moves), the scheduler stays attached, and the
# guard's lines are as in sleeper_storm.
# Fails: an ejection, a missing worker, or no deep-queue slice.
test_hog_storm() {
	local m ok=0 n=${STORM_HOGS:-1000} tmp=$WORK/hog_storm
	m=$(dmesg_mark)
	mkdir -p "$tmp" && chmod 1777 "$tmp"
	start_sched || return 1
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		taskset -c 0 stress-ng --temp-path "$tmp" --cpu "$n" --timeout "${STORM_SECS:-30}s" \
		--metrics-brief >"$WORK/workload.log" 2>&1
	say "$n hogs on CPU 0 for ${STORM_SECS:-30} s as uid 65534: $(grep -E 'successful run|unsuccessful|failed' "$WORK/workload.log" | tail -n 1)"
	if ! grep -q 'successful run completed' "$WORK/workload.log"; then
		say "stress-ng did not complete every worker:"
		tail -n 5 "$WORK/workload.log" | sed 's/^/    | /'
		ok=1
	fi
	if [ "$(state)" != enabled ] || ! kill -0 "$SCHED_PID" 2>/dev/null; then
		say "scheduler not attached after the storm (state $(state)): $(grep EXIT "$SCHED_LOG")"
		ok=1
	fi
	kill -INT "$SCHED_PID"
	wait_exit "$SCHED_PID" || { say "loader exited non-zero"; ok=1; }
	SCHED_PID=
	say "     $(say_counters slice_short starve_rescue pinned 2>&1 >/dev/null | xargs)"
	detached_on_request || ok=1
	check_rescues_traced || ok=1
	[ "$(counter_total slice_short)" -gt 0 ] || { say "deep-queue slices never applied"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}
