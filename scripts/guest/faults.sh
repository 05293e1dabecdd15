# shellcheck shell=bash
# Area: Fault cases
# Fault cases (sourced by integration.sh, which defines NCPU and CG and
# sources lib.sh; scripts/test --faults runs them with the default set).
# Each prints what it observed; each fails on an ejection, a kernel error,
# or a scheduler that is not attached when it should be.

# Shows: the last CPU offline and online again 20 times (HOTPLUG_CYCLES)
# under CPU load: the loader restarts each time and ends attached.
# Fails: it exits or ends detached, or restarts fewer times.
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

# Shows: sysrq-S, the kernel's own "disable sched_ext", under load: the
# kernel falls back to its default scheduler, the loader reports the
# kernel's reason (`EXIT: ... sysrq`) and exits 1; a new start attaches
# again.
# Fails: no reason, another status, or no restart.
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

# Shows: the loader stopped (SIGSTOP) for 20 s (STOP_SECS) under load: the
# BPF scheduler goes on scheduling (tasks are still scheduled: a sleeper's
# worst wait stays under a second), and after SIGCONT the loader prints
# stats again and stops cleanly.
# Fails: the BPF scheduler depended on the loader: an ejection, a sleeper
# kept off the CPU for a second, or no stats after SIGCONT.
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

# Shows: cgroups made with random cpu.weight, hogs moved between them, and
# the cgroups removed, for 20 s (CHURN_SECS) under load, from a cgroup of
# its own at weight 10,000; every weight set reaches the scheduler.
# Fails: an ejection, it cannot reach its removal step, or fewer weights
# reached the scheduler (`cgroup_weight`) than were set.
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

# Shows: many tasks: 10,000 threads created and exiting, then a fork bomb
# by an unprivileged user bounded by RLIMIT_NPROC (`ulimit -u 300`) in a
# cgroup of its own, ended with `cgroup.kill`, each under the scheduler.
# Fails: an ejection, fewer threads, or any of the bomb left running.
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
