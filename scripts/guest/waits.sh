# shellcheck shell=bash
# Area: Bounded waits
# Tests of bounded waits (sourced by integration.sh, which defines NCPU and
# sources lib.sh): no task waits long when the scheduler attaches to, or
# restarts on, a machine that is already loaded.

# The attach_under_load timeline, in seconds from the start of the load.
AUL_SECS=${AUL_SECS:-24}
AUL_ATTACH=4
AUL_OFFLINE=11
AUL_ONLINE=15

# The demo's load (scripts/guest/demo.sh: a hog per CPU, one more pinned to
# CPU 0, a pipe pair), with hogs that measure their own longest time off
# the CPU (offcpu.c), for AUL_SECS. "$1" runs at AUL_ATTACH (start the
# scheduler, or nothing), then the last CPU goes offline at AUL_OFFLINE and
# online at AUL_ONLINE (each a restart of the scheduler, if one runs).
# Leaves offcpu's two lines per hog in $AUL_OUT, the pinned one last. Not
# in a subshell: "$1" may set SCHED_PID.
AUL_OUT=$WORK/offcpu.lines
offcpu_under_load() {
	local start=$1 i pids=() pipe out=$WORK/offcpu.out
	for i in $(seq "$NCPU"); do
		"$WORK/offcpu" "$AUL_SECS" >"$out.$i" &
		pids+=($!)
	done
	taskset -c 0 "$WORK/offcpu" "$AUL_SECS" >"$out.pinned" &
	pids+=($!)
	stress-ng --temp-path "$WORK" --pipe 1 --timeout "${AUL_SECS}s" --quiet &
	pipe=$!
	sleep "$AUL_ATTACH"
	$start
	sleep $((AUL_OFFLINE - AUL_ATTACH))
	echo 0 >"/sys/devices/system/cpu/cpu$((NCPU - 1))/online"
	sleep $((AUL_ONLINE - AUL_OFFLINE))
	echo 1 >"/sys/devices/system/cpu/cpu$((NCPU - 1))/online"
	wait "${pids[@]}" "$pipe"
	cat "$out".[0-9]* "$out.pinned" >"$AUL_OUT"
}

# The longest time off the CPU of any hog in offcpu_under_load's output
# ($1), in ms, in the seconds [$2, $3) of the run.
phase_gap_ms() {
	awk -v a="$2" -v b="$3" '$1 == "per_s_ms" {
		for (i = 2; i <= NF; i++) if (i - 2 >= a && i - 2 < b && $i > m) m = $i
	} END { printf "%d", m }' <<<"$1"
}

# The phases of the run compared: name, first second, end.
AUL_PHASES=(
	"attach $AUL_ATTACH $AUL_OFFLINE"
	"hotplug-restarts $AUL_OFFLINE $AUL_SECS"
)

# Shows: attach to a loaded machine, and restart there after CPU hotplug,
# without leaving any task waiting: the demo's load (a hog per CPU and one
# pinned to CPU 0, each measuring its own longest time off the CPU, and a
# pipe pair) for 24 s, under the default scheduler and then with
# scx_fastpath attached 4 s in; the last CPU goes offline at 11 s and
# online at 15 s (two restarts of the loader). In each phase (from the
# attach to the hotplug, from the hotplug to the end) no hog's longest
# time off the CPU exceeds 4x the default scheduler's longest in the same
# phase, in the same guest under the same load and hotplug, plus 20 ms;
# the starvation guard never fires (no starve_rescue, no "starvation
# guard" line); the loader is attached at the end.
# Fails: in either phase a hog waits over that bound, the starvation guard
# fires, or the loader is not attached at the end. It fails where a CPU's
# clock stays behind a task that keeps the CPU: a task that then arrives
# there runs on until it has caught up (over a second, with the guard
# firing, before the clock moved on kept runs).
test_attach_under_load() {
	local m def fp def_ms fp_ms bound ok=0 rescues ph name a b
	m=$(dmesg_mark)
	[ "$NCPU" -ge 2 ] || { say "needs 2 CPUs"; return 1; }
	cc -O2 -o "$WORK/offcpu" scripts/guest/offcpu.c || return 1
	[ "$(state)" = disabled ] || { say "state $(state), want disabled for the default's run"; return 1; }

	offcpu_under_load :
	def=$(<"$AUL_OUT")
	offcpu_under_load start_sched
	fp=$(<"$AUL_OUT")
	say "the demo's load for ${AUL_SECS} s; scx_fastpath attached at ${AUL_ATTACH} s; CPU $((NCPU - 1)) off at ${AUL_OFFLINE} s, on at ${AUL_ONLINE} s"
	say "default:      $(grep maxgap <<<"$def" | awk '{ printf "%d ms at %s s; ", $2 / 1000, $4 }')"
	say "scx_fastpath: $(grep maxgap <<<"$fp" | awk '{ printf "%d ms at %s s; ", $2 / 1000, $4 }')"
	for ph in "${AUL_PHASES[@]}"; do
		read -r name a b <<<"$ph"
		def_ms=$(phase_gap_ms "$def" "$a" "$b")
		fp_ms=$(phase_gap_ms "$fp" "$a" "$b")
		bound=$((4 * def_ms + 20))
		say "$name (${a}-${b} s): longest time off the CPU ${fp_ms} ms, default ${def_ms} ms, bound ${bound} ms"
		[ "$fp_ms" -le "$bound" ] || { say "  a hog waited ${fp_ms} ms, over the bound"; ok=1; }
	done
	if ! wait_state enabled 30 "$SCHED_PID"; then
		say "not attached after the hotplug: state $(state)"
		sed 's/^/    | /' "$SCHED_LOG" | tail -n 20
		return 1
	fi
	say "restarts: $(grep -c restarting "$SCHED_LOG"); state $(state), root/ops '$(ops)'"
	rescues=$(grep -c 'starvation guard' "$SCHED_LOG")
	[ "$rescues" -eq 0 ] || {
		say "the starvation guard fired: $(grep 'starvation guard' "$SCHED_LOG" | head -n 2 | xargs)"
		ok=1
	}
	stop_sched || ok=1
	say "totals: $(sample_summary)"
	[ "$(counter_total starve_rescue)" -eq 0 ] || { say "starve_rescue moved"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}
