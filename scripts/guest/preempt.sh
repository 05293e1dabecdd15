# shellcheck shell=bash
# Area: Preemption and slices
# Tests of when a running task gives way (sourced by integration.sh, which
# defines NCPU and WEIGHT_CPU and sources lib.sh): deferred wakeup
# preemption, the hog class's hysteresis and light slices.

# A periodic SCHED_OTHER sleeper (cyclictest, 1 ms period, 8 s) against a
# CPU hog on the same CPU, CPU 0.
defer_workload() {
	taskset -c 0 stress-ng --temp-path "$WORK" --cpu 1 --timeout 12s --quiet &
	local hog=$!
	sleep 0.5
	taskset -c 0 cyclictest --policy=other -i 1000 -t 1 -q -D 8
	kill "$hog" 2>/dev/null
	wait "$hog" 2>/dev/null
	return 0
}

# defer_workload's cyclictest result, as "Avg: N Max: N us".
defer_latency() {
	echo "$(grep -o 'Avg: *[0-9]* Max: *[0-9]*' "$WORK/workload.log" | xargs) us"
}

# Run defer_workload under scx_fastpath with flags $2, and print, as $1,
# its cyclictest line and the counters named after those.
defer_case() {
	local label=$1 args=$2
	shift 2
	SCHED_ARGS=$args run_under_sched defer_workload || return 1
	say "$label: cyclictest vs a hog on CPU 0${args:+, $args}: $(defer_latency)"
	say_counters "$@" >/dev/null
}

# Shows: deferred wakeup preemption: cyclictest (a SCHED_OTHER sleeper, 1 ms
# period) against a CPU hog on the same CPU. With the timer, a wakeup that
# comes before the hog has had --wakeup-gran-us arms it and the timer
# preempts the hog: `wake_deferred` and `wake_defer_kick` move. With the
# default `--hog-gran-us 0` a hog is preempted at once and the timer is
# seldom needed, so the timer is tested with `--hog-gran-us 250`, a floor
# for it to keep, and the default is only reported; so is the average
# latency.
# Fails: the timer's counters stay 0 with the timer, or move without it
# (--ablate deferred-preempt).
test_deferred_preempt() {
	local m ok=0
	m=$(dmesg_mark)
	# With the default --hog-gran-us 0 a hog is preempted at once and the
	# timer is seldom needed: the timer is tested with a floor for it to
	# keep, and the default is only reported.
	defer_case "on " "--hog-gran-us 250" wake_deferred wake_defer_kick wake_preempt || return 1
	[ "$(counter_total wake_deferred)" -gt 0 ] || { say "no preemption was deferred"; ok=1; }
	[ "$(counter_total wake_defer_kick)" -gt 0 ] || { say "no deferred preemption kicked"; ok=1; }
	defer_case off "--hog-gran-us 250 --ablate deferred-preempt" wake_deferred wake_defer_kick || return 1
	[ "$(say_counters wake_deferred wake_defer_kick 2>/dev/null)" -eq 0 ] ||
		{ say "deferred preemption with the switch off"; ok=1; }
	defer_case "default (--hog-gran-us 0)" "" wake_preempt wake_hog_gran wake_deferred || return 1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Shows: hog hysteresis: the same cyclictest against a hog on CPU 0.
# Preempted every millisecond, the hog's runs average about a millisecond
# and now and then drop under --hog-run-us; with the hysteresis (the
# default) it stays a hog while they average more than half of that, and
# the preemptions of it then move `wake_hog_held`. With --ablate
# hog-hysteresis nothing holds it in the class, and wake_hog_held cannot
# move; with `--hog-run-us 100000` hog preemptions (the wakeups that find a
# task in the class) stay under 1% of the default run's.
# Fails: the held class never fills, wake_hog_held moves with the switch
# off, or the class is not empty at the high threshold.
test_hog_hysteresis() {
	local m ok=0 on in_class
	m=$(dmesg_mark)
	defer_case "on " "" wake_hog_held wake_hog_gran wake_short_runner || return 1
	[ "$(counter_total wake_hog_held)" -gt 0 ] || { say "the hog was never held in its class"; ok=1; }
	on=$(say_counters wake_hog_held wake_hog_gran 2>/dev/null)
	defer_case off "--ablate hog-hysteresis" wake_hog_held wake_hog_gran wake_short_runner || return 1
	[ "$(counter_total wake_hog_held)" -eq 0 ] || { say "wake_hog_held moved with --ablate hog-hysteresis"; ok=1; }
	# The class's threshold: with --hog-run-us 100000 (its largest) the
	# hog's runs, cut by the sleeper every millisecond, keep it out of the
	# class. Not quite never: it runs alone for the half second before
	# cyclictest starts, where nothing ends its slice, and one run of 400
	# ms puts its average (a quarter of each new run) over 100 ms for a
	# wakeup or two (one CI run counted 1). So the wakeups that
	# found it in the class must stay under 1% of the default's.
	defer_case "hog-run 100 ms" "--hog-run-us 100000" wake_hog_held wake_hog_gran wake_short_runner || return 1
	in_class=$(say_counters wake_hog_held wake_hog_gran 2>/dev/null)
	[ $((100 * in_class)) -lt "$on" ] ||
		{ say "$in_class wakeups found a task in the hog class with --hog-run-us 100000 ($on by default)"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Light slices: a nice-10 busy loop beside a nice-0 one on $WEIGHT_CPU for
# WEIGHT_SECS. Writes "share% wait_ms runs" for the nice-10 loop to
# $WORK/light.txt: its share of the two loops' CPU time, its mean wait
# before a run and its runs, from /proc/PID/schedstat. Fails if a loop
# had gone before a read, rather than judge what was not measured.
light_pair() {
	local a b a0 b0 a1 b1 ok=0
	a=$(spinner nice -n 0)
	b=$(spinner nice -n 10)
	sleep 1
	schedstat_sum a0 "$a" && schedstat_sum b0 "$b" || ok=1
	sleep "$WEIGHT_SECS"
	schedstat_sum a1 "$a" && schedstat_sum b1 "$b" || ok=1
	kill "$a" "$b"
	wait "$a" "$b" 2>/dev/null
	awk -v a=$((a1[0] - a0[0])) -v b=$((b1[0] - b0[0])) -v w=$((b1[1] - b0[1])) \
		-v n=$((b1[2] - b0[2])) 'BEGIN {
		printf "%.1f %.1f %d\n", (a + b) ? 100 * b / (a + b) : -1,
			n ? w / n / 1e6 : -1, n
	}' >"$WORK/light.txt"
	return $ok
}

# The nice-10 busy loop alone on $WEIGHT_CPU for 2 s.
light_alone() {
	local b
	b=$(spinner nice -n 10)
	sleep 2
	kill "$b"
	wait "$b" 2>/dev/null
	return 0
}

# Shows: light slices: a nice-10 busy loop beside a nice-0 one on one CPU,
# default scheduler (reported), light slices on and off: with light slices
# the nice-10 loop gets the same share (within 20% or 1 point) in turns at
# least twice as close together (the mean wait before each run, from
# schedstat, at most half as long), and `slice_light` moves; with --ablate
# light-slice it stays 0. Alone on its CPU its slice is left whole
# (`slice_light_alone` moves).
# Fails: the share moves, the waits do not shorten, or the counters do not
# follow the switch. Without the timer that ends a cut slice, it ran to
# the next tick and this failed.
test_light_slice() {
	local m ok=0 on off on_share on_wait off_share off_wait
	m=$(dmesg_mark)
	[ "$(state)" = disabled ] || { say "state $(state), want disabled for the default's run"; return 1; }
	light_pair || return 1
	say "default: nice 10 beside nice 0 on CPU $WEIGHT_CPU: share%, mean wait ms, runs: $(<"$WORK/light.txt")"
	run_under_sched light_pair || return 1
	on=$(<"$WORK/light.txt")
	say "on:  share%, mean wait ms, runs: $on"
	[ "$(say_counters slice_light)" -gt 0 ] || { say "no light slice was cut"; ok=1; }
	say_counters slice_light_kick >/dev/null
	run_under_sched light_alone || return 1
	say "on, the nice-10 loop alone on CPU $WEIGHT_CPU for 2 s:"
	[ "$(say_counters slice_light_alone)" -gt 0 ] ||
		{ say "the loop alone never started a run with its slice left whole"; ok=1; }
	SCHED_ARGS="--ablate light-slice" run_under_sched light_pair || return 1
	off=$(<"$WORK/light.txt")
	say "off: share%, mean wait ms, runs: $off"
	[ "$(say_counters slice_light)" -eq 0 ] || { say "slice_light moved with --ablate light-slice"; ok=1; }
	read -r on_share on_wait _ <<<"$on"
	read -r off_share off_wait _ <<<"$off"
	share_close "$on_share" "$off_share" ||
		{ say "the share changed: $on_share% with light slices, $off_share% without"; ok=1; }
	awk -v on="$on_wait" -v off="$off_wait" \
		'BEGIN { exit !(on > 0 && on * 2 <= off) }' ||
		{ say "turns not twice as close together with light slices"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}
