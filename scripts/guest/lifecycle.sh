# shellcheck shell=bash
# Area: Lifecycle and signals
# Tests of the loader's life (sourced by integration.sh, which defines NCPU
# and sources lib.sh): the verifier's cost, attaching, stopping on each
# signal, restarting after CPU hotplug, its errors, and the systemd unit's
# capabilities.

# Shows: the BPF verifier's instruction count per BPF program
# (scripts/guest/verifier.sh, which says how to update the baseline)
# against the committed baseline, scripts/verifier-baseline.tsv; first in
# the default set, so that a rise is reported before the slow tests.
# Fails: a program's count rose more than 20% over the baseline, or a
# program has no baseline.
test_verifier() {
	# shellcheck disable=SC2154 # here: integration.sh's directory
	"$here/verifier.sh"
}

# Shows: from state `disabled`, `/sys/kernel/sched_ext/state` becomes
# `enabled` and `root/ops` names fastpath; a stats sample comes within 3 s.
# Fails: it does not attach, or no stats sample comes.
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

# Shows: SIGINT: the loader detaches within 2 s, exit 0, state `disabled`.
# Fails: it hangs, exits non-zero, or leaves the scheduler attached.
test_sigint() { stop_with INT; }

# Shows: Ctrl-C (SIGINT) while the scheduler loads (the verifier takes
# seconds in this guest; the signal comes as soon as the loader's handler
# is installed): the loader exits 0 without ever attaching it, says "not
# attaching", and the kernel log never says the scheduler was enabled.
# Fails: the scheduler attaches and detaches: a loader that attaches anyway
# and detaches at its first look at the signal passes sigint but fails
# here, as the kernel logs the scheduler enabled.
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

# Shows: SIGTERM: the loader detaches within 2 s, exit 0, state `disabled`.
# Fails: it hangs, exits non-zero, or leaves the scheduler attached.
test_sigterm() { stop_with TERM; }

# Shows: a loader killed outright (SIGKILL) cannot clean up: the kernel
# detaches the scheduler when the last reference to its struct_ops link
# goes away, and falls back to its default scheduler.
# Fails: state stays `enabled` 5 s after the SIGKILL.
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

# Shows: taking the last CPU (CPU 1 of 2) offline and back makes the kernel
# eject the scheduler with a restart request; the loader restarts itself
# each time.
# Fails: it exits or ends detached, or logs fewer than two restarts.
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

# Shows: bad input gets one clear line and a non-zero exit: a second
# instance names the first ("already running: fastpath"; exit 3); non-root
# (uid 65534: "must run as root") and out-of-range values (`--slice-us 0`)
# fail with one line; the state stays `disabled`.
# Fails: more lines, a panic, another status.
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

# Shows: a stats reader that goes away (`scx_fastpath --stats 0.5 | head -n 2`):
# the loader's next write fails; once the reader has gone, the loader
# detaches, says why in one line and exits 1.
# Fails: it panics (a closed pipe: println! does, on EPIPE: exit 101 and a
# panic trace), exits otherwise, or stays attached.
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

# Shows: the loader attaches and stops cleanly under the systemd unit's
# `CapabilityBoundingSet` (read from contrib/scx_fastpath.service) with
# no_new_privs, as the unit runs it. (The unit's file-system protections
# are not reproduced here.)
# Fails: it needs a capability the unit does not grant.
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
