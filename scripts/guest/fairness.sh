# shellcheck shell=bash
# Tests of weighted fairness across cgroups (sourced by integration.sh,
# which defines NCPU, CG, WEIGHT_CPU, WEIGHT_SECS, spinner and in_cgroup).

# CPU time of pid $1 so far, in ns (the kernel's own accounting).
cpu_ns() { local a; read -r a _ <"/proc/$1/schedstat" && echo "$a"; }

# Make cgroup $1 (a path under $CG) with cpu.weight $2, enabling the cpu
# controller on the way.
make_cgroup() {
	local path=$1 weight=$2 dir=$CG part
	for part in ${path//\// }; do
		echo +cpu >"$dir/cgroup.subtree_control" || return 1
		dir=$dir/$part
		mkdir -p "$dir" || return 1
	done
	echo "$weight" >"$dir/cpu.weight"
}

# The cases: name | cgroups to make (PATH:WEIGHT ...) | hogs (PATH:COUNT
# ...), the first group measured | the share of CPU $WEIGHT_CPU the
# weights define for the first group, %.
HIER_CASES=(
	"one hog at weight 100 vs ten at 1000|fp_h100:100 fp_h1000:1000|fp_h100:1 fp_h1000:10|9.1"
	"one hog vs five in a child of an equal sibling|fp_ha:100 fp_hb:100 fp_hb/fp_hc:100|fp_ha:1 fp_hb/fp_hc:5|50.0"
	"system.slice (1 task) vs user.slice (4 tasks, 3 levels down)|fp_system.slice:100 fp_system.slice/fp_a.service:100 fp_user.slice:100 fp_user.slice/fp_user-0.slice:100 fp_user.slice/fp_user-0.slice/fp_session.scope:100|fp_system.slice/fp_a.service:1 fp_user.slice/fp_user-0.slice/fp_session.scope:4|50.0"
)

# Run case $1's hogs on CPU $WEIGHT_CPU for WEIGHT_SECS and print the first
# group's CPU time over wall time, %.
hier_share() {
	local spec=$1 hogs g path n i pid pids=() first=() t0 t1 c0=0 c1=0
	IFS='|' read -r _ _ hogs _ <<<"$spec"
	for g in $hogs; do
		path=${g%:*} n=${g##*:}
		for i in $(seq "$n"); do
			pid=$(spinner in_cgroup "$path")
			pids+=("$pid")
			[ ${#first[@]} -lt "$n" ] && [ "$g" = "${hogs%% *}" ] && first+=("$pid")
		done
	done
	sleep 1
	t0=${EPOCHREALTIME/./}
	for pid in "${first[@]}"; do c0=$((c0 + $(cpu_ns "$pid"))); done
	sleep "$WEIGHT_SECS"
	t1=${EPOCHREALTIME/./}
	for pid in "${first[@]}"; do c1=$((c1 + $(cpu_ns "$pid"))); done
	kill "${pids[@]}"
	wait "${pids[@]}" 2>/dev/null
	awk -v c=$((c1 - c0)) -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", 100 * c / (t * 1000) }'
}

# Within 20% (relative) or 1 point of $2.
share_near() {
	awk -v fp="$1" -v ref="$2" 'BEGIN {
		tol = ref * 0.2; if (tol < 1) tol = 1
		d = fp - ref; if (d < 0) d = -d
		exit !(d <= tol)
	}'
}

# cgroup weights follow the hierarchy: a cgroup's share of a CPU is its
# cpu.weight among its active siblings, however many tasks it and they
# hold. Each case runs busy loops in cgroups on one CPU, under the default
# scheduler and then scx_fastpath, and the first group's CPU time over wall
# time must be within 20% (relative) or 1 point of the default's, or of the
# share the weights define. It fails where weights follow task counts (a
# task's weight times its cgroups' cpu.weight: the lone hog of the first
# case then gets 1%, against 9.1%).
test_cgroup_hierarchy() {
	local m ok=0 c name made g def=() fp=() want i
	m=$(dmesg_mark)
	grep -qw cpu "$CG/cgroup.controllers" 2>/dev/null || { say "no cgroup v2 cpu controller at $CG"; return 1; }
	for c in "${HIER_CASES[@]}"; do
		IFS='|' read -r _ made _ _ <<<"$c"
		for g in $made; do make_cgroup "${g%:*}" "${g##*:}" || return 1; done
	done
	[ "$(state)" = disabled ] || { say "state $(state), want disabled for the default's run"; return 1; }
	for i in "${!HIER_CASES[@]}"; do def[i]=$(hier_share "${HIER_CASES[i]}"); done
	start_sched || return 1
	for i in "${!HIER_CASES[@]}"; do fp[i]=$(hier_share "${HIER_CASES[i]}"); done
	cleanup_sched
	say "busy loops on CPU $WEIGHT_CPU, ${WEIGHT_SECS} s a case; the first group's share: default, fastpath (weights):"
	for i in "${!HIER_CASES[@]}"; do
		IFS='|' read -r name _ _ want <<<"${HIER_CASES[i]}"
		if share_near "${fp[i]}" "${def[i]}" || share_near "${fp[i]}" "$want"; then
			say "  $name: ${def[i]}%, ${fp[i]}% ($want%): ok"
		else
			say "  $name: ${def[i]}%, ${fp[i]}% ($want%): NOT within 20% / 1 point of either"
			ok=1
		fi
	done
	for c in "${HIER_CASES[@]}"; do
		IFS='|' read -r _ made _ _ <<<"$c"
		# Children before parents.
		for g in $(tr ' ' '\n' <<<"$made" | sort -r); do rmdir "$CG/${g%:*}" 2>/dev/null; done
	done
	check_no_kernel_errors "$m" || ok=1
	return $ok
}
