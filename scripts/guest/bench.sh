#!/usr/bin/env bash
# Benchmark runner. Runs INSIDE the sched_ext guest, as root, from the repo
# root; scripts/bench boots the guest and passes BENCH_RUN, a host directory
# shared read-write, holding:
#   config.sh   settings written by scripts/bench (sourced here)
#   scheds.tsv  one scheduler per line: NAME<TAB>COMMAND<TAB>GROUPS ("-" = no
#               sched_ext scheduler, i.e. the kernel's default, EEVDF; GROUPS:
#               the workload groups it runs, comma-separated; absent = all)
#   bin/        the C workloads (compiled on the host), scheduler binaries
# and receiving:
#   raw.tsv     a header line, then one line per measurement (see rec below)
#   calib.txt   the loop counts picked for this guest
#   guest.txt   guest facts for the report header
#
# Why interleaved: the emulated guest drifts (host load, TCG code cache), so
# every scheduler runs each block of workload groups back to back, and the
# order of schedulers rotates every round. A scheduler is loaded before and
# unloaded after every block (loading costs ~6 s of BPF verification in this
# emulated guest, so a block holds a few related groups).
set -euo pipefail

: "${BENCH_RUN:?BENCH_RUN not set (run this through scripts/bench)}"
# shellcheck source=/dev/null
source "$BENCH_RUN/config.sh"
# Defaults, overridden by config.sh: rounds, seconds per workload, seconds
# per stress-ng stressor, workload groups, stressors.
: "${ROUNDS:=3}" "${DUR:=5}" "${STRESS_DUR:=2}" "${BLOCKS:=pipe}" "${STRESSORS:=}" "${BPF_STATS:=0}"

NCPU=$(nproc)
RAW=$BENCH_RUN/raw.tsv
WORK=/tmp/bench
BIN=$WORK/bin
mkdir -p "$WORK" "$BIN"

# state, ops, wait_state: the guest library's; say prints the bench's own
# timestamped lines instead of the tests' indented ones.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"
say() { printf '[bench %s] %s\n' "$(date +%T)" "$*"; }

# Current round, scheduler and workload group, set by the main loop, used by rec.
ROUND=0
SNAME=-
GROUP=

# One measurement line, in the columns the header below names (the report
# reads them from it). hib: 1 = higher is better, 0 = lower is better.
# status: ok|FAILED|missing. group: the workload group (what --only and the
# ablation table name), so the report can tell "not run" from "failed".
[ -s "$RAW" ] || printf 'round\tsched\tworkload\tmetric\tvalue\tunit\thib\tstatus\tnote\tgroup\n' >"$RAW"
rec() {
	local workload=$1 metric=$2 value=$3 unit=$4 hib=$5 status=${6:-ok} note=${7:-}
	note=${note//$'\t'/ }
	note=${note//$'\n'/ }
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
		"$ROUND" "$SNAME" "$workload" "$metric" "$value" "$unit" "$hib" "$status" "${note:0:200}" "$GROUP" >>"$RAW"
}

# Run a workload command with a hard limit so that one hung workload cannot
# eat the whole run. Output goes to $OUTF; returns the command's status.
OUTF=$WORK/out.txt
run_limited() {
	local limit=$1
	shift
	timeout --kill-after=5 "$limit" "$@" >"$OUTF" 2>&1
}

# Last non-empty output line, for FAILED notes.
why() { grep -v '^[[:space:]]*$' "$OUTF" | tail -n 1 | cut -c1-160; }

# Copy the binaries the workloads exec into tmpfs: exec over 9p costs ~8x and
# would be measured as scheduler time otherwise.
stage_binaries() {
	local b p
	cp "$BENCH_RUN"/bin/* "$BIN/"
	for b in stress-ng hackbench cyclictest tbench tbench_srv dbench xz bpftool awk; do
		p=$(command -v "$b" 2>/dev/null) || continue
		cp "$p" "$BIN/$b"
	done
	# Debian's /usr/bin/perf may be a wrapper that execs perf_<version>.
	for p in /usr/bin/perf_[0-9]* /usr/bin/perf; do
		[ -x "$p" ] || continue
		cp "$p" "$BIN/perf"
		break
	done
	export PATH=$BIN:$PATH
}

# Record the per-program difference between two snapshots for a block.
bpf_record() {
	local block=$1 before=$2 after=$3
	bpf_diff "$before" "$after" | while read -r name dt dc; do
		rec "bpf $block" "$name run_time_ns" "$dt" ns - ok
		rec "bpf $block" "$name run_cnt" "$dc" calls - ok
	done
}

# --- schedulers ---------------------------------------------------------------
SCHED_PID=
SCHED_LOG=

# How long a loader may take to attach. scx_lavd's took 29-30 s in this
# TCG guest, and a 30 s limit dropped 8 of its 20 blocks in one run;
# loading is not measured, so a generous limit costs nothing.
ATTACH_SECS=90

# Load scheduler $1 (command $2, "-" = default) and wait until the kernel
# says it is enabled. Logs what it saw so a reader can check every switch.
sched_start() {
	local name=$1 cmd=$2
	SCHED_PID=
	if [ "$(state)" != disabled ]; then
		say "state is '$(state)' before loading $name; waiting for disabled"
		wait_state disabled 15 || { say "state stuck at $(state)"; return 1; }
	fi
	if [ "$cmd" = - ]; then
		say "round $ROUND: $name: default scheduler (state $(state))"
		return 0
	fi
	SCHED_LOG=$WORK/sched-$name.log
	# shellcheck disable=SC2086 # cmd is a word list from scheds.tsv
	$cmd >"$SCHED_LOG" 2>&1 &
	SCHED_PID=$!
	if ! wait_state enabled "$ATTACH_SECS" "$SCHED_PID"; then
		say "round $ROUND: $name did not attach (loader exited, or $ATTACH_SECS s passed; state $(state)); log:"
		sed 's/^/    | /' "$SCHED_LOG" | tail -n 20
		sched_stop "$name" || true
		return 1
	fi
	say "round $ROUND: $name loaded: pid $SCHED_PID, state $(state), ops '$(ops)'"
}

# Is the scheduler we loaded still the one running? (A BPF scheduler the
# kernel ejected mid-run leaves the measurement meaningless.)
sched_alive() {
	[ -z "$SCHED_PID" ] && return 0
	kill -0 "$SCHED_PID" 2>/dev/null && [ "$(state)" = enabled ]
}

sched_stop() {
	local name=$1 rc=0
	[ -n "$SCHED_PID" ] || return 0
	kill -INT "$SCHED_PID" 2>/dev/null || true
	wait_exit "$SCHED_PID" 2>/dev/null || rc=$?
	SCHED_PID=
	if wait_state disabled 15; then
		say "round $ROUND: $name unloaded (exit $rc, state $(state))"
	else
		say "round $ROUND: $name: state still $(state) 15 s after SIGINT"
		return 1
	fi
}

# A block's hard limit. Each workload has its own (run_limited), but a
# scheduler that starves user space starves timeout(1) too, and a peer once
# held a run's guest for 12 minutes that way. So a SCHED_FIFO timer, which
# no sched_ext scheduler can starve, disables the BPF scheduler with
# SysRq-S when a block overruns: the rest of the block runs under the
# default scheduler and its metrics read FAILED (ejected).
: "${BLOCK_LIMIT:?set by scripts/bench}"
WD_PID=
block_watchdog_start() {
	rm -f "$WORK/overrun"
	# shellcheck disable=SC2016 # expanded by the timer's shell
	chrt -f 50 bash -c 'sleep "$1" && : >"$2" && echo S >/proc/sysrq-trigger' \
		_ "$BLOCK_LIMIT" "$WORK/overrun" 2>/dev/null &
	WD_PID=$!
}

# Stop the timer; returns 1 if it fired.
block_watchdog_stop() {
	[ -n "$WD_PID" ] || return 0
	{
		pkill -P "$WD_PID" || true
		kill "$WD_PID" || true
		wait "$WD_PID" || true
	} 2>/dev/null
	WD_PID=
	[ ! -e "$WORK/overrun" ]
}

# --- workloads ----------------------------------------------------------------
# Each item records one or more metrics, or FAILED with the reason. If the
# scheduler died during the item, the item is FAILED (that is the result).
check_alive() {
	local workload=$1 metric=$2 unit=$3 hib=$4
	sched_alive && return 0
	rec "$workload" "$metric" NA "$unit" "$hib" FAILED "scheduler $SNAME exited or was ejected during the run"
	return 1
}

# stress-ng with $1 instances: ONE process runs every stressor of STRESSORS
# one after another (--sequential, all other stressors excluded), each for
# STRESS_DUR seconds, then prints one metrics line per stressor. They never
# run at the same time, so each number is that stressor alone, as with one
# process per stressor; but stress-ng's start-up (~2 s in this guest: it
# probes every stressor it knows) is paid once, not once per stressor.
group_stress() {
	local n=$1 wl="stress-ng x$2" s v rc=0 nst
	nst=$(wc -w <<<"$STRESSORS")
	[ "$nst" -gt 0 ] || return 0
	run_limited $((nst * (STRESS_DUR * 3 + 10) + 30)) stress-ng --sequential "$n" \
		--exclude "$STRESS_EXCLUDE" -t "${STRESS_DUR}s" --metrics --temp-path "$WORK" || rc=$?
	if ! sched_alive; then
		for s in $STRESSORS; do
			rec "$wl" "$s" NA bogo-ops/s 1 FAILED "scheduler $SNAME exited or was ejected during the run"
		done
		return 0
	fi
	# "stress-ng: metrc: [pid] NAME ops real usr sys ops/s(real) ..."
	awk '$2 == "metrc:" && $5 ~ /^[0-9]+$/ && !seen[$4]++ { print $4, $9 }' "$OUTF" >"$WORK/stress.txt"
	for s in $STRESSORS; do
		v=$(awk -v s="$s" '$1 == s { print $2; exit }' "$WORK/stress.txt")
		if [ -n "$v" ]; then
			rec "$wl" "$s" "$v" bogo-ops/s 1
		elif [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
			rec "$wl" "$s" NA bogo-ops/s 1 FAILED "stress-ng --sequential timed out before this stressor's metrics"
		else
			rec "$wl" "$s" NA bogo-ops/s 1 FAILED "no metrics line (stress-ng exit $rc): $(grep -i "$s" "$OUTF" | grep -iv 'metrc' | tail -n 1 | cut -c1-120)"
		fi
	done
}

# One measurement: run the command after the first six arguments with a
# limit of $1 seconds, take the number that follows the word $2 in its
# output (the word before it, when $2 starts with "<"), and record it as
# workload $3's metric $4 (unit $5; $6: 1 = higher is better), or FAILED
# with the output's last line. Returns 0 either way.
measure() {
	local limit=$1 word=$2 wl=$3 metric=$4 unit=$5 hib=$6 v
	shift 6
	if run_limited "$limit" "$@" &&
		v=$(awk -v w="$word" 'w ~ /^</ { if ($2 == substr(w, 2)) print $1; next } $1 == w { print $2 }' "$OUTF") &&
		[ -n "$v" ]; then
		if check_alive "$wl" "$metric" "$unit" "$hib"; then
			rec "$wl" "$metric" "$v" "$unit" "$hib"
		fi
	else
		rec "$wl" "$metric" NA "$unit" "$hib" FAILED "$wl: $(why)"
	fi
}

item_pipe() {
	measure $((DUR * 6 + 30)) "<usecs/op" pipe usec/op us 0 perf bench sched pipe -l "$PIPE_LOOPS"
}

item_execl() {
	measure $((DUR * 6 + 30)) execs_per_sec "execl (cpu 0)" execs/s execs/s 1 taskset -c 0 "$BIN/execl" "$EXECL_N"
}

item_forksleep() {
	measure $((DUR * 6 + 30)) seconds "forksleep ${FORK_CHILDREN}x1ms" completion s 0 \
		"$BIN/forksleep" "$FORK_CHILDREN" "$FORK_LOOPS"
}

item_hackbench() {
	local mode=$1 args=()
	[ "$mode" = pipe ] && args=(-p)
	measure $((DUR * 6 + 30)) Time: "hackbench $mode" time s 0 hackbench "${args[@]}" -g "$HB_GROUPS" -l "$HB_LOOPS"
}

# tbench over loopback: one server for the group, then 1, 2, nproc clients.
group_tbench() {
	local c srv clients
	clients=$(printf '%s\n' 1 2 "$NCPU" | sort -nu | tr '\n' ' ')
	tbench_srv >"$WORK/tbench_srv.log" 2>&1 &
	srv=$!
	sleep 1
	for c in $clients; do
		if ! kill -0 "$srv" 2>/dev/null; then
			rec tbench "MB/s $c clients" NA MB/s 1 FAILED "tbench_srv died: $(tail -n 1 "$WORK/tbench_srv.log")"
			continue
		fi
		# tbench reads its load file relative to the cwd only when told to.
		measure $((DUR * 6 + 60)) Throughput tbench "MB/s $c clients" MB/s 1 \
			tbench -t "$DUR" -c /usr/share/dbench/client.txt "$c" 127.0.0.1
	done
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
}

# --- held-out workloads ------------------------------------------------------------
# Not in the suite: no policy is tuned on them (scripts/bench --held-out).

# xz compressing XZ_KIB KiB of binaries in 256 KiB blocks with 2 threads
# per CPU: CPU-bound threads that hand blocks to one writer.
item_xz() {
	local t0 t1 v
	t0=$EPOCHREALTIME
	# shellcheck disable=SC2016 # expanded by sh
	if run_limited $((DUR * 6 + 30)) sh -c 'exec "$@" "$0" >/dev/null' "$WORK/xz.in" "${XZ[@]}"; then
		t1=$EPOCHREALTIME
		v=$(awk -v a="$t0" -v b="$t1" -v k="$XZ_KIB" 'BEGIN { printf "%.3f", k / 1024 / (b - a) }')
		if check_alive "xz -T$((NCPU * 2))" MiB/s MiB/s 1; then
			rec "xz -T$((NCPU * 2))" MiB/s "$v" MiB/s 1
		fi
	else
		rec "xz -T$((NCPU * 2))" MiB/s NA MiB/s 1 FAILED "xz: $(why)"
	fi
}

# dbench on tmpfs: 4 client processes per CPU replaying a file server's
# load (open, read, write, stat, unlink): short runs and many sleeps.
item_dbench() {
	rm -rf "$WORK/dbench"
	mkdir -p "$WORK/dbench"
	measure $((DUR * 6 + 60)) Throughput "dbench $((NCPU * 4)) clients" MB/s MB/s 1 \
		dbench -t "$DUR" -D "$WORK/dbench" -c "$WORK/client.txt" $((NCPU * 4))
}

# perf bench epoll wait: 2 waiter threads per CPU, unpinned, woken by one
# writer thread through epoll.
item_epoll() {
	measure $((DUR * 6 + 30)) Averaged "epoll wait $((NCPU * 2)) threads" ops/s ops/s 1 \
		perf bench epoll wait -n -t $((NCPU * 2)) -r "$DUR"
}

# Wakeup latency of a periodic SCHED_OTHER sleeper against nproc CPU hogs.
item_cyclictest() {
	local hog avg max wl="cyclictest vs ${NCPU} hogs"
	stress-ng --cpu "$NCPU" -t $((DUR + 10))s --temp-path "$WORK" --quiet &
	hog=$!
	sleep 0.5
	if run_limited $((DUR * 4 + 30)) cyclictest --policy=other -i 1000 -t 1 -q -D "$DUR"; then
		# "T: 0 (pid) P: 0 I:1000 C: 1000 Min: 4 Act: 6 Avg: 64 Max: 87"
		avg=$(sed -n 's/.*Avg: *\([0-9]*\).*/\1/p' "$OUTF" | tail -n 1)
		max=$(sed -n 's/.*Max: *\([0-9]*\).*/\1/p' "$OUTF" | tail -n 1)
	fi
	kill "$hog" 2>/dev/null || true
	wait "$hog" 2>/dev/null || true
	if [ -n "${avg:-}" ] && [ -n "${max:-}" ]; then
		check_alive "$wl" "avg latency" us 0 || return 0
		rec "$wl" "avg latency" "$avg" us 0
		rec "$wl" "max latency" "$max" us 0
	else
		rec "$wl" "avg latency" NA us 0 FAILED "cyclictest: $(why)"
		rec "$wl" "max latency" NA us 0 FAILED "cyclictest: $(why)"
	fi
}

# A group's items, all under one load of the scheduler.
run_group() {
	case $1 in
	stress-nproc) group_stress "$NCPU" "$NCPU" ;;
	stress-1) group_stress 1 1 ;;
	pipe) item_pipe ;;
	execl) item_execl ;;
	tbench) group_tbench ;;
	forksleep) item_forksleep ;;
	hackbench)
		item_hackbench pipe
		item_hackbench socket
		;;
	cyclictest) item_cyclictest ;;
	xz) item_xz ;;
	dbench) item_dbench ;;
	epoll) item_epoll ;;
	*) say "unknown workload group $1" ;;
	esac
}

# --- loop-count calibration ---------------------------------------------------
# Loop-count workloads (pipe, execl, forksleep, hackbench) have no time mode:
# time a short run under the default scheduler, then scale its count so one
# run takes about DUR seconds in this guest. Doubles as a warm-up.
calibrate() {
	local name=$1 var=$2 n=$3 t0 t1 secs
	shift 3
	while :; do
		t0=$EPOCHREALTIME
		"$@" "$n" >/dev/null 2>&1 || { say "calibration of $name failed; keeping $n"; break; }
		t1=$EPOCHREALTIME
		secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
		if awk -v s="$secs" 'BEGIN { exit !(s < 0.5) }' && [ "$n" -lt 100000000 ]; then
			n=$((n * 4))
			continue
		fi
		n=$(awk -v n="$n" -v s="$secs" -v d="$DUR" 'BEGIN { v = int(n * d / s); print (v < 1 ? 1 : v) }')
		break
	done
	printf -v "$var" '%s' "$n"
	say "calibrated $name: $var=$n (~${DUR} s per run)"
	echo "$var=$n" >>"$BENCH_RUN/calib.txt"
}

hb_run() { hackbench -p -g "$HB_GROUPS" -l "$1"; }
fs_run() { "$BIN/forksleep" "$FORK_CHILDREN" "$1"; }
ex_run() { taskset -c 0 "$BIN/execl" "$1"; }
pp_run() { perf bench sched pipe -l "$1"; }
XZ=(xz -1 -T $((NCPU * 2)) --block-size=256KiB -c)
xz_run() { head -c "$1K" "$WORK/xz.all" | "${XZ[@]}" >/dev/null; }

# xz's input: the staged binaries, repeated up to 128 MiB (calibration
# stops there); then its first XZ_KIB KiB, the same bytes under every
# scheduler.
calibrate_xz() {
	local f
	: >"$WORK/xz.all"
	while [ "$(stat -c %s "$WORK/xz.all")" -lt $((128 << 20)) ]; do
		for f in "$BIN"/*; do cat "$f" >>"$WORK/xz.all"; done
	done
	calibrate xz XZ_KIB 256 xz_run
	[ "$XZ_KIB" -le $((128 << 10)) ] || XZ_KIB=$((128 << 10))
	head -c "${XZ_KIB}K" "$WORK/xz.all" >"$WORK/xz.in"
	rm -f "$WORK/xz.all"
}

# --- main -----------------------------------------------------------------------
# Load scheduler $1 ($2), run the workload groups of block $3 (comma list)
# under it, take the BPF cost, unload it.
run_block() {
	local name=$1 cmd=$2 all=$3 g block=""
	# Only the groups this scheduler runs (ablation variants run a subset);
	# no load at all when it runs none of this block.
	for g in ${all//,/ }; do
		[[ ",$4," == *",$g,"* ]] && block+="$g,"
	done
	block=${block%,}
	[ -n "$block" ] || return 0
	SNAME=$name
	if ! sched_start "$name" "$cmd"; then
		for g in ${block//,/ }; do
			GROUP=$g rec "$g" "(all metrics)" NA - - FAILED "scheduler $name did not load"
		done
		return 0
	fi
	if [ -n "$SCHED_PID" ] && [ "$BPF_STATS" = 1 ]; then
		bpf_snapshot "$SCHED_PID" >"$WORK/bpf.before" || true
	fi
	[ -z "$SCHED_PID" ] || block_watchdog_start
	for g in ${block//,/ }; do
		say "round $ROUND/$ROUNDS: $g under $name"
		GROUP=$g
		run_group "$g"
	done
	GROUP=
	if ! block_watchdog_stop; then
		say "round $ROUND: $name overran the block's limit of $BLOCK_LIMIT s; the watchdog disabled it (SysRq-S)"
	fi
	if [ -n "$SCHED_PID" ] && ! sched_alive; then
		say "round $ROUND: $name exited or was ejected during $block; its log:"
		sed 's/^/    | /' "$SCHED_LOG" | tail -n 10
		dmesg | grep -i sched_ext | tail -n 5 | sed 's/^/    dmesg| /'
	elif [ -n "$SCHED_PID" ] && [ "$BPF_STATS" = 1 ]; then
		bpf_snapshot "$SCHED_PID" >"$WORK/bpf.after" || true
		bpf_record "$block" "$WORK/bpf.before" "$WORK/bpf.after"
	fi
	sched_stop "$name" || true
}

main() {
	local name cmd sg bin i n r b k g have kept="" ver
	local -a names=() cmds=() sgroups=()
	: >"$BENCH_RUN/calib.txt"
	stage_binaries
	# Scheduler binaries go to tmpfs too (loaded once per block).
	mkdir -p "$WORK/sched"
	while IFS=$'\t' read -r name cmd sg; do
		[ -n "$name" ] || continue
		bin=${cmd%% *}
		if [ "$cmd" != - ] && [ -f "$bin" ]; then
			cp -n "$bin" "$WORK/sched/" 2>/dev/null || true
			cmd="$WORK/sched/${bin##*/}${cmd#"$bin"}"
		fi
		names+=("$name")
		cmds+=("$cmd")
		sgroups+=("${sg:-${BLOCKS// /,}}")
	done <"$BENCH_RUN/scheds.tsv"
	n=${#names[@]}

	{
		echo "kernel=$(uname -r)"
		echo "vcpus=$NCPU"
		echo "memory_kib=$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
		echo "stress_ng=$(stress-ng --version 2>/dev/null | awk '{ print $3 }')"
		echo "perf=$(perf version 2>/dev/null || echo none)"
		echo "bpftool=$(command -v bpftool >/dev/null && echo yes || echo none)"
	} >"$BENCH_RUN/guest.txt"
	say "guest: kernel $(uname -r), $NCPU vCPUs, schedulers: ${names[*]}; blocks: $BLOCKS; rounds $ROUNDS"

	# Per-op BPF cost needs the kernel's BPF run-time accounting. It costs
	# every BPF call two clock reads, which slowed scx_fastpath's stress-ng
	# yield by 1.11x (docs/decisions.md, "BPF run-time accounting off in
	# benchmarks"): off unless
	# asked for, so that throughput is measured as users run it; when on,
	# it is on for every run of every BPF scheduler alike.
	sysctl -q kernel.bpf_stats_enabled="$BPF_STATS" ||
		say "could not set kernel.bpf_stats_enabled=$BPF_STATS"

	# Stressors this stress-ng lacks are reported as missing, not dropped.
	have=" $(stress-ng --stressors 2>/dev/null | tr '\n' ' ') "
	ver=$(sed -n 's/^stress_ng=//p' "$BENCH_RUN/guest.txt")
	for g in $STRESSORS; do
		if [[ "$have" == *" $g "* ]]; then
			kept+="$g "
		else
			ROUND=0 SNAME=all rec "stress-ng" "$g" NA bogo-ops/s 1 missing "not in stress-ng $ver"
			say "stress-ng $ver lacks stressor $g: reported as missing"
		fi
	done
	STRESSORS=$kept
	# Every other stressor is excluded from the --sequential runs.
	STRESS_EXCLUDE=$(for g in $have; do [[ " $kept " == *" $g "* ]] || echo "$g"; done | paste -sd, -)

	FORK_CHILDREN=$((NCPU * 32))
	HB_GROUPS=$NCPU
	for g in ${BLOCKS//,/ }; do
		case $g in
		pipe) calibrate pipe PIPE_LOOPS 2000 pp_run ;;
		execl) calibrate execl EXECL_N 200 ex_run ;;
		forksleep) calibrate forksleep FORK_LOOPS 50 fs_run ;;
		hackbench) calibrate hackbench HB_LOOPS 20 hb_run ;;
		xz) calibrate_xz ;;
		dbench) cp /usr/share/dbench/client.txt "$WORK/client.txt" ;;
		esac
	done

	for ((r = 1; r <= ROUNDS; r++)); do
		ROUND=$r
		for b in $BLOCKS; do
			# Every scheduler runs this block back to back; the order's start
			# rotates every round so no scheduler always runs first (right
			# after a block switch) or last.
			for ((k = 0; k < n; k++)); do
				i=$(((k + r - 1) % n))
				run_block "${names[$i]}" "${cmds[$i]}" "$b" "${sgroups[$i]}"
			done
		done
	done
	say "done: $(($(grep -c . "$RAW") - 1)) measurements in $RAW"
}

main "$@"
