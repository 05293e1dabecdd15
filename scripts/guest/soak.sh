# shellcheck shell=bash
# Area: Soak
# The soak's load, long and with everything in it (sourced by
# integration.sh, which defines NCPU and sources lib.sh; fault cases):
# whether it stays up, and whether its hogs get their shares.

# A busy loop for $2 seconds, started by the prefix in "${@:3}" (nice,
# taskset: each execs the next, so $! is the loop's own pid), added to the
# caller's array named $1 and to its pids.
timed_spinner() {
	local -n into=$1
	local secs=$2
	shift 2
	"$@" bash -c 'e=$((SECONDS + $1)); while [ $SECONDS -lt $e ]; do :; done' _ "$secs" &
	into+=($!)
	pids+=($!)
}

# The soak's load for $1 seconds (its hogs for $2, default $1), in the
# caller's pids, the hogs first (and EXEC_PID): CPU
# hogs at nice 0 (NCPU of them, HOGS_N0), nice 10 (NCPU, HOGS_N10) and -5
# (one, HOGS_M5), a nice-0 hog pinned to each CPU (HOGS_PIN), pipe
# ping-pong, fork churn and 32 short sleepers (stress-ng), and an execl
# loop. The hogs are busy loops, so that their pids are known and their CPU
# time can be read.
start_soak_load() {
	local secs=$1 hog_secs=${2:-$1} c
	HOGS_N0=() HOGS_N10=() HOGS_M5=() HOGS_PIN=()
	for c in $(seq 0 $((NCPU - 1))); do
		timed_spinner HOGS_N0 "$hog_secs"
		timed_spinner HOGS_N10 "$hog_secs" nice -n 10
		timed_spinner HOGS_PIN "$hog_secs" taskset -c "$c"
	done
	timed_spinner HOGS_M5 "$hog_secs" nice -n -5
	stress-ng --temp-path "$WORK" --pipe 1 --fork 1 --sleep 1 --sleep-max 32 \
		--timeout "${secs}s" --quiet &
	SOAK_STRESS_PID=$!
	pids+=($!)
	start_exec_loop "$secs"
}

# Seconds (whole) until process $1 has $2 children, polled with builtins;
# fails after $3 seconds.
children_after() {
	local pid=$1 want=$2 limit=$3 t0=$SECONDS kids
	while :; do
		# The file ends without a newline, so read fails having read it.
		kids=()
		read -ra kids 2>/dev/null <"/proc/$pid/task/$pid/children"
		[ "${#kids[@]}" -ge "$want" ] && break
		[ $((SECONDS - t0)) -lt "$limit" ] || return 1
		sleep 0.2
	done
	echo $((SECONDS - t0))
}

# Shows: the soak: 10 minutes (SOAK_SECS, 600 s) of the soak's load
# (start_soak_load: nice 0, 10 and -5 hogs, pinned hogs, pipe, fork, exec
# and sleepers) while the sleeper probe runs the whole time: no ejection,
# no sched_ext error or stall (an RCU stall included), every load
# generator completes, the probe never waits SOAK_BOUND ms (default 1000,
# as in mixed_load: a second) beyond its sleep, and every rescue is named.
# Fails: any of these.
test_soak() {
	local m ok=0 secs=${SOAK_SECS:-600} bound=${SOAK_BOUND:-1000} pids=() probe
	m=$(dmesg_mark)
	start_sched || return 1
	start_soak_load "$secs"
	say "load for ${secs} s: CPU hogs at nice 0, 10 and -5, a pinned hog per CPU, pipe, fork, an execl loop, 32 sleepers"
	probe=$(sleeper_probe $((secs - 2)))
	say "sleeper probe over the soak: worst wait beyond its 0.5 s sleep ${probe} ms (bound ${bound})"
	wait_load || ok=1
	still_attached "after the ${secs} s soak" || ok=1
	say "last stats: $(sample_summary)"
	[ "$probe" -lt "$bound" ] || { say "the sleeper waited ${probe} ms"; ok=1; }
	stop_sched || ok=1
	check_rescues_traced || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Adds $1 (1 or -1) times each hog group's schedstat sums to the caller's
# associative arrays r, w and n (run ns, wait ns, runs, by group); sets
# SHARES_LOST if a hog had gone.
add_group_times() {
	local sign=$1 g hogs s
	for g in N0 N10 M5 PIN; do
		hogs="HOGS_${g}[@]"
		schedstat_sum s "${!hogs}" || SHARES_LOST=1
		r[$g]=$((${r[$g]:-0} + sign * s[0])) w[$g]=$((${w[$g]:-0} + sign * s[1]))
		n[$g]=$((${n[$g]:-0} + sign * s[2]))
	done
}

# One run of the soak's load for SHARE_SECS (default 30) under whatever
# scheduler runs now: each hog group's CPU time from 5 s after the load
# starts to 5 s before it ends is read from schedstat, over the window's
# measured length (starting the load under TCG takes seconds, so fixed
# sleeps would read after the hogs had gone). Appends "group share%
# wait_ms" lines (share of all the CPUs' time; the mean wait before each
# run) to the caller's array named $1; sets SHARES_LOST if a hog had gone.
soak_share_run() {
	local -n out=$1
	local secs=${SHARE_SECS:-30} pids=() hogs g t0 t1 t2 started
	local -A r w n
	# The hogs outlive the window by a minute and are ended here, so that
	# a read that comes late still finds them: one run lost a hog that
	# ended 5 s after the read was due. The churn runs 20 s longer
	# than the window, which opens only once stress-ng's three workers
	# run: until then the hogs have the CPUs to themselves. With WORK on
	# the host's 9p share, 15 s runs without this wait read the nice-0
	# hogs at 9.6-24.7% where 4.5% is normal; on the guest's tmpfs the
	# workers start within 2 s.
	start_soak_load $((secs + 20)) $((secs + 80))
	started=$(children_after "$SOAK_STRESS_PID" 3 20) ||
		{ say "stress-ng's workers had not started after 20 s"; SHARES_LOST=1; started=20; }
	say "  $1 run: stress-ng's workers ran ${started} s after the load began"
	t0=$SECONDS
	sleep 2
	t1=${EPOCHREALTIME/./}
	add_group_times -1
	sleep $((t0 + secs - 8 - SECONDS > 0 ? t0 + secs - 8 - SECONDS : 0))
	t2=${EPOCHREALTIME/./}
	add_group_times 1
	for g in N0 N10 M5 PIN; do
		out+=("$(awk -v g="$g" -v r="${r[$g]}" -v wt="${w[$g]}" -v n="${n[$g]}" \
			-v span=$(((t2 - t1) * NCPU)) 'BEGIN {
				printf "%s %.1f %.1f", g, 100 * r / (span * 1e3), n ? wt / n / 1e6 : -1 }')")
	done
	hogs=("${HOGS_N0[@]}" "${HOGS_N10[@]}" "${HOGS_M5[@]}" "${HOGS_PIN[@]}")
	kill "${hogs[@]}" 2>/dev/null
	wait "${hogs[@]}" 2>/dev/null
	pids=("${pids[@]:${#hogs[@]}}")
	wait_load
}

# One measured run of the soak's load under scx_fastpath (see
# soak_share_run), its results appended to the caller's fp array; adds
# the starvation guard's rescues to the caller's rescued.
soak_share_fp() {
	local n
	# SHARES_ARGS: flags for scx_fastpath (e.g. --ablate head-lag).
	# shellcheck disable=SC2086 # word-split on purpose: flags
	start_sched ${SHARES_ARGS-} || return 1
	soak_share_run fp
	still_attached "after the soak's load" || ok=1
	stop_sched || ok=1
	check_rescues_traced || ok=1
	n=$(counter_total starve_rescue)
	rescued=$((rescued + ${n:-0}))
}

# The warm-up: both failures in 12 runs came with soak_shares first in a
# fresh guest and the default's first run reading high in every group
# (nice -5 hog 8.9% and 9.3%, against 6.2-7.3% in its second runs): in the
# seven runs that came first in their guest the default's first run gave
# that hog 6.7-9.3% (mean 7.9%), its second 6.2-7.3% (mean 6.9%). Why the
# first run is light on churn is not pinned down (see soak_share_run for
# one way it can be); with the warm-up, the order and soak_share_run's
# wait, the default's two runs agreed within 0.3 points in 5 of 5.
#
# Shows: the soak's hogs get the CPU shares the default scheduler gives
# them: first the load runs SHARE_WARM_SECS (15) unmeasured, under the
# default scheduler; then the soak's load (start_soak_load) runs
# SHARE_SECS (30) under the default scheduler and under scx_fastpath,
# twice each, in the order default, fastpath, fastpath, default, so that a
# drift over the test weighs on both alike, each window opened once the
# load's workers run. Each hog group's (nice 0, 10 and -5, pinned) share of
# the CPUs (mean of the two runs) must be within 20% of the default's, or
# 1 point (the weights test's rule). The mean wait before each run is
# shown, not asserted: the default's slices are shorter.
# Fails: a group off by more, or a hog had gone before its CPU time was
# read (or the churn had not started): the shares do not compare.
test_soak_shares() {
	local m ok=0 g i def=() fp=() rescued=0 warm=()
	SHARES_LOST=0
	m=$(dmesg_mark)
	[ "$(state)" = disabled ] || { say "state $(state), want disabled for the default's runs"; return 1; }
	SHARE_SECS=${SHARE_WARM_SECS:-15} soak_share_run warm
	say "warm-up, ${SHARE_WARM_SECS:-15} s under the default, not counted: $(printf '%s; ' "${warm[@]}")"
	soak_share_run def
	soak_share_fp || return 1
	soak_share_fp || return 1
	soak_share_run def
	say "hog groups' share of the CPUs (%), and mean wait before a run (ms), default vs fastpath, two runs each:"
	for i in 0 1 2 3; do
		awk -v d1="${def[i]}" -v d2="${def[i + 4]}" -v f1="${fp[i]}" -v f2="${fp[i + 4]}" 'BEGIN {
			split(d1, a, " "); split(d2, b, " "); split(f1, c, " "); split(f2, d, " ")
			printf "%s %.2f %.2f %s %s %s %s %s %s %s %s\n", a[1], (a[2] + b[2]) / 2, (c[2] + d[2]) / 2,
				a[2], b[2], c[2], d[2], a[3], b[3], c[3], d[3] }'
	done >"$WORK/shares"
	while read -r g d f d1 d2 f1 f2 dw1 dw2 fw1 fw2; do
		if share_close "$f" "$d"; then
			say "  $g: $d% ($d1, $d2; waits $dw1, $dw2 ms) vs $f% ($f1, $f2; waits $fw1, $fw2 ms): ok"
		else
			say "  $g: $d% ($d1, $d2; waits $dw1, $dw2 ms) vs $f% ($f1, $f2; waits $fw1, $fw2 ms): NOT within 20% / 1 point"
			ok=1
		fi
	done <"$WORK/shares"
	say "starvation guard rescues over the two fastpath runs: $rescued"
	[ "$SHARES_LOST" = 0 ] || { say "a hog had gone before its CPU time was read, or the churn had not started: the shares above do not compare"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}
