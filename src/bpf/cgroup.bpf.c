/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cgroup weights by the hierarchy: a cgroup's share is its cpu.weight among
 * its active siblings, divided among what is active in it, flattened into
 * each task's weight (task_weight()), which scales its vtime.
 *
 * Switch: none. Counter: cgroup_weight. Tests: weights, cgroup_hierarchy,
 * cgroup_churn.
 */

/*
 * cgroup weights by the hierarchy (cgroup v2 cpu.weight, systemd's
 * CPUWeight=). The kernel gives a cgroup its cpu.weight's share among its
 * active siblings (those with runnable tasks), and splits that among what
 * is active inside it: its runnable tasks by their own weights (nice
 * levels) and its active child cgroups by their cpu.weight. With one clock
 * per CPU and a vtime per task, the hierarchy is flattened into each
 * task's weight:
 *
 *	weight(p) = p's weight * prod over p's cgroups c below the root of
 *		    c's cpu.weight / c's child_sum
 *
 * where child_sum is the weight of what is active in c. A cgroup's
 * runnable tasks then weigh, together, its cpu.weight at its parent's
 * level, however many there are: ten hogs in a cgroup of weight 1000
 * against one in a cgroup of weight 100 give the one 100/1100 of a CPU,
 * and system.slice against user.slice does not depend on how many tasks
 * each holds. Tasks of the root cgroup weigh their own weight, as the
 * kernel weighs them against the root's children.
 *
 * A task is counted into its cgroup's child_sum and nr_active when it starts
 * a run after waking (ops.running()) and out when it blocks
 * (ops.stopping()), or leaves the cgroup or sched_ext: the callbacks every
 * switch runs anyway, where ops.runnable() and ops.quiescent() would add
 * two calls to every sleep and wakeup. So a wakee that has not run yet is
 * not counted: the sums are those of the tasks that compete for CPU time.
 * A cgroup whose nr_active leaves or reaches 0 adds or removes its
 * cpu.weight at its parent, and so on up. Atomic adds: the tasks of one
 * cgroup run on many CPUs. Only tasks outside the root cgroup pay for this.
 */
struct fp_cgroup {
	u64 parent;	/* the parent's id; 0 for the root */
	u32 weight;	/* cpu.weight, 1-10000, 100 by default */
	s32 nr_active;	/* runnable tasks in it, and active child cgroups */
	s64 child_sum;	/* their weights (tasks' p->scx.weight, cgroups' cpu.weight) */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u64);
	__type(value, struct fp_cgroup);
} cgroup_weights SEC(".maps");

static __always_inline struct fp_cgroup *cgroup_lookup(u64 cgid)
{
	return bpf_map_lookup_elem(&cgroup_weights, &cgid);
}

/*
 * @cg has just become active (@dir 1: nr_active went from 0) or inactive
 * (@dir -1: it went to 0): add or take away its weight at its parent, and
 * carry on up while the parent changes state with it. The root keeps no
 * sums: its children's shares divide nothing above them.
 */
static void cgroup_propagate(struct fp_cgroup *cg, s32 dir)
{
	struct fp_cgroup *parent;
	u32 i;

	bpf_for(i, 0, FP_CGROUP_DEPTH_MAX) {
		parent = cgroup_lookup(cg->parent);
		if (!parent || !parent->parent)
			return;
		__sync_fetch_and_add(&parent->child_sum, (s64)dir * cg->weight);
		if (__sync_fetch_and_add(&parent->nr_active, dir) != (dir > 0 ? 0 : 1))
			return;
		cg = parent;
	}
}

/* @p competes for CPU time: count it in its cgroup (not the root's). */
static void cgroup_count_task(struct task_struct *p, struct task_ctx *tctx)
{
	struct fp_cgroup *cg;

	if (tctx->counted_cg || !tctx->cgid)
		return;
	cg = cgroup_lookup(tctx->cgid);
	if (!cg)
		return;
	tctx->counted_cg = tctx->cgid;
	tctx->counted_w = p->scx.weight;
	__sync_fetch_and_add(&cg->child_sum, tctx->counted_w);
	if (__sync_fetch_and_add(&cg->nr_active, 1) == 0)
		cgroup_propagate(cg, 1);
}

/* The task of @tctx blocked, or leaves its cgroup or sched_ext. */
static void cgroup_uncount_task(struct task_ctx *tctx)
{
	struct fp_cgroup *cg;
	u64 cgid = tctx->counted_cg;

	if (!cgid)
		return;
	tctx->counted_cg = 0;
	cg = cgroup_lookup(cgid);
	if (!cg)
		return;
	__sync_fetch_and_sub(&cg->child_sum, tctx->counted_w);
	if (__sync_fetch_and_sub(&cg->nr_active, 1) == 1)
		cgroup_propagate(cg, -1);
}

static void task_set_cgroup(struct task_ctx *tctx, struct cgroup *cgrp)
{
	tctx->cgid = cgrp->level > 0 ? cgrp->kn->id : 0;
}

/*
 * The weight @p's vtime is scaled by, 100 for a nice-0 task of the root
 * cgroup: its own times each cgroup's cpu.weight / child_sum up its path
 * (see struct fp_cgroup), in fixed point. A sum below the weight of what
 * is counted in it (a task not yet counted, a racing update) reads as that
 * weight, so one level never multiplies by more than its cpu.weight / the
 * child's weight.
 */
#define FP_CGROUP_SHIFT	16

static u64 task_weight(struct task_struct *p, struct task_ctx *tctx)
{
	u64 w = p->scx.weight, own = w, cgid = tctx->cgid;
	struct fp_cgroup *cg;
	s64 sum;
	u32 i;

	if (likely(FP_BRANCH(FP_BR_WEIGHT_ROOT_CGROUP, !cgid)))
		return w ?: 1;
	w <<= FP_CGROUP_SHIFT;
	bpf_for(i, 0, FP_CGROUP_DEPTH_MAX) {
		cg = cgroup_lookup(cgid);
		if (!cg || !cg->parent)
			break;
		sum = READ_ONCE(cg->child_sum);
		if (sum < (s64)own)
			sum = own;
		w = w * cg->weight / sum;
		if (w > ((u64)FP_CGROUP_PATH_WEIGHT_MAX << FP_CGROUP_SHIFT))
			w = (u64)FP_CGROUP_PATH_WEIGHT_MAX << FP_CGROUP_SHIFT;
		own = cg->weight;
		cgid = cg->parent;
	}
	w >>= FP_CGROUP_SHIFT;
	return w ?: 1;
}

/*
 * A cgroup's cpu.weight changed: where it is active, its parent's sum
 * changes with it (a deactivation racing with this may take away the new
 * weight where the old was added; the sum's floor in task_weight() bounds
 * what that skews until the parent next goes idle).
 */
static void set_cgroup_weight(struct cgroup *cgrp, u32 weight)
{
	u64 cgid = cgrp->kn->id;
	struct fp_cgroup *cg = cgroup_lookup(cgid), *parent;
	s64 delta;

	stat_inc(FP_STAT_CGROUP_WEIGHT);
	if (!cg)
		return;
	delta = (s64)weight - cg->weight;
	cg->weight = weight;
	if (READ_ONCE(cg->nr_active) <= 0)
		return;
	parent = cgroup_lookup(cg->parent);
	if (parent && parent->parent)
		__sync_fetch_and_add(&parent->child_sum, delta);
}

/*
 * Every cgroup goes into the map, whatever its weight, so that a path can
 * be walked to the root; the kernel calls this for a parent before its
 * children.
 */
s32 BPF_STRUCT_OPS(fastpath_cgroup_init, struct cgroup *cgrp,
		   struct scx_cgroup_init_args *args)
{
	struct fp_cgroup cg = { .weight = args->weight };
	struct cgroup *parent;
	u64 cgid = cgrp->kn->id;

	if (cgrp->level > 0) {
		parent = bpf_cgroup_ancestor(cgrp, cgrp->level - 1);
		if (parent) {
			cg.parent = parent->kn->id;
			bpf_cgroup_release(parent);
		}
	}
	bpf_map_update_elem(&cgroup_weights, &cgid, &cg, BPF_ANY);
	if (args->weight != FP_CGROUP_WEIGHT_DFL)
		stat_inc(FP_STAT_CGROUP_WEIGHT);
	return 0;
}

void BPF_STRUCT_OPS(fastpath_cgroup_exit, struct cgroup *cgrp)
{
	u64 cgid = cgrp->kn->id;

	bpf_map_delete_elem(&cgroup_weights, &cgid);
}

void BPF_STRUCT_OPS(fastpath_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	set_cgroup_weight(cgrp, weight);
}

void BPF_STRUCT_OPS(fastpath_cgroup_move, struct task_struct *p,
		    struct cgroup *from, struct cgroup *to)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	bool counted;

	if (!tctx)
		return;
	counted = tctx->counted_cg;
	cgroup_uncount_task(tctx);
	task_set_cgroup(tctx, to);
	if (counted)
		cgroup_count_task(p, tctx);
}

/* A nice level changed: a counted task's weight in its cgroup's sum too. */
void BPF_STRUCT_OPS(fastpath_set_weight, struct task_struct *p, u32 weight)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	struct fp_cgroup *cg;

	if (!tctx || !tctx->counted_cg)
		return;
	cg = cgroup_lookup(tctx->counted_cg);
	if (!cg)
		return;
	__sync_fetch_and_add(&cg->child_sum, (s64)weight - tctx->counted_w);
	tctx->counted_w = weight;
}

void BPF_STRUCT_OPS(fastpath_disable, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx)
		cgroup_uncount_task(tctx);
}
