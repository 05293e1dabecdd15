# shellcheck shell=bash
# Area: Fast paths
# Tests of the fast paths and placement (sourced by integration.sh, which
# defines NCPU and sources lib.sh): each test runs a workload built to take
# the path, once with the fast path on (its counter must move) and once
# switched off (it must stay at zero, or the path's ablation counter must
# move instead).

# Shows: pinned execl and fork/exec loops (300 each, on CPU 0) move
# `pinned`: 600 pinned tasks run and each is enqueued at least once; with
# --ablate pinned-fastpath it stays 0.
# Fails: it stays 0 (or under 600), or moves with the path off.
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

# Shows: perf bench sched pipe moves `wake_prev_idle` (an idle previous CPU
# claimed directly), `wake_no_scan`, `wake_no_kick`; beside a busy loop per
# CPU `wake_none_idle` moves (the kernel's idle search skipped); with
# --ablate cheap-wakeup all four stay 0.
# Fails: a counter stays 0, or moves with the path off.
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

# Shows: a pipe ping-pong with `--idle-hold-us 1000` catches work
# (`hold_caught`) and redirects wakeups to a holder (`hold_redirect`);
# with `--idle-hold-us 0` no hold starts and none is redirected.
# Fails: no hold catches, no wakeup is redirected, or a hold starts (or a
# wakeup is redirected) with the window at 0.
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

layout_workload() { stress-ng --temp-path "$WORK" --switch "$NCPU" --timeout 5s --quiet; }

# Shows: fast path 4's counter layout decides where the counters go
# (per-CPU lines or one shared array): they count either way;
# `disp_cpu_dsq` moves with the per-CPU layout and with the shared array
# (--ablate compact-layout, which the config then names).
# Fails: they stay 0 under one of the two, or the config does not name
# the switch.
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

# A pipe ping-pong on CPU 0 (stress-ng switch: a writer and a reader that
# wake each other and block), so every wakee is next on its waker's CPU.
# Its ops/s go to workload.log.
switch_workload() {
	taskset -c 0 stress-ng --temp-path "$WORK" --switch 1 --timeout 5s --metrics-brief 2>&1 |
		awk '$4 == "switch" {print $(NF - 1)}' | head -n 1
}

# Shows: wake local (the default): a pipe ping-pong on CPU 0 (stress-ng
# switch); most of its wakees go to CPU 0's local DSQ: `wake_local` moves
# more than `disp_cpu_dsq` (what ops.dispatch() moves from its DSQ, the
# move it saves); with --ablate wake-local wake_local cannot move, and the
# wakees go through the DSQ. Both runs' ops/s are printed.
# Fails: the wakees go through the DSQ by default, wake_local moves with
# the switch off, or no wakee goes through the DSQ then.
test_wake_local() {
	local m ok=0
	m=$(dmesg_mark)
	on_off_counters switch_workload wake-local wake_local disp_cpu_dsq "a ping-pong on CPU 0" || return 1
	[ "${ON[0]}" -gt "${ON[1]}" ] || { say "fewer wakees went local than through the DSQ"; ok=1; }
	[ "${OFF[0]}" -eq 0 ] || { say "wake_local moved with --ablate wake-local"; ok=1; }
	[ "${OFF[1]}" -gt 0 ] || { say "no wakee went through the DSQ with --ablate wake-local"; ok=1; }
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

# Shows: fast yield (the default): a yield with nothing queued on the CPU
# just goes on (`yield_kept`); with something queued the yielder gives its
# slice up (`yield_given`). stress-ng yield has both, as its yielders move
# between the CPUs. With --ablate fast-yield every yield gives its slice
# up: yield_kept stays 0, and yield_given counts every yield.
# Fails: the shortcut is not taken, or is taken when off, or no yield is
# counted when off.
test_fast_yield() {
	local m ok=0
	m=$(dmesg_mark)
	on_off_counters yield_workload fast-yield yield_kept yield_given "stress-ng yield" || return 1
	[ "${ON[0]}" -gt 0 ] || { say "no yield went on without a round trip"; ok=1; }
	[ "${OFF[0]}" -eq 0 ] || { say "yield_kept moved with --ablate fast-yield"; ok=1; }
	[ "${OFF[1]}" -gt 0 ] || { say "no yield was counted with --ablate fast-yield"; ok=1; }
	check_no_kernel_errors "$m" || ok=1
	return $ok
}

# stress-ng tee x2: per instance a writer, a tee() stage and a reader
# chained by pipes, six tasks on 2 CPUs. Its ops/s go to workload.log.
tee_workload() {
	stress-ng --temp-path "$WORK" --tee 2 --timeout 5s --metrics-brief 2>&1 |
		awk '$4 == "tee" {print $(NF - 1)}' | head -n 1
}

# Shows: pull (the default, --pull-gran-us): a CPU about to run its own
# DSQ's head takes another CPU's instead when that one is further behind
# by more than the granularity. stress-ng tee x2's stages queue behind
# each other per CPU, so by default `disp_pulled` moves; with
# `--pull-gran-us 0` nothing else counts it, so it stays 0. Both runs'
# ops/s are printed, not asserted (a benchmark's job: docs/decisions.md,
# "Pull").
# Fails: the counter does not follow the option.
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

# CPU hogs, and tasks that spend their time in the kernel under
# rcu_read_lock() (procfs reads walk the task list and file tables under
# it, getdents too), so that some slices end inside a read-side section.
rcu_workload() {
	stress-ng --temp-path "$WORK" --cpu $((2 * NCPU)) --procfs "$NCPU" --getdent "$NCPU" \
		--timeout 8s --quiet
}

rcu_hogs_only() {
	stress-ng --temp-path "$WORK" --cpu $((2 * NCPU)) --timeout 8s --quiet
}

# Shows: RCU readers first: CPU hogs with procfs and getdents readers
# (rcu_workload) move `rcu_first`: only a task preempted inside a
# read-side section moves it; with --ablate rcu-first it cannot move. Busy
# loops alone are preempted in user mode, outside any section: under the
# hogs alone it stays rare, under 5% of `enq_queued` (the re-queued tasks).
# Fails: readers are not found, or the check counts something else, such
# as the trampoline's own rcu_read_lock() (its own RCU level) that a first
# version counted.
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
