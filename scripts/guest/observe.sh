# shellcheck shell=bash
# Area: Stats and live changes
# Tests of what the loader shows and takes while it runs (sourced by
# integration.sh, which defines NCPU and sources lib.sh): the scx_stats
# socket, `scx_fastpath set`, the kernel's debug dump, and that every
# counter moves.

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

# Shows: the scx_stats socket: `--monitor 1 --all-counters` and
# `--monitor 0.5 --json` against an instance under load show the running
# instance's figures: a config line, summary and rate lines, JSON samples
# whose counters and `at_ms` grow; scxtop's request (scxtop_request) is
# answered twice on one connection.
# Fails: no socket, a form is missing, a counter does not grow, or the
# socket answers once (scxtop's request is not answered).
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

# How far the `pinned` counter (the socket's JSON) moves over one
# pinned_workload.
pinned_delta() {
	local a b
	a=$(sample_json | jq -r .counters.pinned)
	pinned_workload >/dev/null 2>&1
	b=$(sample_json | jq -r .counters.pinned)
	echo $((b - a))
}

# Shows: `scx_fastpath set` changes a running instance's tunables: the
# pinned fast path switched off live (`ablate=pinned-fastpath`) stops the
# `pinned` counter under a pinned load (only the BPF side reading the new
# value can do that; when the switch is off nothing else moves it), and
# switched on again (`ablate=none`) it moves; `set` prints the equivalent
# flags; the new tunables show in the socket's JSON (`config`) and in the
# loader's log, and a hotplug restart keeps them (`slice-us=3000`). Bad
# changes and callers are refused with one line: bad keys and values exit
# 2; uid 65534 cannot connect; a socket opened to all is refused.
# Fails: any of these does not hold.
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

# Shows: the kernel's debug dump carries scx_fastpath's own state: per CPU
# (ops.dump_cpu: DSQ depth, clocks, flags) and per runnable task
# (ops.dump_task: vtime, lag, average run). sysrq-D under load writes the
# dump only to the `sched_ext_dump` tracepoint (an error exit also writes
# it to the exit message, --exit-dump-len): it has scx_fastpath's per-CPU
# and per-task lines, and the scheduler stays attached.
# Fails: lines missing (without those ops they are absent), or the dump
# disturbs the scheduler (ejects it).
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

# Shows: every counter `--help-stats` lists moved in at least one scheduler
# run of the guest: it reads the totals every scheduler run of this guest
# printed at exit (the last JSON sample of each log). Where all CPUs share
# one LLC the two cross-LLC counters are left to `topology`.
# Fails: a counter no workload moves: dead or broken (a known flaw of the
# public schedulers). It means something only after the whole default set,
# so it runs last there; named alone it fails, as it should.
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
