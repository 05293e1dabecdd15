# shellcheck shell=bash
# Area: Dashboards
# Tests of the terminal dashboards (sourced by integration.sh, which
# defines NCPU and sources lib.sh): --monitor --tui, and scxtop.

# The rows of the dashboard's per-CPU table in pane capture $1.
tui_rows() {
	# The per-CPU table's rows, borders blanked: "cpu queue placed/s ...".
	sed 's/│/ /g' "$1" | awk 'NF == 7 && ($1 == "all" || $1 ~ /^[0-9]+$/)'
}

# A rate as the dashboard shows it, other than 0 or "-" (not known yet).
tui_nonzero() { [ -n "$1" ] && [ "$1" != 0 ] && [ "$1" != - ]; }

# Shows: the dashboard, `--monitor 1 --tui`, in a 100x30 tmux pane: before
# a scheduler starts it says "waiting for scx_fastpath..."; then it shows a
# row per CPU, non-zero rates (placed/s) and the tunables line; q ends it
# with exit status 0 and the pane closes. Without a terminal it refuses
# with one line and a non-zero exit. The last pane is kept in
# $WORK/tui-pane.txt.
# Fails: the pane lacks a part, or q does not exit 0.
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

# Shows: scxtop itself (sched-ext/scx's tool, not built here: SCXTOP names
# its binary, `--env SCXTOP=PATH`; out of the default tests for that
# reason, as CI does not build one: `cargo install scxtop --locked`)
# against a running instance under a load. From scx 1.1.1 on, scxtop's
# scheduler view ('s') shows DSQ latencies that it traces itself, and a
# scheduler's scx_stats reply reaches only its MCP resource
# `stats://scheduler/raw`: the test reads that resource through
# `scxtop mcp`, which carries scx_fastpath's counters, moving, and their
# metadata. It then shows the scheduler view in a 120x40 tmux pane, which
# names scx_fastpath.
# Fails: the resource lacks scx_fastpath's counters, moving, or their
# metadata, or the pane does not name the scheduler.
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
