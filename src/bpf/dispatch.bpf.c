/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who runs next on a CPU (ops.dispatch()), and sched_yield() (ops.yield()):
 * what the guard rescued; the head of a nearby CPU's DSQ that an RT task
 * holds (RT rescue); the running task while it is still behind the DSQ's
 * head (keep fair); a head further behind in another CPU of the LLC
 * (pull); the CPU's own head; the head furthest behind elsewhere, in the
 * LLC first (steal); the running task again; a brief idle hold.
 *
 * Option: --pull-gran-us. Switches (ablations only): rt_rescue, fast_yield.
 * Counters: disp_cpu_dsq, disp_stolen, disp_stolen_far, disp_pulled,
 * keep_fair, keep_prev, rt_rescued, yield_kept, yield_given. Tests: pull,
 * rt_each_cpu, topology, rebalance, fast_yield.
 */

/*
 * Whether @c's DSQ has a head that @cpu may run; if so, *@behind is how far
 * it is behind @c's clock.
 */
static __always_inline bool head_behind(s32 c, s32 cpu, s64 *behind)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(c);

	if (!head || !can_run_on(head, cpu))
		return false;
	*behind = (s64)(cpu_vmin(c) - head->scx.dsq_vtime);
	return true;
}

/* A floor for furthest_head() that every head passes. */
#define FP_ANY_BEHIND	(-0x7fffffffffffffffLL - 1)

/*
 * Of the CPUs @from to @to - 1 of @cpu's scan order (cpu_near()), the one
 * whose DSQ head @cpu may run and is furthest behind that CPU's clock, by
 * more than @floor; -1 if none. The clocks of two CPUs are not comparable,
 * distances to them are. Peeks are lockless; only the caller's move takes
 * a DSQ lock. A global function, verified once (see cpu_near()).
 */
__noinline s32 furthest_head(s32 cpu, u32 from, u32 to, s64 floor)
{
	s32 c, best_cpu = -1;
	s64 behind;
	u32 i;

	bpf_for(i, from, to) {
		c = cpu_near(cpu, i);
		if (!head_behind(c, cpu, &behind) || behind <= floor)
			continue;
		floor = behind;
		best_cpu = c;
	}
	return best_cpu;
}

/*
 * This CPU has nothing queued: take the head furthest behind in its LLC,
 * else in its node, else anywhere. So a dispatch on a machine whose LLCs
 * all have work looks at the LLC, whatever the machine's size, and a CPU
 * whose LLC has run dry looks further before it idles: a task queued
 * anywhere is seen by any CPU that goes idle, and a kick to any idle CPU
 * reaches it. A task moved across LLCs finds its data in none of this
 * CPU's caches; the kernel's own balancer likewise moves tasks within an
 * LLC first.
 */
static bool steal(s32 cpu)
{
	u32 llc = topo_span(cpu, FP_TOPO_LLC), node = topo_span(cpu, FP_TOPO_NODE);
	s32 c = furthest_head(cpu, 1, llc, FP_ANY_BEHIND);
	bool far = false;

	if (c < 0) {
		far = true;
		c = furthest_head(cpu, llc, node, FP_ANY_BEHIND);
		if (c < 0)
			c = furthest_head(cpu, node, nr_cpu_ids, FP_ANY_BEHIND);
	}
	if (c >= 0 && scx_bpf_dsq_move_to_local(c, 0)) {
		stat_inc(FP_STAT_DISP_STOLEN);
		if (far)
			stat_inc(FP_STAT_DISP_STOLEN_FAR);
		return true;
	}
	return false;
}

/*
 * Pull (--pull-gran-us, 0 = off): this CPU has a head of its own, but
 * another CPU's head (in its LLC) is further behind its own clock by more
 * than pull_gran_ns: take that one instead. Per-CPU DSQs otherwise make a
 * task wait behind whatever was queued on its own CPU while another CPU
 * runs a task that is well ahead of it; one shared queue would have run
 * it first. A pipeline's stages (stress-ng tee: a writer, a tee() stage
 * and a reader per instance) queue behind each other that way
 * (docs/decisions.md, "Pull"). The cost is lockless peeks of every CPU in
 * the LLC on each dispatch that has a head of its own, and moves and
 * context switches that a spinning waker and its wakee (stress-ng futex)
 * pay for.
 */
static bool pull(s32 cpu, struct task_struct *head)
{
	s64 own = (s64)(cpu_vmin(cpu) - head->scx.dsq_vtime);
	s32 c = furthest_head(cpu, 1, topo_span(cpu, FP_TOPO_LLC),
			      own + (s64)tune.pull_gran_ns);

	if (c >= 0 && scx_bpf_dsq_move_to_local(c, 0)) {
		stat_inc(FP_STAT_DISP_PULLED);
		return true;
	}
	return false;
}

/*
 * RT rescue. A CPU that an RT or deadline task holds runs our tasks only in
 * the kernel's ext server (50 ms a second), and steal() looks at other CPUs
 * only when this one has nothing queued. So what is queued there (a wakeup
 * that found no better CPU, or what the RT task preempted once the server
 * has run it) waits for the server or for another CPU to run dry, and gets
 * a small fraction of its share (docs/decisions.md, "RT rescue"). Take the
 * head of the first of the nearest few CPUs (cpu_near()) that is held so
 * and has something queued, before this CPU's own head: it waited behind a
 * task of a higher class, which no vtime accounts for. Not when this CPU
 * is held itself (its ext server is running: its own queue first). Each
 * held CPU is watched by the FP_NEAR_SCAN - 1 CPUs nearest it.
 *
 * It moves a task counted on the held CPU's runqueue, as steal() does: the
 * move takes it off that CPU's count, so the held CPU's ext server does not
 * look for it there.
 */
static bool rescue_from_rt(s32 cpu)
{
	u32 i, n = near_scan_end();
	struct task_struct *head;
	s32 c;

	if (!READ_ONCE(cpu_ctx(cpu)->curr_busy) && rt_holds(cpu))
		return false;
	bpf_for(i, 1, n) {
		c = cpu_near(cpu, i);
		/*
		 * Cheapest test first: a busy CPU's line 0 is read by every
		 * wakeup anyway, its DSQ and its task are not.
		 */
		if (READ_ONCE(cpu_ctx(c)->curr_busy))
			continue;
		head = __COMPAT_scx_bpf_dsq_peek(c);
		if (!head || !can_run_on(head, cpu) || !rt_holds(c))
			continue;
		if (scx_bpf_dsq_move_to_local(c, 0)) {
			stat_inc(FP_STAT_RT_RESCUED);
			return true;
		}
	}
	return false;
}

/*
 * Who runs next on @cpu:
 *  1. a task the starvation guard rescued (on any CPU), after this CPU's
 *     own guard has looked; then the head of a nearby CPU's DSQ that an RT
 *     task holds (RT rescue);
 *  2. @prev again, if it is still runnable and still behind (or level
 *     with) the head of this CPU's DSQ in vtime: it has not had its share
 *     yet. (The core asks for a successor at the end of every slice; taking
 *     the head then would be round robin, whatever the weights.)
 *  3. the head of another CPU's DSQ in this LLC, if it is further behind
 *     than this CPU's own head by more than --pull-gran-us (pull()), else
 *     the head of this CPU's DSQ;
 *  4. the head of another CPU's DSQ furthest behind, in this LLC first
 *     (steal());
 *  5. @prev again if it is still runnable, else a brief idle hold.
 */
void BPF_STRUCT_OPS(fastpath_dispatch, s32 cpu, struct task_struct *prev)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	bool prev_runnable = prev && (prev->scx.flags & SCX_TASK_QUEUED);
	struct task_struct *head;
	u64 now = scx_bpf_now();

	/* Whoever kicked us has been served: this is the reschedule. */
	if (READ_ONCE(cctx->kicked))
		WRITE_ONCE(cctx->kicked, 0);

	guard_starved(cpu, now);
	if (take_rescued())
		return;

	if (tune.rt_rescue && rescue_from_rt(cpu))
		return;

	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (head) {
		if (prev_runnable && can_run_on(prev, cpu) &&
		    !time_before(head->scx.dsq_vtime, running_vtime(prev, cpu))) {
			keep_clock(cctx, prev, cpu, head);
			scx_bpf_task_set_slice(prev, tune.slice_ns);
			cut_light_slice(prev, cpu, cctx->curr_started);
			stat_inc(FP_STAT_KEEP_FAIR);
			return;
		}
		if (tune.pull_gran_ns && pull(cpu, head))
			return;
		if (likely(FP_BRANCH(FP_BR_DISPATCH_CONSUMED, scx_bpf_dsq_move_to_local(cpu, 0)))) {
			stat_inc(FP_STAT_DISP_CPU_DSQ);
			return;
		}
	}
	if (steal(cpu))
		return;

	/* Nothing else wants this CPU: let prev run another slice. */
	if (unlikely(FP_BRANCH(FP_BR_DISPATCH_KEEP_PREV, prev_runnable))) {
		keep_clock(cctx, prev, cpu, NULL);
		scx_bpf_task_set_slice(prev, tune.slice_ns);
		stat_inc(FP_STAT_KEEP_PREV);
		return;
	}

	/* prev just blocked: hold the CPU briefly before it goes idle. */
	if (idle_hold_ns && prev)
		idle_hold(cpu);
}

/*
 * sched_yield(). Without ops.yield the core zeroes the slice, and the task
 * goes through ops.dispatch(), ops.stopping(), ops.enqueue() and
 * ops.running() only to be picked again when nothing else waits. With
 * fast_yield that round trip is skipped when this CPU's DSQ is empty; when
 * something waits, the yielder gives up its slice and goes behind it.
 */
bool BPF_STRUCT_OPS(fastpath_yield, struct task_struct *from, struct task_struct *to)
{
	struct task_struct *head;
	struct task_ctx *tctx;
	s32 cpu;

	if (to)
		return false;

	cpu = scx_bpf_task_cpu(from);
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (tune.fast_yield && !head && !scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL)) {
		stat_inc(FP_STAT_YIELD_KEPT);
		return false;
	}
	tctx = lookup_task_ctx(from);
	if (tctx && head && time_before(tctx->vtime, head->scx.dsq_vtime))
		tctx->vtime = head->scx.dsq_vtime;
	scx_bpf_task_set_slice(from, 0);
	stat_inc(FP_STAT_YIELD_GIVEN);
	return false;
}
