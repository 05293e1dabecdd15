#!/usr/bin/env bash
# Integration tests of scx_fastpath. Runs INSIDE the sched_ext guest, as root,
# from the repository root (scripts/test boots the guest with scripts/vm).
# Each test prints what it observed; the last line counts passes and fails.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
# shellcheck source=waits.sh
source "$here/waits.sh"
# shellcheck source=fairness.sh
source "$here/fairness.sh"

NCPU=$(nproc)
LOAD_SECS=${LOAD_SECS:-35}

test_attach() {
	local m
	m=$(dmesg_mark)
	[ "$(state)" = disabled ] || { say "state before start: $(state), want disabled"; return 1; }
	say "before: state $(state)"
	start_sched || return 1
	sleep 3
	if [ -z "$(last_sample)" ]; then
		say "no stats sample after 3 s"
		return 1
	fi
	say "stats: $(sample_summary)"
	check_no_kernel_errors "$m"
}

# CPU hogs 2 x nproc, a hog pinned to every CPU, fork and exec churn, and a
# sleeper that measures how long it waits to run: the scheduler must stay
# attached, keep every task running, and its counters must move.
# For $1 seconds, sleep 0.5 s at a time with bash builtins only (no fork or
# exec to be slowed down by the load) and print the longest gap between
# wakeups beyond the 0.5 s asked for, in ms: how long the sleeper waited to
# run.
sleeper_probe() {
	local fd prev now end gap max=0
	exec {fd}<> <(:)
	prev=${EPOCHREALTIME/./}
	end=$((prev + $1 * 1000000))
	while [ "$prev" -lt "$end" ]; do
		read -r -t 0.5 -u "$fd" _
		now=${EPOCHREALTIME/./}
		gap=$(((now - prev) / 1000 - 500))
		[ "$gap" -gt "$max" ] && max=$gap
		prev=$now
	done
	exec {fd}<&-
	echo "$max"
}

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

# Stop with signal $1: detached within 2 s, exit status 0, state disabled.
stop_with() {
	local sig=$1 m t0 t1 rc ms
	m=$(dmesg_mark)
	start_sched || return 1
	sleep 1
	t0=$(date +%s%N)
	kill "-$sig" "$SCHED_PID"
	wait_exit "$SCHED_PID"
	rc=$?
	wait_state disabled 2
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	SCHED_PID=
	say "SIG$sig: loader exit status $rc, state $(state) after ${ms} ms"
	say "loader said: $(grep -E 'EXIT|error' "$SCHED_LOG" | tail -n 1)"
	[ "$rc" -eq 0 ] && [ "$(state)" = disabled ] && [ "$ms" -le 2000 ] || return 1
	check_no_kernel_errors "$m"
}

test_sigint() { stop_with INT; }
test_sigterm() { stop_with TERM; }

# Ctrl-C while the scheduler loads (the verifier takes seconds in this
# guest): the loader must exit 0 without ever attaching it. A loader that
# attaches anyway and detaches at its first look at the signal passes
# sigint but fails here: the kernel logs the scheduler enabled.
test_sigint_loading() {
	local m rc i caught ms t0 t1
	m=$(dmesg_mark)
	SCHED_LOG=$(mktemp -p "$WORK" sched.XXXXXX.log) || return 1
	t0=$(date +%s%N)
	"$SCHED" >"$SCHED_LOG" 2>&1 &
	SCHED_PID=$!
	# Signal as soon as the handler is installed (SIGINT, bit 2, in SigCgt),
	# before which a Ctrl-C kills the loader with its default action.
	for ((i = 0; i < 500; i++)); do
		caught=$(awk '$1 == "SigCgt:" { print $2 }' "/proc/$SCHED_PID/status" 2>/dev/null)
		[ -n "$caught" ] && (((16#$caught & 2) != 0)) && break
		sleep 0.01
	done
	kill -INT "$SCHED_PID"
	t1=$(date +%s%N)
	ms=$(((t1 - t0) / 1000000))
	wait_exit "$SCHED_PID"
	rc=$?
	SCHED_PID=
	say "SIGINT ${ms} ms after the start; loader exit status $rc, state $(state)"
	say "loader said: $(tail -n 1 "$SCHED_LOG")"
	if dmesg_since "$m" | grep -E 'BPF scheduler ".*" enabled'; then
		say "the scheduler was attached after the stop was requested"
		return 1
	fi
	grep -q 'not attaching' "$SCHED_LOG" || {
		say "the loader did not say it stopped before attaching; its log:"
		sed 's/^/    | /' "$SCHED_LOG"
		return 1
	}
	[ "$rc" -eq 0 ] && [ "$(state)" = disabled ] || return 1
	check_no_kernel_errors "$m"
}

# A loader killed outright cannot clean up: the kernel must detach the
# scheduler when the last reference to its struct_ops link goes away.
test_sigkill() {
	local m
	m=$(dmesg_mark)
	start_sched || return 1
	sleep 1
	kill -KILL "$SCHED_PID"
	wait_exit "$SCHED_PID" 5 2>/dev/null
	SCHED_PID=
	if ! wait_state disabled 5; then
		say "state still $(state) 5 s after SIGKILL"
		return 1
	fi
	say "SIGKILL: state $(state), root/ops '$(ops)'"
	check_no_kernel_errors "$m"
}

# Taking a CPU offline (and back) makes the kernel eject the scheduler with
# a restart request; the loader must come back by itself each time.
test_hotplug() {
	local m cpu=$((NCPU - 1)) n
	m=$(dmesg_mark)
	[ "$NCPU" -ge 2 ] || { say "needs 2 CPUs"; return 1; }
	start_sched || return 1
	sleep 1
	for want in 0 1; do
		echo "$want" >"/sys/devices/system/cpu/cpu$cpu/online" || return 1
		say "cpu$cpu online=$want; online CPUs: $(cat /sys/devices/system/cpu/online)"
		sleep 1
		if ! wait_state enabled 30 || ! kill -0 "$SCHED_PID" 2>/dev/null; then
			say "not re-attached: state $(state), loader alive: $(kill -0 "$SCHED_PID" 2>/dev/null && echo yes || echo no)"
			sed 's/^/    | /' "$SCHED_LOG" | tail -n 20
			return 1
		fi
		say "re-attached: state $(state), root/ops '$(ops)'"
	done
	n=$(grep -c 'restarting' "$SCHED_LOG")
	say "loader restarted $n times: $(grep 'restart' "$SCHED_LOG" | head -n 1)"
	[ "$n" -ge 2 ] || return 1
	check_no_kernel_errors "$m"
}

# Bad input gets one clear line and a non-zero exit.
test_errors() {
	local out rc ok=0
	start_sched || return 1

	out=$("$SCHED" 2>&1)
	rc=$?
	say "second instance: exit $rc: $out"
	[ "$rc" -ne 0 ] && echo "$out" | grep -q 'already running: fastpath' || ok=1
	cleanup_sched

	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$SCHED" 2>&1)
	rc=$?
	say "as uid 65534: exit $rc: $out"
	[ "$rc" -ne 0 ] && echo "$out" | grep -q 'must run as root' || ok=1

	out=$("$SCHED" --slice-us 0 2>&1)
	rc=$?
	out=$(echo "$out" | head -n 1)
	say "--slice-us 0: exit $rc: $out"
	[ "$rc" -ne 0 ] && echo "$out" | grep -q 'not in 100..=100000' || ok=1
	[ "$(state)" = disabled ] || { say "state $(state) after the error cases"; ok=1; }
	return $ok
}

# A stats reader that goes away (`scx_fastpath --stats 1 | head -n 2`): the
# loader's next write fails. It must detach, say why in one line and exit 1,
# not panic (println! does, on EPIPE: exit 101 and a panic trace).
test_stats_reader_gone() {
	local m rc err=$WORK/reader-gone.err status=$WORK/reader-gone.rc lines
	m=$(dmesg_mark)
	rm -f "$status"
	lines=$({
		timeout 60 "$SCHED" --stats 0.5 2>"$err"
		echo $? >"$status"
	} | head -n 2)
	read -r rc <"$status" 2>/dev/null || rc=missing
	say "read $(echo "$lines" | wc -l) lines, then closed the pipe: exit $rc"
	say "its last line: $(tail -n 1 "$err")"
	wait_state disabled 5 || { say "state still $(state)"; return 1; }
	[ "$rc" = 1 ] || { say "exit $rc, not 1"; return 1; }
	if grep -q panicked "$err"; then
		say "it panicked"
		return 1
	fi
	tail -n 1 "$err" | grep -q 'error: detached: the stats could not be written: failed to write to standard output' || {
		say "no one-line error for it"
		return 1
	}
	grep -q 'EXIT: unregistered from user space' "$err" || {
		say "no clean detach in its log"
		return 1
	}
	check_no_kernel_errors "$m"
}

# ---------------------------------------------------------------------------
# Fast paths: each test runs a workload built to take the path, once with
# the fast path on (its counter must move) and once switched off (it must
# stay at zero, or the path's ablation counter must move instead).
# ---------------------------------------------------------------------------

# The loader's log ends with the kernel's exit reason: true if it detached
# because it was asked to, else say why it went. ("EXIT: " with the colon:
# the JSON samples name SCX_EV_ENQ_SKIP_EXITING.)
detached_on_request() {
	grep -q 'EXIT: unregistered from user space' "$SCHED_LOG" && return 0
	say "scheduler was ejected: $(grep -m1 'EXIT: ' "$SCHED_LOG")"
	return 1
}

# Run "$@" as the workload under the scheduler started with $SCHED_ARGS;
# leaves the loader's log (with its totals) in $SCHED_LOG.
run_under_sched() {
	# shellcheck disable=SC2086
	start_sched ${SCHED_ARGS:-} || return 1
	"$@" >"$WORK/workload.log" 2>&1
	local rc=$?
	kill -INT "$SCHED_PID"
	wait_exit "$SCHED_PID" || { say "loader exited non-zero"; rc=1; }
	SCHED_PID=
	[ "$rc" -eq 0 ] || { say "workload failed ($rc):"; tail -n 5 "$WORK/workload.log" | sed 's/^/    | /'; }
	return $rc
}

# Binaries on the guest's tmpfs: exec over the shared 9p root is ~8x slower.
setup_exec_loops() {
	cp /bin/true "$WORK/true"
	cp /bin/bash "$WORK/bash"
	# $WORK expanded here, so that a WORK of the caller's works too.
	cat >"$WORK/execl.sh" <<EOS
#!$WORK/bash
# An execl loop: the process replaces itself \$1 more times.
[ "\$1" -gt 0 ] && exec $WORK/bash $WORK/execl.sh \$((\$1 - 1))
exit 0
EOS
	chmod +x "$WORK/execl.sh"
}

# A CPU hog pinned to each CPU for $1 seconds, added to the caller's pids.
start_pinned_hogs() {
	local c
	for c in $(seq 0 $((NCPU - 1))); do
		taskset -c "$c" stress-ng --temp-path "$WORK" --cpu 1 --timeout "${1}s" --quiet &
		pids+=($!)
	done
}

# Wait for the caller's load generators (pids) and the exec loop; non-zero
# if a generator failed.
wait_load() {
	local p rc=0
	for p in "${pids[@]}"; do
		wait "$p" || { say "a load generator (pid $p) failed"; rc=1; }
	done
	wait "$EXEC_PID"
	return $rc
}

# Exec churn for $1 seconds in the background (EXEC_PID): stress-ng skips
# its exec stressor as root, so an execl loop.
start_exec_loop() {
	setup_exec_loops
	timeout "$1" "$WORK/bash" -c "while :; do $WORK/execl.sh 20; done" &
	EXEC_PID=$!
}

pinned_workload() {
	taskset -c 0 "$WORK/bash" "$WORK/execl.sh" 300 &&
		taskset -c 0 "$WORK/bash" -c "for i in \$(seq 300); do $WORK/true; done"
}

test_pinned_path() {
	local m on off migdis ok=0
	m=$(dmesg_mark)
	setup_exec_loops
	SCHED_ARGS="" run_under_sched pinned_workload || return 1
	on=$(counter_total pinned)
	migdis=$(counter_total pinned_migdis)
	say "on:  execl x300 + fork/exec x300 pinned to CPU 0: pinned=$on (migration-disabled: $migdis)"
	SCHED_ARGS="--ablate pinned-fastpath" run_under_sched pinned_workload || return 1
	off=$(counter_total pinned)
	say "off: same workload with --ablate pinned-fastpath: pinned=$off, enq_queued=$(counter_total enq_queued)"
	# 600 pinned tasks run and each is enqueued at least once.
	[ "${on:-0}" -ge 600 ] || { say "pinned path not taken enough"; ok=1; }
	[ "${off:-1}" -eq 0 ] || { say "pinned path taken while switched off"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

pipe_workload() { perf bench sched pipe -l "${PIPE_LOOPS:-20000}"; }

# The pipe ping-pong beside a busy loop on every CPU: no CPU is idle at
# its wakeups.
pipe_beside_hogs() {
	local hogs
	stress-ng --temp-path "$WORK" --cpu "$NCPU" --timeout 5s --quiet &
	hogs=$!
	sleep 1
	perf bench sched pipe -l 2000
	wait "$hogs"
}

test_cheap_wakeup() {
	local m ok=0 sum_on sum_off
	m=$(dmesg_mark)
	SCHED_ARGS="" run_under_sched pipe_workload || return 1
	say "on:  perf bench sched pipe: $(grep -E 'usecs/op' "$WORK/workload.log" | xargs)"
	sum_on=$(say_counters wake_prev_idle wake_no_scan wake_no_kick)
	[ "$(counter_total wake_prev_idle)" -gt 0 ] || { say "idle prev CPU never claimed directly"; ok=1; }
	SCHED_ARGS="--ablate cheap-wakeup" run_under_sched pipe_workload || return 1
	say "off: perf bench sched pipe: $(grep -E 'usecs/op' "$WORK/workload.log" | xargs)"
	sum_off=$(say_counters wake_prev_idle wake_no_scan wake_no_kick)
	[ "$sum_on" -gt 0 ] && [ "$sum_off" -eq 0 ] || ok=1
	# With every CPU busy the kernel's idle search is skipped.
	run_under_sched pipe_beside_hogs || return 1
	say "on, beside a busy loop on every CPU:"
	[ "$(say_counters wake_none_idle)" -gt 0 ] || { say "the idle search was never skipped"; ok=1; }
	SCHED_ARGS="--ablate cheap-wakeup" run_under_sched pipe_beside_hogs || return 1
	say "off, beside a busy loop on every CPU:"
	[ "$(say_counters wake_none_idle)" -eq 0 ] || { say "wake_none_idle moved with --ablate cheap-wakeup"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

test_idle_hold() {
	local m ok=0
	m=$(dmesg_mark)
	SCHED_ARGS="--idle-hold-us 1000" run_under_sched pipe_workload || return 1
	say "on (1000 us): perf bench sched pipe: $(grep -E 'usecs/op' "$WORK/workload.log" | xargs)"
	say "     hold_start=$(counter_total hold_start) hold_caught=$(counter_total hold_caught)" \
		"hold_expired=$(counter_total hold_expired) hold_redirect=$(counter_total hold_redirect)"
	say "     windows (us): $(last_sample | jq -c .hold)"
	[ "$(counter_total hold_caught)" -gt 0 ] || { say "no hold caught work"; ok=1; }
	[ "$(counter_total hold_redirect)" -gt 0 ] || { say "no wakeup was redirected to a holder"; ok=1; }
	SCHED_ARGS="--idle-hold-us 0" run_under_sched pipe_workload || return 1
	say "off (0): perf bench sched pipe: $(grep -E 'usecs/op' "$WORK/workload.log" | xargs)"
	say "     hold_start=$(counter_total hold_start) hold_redirect=$(counter_total hold_redirect)"
	[ "$(counter_total hold_start)" -eq 0 ] && [ "$(counter_total hold_redirect)" -eq 0 ] || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Many short sleepers on every CPU wake and block constantly, so holds start,
# catch, expire and get redirected wakeups all at once, for HOLD_SECS.
hold_race_workload() {
	stress-ng --temp-path "$WORK" --sleep $((4 * NCPU)) --sleep-max 64 \
		--cyclic 1 --cyclic-policy rr --cyclic-sleep 200000 \
		--pipe "$NCPU" --timeout "${HOLD_SECS:-60}s" --metrics-brief
}

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

# The same storm under the default settings (no idle hold): the load that
# exposed the vtime-floor starvation (docs/decisions.md, "The starvation
# guard runs every starved task").
test_sleeper_storm() { HOLD_US=0 test_hold_races; }

# 1,000 CPU hogs confined to one CPU by taskset, started by an unprivileged
# user (anyone can): a round over them takes seconds however short the
# slices (a CPU notices a used-up slice at its tick), and the kernel's
# watchdog must still see every one of them run in time. Deep-queue slices
# must kick in, every worker must complete and the scheduler must stay
# attached.
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

layout_workload() { stress-ng --temp-path "$WORK" --switch "$NCPU" --timeout 5s --quiet; }

# Fast path 4's counter layout decides where the counters go (per-CPU
# lines or one shared array): they count either way.
test_compact_layout() {
	local m ok=0 on off layout
	m=$(dmesg_mark)
	SCHED_ARGS="" run_under_sched layout_workload || return 1
	on=$(counter_total disp_cpu_dsq)
	say "on:  $(last_sample | jq -r .config | grep -o 'ablate=[a-z,-]*'), per-CPU counters: disp_cpu_dsq=$on"
	SCHED_ARGS="--ablate compact-layout" run_under_sched layout_workload || return 1
	off=$(counter_total disp_cpu_dsq)
	layout=$(last_sample | jq -r .config | grep -o 'ablate=[a-z,-]*')
	say "off: $layout, shared atomic counters: disp_cpu_dsq=$off"
	[ "${on:-0}" -gt 0 ] && [ "${off:-0}" -gt 0 ] || ok=1
	[ "$layout" = ablate=compact-layout ] || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# ---------------------------------------------------------------------------
# Weights: nice levels and cgroup cpu.weight split a CPU as the default
# scheduler splits it.
# ---------------------------------------------------------------------------

WEIGHT_SECS=${WEIGHT_SECS:-5}
WEIGHT_CPU=$((NCPU - 1))
CG=/sys/fs/cgroup

# Start a busy loop on $WEIGHT_CPU with "$@" as its prefix (e.g. nice -n 5,
# or in_cgroup NAME); prints its pid.
spinner() {
	"$@" taskset -c "$WEIGHT_CPU" bash -c 'while :; do :; done' >/dev/null 2>&1 &
	echo $!
}

# Run "$@" in cgroup $CG/$1, in place of the calling (sub)shell, so that
# spinner's $! is the busy loop's pid.
in_cgroup() {
	local name=$1
	shift
	exec bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$CG/$name" "$@"
}

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# Two spinners, set up by the prefixes in $1 and $2 (word-split), share one
# CPU for WEIGHT_SECS; prints the second one's share of their CPU time, %.
pair_share() {
	local a b ta tb
	# shellcheck disable=SC2086
	a=$(spinner $1)
	# shellcheck disable=SC2086
	b=$(spinner $2)
	sleep 1
	ta=$(cpu_ticks "$a")
	tb=$(cpu_ticks "$b")
	sleep "$WEIGHT_SECS"
	ta=$(($(cpu_ticks "$a") - ta))
	tb=$(($(cpu_ticks "$b") - tb))
	kill "$a" "$b"
	wait "$a" "$b" 2>/dev/null
	awk -v a="$ta" -v b="$tb" 'BEGIN { printf "%.1f", (a + b) ? 100 * b / (a + b) : -1 }'
}

# Within 20% (relative) of the default's share, or 1 point, whichever is
# larger: the tolerance the issue set.
share_close() {
	awk -v fp="$1" -v def="$2" 'BEGIN {
		tol = def * 0.2; if (tol < 1) tol = 1
		d = fp - def; if (d < 0) d = -d
		exit !(fp >= 0 && d <= tol)
	}'
}

WEIGHT_CASES=(
	"nice 0 vs nice 19|nice -n 0|nice -n 19"
	"nice -20 vs nice 0|nice -n -20|nice -n 0"
	"nice 0 vs nice 5|nice -n 0|nice -n 5"
	"cgroup cpu.weight 100 vs 300|in_cgroup fp_w100|in_cgroup fp_w300"
	"cgroup 300 > child 100 vs cgroup 100|in_cgroup fp_w300/fp_child|in_cgroup fp_w100"
)

# Measure every case under whatever scheduler runs now; fills shares[].
measure_weights() {
	local c i=0
	for c in "${WEIGHT_CASES[@]}"; do
		IFS='|' read -r _ pa pb <<<"$c"
		shares[i]=$(pair_share "$pa" "$pb")
		i=$((i + 1))
	done
}

test_weights() {
	local m ok=0 i c name def=() fp=()
	local -a shares
	m=$(dmesg_mark)
	grep -qw cpu "$CG/cgroup.controllers" 2>/dev/null || { say "no cgroup v2 cpu controller at $CG"; return 1; }
	echo +cpu >"$CG/cgroup.subtree_control" || return 1
	mkdir -p "$CG/fp_w100" "$CG/fp_w300"
	echo 100 >"$CG/fp_w100/cpu.weight"
	echo 300 >"$CG/fp_w300/cpu.weight"
	# A child at the default weight under fp_w300: the kernel gives its
	# task fp_w300's share against fp_w100's, so a scheduler that reads
	# only a task's own cgroup's weight (100) splits that pair evenly.
	echo +cpu >"$CG/fp_w300/cgroup.subtree_control" || return 1
	mkdir -p "$CG/fp_w300/fp_child"

	[ "$(state)" = disabled ] || { say "state $(state), want disabled for the default's run"; return 1; }
	measure_weights
	def=("${shares[@]}")
	start_sched || return 1
	measure_weights
	fp=("${shares[@]}")
	cleanup_sched
	# fp_w300's weight reached the scheduler (ops.cgroup_init).
	say "cgroup_weight=$(counter_total cgroup_weight) (cgroup weights the scheduler was given)"
	[ "$(counter_total cgroup_weight)" -ge 1 ] || ok=1

	say "two busy loops on CPU $WEIGHT_CPU, ${WEIGHT_SECS} s each; share of the second, default vs fastpath:"
	for i in "${!WEIGHT_CASES[@]}"; do
		c=${WEIGHT_CASES[i]}
		name=${c%%|*}
		if share_close "${fp[i]}" "${def[i]}"; then
			say "  $name: ${def[i]}% vs ${fp[i]}%: ok"
		else
			say "  $name: ${def[i]}% vs ${fp[i]}%: NOT within 20% / 1 point"
			ok=1
		fi
	done
	rmdir "$CG/fp_w300/fp_child" "$CG/fp_w100" "$CG/fp_w300" 2>/dev/null
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# CPU $WEIGHT_CPU's ticks since boot: busy (everything but idle and
# iowait), then idle.
cpu_busy_idle() {
	awk -v c="cpu$WEIGHT_CPU" '$1 == c { print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6 }' /proc/stat
}

# Hogs beside wakees, on one CPU: a nice -5 busy loop, two nice-0 ones and
# a stress-ng pipe pair (a writer and a reader that take turns, so one of
# them is always runnable), for WEIGHT_SECS * 2 s. Prints the share of the
# CPU's busy time, %, of the nice -5 loop, the two nice-0 ones together,
# and everything else (the pipe pair, mostly).
wakee_shares() {
	local a b c pipe busy0 idle0 busy idle ta tb tc
	a=$(spinner nice -n -5)
	b=$(spinner nice -n 0)
	c=$(spinner nice -n 0)
	taskset -c "$WEIGHT_CPU" stress-ng --temp-path "$WORK" --pipe 1 \
		--timeout $((WEIGHT_SECS * 2 + 4))s --quiet &
	pipe=$!
	sleep 2
	read -r busy0 idle0 < <(cpu_busy_idle)
	ta=$(cpu_ticks "$a")
	tb=$(cpu_ticks "$b")
	tc=$(cpu_ticks "$c")
	sleep $((WEIGHT_SECS * 2))
	read -r busy idle < <(cpu_busy_idle)
	ta=$(($(cpu_ticks "$a") - ta))
	tb=$(($(cpu_ticks "$b") - tb + $(cpu_ticks "$c") - tc))
	kill "$a" "$b" "$c"
	wait "$a" "$b" "$c" "$pipe" 2>/dev/null
	awk -v a="$ta" -v b="$tb" -v busy=$((busy - busy0)) -v idle=$((idle - idle0)) 'BEGIN {
		if (busy <= 0) { print "-1 -1 -1"; exit }
		printf "%.1f %.1f %.1f %d\n", 100 * a / busy, 100 * b / busy,
			100 * (busy - a - b) / busy, idle
	}'
}

# Each group's share must be within the weights rule of the default's,
# default and fastpath measured twice each, alternately; the fastpath runs'
# head lag counters are printed. Head lag as it was before displaced_head
# fails it: the pipe pair got 24.2% against the default's 15.4%, and with
# same_head (the step between, since folded into displaced_head)
# 17.9-18.7% against 15.2-15.5%, 3 runs of 7 passing (docs/decisions.md,
# "Displaced head, same head and earned lag"). WAKEE_SHARE_ARGS passes
# flags to scx_fastpath.
test_wakee_share() {
	local m ok=0 r d f names=("nice -5 loop" "two nice-0 loops" "the rest (pipe pair)")
	local -a def fp cnt
	m=$(dmesg_mark)
	[ "$(state)" = disabled ] || { say "state $(state), want disabled for the default's run"; return 1; }
	for r in 1 2; do
		def+=("$(wakee_shares)")
		# shellcheck disable=SC2086 # word-split on purpose: flags
		start_sched ${WAKEE_SHARE_ARGS-} || return 1
		fp+=("$(wakee_shares)")
		cleanup_sched
		cnt+=("lag_head=$(counter_total lag_head) lag_head_new=$(counter_total lag_head_new)")
	done
	say "CPU $WEIGHT_CPU, $((WEIGHT_SECS * 2)) s: share of its busy time (%), default vs fastpath, two runs each (idle ticks last):"
	say "  default: ${def[0]} | ${def[1]}; fastpath: ${fp[0]} | ${fp[1]}"
	say "  fastpath's head lag counters: ${cnt[0]} | ${cnt[1]}"
	for r in 0 1 2; do
		d=$(printf '%s\n' "${def[@]}" | awk -v i=$((r + 1)) '{ s += $i } END { printf "%.1f", s / NR }')
		f=$(printf '%s\n' "${fp[@]}" | awk -v i=$((r + 1)) '{ s += $i } END { printf "%.1f", s / NR }')
		if share_close "$f" "$d"; then
			say "  ${names[r]}: $d% vs $f%: ok"
		else
			say "  ${names[r]}: $d% vs $f%: NOT within 20% / 1 point"
			ok=1
		fi
	done
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

printf 'guest: kernel %s, %d CPUs, sched_ext state %s\n' "$(uname -r)" "$NCPU" "$(state)"
boot_mark=0

# scxtop's request, byte for byte: it connects once and sends
# {"req":"stats","args":{}} (no target, so "top") on every refresh of its
# scheduler view, reading the reply as untyped JSON (sched-ext/scx,
# tools/scxtop/src/app.rs). Twice on one connection, as it does.
scxtop_request() {
	local out
	out=$(python3 - "$STATS_SOCK" 2>&1 <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile()
at = []
for _ in range(2):
    s.sendall(b'{"req":"stats","args":{}}\n')
    r = json.loads(f.readline())
    assert r["errno"] == 0, r
    at.append(r["args"]["resp"]["at_ms"])
print("at_ms", *at)
PY
	) || { say "scxtop's request failed: $out"; return 1; }
	say "scxtop's request, twice on one connection: $out"
}

# The scx_stats socket: --monitor (text and --json) shows the running
# instance's figures, and they move under a workload. Without the socket,
# or with counters that do not move, or if scxtop's request is not
# answered, it fails.
test_monitor() {
	local m ok=0 mon=$WORK/monitor.txt js=$WORK/monitor.json first last pids
	m=$(dmesg_mark)
	start_sched || return 1
	say "socket: $(stat -c '%A %U %n' "$STATS_SOCK" 2>&1)"
	timeout 6 "$SCHED" --monitor 1 --all-counters >"$mon" 2>&1 &
	pids=$!
	timeout 6 "$SCHED" --monitor 0.5 --json >"$js" 2>&1 &
	pids="$pids $!"
	stress-ng --temp-path "$WORK" --switch "$NCPU" --timeout 5s --quiet
	# shellcheck disable=SC2086
	wait $pids
	say "--monitor 1 --all-counters: $(grep -c '^\[fastpath\]' "$mon") lines; the last two:"
	tail -n 2 "$mon" | cut -c1-160 | sed 's/^/    | /'
	grep -q '^\[fastpath\] config: slice-us=' "$mon" || { say "no config line from --monitor"; ok=1; }
	grep '^\[fastpath\] placed ' "$mon" | grep -qv ' run 0/s' ||
		{ say "no summary line from --monitor shows dispatches"; ok=1; }
	grep '^\[fastpath\] direct_local=' "$mon" | grep -qv 'disp_cpu_dsq=0/s' ||
		{ say "no --all-counters rate line from --monitor shows dispatches"; ok=1; }
	first=$(head -n 1 "$js") last=$(tail -n 1 "$js")
	say "--monitor 0.5 --json: $(wc -l <"$js") samples; disp_cpu_dsq" \
		"$(jq -r .counters.disp_cpu_dsq <<<"$first") -> $(jq -r .counters.disp_cpu_dsq <<<"$last")," \
		"at_ms $(jq -r .at_ms <<<"$first") -> $(jq -r .at_ms <<<"$last")"
	jq -e --argjson a "$first" '.counters.disp_cpu_dsq > $a.counters.disp_cpu_dsq and .at_ms > $a.at_ms' \
		<<<"$last" >/dev/null || { say "JSON samples do not move"; ok=1; }
	scxtop_request || ok=1
	stop_sched || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# `scx_fastpath set` changes a running instance's tunables: the pinned fast
# path switched off live must stop the pinned counter under a pinned load
# (only the BPF side reading the new value can do that; when the switch is
# off nothing else moves it), and switched on again must move it; the new
# tunables show in the socket's JSON, in the loader's log and survive a
# hotplug restart. Bad changes and callers are refused with one line.
pinned_delta() {
	local a b
	a=$(sample_json | jq -r .counters.pinned)
	pinned_workload >/dev/null 2>&1
	b=$(sample_json | jq -r .counters.pinned)
	echo $((b - a))
}

test_live_set() {
	local m ok=0 on off again out rc js sock=$STATS_SOCK cpu=$((NCPU - 1))
	m=$(dmesg_mark)
	setup_exec_loops
	start_sched || return 1
	on=$(pinned_delta)
	out=$("$SCHED" set ablate=pinned-fastpath slice-us=3000 2>&1)
	rc=$?
	say "set ablate=pinned-fastpath slice-us=3000: exit $rc: $out"
	[ "$rc" -eq 0 ] && [[ $out == *"slice-us=3000"*"ablate=pinned-fastpath"* ]] || ok=1
	[[ $out == *"as flags: --slice-us 3000 --ablate pinned-fastpath"* ]] || { say "set did not print the flags"; ok=1; }
	off=$(pinned_delta)
	js=$(sample_json | jq -r .config)
	say "socket's config now: ${js:0:100}..."
	[[ $js == *"slice-us=3000"*"ablate=pinned-fastpath"* ]] || { say "the JSON does not show the change"; ok=1; }
	"$SCHED" set ablate=none >/dev/null || ok=1
	again=$(pinned_delta)
	say "pinned under 600 pinned tasks: on $on, switched off live $off, on again $again"
	if [ "$on" -lt 600 ] || [ "$off" -ne 0 ] || [ "$again" -lt 600 ]; then
		say "the live switch did not reach the BPF side"
		ok=1
	fi
	grep -q 'set ablate=pinned-fastpath slice-us=3000 (live' "$SCHED_LOG" ||
		{ say "the loader did not log the change"; ok=1; }

	for bad in "slice-us=99" "idle-hold-us=5" "ablate=maybe" "head-lag=off" "nonsense"; do
		out=$("$SCHED" set "$bad" 2>&1)
		rc=$?
		say "set $bad: exit $rc: $out"
		[ "$rc" -eq 2 ] && [ -n "$out" ] && [ "$(wc -l <<<"$out")" -eq 1 ] || ok=1
	done
	out=$(setpriv --reuid=65534 --regid=65534 --clear-groups "$SCHED" set slice-us=2000 2>&1)
	rc=$?
	say "as uid 65534: exit $rc: $out"
	[ "$rc" -eq 1 ] && [[ $out == *"only root can"* ]] || ok=1
	chmod 0777 "$sock"
	out=$("$SCHED" set slice-us=2000 2>&1)
	rc=$?
	chmod 0755 "$sock"
	say "socket opened to all (0777): exit $rc: ${out:0:120}"
	[ "$rc" -eq 1 ] && [[ $out == *refused* ]] || ok=1

	# A restart (CPU hotplug) keeps what was set: after each of offline
	# and online, wait for the loader's restart and for it to serve again.
	local want restarts=0 deadline
	for want in 0 1; do
		echo "$want" >"/sys/devices/system/cpu/cpu$cpu/online" || { say "cpu$cpu online=$want failed"; ok=1; }
		deadline=$((SECONDS + 30))
		while [ "$SECONDS" -lt "$deadline" ]; do
			[ "$(grep -c restarting "$SCHED_LOG")" -gt "$restarts" ] && [ "$(state)" = enabled ] && break
			sleep 0.5
		done
		restarts=$(grep -c restarting "$SCHED_LOG")
	done
	sleep 1
	js=$(sample_json | jq -r .config)
	say "after $restarts hotplug restarts: ${js:0:60}..."
	[ "$restarts" -ge 2 ] || { say "the loader did not restart on both hotplug events"; ok=1; }
	[[ $js == "slice-us=3000 "* ]] || { say "the restart lost the change"; ok=1; }
	stop_sched || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Every counter moves somewhere in the default tests: a counter that no
# workload moves is dead or broken (a known flaw of the public schedulers).
# It reads the totals every scheduler run of this guest printed at exit (the
# last JSON sample of each log), so it means something only after the whole
# default set (it is last there); named alone it fails, as it should.
test_counters_moved() {
	local names name log totals moved="" dead=() runs=0 skip=""
	names=$("$SCHED" --help-stats | awk '{print $1}')
	# Counters of steals between LLCs cannot move where all CPUs share one;
	# test_topology asserts them in a guest with two.
	if [ "$(nr_llcs)" -le 1 ]; then
		skip=$("$SCHED" --help-stats | awk '/machines with several LLCs/ {print $1}' | xargs)
		say "one LLC here: not asked to move: $skip"
		names=$(printf '%s\n' $names | grep -vxF -f <(printf '%s\n' $skip))
	fi
	for log in "$WORK"/sched.*.log; do
		totals=$(SCHED_LOG=$log last_sample)
		[ -n "$totals" ] || continue
		runs=$((runs + 1))
		moved+=" $(jq -r '.counters | to_entries[] | select(.value > 0) | .key' <<<"$totals" | xargs) "
	done
	for name in $names; do
		[[ $moved == *" $name "* ]] || dead+=("$name")
	done
	say "$(wc -w <<<"$names") counters, totals of $runs scheduler runs; never moved: ${dead[*]:-none}"
	[ "$runs" -gt 0 ] && [ ${#dead[@]} -eq 0 ]
}

# The kernel's debug dump carries scx_fastpath's own state: per CPU
# (ops.dump_cpu: DSQ depth, clocks, flags) and per runnable task
# (ops.dump_task: vtime, lag, average run). sysrq-D writes the dump only to
# the sched_ext_dump tracepoint (an error exit also writes it to the exit
# message, --exit-dump-len). Without those ops the lines are absent and it
# fails. The dump must not disturb the scheduler.
test_dump() {
	local ok=0 hog dump=$WORK/dump.txt t=/sys/kernel/tracing
	mountpoint -q "$t" || mount -t tracefs nodev "$t" || { say "no tracefs"; return 1; }
	start_sched || return 1
	stress-ng --temp-path "$WORK" --cpu $((NCPU * 2)) --timeout 6s --quiet &
	hog=$!
	sleep 2
	echo 1 >"$t/events/sched_ext/sched_ext_dump/enable"
	echo >"$t/trace"
	echo 1 >/proc/sys/kernel/sysrq
	echo D >/proc/sysrq-trigger
	sleep 1
	cp "$t/trace" "$dump"
	echo 0 >"$t/events/sched_ext/sched_ext_dump/enable"
	say "sysrq-D: $(grep -c 'fastpath: dsq' "$dump") CPU lines, $(grep -c 'fastpath: vtime=' "$dump") task lines; e.g."
	grep -m1 'fastpath: dsq' "$dump" | sed 's/.*sched_ext_dump: *//' | cut -c1-160 | sed 's/^/    | /'
	grep -m1 'fastpath: vtime=' "$dump" | sed 's/.*sched_ext_dump: *//' | cut -c1-160 | sed 's/^/    | /'
	grep -q 'fastpath: dsq' "$dump" || { say "no per-CPU state in the dump"; ok=1; }
	grep -q 'fastpath: vtime=' "$dump" || { say "no per-task state in the dump"; ok=1; }
	[ "$(state)" = enabled ] || { say "state $(state) after the dump"; ok=1; }
	wait "$hog"
	stop_sched || ok=1
	return $ok
}

# scxtop itself (sched-ext/scx's tool, not built here: SCXTOP names its
# binary; out of the default tests for that reason) against a running
# instance under a load. From scx 1.1.1 on, scxtop's scheduler view ('s')
# shows DSQ latencies that it traces itself, and a scheduler's scx_stats
# reply reaches only its MCP resource stats://scheduler/raw: the test reads
# that resource through `scxtop mcp` and fails unless it carries
# scx_fastpath's counters, moving, and their metadata. It then shows the
# scheduler view in a 120x40 tmux pane, and fails if the pane does not
# name the scheduler.
test_scxtop() {
	local m ok=0 pane=$WORK/scxtop-pane.txt bin=${SCXTOP:-} load raw n meta i
	m=$(dmesg_mark)
	[ -n "$bin" ] || bin=$(command -v scxtop) || { say "no scxtop: set SCXTOP to its binary"; return 1; }
	start_sched || return 1
	stress-ng --temp-path "$WORK" --switch "$NCPU" --timeout 60s --quiet &
	load=$!
	sleep 3
	# --daemon: in one-shot mode scxtop answers initialize and exits.
	raw=$(printf '%s\n' \
		'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"fp-test","version":"0"}}}' \
		'{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"stats://scheduler/raw"}}' |
		timeout 60 "$bin" mcp --daemon 2>"$WORK/scxtop-mcp.err" |
		jq -r 'select(.id == 2) | .result.contents[0].text // empty')
	n=$(jq -r '.stats.counters.enq_queued // empty' <<<"$raw" 2>/dev/null)
	meta=$(jq -r '.stats_meta | tostring' <<<"$raw" 2>/dev/null | grep -o 'enq_queued' | head -n 1)
	say "scxtop $("$bin" --version 2>/dev/null | head -n 1): stats://scheduler/raw: $(wc -c <<<"$raw") bytes, enq_queued=${n:-none}, stats_meta ${meta:+names enq_queued}"
	jq -c '.stats.counters | with_entries(select(.value > 0))' <<<"$raw" 2>/dev/null |
		fold -w 110 | sed 's/^/    | /'
	[ "${n:-0}" -gt 0 ] || {
		say "scx_fastpath's counters not in scxtop's stats://scheduler/raw"
		tail -n 5 "$WORK/scxtop-mcp.err" | sed 's/^/    | /'
		ok=1
	}
	[ -n "$meta" ] || { say "no counter metadata in stats://scheduler/raw"; ok=1; }

	# The TUI draws on stderr. It may take seconds to come up under TCG,
	# and a key pressed before that is lost, so 's' is sent every 5 s.
	tmux new-session -d -s fp_scxtop -x 120 -y 40 \
		"$bin; echo scxtop exit status \$?; sleep 30" ||
		{ say "tmux new-session failed"; ok=1; }
	for i in $(seq 40); do
		sleep 1
		[ $((i % 5)) -eq 0 ] && tmux send-keys -t fp_scxtop s
		tmux capture-pane -p -t fp_scxtop >"$pane"
		grep -q 'fastpath.*DSQ Latency' "$pane" && break
	done
	say "scheduler view ('s') after $i s, the pane (120x40):"
	sed 's/^/    | /' "$pane"
	grep -q 'fastpath.*DSQ Latency' "$pane" ||
		{ say "the scheduler view does not name scx_fastpath"; ok=1; }
	tmux send-keys -t fp_scxtop q
	sleep 2
	tmux kill-session -t fp_scxtop 2>/dev/null
	kill "$load" 2>/dev/null
	wait "$load" 2>/dev/null
	stop_sched || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# The dashboard, --monitor 1 --tui, in a 100x30 tmux pane: before a
# scheduler starts it says it waits; then it shows a row per CPU, non-zero
# rates and the tunables; q ends it with status 0 and the pane closes.
# Without a terminal it refuses with one line. The last pane is kept in
# $WORK/tui-pane.txt.
tui_rows() {
	# The per-CPU table's rows, borders blanked: "cpu queue placed/s ...".
	sed 's/│/ /g' "$1" | awk 'NF == 7 && ($1 == "all" || $1 ~ /^[0-9]+$/)'
}

# A rate as the dashboard shows it, other than 0 or "-" (not known yet).
tui_nonzero() { [ -n "$1" ] && [ "$1" != 0 ] && [ "$1" != - ]; }

test_tui() {
	local m ok=0 pane=$WORK/tui-pane.txt rcf=$WORK/tui.rc out rc load c i placed
	m=$(dmesg_mark)
	out=$("$SCHED" --monitor 1 --tui </dev/null 2>&1 >/dev/null)
	rc=$?
	say "stdout not a terminal: exit $rc, '$out'"
	if [ "$rc" -eq 0 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] ||
		! grep -q -- '--tui needs a terminal' <<<"$out"; then
		say "want a non-zero exit and one line saying --tui needs a terminal"
		ok=1
	fi

	rm -f "$rcf"
	tmux new-session -d -s fp_tui -x 100 -y 30 "$SCHED --monitor 1 --tui; echo \$? >$rcf" ||
		{ say "tmux new-session failed"; return 1; }
	sleep 2
	tmux capture-pane -p -t fp_tui >"$pane"
	if grep -q 'waiting for scx_fastpath\.\.\.' "$pane"; then
		say "before the scheduler starts: 'waiting for scx_fastpath...'"
	else
		say "no 'waiting for scx_fastpath...' before the scheduler starts; the pane:"
		sed 's/^/    | /' "$pane"
		ok=1
	fi

	start_sched || { tmux kill-session -t fp_tui; return 1; }
	stress-ng --temp-path "$WORK" --switch "$NCPU" --timeout 12s --quiet &
	load=$!
	# Rates need two samples after it connects (it retries every second).
	for i in $(seq 10); do
		sleep 1
		tmux capture-pane -p -t fp_tui >"$pane"
		placed=$(tui_rows "$pane" | awk '$1 == "all" { print $3 }')
		[ "$i" -ge 4 ] && tui_nonzero "$placed" && break
	done
	say "after ${i} s: the pane (100x30):"
	sed 's/^/    | /' "$pane"
	grep -q '^tunables: slice-us=' "$pane" || { say "no tunables line"; ok=1; }
	tui_nonzero "$placed" ||
		{ say "the all row shows no placements per second: '$placed'"; ok=1; }
	for c in $(seq 0 $((NCPU - 1))); do
		tui_rows "$pane" | awk -v c="$c" '$1 == c { f = 1 } END { exit !f }' ||
			{ say "no row for CPU $c"; ok=1; }
	done
	say "rows: $(tui_rows "$pane" | awk '{ printf "%s%s", s, $1; s = "," }') (nproc $NCPU)"

	tmux send-keys -t fp_tui q
	for i in $(seq 20); do
		tmux has-session -t fp_tui 2>/dev/null || break
		sleep 0.25
	done
	if tmux has-session -t fp_tui 2>/dev/null; then
		say "the pane is still open 5 s after q"
		tmux kill-session -t fp_tui
		ok=1
	else
		say "q: pane closed, exit status $(cat "$rcf" 2>/dev/null || echo missing)"
		[ "$(cat "$rcf" 2>/dev/null)" = 0 ] || { say "want exit status 0"; ok=1; }
	fi
	wait "$load"
	stop_sched || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# An RT (SCHED_FIFO) hog takes the last CPU for RT_SECS (15) while unpinned
# CPU hogs and the sleeper probe run. A wakee whose CPU the RT task holds
# goes to a CPU that runs ours (wake_rt_away), and the other CPU takes what
# is queued on the RT CPU (rt_rescued): by default both must move, and with
# --ablate rt-away,rt-rescue neither can. The sleeper's worst wait is
# reported for both, not bounded: a run with RT away read 541 ms (a whole
# 0.5 s sleep period lost, as in half the runs without it), so a bound
# would only flake. Nothing is ejected either way. A run before both has
# no RT task of ours: timer wakeups that come in bursts (stress-ng timerfd
# and sleep), where a CPU that an earlier wakeup of the same interrupt has
# just claimed out of idle runs none of ours for a moment. wake_rt_away
# must stay under 0.25% of the enqueues there (the kernel's own stop and
# RT threads may hold a CPU now and then: 1 of 3,625); a version that took
# "not running ours" for RT sent 41 of 3,647 away here, and 2.5-14% under
# each stressor alone (docs/decisions.md, "RT away only where RT holds
# the CPU").
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

# stress-ng's mutex stressor, as root, runs its threads at SCHED_FIFO and
# keeps every CPU of the 2-vCPU guest busy for the whole run: our tasks, the
# stressors' own SCHED_OTHER parents among them, run only in the kernel's
# ext deadline server (50 ms a second where RT throttling is off, as on
# 7.3). MUTEX_RUNS (5) runs of 4 s, the scheduler restarted for each (the
# hang that --rt-release caused came at the first or second; see
# docs/decisions.md, "Moving tasks off an RT-held CPU in ops.enqueue").
# The FIFO threads stop only when their starved parent tells them, so a
# SCHED_FIFO 99 guard kills every stress-ng still running MUTEX_GUARD s (30)
# after its start: a hang is then a failure with a message, not a guest
# that never comes back.
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

# The systemd unit's capability bounding set (read from the unit) with
# no_new_privs, as the unit runs it: the loader must still attach and stop
# cleanly. (The unit's file-system protections are not reproduced here.)
test_unit_caps() {
	local caps m ok=0
	m=$(dmesg_mark)
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' contrib/scx_fastpath.service | tr '[:upper:]' '[:lower:]' |
		sed 's/cap_/+/g; s/ /,/g')
	[ -n "$caps" ] || { say "no CapabilityBoundingSet in the unit"; return 1; }
	say "bounding set from the unit: $caps, no_new_privs"
	SCHED_LOG=$WORK/sched.caps.log
	setpriv --bounding-set=-all,"$caps" --inh-caps=-all --no-new-privs \
		"$SCHED" --stats 1 --json >"$SCHED_LOG" 2>&1 &
	SCHED_PID=$!
	if ! wait_state enabled 30; then
		say "did not attach: $(tail -n 2 "$SCHED_LOG" | xargs)"
		return 1
	fi
	say "attached under the bounding set: root/ops '$(ops)'"
	stop_sched || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Deferred wakeup preemption: a periodic SCHED_OTHER sleeper (cyclictest,
# 1 ms period) against a CPU hog on the same CPU. With the timer, a wakeup
# that comes before the hog has had --wakeup-gran-us arms it and the timer
# preempts the hog (wake_deferred, wake_defer_kick); with
# --ablate deferred-preempt neither counter can move.
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

# Hog hysteresis: the same sleeper against a hog on CPU 0. Preempted every
# millisecond, the hog's runs average about a millisecond and now and then
# drop under --hog-run-us; with the hysteresis (the default) it stays a
# hog while they average more than half of that, and the preemptions of it
# then move wake_hog_held. With --ablate hog-hysteresis nothing holds it in the
# class, and wake_hog_held cannot move; with --hog-run-us 100000 the
# wakeups that find a task in it stay under 1% of the default's (below).
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

# A pipe ping-pong on CPU 0 (stress-ng switch: a writer and a reader that
# wake each other and block), so every wakee is next on its waker's CPU.
# Its ops/s go to workload.log.
switch_workload() {
	taskset -c 0 stress-ng --temp-path "$WORK" --switch 1 --timeout 5s --metrics-brief 2>&1 |
		awk '$4 == "switch" {print $(NF - 1)}' | head -n 1
}

# Wake local (the default): most of the ping-pong's wakees go to CPU 0's
# local DSQ, more than ops.dispatch() moves from its DSQ (disp_cpu_dsq,
# the move it saves); with --ablate wake-local wake_local cannot move, and
# the wakees go through the DSQ.
test_wake_local() {
	local m ok=0 wl moved
	m=$(dmesg_mark)
	run_under_sched switch_workload || return 1
	wl=$(say_counters wake_local 2>/dev/null) moved=$(say_counters disp_cpu_dsq 2>/dev/null)
	say "on : a ping-pong on CPU 0: $(cat "$WORK/workload.log") ops/s, wake_local=$wl disp_cpu_dsq=$moved"
	[ "$wl" -gt "$moved" ] || { say "fewer wakees went local than through the DSQ"; ok=1; }
	SCHED_ARGS="--ablate wake-local" run_under_sched switch_workload || return 1
	wl=$(say_counters wake_local 2>/dev/null) moved=$(say_counters disp_cpu_dsq 2>/dev/null)
	say "off: a ping-pong on CPU 0, --ablate wake-local: $(cat "$WORK/workload.log") ops/s, wake_local=$wl disp_cpu_dsq=$moved"
	[ "$wl" -eq 0 ] || { say "wake_local moved with --ablate wake-local"; ok=1; }
	[ "$moved" -gt 0 ] || { say "no wakee went through the DSQ with --ablate wake-local"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# stress-ng yield: tasks that call sched_yield() in a loop, more than the
# CPUs, so no CPU is idle and each yield has a successor. Its ops/s go to
# workload.log.
yield_workload() {
	stress-ng --temp-path "$WORK" --yield 1 --timeout 5s --metrics-brief 2>&1 |
		awk '$4 == "yield" {print $(NF - 1)}' | head -n 1
}

# Fast yield (the default): a yield with nothing queued on the CPU just
# goes on (yield_kept); with something queued the yielder gives its slice up
# (yield_given). stress-ng yield has both, as its yielders move between the
# CPUs. With --ablate fast-yield every yield gives its slice up: yield_kept
# cannot move, and yield_given counts them all.
test_fast_yield() {
	local m ok=0 kept given
	m=$(dmesg_mark)
	run_under_sched yield_workload || return 1
	kept=$(say_counters yield_kept 2>/dev/null) given=$(say_counters yield_given 2>/dev/null)
	say "on : stress-ng yield: $(cat "$WORK/workload.log") ops/s, yield_kept=$kept yield_given=$given"
	[ "$kept" -gt 0 ] || { say "no yield went on without a round trip"; ok=1; }
	SCHED_ARGS="--ablate fast-yield" run_under_sched yield_workload || return 1
	kept=$(say_counters yield_kept 2>/dev/null) given=$(say_counters yield_given 2>/dev/null)
	say "off: stress-ng yield, --ablate fast-yield: $(cat "$WORK/workload.log") ops/s, yield_kept=$kept yield_given=$given"
	[ "$kept" -eq 0 ] || { say "yield_kept moved with --ablate fast-yield"; ok=1; }
	[ "$given" -gt 0 ] || { say "no yield was counted with --ablate fast-yield"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# stress-ng tee x2: per instance a writer, a tee() stage and a reader
# chained by pipes, six tasks on 2 CPUs. Its ops/s go to workload.log.
tee_workload() {
	stress-ng --temp-path "$WORK" --tee 2 --timeout 5s --metrics-brief 2>&1 |
		awk '$4 == "tee" {print $(NF - 1)}' | head -n 1
}

# Pull (the default, --pull-gran-us): a CPU about to run its own DSQ's
# head takes another CPU's instead when that one is further behind by more
# than the granularity. tee's stages queue behind each other per CPU, so
# by default disp_pulled moves; with --pull-gran-us 0 nothing else counts
# it, so it stays 0. Both runs' ops/s are reported, not asserted (a
# benchmark's job: docs/decisions.md, "Pull").
test_pull() {
	local m ok=0 pulled
	m=$(dmesg_mark)
	run_under_sched tee_workload || return 1
	pulled=$(say_counters disp_pulled 2>/dev/null)
	say "on : stress-ng tee x2: $(cat "$WORK/workload.log") ops/s, disp_pulled=$pulled"
	[ "$pulled" -gt 0 ] || { say "no CPU took another's head over its own"; ok=1; }
	SCHED_ARGS="--pull-gran-us 0" run_under_sched tee_workload || return 1
	pulled=$(say_counters disp_pulled 2>/dev/null)
	say "off: stress-ng tee x2, --pull-gran-us 0: $(cat "$WORK/workload.log") ops/s, disp_pulled=$pulled"
	[ "$pulled" -eq 0 ] || { say "disp_pulled moved with --pull-gran-us 0"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# stress-ng futex: per instance a waker that spins on FUTEX_WAKE and a
# waiter; 2 per CPU keep every CPU busy, so the waiter's wakeups find no
# idle CPU. Its ops/s go to workload.log.
futex_workload() {
	stress-ng --temp-path "$WORK" --futex $((2 * NCPU)) --timeout 6s --metrics-brief 2>&1 |
		awk '$4 == "futex" {print $(NF - 1)}' | head -n 1
}

test_wake_away() {
	local m ok=0 on off
	m=$(dmesg_mark)
	[ "$NCPU" -ge 2 ] || { say "needs 2 CPUs"; return 1; }
	run_under_sched futex_workload || return 1
	on=$(cat "$WORK/workload.log")
	say "on:  stress-ng futex x$((2 * NCPU)): ${on:-?} ops/s"
	[ "$(say_counters wake_away)" -gt 0 ] || { say "no wakee was sent beside its waker"; ok=1; }
	SCHED_ARGS="--ablate wake-away" run_under_sched futex_workload || return 1
	off=$(cat "$WORK/workload.log")
	say "off: stress-ng futex x$((2 * NCPU)): ${off:-?} ops/s"
	[ "$(say_counters wake_away)" -eq 0 ] || { say "wake_away moved with --ablate wake-away"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# RCU readers first: CPU hogs, and tasks that spend their time in the
# kernel under rcu_read_lock() (procfs reads walk the task list and file
# tables under it, getdents too), so that some slices end inside a read-side
# section. Only a task preempted inside one moves rcu_first; with
# --ablate rcu-first it cannot move. Busy loops alone are preempted in user
# mode, outside any section: there it must stay rare (under 5% of the
# re-queued tasks), or the check counts something else, such as the
# trampoline's own rcu_read_lock() that a first version counted.
rcu_workload() {
	stress-ng --temp-path "$WORK" --cpu $((2 * NCPU)) --procfs "$NCPU" --getdent "$NCPU" \
		--timeout 8s --quiet
}

rcu_hogs_only() {
	stress-ng --temp-path "$WORK" --cpu $((2 * NCPU)) --timeout 8s --quiet
}

test_rcu_first() {
	local m ok=0 first queued
	m=$(dmesg_mark)
	run_under_sched rcu_workload || return 1
	say "on:  CPU hogs with procfs and getdent readers, 8 s"
	[ "$(say_counters rcu_first)" -gt 0 ] || { say "no RCU reader was queued first"; ok=1; }
	run_under_sched rcu_hogs_only || return 1
	first=$(counter_total rcu_first) queued=$(counter_total enq_queued)
	say "hogs only: rcu_first=${first:-?} of enq_queued=${queued:-?}"
	[ "$((${first:-0} * 20))" -lt "${queued:-0}" ] ||
		{ say "busy loops, preempted in user mode, were queued as RCU readers"; ok=1; }
	SCHED_ARGS="--ablate rcu-first" run_under_sched rcu_workload || return 1
	say "off: CPU hogs with procfs and getdent readers"
	[ "$(say_counters rcu_first)" -eq 0 ] || { say "rcu_first moved with --ablate rcu-first"; ok=1; }
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

# With light slices the nice-10 loop gets the same share (within 20% or
# 1 point) in turns at least twice as close together (the mean wait before
# a run), and slice_light moves; with --ablate light-slice it stays 0. Without
# the timer that ends a cut slice, it ran to the next tick and this failed.
# Alone on its CPU its slice is left whole (slice_light_alone moves).
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

# ---------------------------------------------------------------------------
# Fault cases (scripts/test --faults runs them with the default set). Each
# prints what it observed; each fails on an ejection, a kernel error, or a
# scheduler that is not attached when it should be.
# ---------------------------------------------------------------------------

# Attached, loader alive, and the loader's own exit line not an error: $1
# says when.
still_attached() {
	if [ "$(state)" != enabled ] || ! kill -0 "$SCHED_PID" 2>/dev/null; then
		say "$1: not attached (state $(state)); the loader's last lines:"
		grep -v '^{' "$SCHED_LOG" | grep -v '^ *SCX_EV_' | tail -n 5 | sed 's/^/    | /'
		return 1
	fi
	say "$1: attached, root/ops '$(ops)'"
}

# Stop the scheduler started by start_sched; non-zero if the loader failed
# or had been ejected.
stop_sched() {
	local rc=0
	kill -INT "$SCHED_PID"
	wait_exit "$SCHED_PID" || { say "loader exited non-zero"; rc=1; }
	SCHED_PID=
	detached_on_request || rc=1
	return $rc
}

# The last CPU offline and online again HOTPLUG_CYCLES times under CPU
# load; the loader restarts each time and ends attached.
test_hotplug_loop() {
	local m cpu=$((NCPU - 1)) i want n cycles=${HOTPLUG_CYCLES:-20} hog ok=0
	m=$(dmesg_mark)
	[ "$NCPU" -ge 2 ] || { say "needs 2 CPUs"; return 1; }
	start_sched || return 1
	stress-ng --temp-path "$WORK" --cpu $((2 * NCPU)) --timeout 600s --quiet &
	hog=$!
	for i in $(seq "$cycles"); do
		for want in 0 1; do
			echo "$want" >"/sys/devices/system/cpu/cpu$cpu/online" || { ok=1; break 2; }
			sleep 0.5
			if ! wait_state enabled 30 || ! kill -0 "$SCHED_PID" 2>/dev/null; then
				say "cycle $i, online=$want: not re-attached (state $(state))"
				ok=1
				break 2
			fi
		done
	done
	kill "$hog"
	wait "$hog" 2>/dev/null
	echo 1 >"/sys/devices/system/cpu/cpu$cpu/online"
	n=$(grep -c 'restarting' "$SCHED_LOG")
	say "$cycles offline/online cycles of cpu$cpu under $((2 * NCPU)) hogs: the loader restarted $n times"
	[ "$n" -ge $((2 * cycles)) ] || { say "expected $((2 * cycles)) restarts"; ok=1; }
	still_attached "after the cycles" || ok=1
	stop_sched || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# sysrq-S, the kernel's own "disable sched_ext", under load: the kernel
# falls back to its default scheduler, the loader exits and says why, and a
# new start attaches again.
test_sysrq_disable() {
	local m hog rc ok=0 sysrq
	m=$(dmesg_mark)
	sysrq=$(cat /proc/sys/kernel/sysrq)
	echo 1 >/proc/sys/kernel/sysrq
	start_sched || return 1
	stress-ng --temp-path "$WORK" --cpu "$NCPU" --timeout 20s --quiet &
	hog=$!
	sleep 2
	echo S >/proc/sysrq-trigger
	wait_state disabled 5 || { say "state $(state) 5 s after sysrq-S"; ok=1; }
	wait_exit "$SCHED_PID"
	rc=$?
	SCHED_PID=
	say "sysrq-S: state $(state); loader exit status $rc: $(grep -E 'EXIT' "$SCHED_LOG" | tail -n 1)"
	grep -q 'EXIT:.*sysrq' "$SCHED_LOG" || { say "the loader did not report the sysrq exit"; ok=1; }
	echo "$sysrq" >/proc/sys/kernel/sysrq
	start_sched || ok=1
	still_attached "started again" || ok=1
	stop_sched || ok=1
	kill "$hog" 2>/dev/null
	wait "$hog" 2>/dev/null
	# sysrq-S is logged as the reason the scheduler was disabled, which is
	# what this test does on purpose: only other errors count.
	if kernel_errors "$m" | grep -v 'disabled by sysrq' | grep -q .; then
		check_no_kernel_errors "$m"
		ok=1
	fi
	return $ok
}

# The loader stopped (SIGSTOP) for STOP_SECS under load: the BPF scheduler
# goes on scheduling (a sleeper's worst wait stays small), and after
# SIGCONT the loader prints stats again and stops cleanly.
test_sigstop() {
	local m ok=0 hog probe before after secs=${STOP_SECS:-20}
	m=$(dmesg_mark)
	start_sched || return 1
	stress-ng --temp-path "$WORK" --cpu $((2 * NCPU)) --timeout $((secs + 10))s --quiet &
	hog=$!
	sleep 1
	kill -STOP "$SCHED_PID"
	probe=$(sleeper_probe "$secs")
	still_attached "after ${secs} s with the loader stopped (sleeper's worst wait ${probe} ms)" || ok=1
	before=$(samples | wc -l)
	kill -CONT "$SCHED_PID"
	sleep 3
	after=$(samples | wc -l)
	say "stats lines: $before before SIGCONT, $after 3 s after"
	[ "$after" -gt "$before" ] || { say "no stats after SIGCONT"; ok=1; }
	[ "$probe" -le 1000 ] || { say "the sleeper waited ${probe} ms"; ok=1; }
	kill "$hog"
	wait "$hog" 2>/dev/null
	stop_sched || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# cgroups created with random cpu.weight, hogs moved between them, and the
# cgroups removed, for CHURN_SECS under load.
test_cgroup_churn() {
	local m ok=0 hog end i=0 r=0 g p pids t0
	m=$(dmesg_mark)
	grep -qw cpu "$CG/cgroup.controllers" 2>/dev/null || { say "no cgroup v2 cpu controller at $CG"; return 1; }
	echo +cpu >"$CG/cgroup.subtree_control" || return 1
	start_sched || return 1
	stress-ng --temp-path "$WORK" --cpu $((2 * NCPU)) --timeout $((${CHURN_SECS:-20} + 10))s --quiet &
	hog=$!
	sleep 2
	mapfile -t pids < <(pgrep -f 'stress-ng-cpu')
	t0=$SECONDS
	end=$((t0 + ${CHURN_SECS:-20}))
	# The loop runs in a subshell in a cgroup of its own at the highest
	# cpu.weight: a hog moved into a cgroup of weight up to 10,000 is
	# entitled to up to 100 times the CPU of a nice-0 shell in the root
	# cgroup, by either scheduler, and the loop then made 2 to 6 steps in
	# 20 s, too few to remove a cgroup under load.
	# Builtins only in the loop but mkdir/rmdir: exec is slow under load.
	mkdir -p "$CG/fp_ctl_churn"
	echo 10000 >"$CG/fp_ctl_churn/cpu.weight"
	(
		echo "$BASHPID" >"$CG/fp_ctl_churn/cgroup.procs"
		while [ "$SECONDS" -lt "$end" ]; do
			g=$CG/fp_churn_$((i % 8))
			mkdir -p "$g"
			echo $((1 + RANDOM % 10000)) >"$g/cpu.weight"
			for p in "${pids[RANDOM % ${#pids[@]}]}" "${pids[RANDOM % ${#pids[@]}]}"; do
				echo "$p" >"$g/cgroup.procs" 2>/dev/null
			done
			if [ $((i % 2)) -eq 1 ]; then
				for g in "$CG"/fp_churn_*; do
					while read -r p; do echo "$p" >"$CG/cgroup.procs" 2>/dev/null; done <"$g/cgroup.procs"
					rmdir "$g" 2>/dev/null && r=$((r + 1))
				done
			fi
			i=$((i + 1))
		done
		echo "$i $r" >"$WORK/churn.out"
	)
	read -r i r <"$WORK/churn.out"
	rmdir "$CG/fp_ctl_churn"
	say "$i steps in $((SECONDS - t0)) s (a cgroup made, its cpu.weight set, 2 of ${#pids[@]} hogs moved in; all emptied and removed every 2nd step: $r removed; the loop in a cgroup of weight 10000) under load"
	kill "$hog"
	wait "$hog" 2>/dev/null
	for g in "$CG"/fp_churn_*; do rmdir "$g" 2>/dev/null; done
	still_attached "after the churn" || ok=1
	stop_sched || ok=1
	say "cgroup_weight=$(counter_total cgroup_weight) weights set"
	[ "$r" -gt 0 ] || { say "no cgroup was removed while the load ran"; ok=1; }
	[ "$(counter_total cgroup_weight)" -ge "$i" ] || { say "fewer weights reached the scheduler than were set"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# Many tasks: 10,000 threads created and exiting, then a fork bomb by an
# unprivileged user bounded by RLIMIT_NPROC, each under the scheduler.
test_many_tasks() {
	local m ok=0 t0 n
	m=$(dmesg_mark)
	start_sched || return 1
	t0=$SECONDS
	n=$(python3 - <<'PY'
import threading
done = 0
for _ in range(100):
    ts = [threading.Thread(target=lambda: None) for _ in range(100)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    done += len(ts)
print(done)
PY
)
	say "$n threads created and joined in $((SECONDS - t0)) s"
	[ "$n" = 10000 ] || ok=1
	# The bomb runs in a cgroup of its own, which cgroup.kill empties at
	# once: pkill raced its forks and once left 255 of them running
	# beside the rest of the guest's tests in one fault matrix.
	mkdir -p "$CG/fp_bomb" || return 1
	in_cgroup fp_bomb setpriv --reuid=65534 --regid=65534 --clear-groups bash -c \
		'ulimit -u 300; f() { f | f & }; f' >/dev/null 2>&1 &
	sleep 10
	echo 1 >"$CG/fp_bomb/cgroup.kill"
	t0=$SECONDS
	while [ -s "$CG/fp_bomb/cgroup.procs" ] && [ $((SECONDS - t0)) -lt 10 ]; do
		sleep 0.2
	done
	n=$(pgrep -u 65534 | wc -l)
	say "fork bomb as uid 65534 with ulimit -u 300 for 10 s; $n left after cgroup.kill"
	rmdir "$CG/fp_bomb" || ok=1
	[ "$n" -eq 0 ] || ok=1
	still_attached "after the threads and the fork bomb" || ok=1
	stop_sched || ok=1
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# An RT hog on each CPU in turn: a SCHED_FIFO busy loop pinned to CPU c for
# RT_EACH_SECS while 2 x nproc unpinned busy loops (plain bash processes,
# so each is one task whose CPU time /proc/PID/stat has) and the sleeper
# probe run. What RT displaces must run elsewhere: every loop gets at least
# half its fair share of the CPUs RT leaves (nproc - 1) over the window (a
# task stranded on the RT CPU gets only the kernel's ext server's few
# milliseconds a second), the probe never waits RT_EACH_BOUND ms (1000, as
# in mixed_load), and nothing is ejected. The RT loop must have run half
# the window (it read 67-89%, with RT rescue and without; a stress-ng RT
# hog, used before, had not even started), or the rest proves nothing.
# Then CPU 0 again under the other RT throttling setting
# (sched_rt_runtime_us 950000 if the kernel's is unthrottled, else -1).
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

# The soak: SOAK_SECS (default 600) of the soak's load (start_soak_load)
# while the sleeper probe runs the whole time. No ejection, no sched_ext
# error or stall, every load generator completes, and the probe never waits
# SOAK_BOUND ms (default 1000, as in mixed_load) beyond its sleep.
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

# Sums /proc/PID/schedstat (time on the CPU, time runnable but waiting,
# times run) over pids "${@:2}" into the caller's array named $1, with
# builtins only (a fork under the soak's load takes a TCG guest a good part
# of a second); fails, naming it, if one of them has gone.
schedstat_sum() {
	local -n sum=$1
	local p r w n
	shift
	sum=(0 0 0)
	for p in "$@"; do
		read -r r w n 2>/dev/null <"/proc/$p/schedstat" ||
			{ say "pid $p has gone before its CPU time was read"; return 1; }
		sum=($((sum[0] + r)) $((sum[1] + w)) $((sum[2] + n)))
	done
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

# The soak's hogs get the CPU shares the default scheduler gives them: the
# soak's load (start_soak_load) runs SHARE_SECS under the default
# scheduler and under scx_fastpath, twice each, in the order default,
# fastpath, fastpath, default, so that a drift over the test weighs on
# both alike; each hog group's share of the CPUs (mean of the two runs)
# must be within 20% of the default's, or 1 point (the weights test's
# rule). The mean wait before each run is shown, not asserted: the
# default's slices are shorter.
#
# First the load runs SHARE_WARM_SECS unmeasured. Both failures in 12
# runs came with soak_shares first in a fresh guest and the default's
# first run reading high in every group (nice -5 hog 8.9% and 9.3%,
# against 6.2-7.3% in its second runs): in the seven runs that came
# first in their guest the default's first run gave that hog 6.7-9.3%
# (mean 7.9%), its second 6.2-7.3% (mean 6.9%). Why the first run is
# light on churn is not pinned down (see soak_share_run for one way it
# can be); with the warm-up, the order and soak_share_run's wait, the
# default's two runs agreed within 0.3 points in 5 of 5.
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

# How many CPUs a cpulist ("0-3,8,10-11") names.
cpulist_count() {
	local r n=0 rs
	IFS=, read -ra rs <<<"$1"
	for r in "${rs[@]}"; do
		if [[ $r == *-* ]]; then n=$((n + ${r#*-} - ${r%-*} + 1)); else n=$((n + 1)); fi
	done
	echo "$n"
}

# The guest has the shape scripts/test asked for (EXPECT_CPUS vCPUs,
# EXPECT_NODES NUMA nodes, EXPECT_THREADS threads per core, EXPECT_POSSIBLE
# possible CPUs), so that the
# tests run after this one (mixed_load) ran on that shape and not on a
# default 2-vCPU guest; the scheduler attaches there and sees every CPU.
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

# The verifier's instruction count per BPF program against the committed
# baseline (scripts/guest/verifier.sh says how to update it): first, so
# that a rise is reported before the slow tests.
test_verifier() {
	"$here/verifier.sh"
}

# TESTS="name ..." runs a subset.
DEFAULT_TESTS="verifier attach attach_under_load weights cgroup_hierarchy wakee_share mixed_load sigint sigint_loading sigterm sigkill hotplug errors stats_reader_gone pinned_path cheap_wakeup idle_hold compact_layout unit_caps deferred_preempt hog_hysteresis wake_local fast_yield pull wake_away rcu_first light_slice rt_hog rt_mutex monitor live_set tui dump sleeper_storm hog_storm hold_races counters_moved"
# The fault matrix (scripts/test --faults). The storms (hold_races is the
# sleeper storm with an idle hold) run once in the default set and four
# times more here, so that one --faults run shows them 5 of 5 (a storm
# that passed once proves little).
FAULT_TESTS="hotplug_loop sysrq_disable sigstop cgroup_churn many_tasks rt_each_cpu soak_shares soak"
FAULT_TESTS="$FAULT_TESTS$(for _ in 1 2 3 4; do printf ' sleeper_storm hog_storm hold_races'; done)"
# Run only when named in TESTS: scxtop needs SCXTOP, topology a guest
# shaped by scripts/test.
NAMED_TESTS="scxtop topology"
# A test_ function in none of the lists would never run: refuse to start.
for f in $(declare -F | awk '$3 ~ /^test_/ {print substr($3, 6)}'); do
	case " $DEFAULT_TESTS $FAULT_TESTS $NAMED_TESTS " in
	*" $f "*) ;;
	*)
		echo "test_$f is in none of DEFAULT_TESTS, FAULT_TESTS and NAMED_TESTS"
		exit 2
		;;
	esac
done
[ "${FAULTS:-0}" = 1 ] && DEFAULT_TESTS="$DEFAULT_TESTS $FAULT_TESTS"
for t in ${TESTS:-$DEFAULT_TESTS}; do
	declare -F "test_$t" >/dev/null || { echo "no such test: $t"; exit 2; }
	run_test "$t" "test_$t"
done

printf '=== TEST final_state\n'
if [ "$(state)" = disabled ] && [ -z "$(kernel_errors $boot_mark)" ]; then
	say "after all tests: state $(state), no sched_ext error in the kernel log"
	record final_state PASS 0
else
	say "after all tests: state $(state)"
	kernel_errors $boot_mark | sed 's/^/    | /'
	record final_state FAIL 0
fi

summary
