# shellcheck shell=bash
# Helpers for tests that run inside the sched_ext guest (sourced, not run).
# Every helper prints what it observed, so that a log reader can see that a
# test really ran, and returns non-zero instead of exiting.

: "${SCHED:=target/release/scx_fastpath}"
SCX=/sys/kernel/sched_ext
WORK=${WORK:-/tmp/scx-tests}
mkdir -p "$WORK"

n_pass=0
n_fail=0
failed=()

say() { printf '  %s\n' "$*"; }

# Builtins only (read, not cat): every fork+exec is slow in this guest.
state() { local s=missing; read -r s <"$SCX/state" 2>/dev/null || true; echo "$s"; }
ops() { local s=""; read -r s <"$SCX/root/ops" 2>/dev/null || true; echo "$s"; }

# Count one test's result (PASS or FAIL) and keep a row (name, result,
# seconds) for the table summary() prints.
results=()
record() {
	local name=$1 result=$2 secs=$3
	printf -- '--- %s %s\n' "$result" "$name"
	results+=("$name $result $secs")
	if [ "$result" = PASS ]; then
		n_pass=$((n_pass + 1))
	else
		n_fail=$((n_fail + 1))
		failed+=("$name")
	fi
}

# Run one test function; a non-zero return is a failure.
run_test() {
	local name=$1 start=$SECONDS
	shift
	printf '=== TEST %s\n' "$name"
	if "$@"; then
		record "$name" PASS $((SECONDS - start))
	else
		record "$name" FAIL $((SECONDS - start))
	fi
	cleanup_sched
}

# Wait up to $2 whole seconds (wall clock) for the state file to read $1;
# give up at once if process $3 (a loader), when given, has exited.
wait_state() {
	local want=$1 deadline=$((SECONDS + $2)) pid=${3:-}
	while [ "$(state)" != "$want" ]; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		if [ -n "$pid" ] && ! kill -0 "$pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.1
	done
}

# Start the scheduler in the background with --stats 1 --json (one JSON
# object per second, and the totals at exit; read them with the helpers
# below) and wait until the kernel says it is enabled with our ops. Sets
# SCHED_PID and SCHED_LOG.
start_sched() {
	# mktemp, not $RANDOM: two runs that drew the same name lost the
	# first run's totals (counters_moved read one log fewer).
	SCHED_LOG=$(mktemp -p "$WORK" sched.XXXXXX.log) || return 1
	"$SCHED" --stats 1 --json "$@" >"$SCHED_LOG" 2>&1 &
	SCHED_PID=$!
	if ! wait_state enabled 30 "$SCHED_PID"; then
		say "scheduler did not attach (loader exited, or 30 s passed; state: $(state)); its log:"
		sed 's/^/    | /' "$SCHED_LOG"
		return 1
	fi
	say "attached: pid $SCHED_PID, state $(state), root/ops '$(ops)'"
	case "$(ops)" in
	fastpath*) ;;
	*)
		say "root/ops does not name fastpath"
		return 1
		;;
	esac
}

# Wait for process $1, a child of this shell, to exit, and return its exit
# status; one still running $2 s later (30 by default) is said and killed
# (status 137), so a loader that hangs on its way out fails its test
# instead of running the guest into its time limit.
wait_exit() {
	local pid=$1 secs=${2:-30} dog rc
	{
		sleep "$secs"
		if kill -0 "$pid" 2>/dev/null; then
			say "pid $pid still running ${secs} s after it was told to stop: killed"
			kill -KILL "$pid"
		fi
	} &
	dog=$!
	wait "$pid"
	rc=$?
	kill "$dog" 2>/dev/null
	wait "$dog" 2>/dev/null
	return $rc
}

# Stop whatever scheduler a test left running, so the next starts clean.
cleanup_sched() {
	if [ -n "${SCHED_PID:-}" ] && kill -0 "$SCHED_PID" 2>/dev/null; then
		kill -INT "$SCHED_PID" 2>/dev/null || true
		wait_exit "$SCHED_PID" 2>/dev/null || true
	fi
	SCHED_PID=
	wait_state disabled 10 || say "warning: state still $(state) after cleanup"
}

# The JSON samples the loader printed to $SCHED_LOG, one a line; its log
# messages go to the same file, and never start with "{".
samples() { grep '^{' "$SCHED_LOG" || true; }

# The last sample: the totals the loader printed when it exited (or the last
# one it printed, if it was killed).
last_sample() { samples | tail -n 1; }

# Total of counter $1 in the last sample; empty if there is none.
counter_total() {
	last_sample | jq -r --arg n "$1" '.counters[$n] // empty'
}

# The last sample in a line for the log: the config and the counters that
# moved.
sample_summary() {
	last_sample | jq -r '"config \(.config); " +
		(.counters | to_entries | map(select(.value > 0) | "\(.key)=\(.value)") | join(" "))'
}

# The running instance's scx_stats socket (scx_stats' default path).
# shellcheck disable=SC2034 # for the tests that source this
STATS_SOCK=/var/run/scx/root/stats

# One sample of the running instance's figures, as JSON, from its stats
# socket (--monitor --json): machine-readable, where the stats line is for
# people. Empty if none came within 5 s.
sample_json() {
	timeout 5 "$SCHED" --monitor 0.2 --json 2>/dev/null | head -n 1
}

# Print each named counter's total (to stderr, so it shows in the log) and
# echo their sum.
say_counters() {
	local name v sum=0
	for name in "$@"; do
		v=$(counter_total "$name")
		say "     $name=$v" >&2
		sum=$((sum + ${v:-0}))
	done
	echo "$sum"
}

# The loader names what the starvation guard ran (every 5 s and at exit:
# "starvation guard: ran N tasks ...; the longest: COMM (pid P) on CPU C,
# W ms"). Where starve_rescue moved, such lines must be in $SCHED_LOG and
# count no more tasks than the counter (a record the guard rewrites while
# the loader takes it can be lost, never counted twice); where it did not,
# there must be none.
check_rescues_traced() {
	local total named lines
	total=$(counter_total starve_rescue)
	lines=$(grep -o 'starvation guard: ran [0-9]* task.*' "$SCHED_LOG")
	named=$(printf '%s\n' "$lines" | awk '{s += $4} END {print s + 0}')
	say "starvation guard: starve_rescue=${total:-none}, $named named in $(printf '%s' "$lines" | grep -c .) log lines"
	[ -z "$lines" ] || say "     last: $(printf '%s\n' "$lines" | tail -n 1)"
	if [ "${total:-0}" -eq 0 ]; then
		[ "$named" -eq 0 ] || { say "guard lines logged, but starve_rescue is 0"; return 1; }
		return 0
	fi
	[ "$named" -gt 0 ] || { say "the guard ran $total tasks, and the log names none"; return 1; }
	[ "$named" -le "$total" ] || { say "the log names more rescues ($named) than starve_rescue ($total)"; return 1; }
}

# Last-level caches in this guest, by sysfs: distinct sets of CPUs that
# share an L3 (an L2 where there is none), 1 where the guest shows no cache.
nr_llcs() {
	local f n
	n=$(for f in /sys/devices/system/cpu/cpu[0-9]*/cache; do
		cat "$f/index3/shared_cpu_list" 2>/dev/null || cat "$f/index2/shared_cpu_list" 2>/dev/null
	done | sort -u | wc -l)
	echo $((n > 0 ? n : 1))
}

# Kernel log lines that mean sched_ext or the kernel is unhappy, since mark $1.
# virtme-ng's guest init writes its own messages to the kernel log, tagged
# "virtme-ng-init: ", and on a minimal root it warns about userspace it
# cannot run ('WARNING: failed to run: "ip" link set dev lo up', "failed to
# run: systemd-tmpfiles"). Those are userspace set-up warnings, not kernel
# errors, so lines that start with that tag (after dmesg's timestamp) are
# dropped first; the kernel never starts a line with it (its own reports
# name the task as "Comm: virtme-ng-init" or "virtme-ng-init[1]:").
kernel_errors() {
	dmesg_since "${1:-0}" |
		grep -Ev '^(\[ *[0-9]+\.[0-9]+\] )?virtme-ng-init: ' |
		grep -E 'sched_ext.*(error|errored|stall|watchdog|failed)|BUG:|WARNING:|Oops|Call Trace' || true
}

dmesg_mark() { dmesg | wc -l; }
# The kernel log after mark $1 (from dmesg_mark).
dmesg_since() { dmesg | tail -n "+$(($1 + 1))"; }

check_no_kernel_errors() {
	local errs
	errs=$(kernel_errors "$1")
	if [ -n "$errs" ]; then
		say "kernel log has errors:"
		printf '%s\n' "$errs" | sed 's/^/    | /'
		return 1
	fi
	say "kernel log: no sched_ext error, stall or BUG since the test began"
}

# --- BPF cost per program -------------------------------------------------
# With kernel.bpf_stats_enabled=1 the kernel counts run_time_ns and run_cnt
# per BPF program. A snapshot reads them from the fdinfo of the prog fds the
# loader holds (so nobody else's program is counted), struct_ops programs
# only (prog_type 27): prints "tag run_time_ns run_cnt" lines. One awk over
# all fdinfo files: every exec is expensive in this guest.
bpf_snapshot() {
	awk 'function out() { if (tag != "" && type == 27) print tag, t + 0, c + 0 }
	     FNR == 1 { out(); tag = ""; type = ""; t = 0; c = 0 }
	     $1 == "prog_type:" { type = $2 } $1 == "prog_tag:" { tag = $2 }
	     $1 == "run_time_ns:" { t = $2 } $1 == "run_cnt:" { c = $2 }
	     END { out() }' /proc/"$1"/fdinfo/* 2>/dev/null
}

# Program names by tag. The tag hashes a program's instructions (map
# references masked), so it is the same on every load of the same program;
# bpftool (slow here: it loads a BPF iterator to find pids) runs only when a
# tag is new. Without bpftool a program is named by its tag.
BPF_NAMES=$WORK/bpf-names
: >"$BPF_NAMES"
bpf_name_tags() {
	local snap=$1 tag
	while read -r tag _; do
		grep -q "^$tag " "$BPF_NAMES" && continue
		if command -v bpftool >/dev/null && bpftool prog show >"$WORK/bpftool.txt" 2>/dev/null; then
			# "ID: struct_ops  name NAME  tag TAG  gpl ..."
			awk '/^[0-9]+: / { n = ""; g = ""
				for (i = 2; i < NF; i++) { if ($i == "name") n = $(i + 1); if ($i == "tag") g = $(i + 1) }
				if (n != "" && g != "") print g, n }' "$WORK/bpftool.txt" >>"$BPF_NAMES"
		fi
		grep -q "^$tag " "$BPF_NAMES" || echo "$tag prog-$tag" >>"$BPF_NAMES"
	done <"$snap"
}

# Per program, what ran between snapshots $1 and $2 (files written by
# bpf_snapshot): "NAME run_time_ns run_cnt" lines, for programs that ran.
bpf_diff() {
	bpf_name_tags "$2"
	awk 'FILENAME == ARGV[1] { name[$1] = $2; next }
	     FILENAME == ARGV[2] { t[$1] = $2; c[$1] = $3; next }
	     { dt = $2 - t[$1]; dc = $3 - c[$1]; if (dc > 0) print name[$1], dt, dc }' \
		"$BPF_NAMES" "$1" "$2"
}

summary() {
	local row
	printf '\n%-24s %-6s %s\n' test result seconds
	for row in "${results[@]}"; do
		# shellcheck disable=SC2086 # row is three words
		printf '%-24s %-6s %s\n' $row
	done
	printf '\n'
	if [ "$n_fail" -gt 0 ]; then
		printf 'failed tests: %s\n' "${failed[*]}"
	fi
	printf 'guest: %d passed, %d failed\n' "$n_pass" "$n_fail"
	[ "$n_fail" -eq 0 ]
}
# --- Shared by integration.sh's test areas --------------------------------
# These read NCPU, WEIGHT_CPU, WEIGHT_SECS and CG, which integration.sh
# defines.

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

# A mechanism on and off: run workload $1 under the default scheduler
# settings, then with --ablate $2, and read counters $3 and $4 after each.
# Prints a line per run ("on :" and "off:", the workload's ops/s as it
# printed them, $5 naming the workload) and sets ON and OFF to the two
# counters' totals (0 where a counter is missing).
on_off_counters() {
	local workload=$1 ablate=$2 a=$3 b=$4 what=$5 args
	for args in "" "--ablate $ablate"; do
		SCHED_ARGS=$args run_under_sched "$workload" || return 1
		set -- "$(counter_total "$a")" "$(counter_total "$b")"
		if [ -z "$args" ]; then
			ON=("${1:-0}" "${2:-0}")
			say "on : $what: $(cat "$WORK/workload.log") ops/s, $a=${ON[0]} $b=${ON[1]}"
		else
			OFF=("${1:-0}" "${2:-0}")
			say "off: $what, $args: $(cat "$WORK/workload.log") ops/s, $a=${OFF[0]} $b=${OFF[1]}"
		fi
	done
}

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

# Exec churn for $1 seconds in the background (EXEC_PID): stress-ng skips
# its exec stressor as root, so an execl loop.
start_exec_loop() {
	setup_exec_loops
	timeout "$1" "$WORK/bash" -c "while :; do $WORK/execl.sh 20; done" &
	EXEC_PID=$!
}

# Wait for the caller's load generators (pids) and the exec loop; non-zero
# if a generator failed.
wait_load() {
	local p rc=0
	# shellcheck disable=SC2154 # the caller's pids
	for p in "${pids[@]}"; do
		wait "$p" || { say "a load generator (pid $p) failed"; rc=1; }
	done
	wait "$EXEC_PID"
	return $rc
}

pinned_workload() {
	taskset -c 0 "$WORK/bash" "$WORK/execl.sh" 300 &&
		taskset -c 0 "$WORK/bash" -c "for i in \$(seq 300); do $WORK/true; done"
}

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

# Within 20% (relative) of the default's share, or 1 point, whichever is
# larger: the tolerance the issue set.
share_close() {
	awk -v fp="$1" -v def="$2" 'BEGIN {
		tol = def * 0.2; if (tol < 1) tol = 1
		d = fp - def; if (d < 0) d = -d
		exit !(fp >= 0 && d <= tol)
	}'
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
