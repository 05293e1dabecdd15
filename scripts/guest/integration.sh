#!/usr/bin/env bash
# Integration tests of scx_fastpath. Runs INSIDE the sched_ext guest, as root,
# from the repository root (scripts/test boots the guest with scripts/vm).
# Each test prints what it observed; the last line counts passes and fails.
# The tests live in one file per area, sourced below; above each test_NAME
# a "# Shows:" and a "# Fails:" comment say what it shows and how it fails
# (scripts/testing-doc makes docs/testing.md's tables of them).
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh
source "$here/lib.sh"

NCPU=$(nproc)
LOAD_SECS=${LOAD_SECS:-35}
# The weight tests' busy loops share one CPU, WEIGHT_CPU, for WEIGHT_SECS.
WEIGHT_SECS=${WEIGHT_SECS:-5}
WEIGHT_CPU=$((NCPU - 1))
CG=/sys/fs/cgroup

# shellcheck source=lifecycle.sh
source "$here/lifecycle.sh"
# shellcheck source=waits.sh
source "$here/waits.sh"
# shellcheck source=fairness.sh
source "$here/fairness.sh"
# shellcheck source=topology.sh
source "$here/topology.sh"
# shellcheck source=fastpaths.sh
source "$here/fastpaths.sh"
# shellcheck source=preempt.sh
source "$here/preempt.sh"
# shellcheck source=storms.sh
source "$here/storms.sh"
# shellcheck source=rt.sh
source "$here/rt.sh"
# shellcheck source=observe.sh
source "$here/observe.sh"
# shellcheck source=tui.sh
source "$here/tui.sh"
# shellcheck source=faults.sh
source "$here/faults.sh"
# shellcheck source=soak.sh
source "$here/soak.sh"

printf 'guest: kernel %s, %d CPUs, sched_ext state %s\n' "$(uname -r)" "$NCPU" "$(state)"
boot_mark=0

# TESTS="name ..." runs a subset.
DEFAULT_TESTS="verifier attach attach_under_load weights cgroup_hierarchy wakee_share mixed_load sigint sigint_loading sigterm sigkill hotplug errors stats_reader_gone pinned_path cheap_wakeup idle_hold compact_layout unit_caps deferred_preempt hog_hysteresis wake_local fast_yield pull rcu_first light_slice rt_hog rt_mutex monitor live_set tui dump sleeper_storm hog_storm hold_races counters_moved"
# The fault matrix (scripts/test --faults). The storms (hold_races is the
# sleeper storm with an idle hold) run once in the default set and four
# times more here, so that one --faults run shows them 5 of 5 (a storm
# that passed once proves little).
FAULT_TESTS="hotplug_loop sysrq_disable sigstop cgroup_churn many_tasks rt_each_cpu soak_shares soak"
FAULT_TESTS="$FAULT_TESTS$(for _ in 1 2 3 4; do printf ' sleeper_storm hog_storm hold_races'; done)"
# Run only when named in TESTS: scxtop needs SCXTOP, topology a guest
# shaped by scripts/test, rebalance one with several LLCs.
NAMED_TESTS="scxtop topology rebalance"
# A test_ function in none of the lists would never run: refuse to start.
for f in $(declare -F | awk '$3 ~ /^test_/ {print substr($3, 6)}'); do
	case " $DEFAULT_TESTS $FAULT_TESTS $NAMED_TESTS " in
	*" $f "*) ;;
	*)
		echo "test_$f is in none of DEFAULT_TESTS, FAULT_TESTS and NAMED_TESTS"
		exit 2
		;;
	esac
done
[ "${FAULTS:-0}" = 1 ] && DEFAULT_TESTS="$DEFAULT_TESTS $FAULT_TESTS"
for t in ${TESTS:-$DEFAULT_TESTS}; do
	declare -F "test_$t" >/dev/null || { echo "no such test: $t"; exit 2; }
	run_test "$t" "test_$t"
done

printf '=== TEST final_state\n'
if [ "$(state)" = disabled ] && [ -z "$(kernel_errors $boot_mark)" ]; then
	say "after all tests: state $(state), no sched_ext error in the kernel log"
	record final_state PASS 0
else
	say "after all tests: state $(state)"
	kernel_errors $boot_mark | sed 's/^/    | /'
	record final_state FAIL 0
fi

summary
