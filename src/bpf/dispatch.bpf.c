/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Who runs next on a CPU (ops.dispatch()), and sched_yield() (ops.yield()):
 * what the guard rescued; the head of a nearby CPU's DSQ that an RT task
 * holds (RT rescue); the running task while it is still behind the DSQ's
 * head (keep fair); a head further behind in another CPU of the LLC
 * (pull); the CPU's own head; the head furthest behind elsewhere, in the
 * LLC first (steal); the running task again; a brief idle hold.
 *
 * Option: --pull-gran-us. Switches (ablations only): rt_rescue, llc_steal,
 * fast_yield. Counters: disp_cpu_dsq, disp_stolen, disp_stolen_far,
 * disp_pulled, steal_near_kept, keep_fair, keep_prev, rt_rescued,
 * yield_kept, yield_given. Tests: pull, rt_each_cpu, topology, fast_yield.
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

/*
 * This CPU has nothing queued: take, among the other CPUs' DSQ heads that it
 * may run, the one furthest behind its own CPU's clock (the clocks of two
 * CPUs are not comparable, distances to them are). Every CPU is looked at,
 * so a task queued anywhere is seen by any CPU that goes idle, and a kick to
 * any idle CPU reaches it. Peeks are lockless; only the move takes a DSQ
 * lock.
 *
 * LLC first (llc_steal, machines with several LLCs): a head queued in
 * another LLC is taken only when no head in this CPU's LLC may run here, or
 * when it is further behind than the best of them by more than
 * FP_STEAL_FAR_SLICES: "behind" includes a wakee's sleeper credit, up to
 * FP_LAG_SLICES, which is not time spent waiting. A task moved across LLCs
 * finds its data in none of this CPU's caches; the kernel's own balancer
 * likewise moves tasks within an LLC first.
 */
static bool steal(s32 cpu)
{
	s64 behind, best = 0, best_far = 0;
	s32 c, best_cpu = -1, far_cpu = -1;
	bool llc_first = multi_llc && tune.llc_steal;
	u32 i, llc = 0;

	if (multi_llc)
		llc = llc_of(cpu);
	bpf_for(i, 1, nr_cpu_ids) {
		c = cpu_after(cpu, i);
		if (!head_behind(c, cpu, &behind))
			continue;
		if (llc_first && llc_of(c) != llc) {
			if (far_cpu < 0 || behind > best_far) {
				best_far = behind;
				far_cpu = c;
			}
			continue;
		}
		if (best_cpu < 0 || behind > best) {
			best = behind;
			best_cpu = c;
		}
	}
	if (far_cpu >= 0) {
		if (best_cpu < 0 || best_far - best > (s64)(FP_STEAL_FAR_SLICES * tune.slice_ns))
			best_cpu = far_cpu;
		else if (best_far > best)
			stat_inc(FP_STAT_STEAL_NEAR_KEPT);
	}
	if (best_cpu >= 0 && scx_bpf_dsq_move_to_local(best_cpu, 0)) {
		stat_inc(FP_STAT_DISP_STOLEN);
		if (multi_llc && llc_of(best_cpu) != llc)
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
 * pay for (docs/decisions.md, "Sparing wake away's wakees from pull").
 */
static bool pull(s32 cpu, struct task_struct *head)
{
	s64 behind, best = (s64)(cpu_vmin(cpu) - head->scx.dsq_vtime) +
			   (s64)tune.pull_gran_ns;
	s32 c, best_cpu = -1;
	u32 i, llc = 0;

	if (multi_llc)
		llc = llc_of(cpu);
	bpf_for(i, 1, nr_cpu_ids) {
		c = cpu_after(cpu, i);
		if (multi_llc && llc_of(c) != llc)
			continue;
		if (!head_behind(c, cpu, &behind))
			continue;
		if (behind > best) {
			best = behind;
			best_cpu = c;
		}
	}
	if (best_cpu >= 0 && scx_bpf_dsq_move_to_local(best_cpu, 0)) {
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
 * head of the first of the next few CPUs that is held so and has something
 * queued, before this CPU's own head: it waited behind a task of a higher
 * class, which no vtime accounts for. Not when this CPU is held itself
 * (its ext server is running: its own queue first). Each held CPU is
 * watched by the FP_AWAY_SCAN - 1 CPUs before it.
 *
 * It moves a task counted on the held CPU's runqueue, as steal() does: the
 * move takes it off that CPU's count, so the held CPU's ext server does not
 * look for it there.
 */
static bool rescue_from_rt(s32 cpu)
{
	u32 i, n = nr_cpu_ids < FP_AWAY_SCAN ? nr_cpu_ids : FP_AWAY_SCAN;
	struct task_struct *head;
	s32 c;

	if (!READ_ONCE(cpu_ctx(cpu)->curr_busy) && rt_holds(cpu))
		return false;
	bpf_for(i, 1, n) {
		c = (cpu + i) % nr_cpu_ids;
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
