# shellcheck shell=bash
# The stress-ng scheduler stressors of the branch-hints patch: what
# scripts/bench measures and scripts/branch-profile profiles (sourced by
# scripts/bench and scripts/guest/branch-profile.sh). Those the installed
# stress-ng lacks are reported as missing, not dropped from here.
# shellcheck disable=SC2034
SCHED_STRESSORS="cpu-sched fifo flipflop futex mq msg mtx mutex poll prio-inv pthread race-sched schedmix schedpolicy switch tee yield"
