#!/usr/bin/env bash
# The BPF verifier's work on each of the scheduler's programs, against the
# committed baseline scripts/verifier-baseline.tsv. Runs INSIDE the
# sched_ext guest, as root, from the repository root; scripts/test runs it
# first in the integration guest (test verifier), and by hand:
#   scripts/vm -- scripts/guest/verifier.sh
#
# It starts the scheduler (the real loader, so the programs are verified
# with the read-only settings it gives them), reads each program's
# verified_insns (the instructions the verifier processed, from the
# fdinfo of the program fds the loader holds) and its name (bpftool),
# prints a table, and fails when a program's count rose more than 20% over
# the baseline or a program has no baseline.
#
# After a change that is worth its verifier cost, take the new counts as
# the baseline (the guest's root is read-only but for --rwdir) and commit
# the file:
#   scripts/vm --rwdir "$PWD/scripts" --env UPDATE_BASELINE=1 -- scripts/guest/verifier.sh
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

BASELINE=${VERIFIER_BASELINE:-$(cd "$here/.." && pwd)/verifier-baseline.tsv}
# A rise of more than this many percent fails.
SLACK=20
UPDATE_COMMAND='scripts/vm --rwdir "$PWD/scripts" --env UPDATE_BASELINE=1 -- scripts/guest/verifier.sh'

fail() { say "verifier: $*"; exit 1; }
# A failure after start_sched leaves no scheduler behind.
trap cleanup_sched EXIT

[ -d "$SCX" ] || fail "this kernel ($(uname -r)) has no sched_ext: run it in the guest (scripts/vm)"
[ -x "$SCHED" ] || fail "no $SCHED: build it first (cargo build --release)"
command -v bpftool >/dev/null || fail "bpftool is needed for the programs' names (scripts/install-deps installs it)"
command -v jq >/dev/null || fail "jq is needed to read bpftool's output (scripts/install-deps installs it)"
[ "$(state)" = disabled ] || fail "sched_ext state is $(state), not disabled: another scheduler is loaded"

start_sched || fail "the scheduler did not attach"
# "prog_id verified_insns" for every program fd the loader holds (a link's
# fdinfo names a prog_id too, but has no verified_insns).
counts=$(awk 'FNR == 1 { if (id != "" && n != "") print id, n; id = ""; n = "" }
	$1 == "prog_id:" { id = $2 } $1 == "verified_insns:" { n = $2 }
	END { if (id != "" && n != "") print id, n }' /proc/"$SCHED_PID"/fdinfo/* 2>/dev/null | sort -un)
names=$(bpftool -j prog show 2>/dev/null | jq -r '.[] | "\(.id) \(.name)"')
cleanup_sched
[ -n "$counts" ] || fail "no program fd with verified_insns in /proc/$SCHED_PID/fdinfo (a kernel older than 5.16?)"

# "name insns", sorted by name.
now=$(awk 'NR == FNR { name[$1] = $2; next } { print ($1 in name ? name[$1] : "id-" $1), $2 }' \
	<(printf '%s\n' "$names") <(printf '%s\n' "$counts") | sort)
dups=$(awk '{print $1}' <<<"$now" | uniq -d)
[ -z "$dups" ] || fail "two programs share a name ($(echo "$dups" | xargs)): bpftool $(bpftool version 2>/dev/null | head -n 1) prints names cut to 15 characters"
what="kernel $(uname -r), $(nproc) CPUs"

if [ "${UPDATE_BASELINE:-0}" = 1 ]; then
	{
		echo "# Instructions the BPF verifier processed per program of scx_fastpath, in"
		echo "# the default test guest ($what). scripts/guest/verifier.sh"
		echo "# fails on a rise of more than $SLACK% over these; it says how to update them."
		tr ' ' '\t' <<<"$now"
	} >"$BASELINE.new" 2>/dev/null && mv "$BASELINE.new" "$BASELINE" ||
		fail "cannot write $BASELINE (the guest's root is read-only: run $UPDATE_COMMAND)"
	say "verifier: wrote $(wc -l <<<"$now") programs' counts ($what) to $BASELINE"
	sed 's/^/    | /' "$BASELINE"
	exit 0
fi

[ -f "$BASELINE" ] || fail "no baseline $BASELINE: make one with $UPDATE_COMMAND"
base_what=$(sed -n 's/^# the default test guest (\(.*\))\..*/\1/p' "$BASELINE")
say "verifier: $what; baseline: ${base_what:-unknown}"
[ "$base_what" = "$what" ] || say "  (not the baseline's kernel or CPU count: counts may differ by that alone)"
# One row a program: name, baseline, now, change, and a verdict; the last
# line counts the rows over the limit.
report=$(awk -v slack="$SLACK" '
	NR == FNR { if ($0 !~ /^#/ && NF == 2) base[$1] = $2; next }
	{
		seen[$1] = 1
		if (!($1 in base)) { printf "%-28s %9s %9d %8s  NEW: not in the baseline\n", $1, "-", $2, "-"; bad++; next }
		pct = base[$1] ? ($2 - base[$1]) * 100 / base[$1] : 0
		verdict = $2 * 100 > base[$1] * (100 + slack) ? "OVER: a rise of more than " slack "%" : "ok"
		if (verdict != "ok") bad++
		printf "%-28s %9d %9d %+7.1f%%  %s\n", $1, base[$1], $2, pct, verdict
	}
	END {
		for (p in base) if (!(p in seen)) printf "%-28s %9d %9s %8s  gone (not loaded now)\n", p, base[p], "-", "-"
		print bad + 0
	}' "$BASELINE" <(printf '%s\n' "$now"))
printf '  %-28s %9s %9s %8s  %s\n' program baseline now change verdict
sed '$d; s/^/  /' <<<"$report"
bad=$(tail -n 1 <<<"$report")
if [ "$bad" -gt 0 ]; then
	say "verifier: $bad program(s) over the baseline by more than $SLACK% or without one; if the cost is worth it, update the baseline: $UPDATE_COMMAND"
	exit 1
fi
say "verifier: $(wc -l <<<"$now") programs, none more than $SLACK% over the baseline"
