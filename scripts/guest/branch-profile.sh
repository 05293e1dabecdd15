#!/usr/bin/env bash
# For scripts/branch-profile, inside the sched_ext guest: run the stress-ng
# scheduler stressors of the branch-hints patch (those this stress-ng has),
# each for SECS seconds with nproc and with 1 instance, under the
# branch-profile build, and keep the loader's output: it prints the branch
# table when it exits. Env: SCHED (the profiling build), SECS, OUT (a
# directory the host reads back: sched.log, missing, kernel).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

# shellcheck source=../lib/stressors.sh
source "$here/../lib/stressors.sh"
have=$(stress-ng --stressors)
run=() missing=()
for s in $SCHED_STRESSORS; do
	if printf '%s\n' $have | grep -qx "$s"; then run+=("$s"); else missing+=("$s"); fi
done
echo "${missing[*]:-}" >"$OUT/missing"
uname -r >"$OUT/kernel"

mark=$(dmesg_mark)
start_sched || exit 1
for s in "${run[@]}"; do
	for n in $(nproc) 1; do
		echo "stressor $s x$n"
		stress-ng --temp-path "$WORK" --"$s" "$n" --timeout "${SECS}s" --quiet ||
			echo "stressor $s x$n failed"
	done
done
cleanup_sched
cp "$SCHED_LOG" "$OUT/sched.log"
check_no_kernel_errors "$mark"
