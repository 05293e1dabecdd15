#!/usr/bin/env bash
# Is the default scheduler slower right after a sched_ext scheduler is
# unloaded than after it has settled? Alternates, REPS times: load
# scx_fastpath, run a load under it, unload it, then measure the default
# scheduler at once ("after-unload") and again after SETTLE s ("settled").
set -uo pipefail
here=scripts/guest
# shellcheck source=/dev/null
source "$here/lib.sh"
REPS=${REPS:-5} SETTLE=${SETTLE:-10}
S="yield,switch,fifo,futex,mq,msg"
measure() {
	stress-ng --temp-path "$WORK" --sequential 2 --exclude "$(stress-ng --stressors | tr ' ' '\n' | grep -vxE "${S//,/|}" | paste -sd, -)" \
		--timeout 2s --metrics-brief 2>&1 | awk -v t="$1" '$4 ~ /^(yield|switch|fifo|futex|mq|msg)$/ {print "RES", t, $4, $(NF - 1)}'
}
for _ in $(seq "$REPS"); do
	start_sched >/dev/null || exit 1
	stress-ng --temp-path "$WORK" --switch 2 --yield 2 --timeout 4s --quiet
	cleanup_sched
	measure after-unload
	sleep "$SETTLE"
	measure settled
done
