/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Where a waking task goes (ops.select_cpu()): an idle previous CPU is
 * claimed without a search (cheap wakeups), else the kernel's idle search
 * picks one, unless no CPU was idle at the last look; else a holding CPU
 * (fast path 3); else, when no CPU is idle, away from a CPU an RT task
 * holds (RT away).
 *
 * Switches (ablations only): cheap_wakeup, rt_away. Counters:
 * direct_local, wake_prev_idle, wake_none_idle, wake_rt_away.
 * Tests: cheap_wakeup, rt_hog.
 */

/*
 * @p may run on @cpu, and @cpu runs one of our tasks, which @p can preempt
 * or follow by vtime. A CPU that an RT or deadline task holds reads not
 * busy: ops.stopping() ran for ours when it was preempted, or none of ours
 * ran.
 */
static bool can_take_away(struct task_struct *p, s32 cpu)
{
	return bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
	       READ_ONCE(cpu_ctx(cpu)->curr_busy);
}

/*
 * RT away. No CPU is idle (the kernel's search just found none), yet
 * @prev_cpu runs none of ours: it runs a task of a higher class (RT,
 * deadline), which took it from us or from idle. A wakee queued there waits
 * until another CPU finds nothing of its own to run and steals it, or for
 * the kernel's ext server, 50 ms a second (docs/decisions.md, "RT away").
 * Return the CPU nearest @prev_cpu (cpu_near()) that runs one of ours,
 * where it takes its turn by vtime, or -1. Returned by ops.select_cpu(), so
 * the task is counted on the CPU whose DSQ it waits on (see
 * enqueue_on_cpu()).
 *
 * Not busy is not enough: a CPU between two of our tasks, or one that an
 * earlier wakeup of the same timer interrupt has just claimed out of idle,
 * reads the same. Sending a wakee away from such a CPU moves it from a CPU
 * about to run it to a busy one, from which the first CPU then steals it
 * back. So @prev_cpu must be held by a task of a higher class (rt_holds();
 * docs/decisions.md, "RT away only where RT holds the CPU").
 */
static s32 rt_away_cpu(struct task_struct *p, s32 prev_cpu)
{
	u32 i, n = near_scan_end();
	s32 cpu;

	if (READ_ONCE(cpu_ctx(prev_cpu)->curr_busy) ||
	    !bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) || !rt_holds(prev_cpu))
		return -1;
	bpf_for(i, 1, n) {
		cpu = cpu_near(prev_cpu, i);
		if (can_take_away(p, cpu))
			return cpu;
	}
	return -1;
}

/*
 * Cheap wakeups: the kernel's idle search, unless it can only come back
 * empty. Every step of it (prev, the LLC, the node, then any CPU; the
 * waker's CPU for a synchronous wakeup, as long as some CPU is idle) needs
 * a bit in the idle mask, and where every message is a wakeup on a busy
 * machine the search is the largest single cost. Reading the mask costs
 * too, and is wasted where the search would find a CPU, so it is read only
 * after a search or a read on this CPU found no CPU idle (none_idle_seen;
 * docs/decisions.md, "Skipping the idle search when no CPU is idle"). A CPU
 * that goes idle just after the mask was read steals the task from its
 * DSQ, as after an empty search.
 */
static bool mask_none_idle(void)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool none = bpf_cpumask_empty(idle);

	scx_bpf_put_idle_cpumask(idle);
	return none;
}

static s32 select_idle_cpu(struct task_struct *p, s32 prev_cpu, u64 wake_flags,
			   struct fp_cpu *here)
{
	s32 cpu;

	if (tune.cheap_wakeup && here->none_idle_seen &&
	    FP_BRANCH(FP_BR_SELECT_NONE_IDLE, mask_none_idle())) {
		stat_inc(FP_STAT_WAKE_NONE_IDLE);
		return -EBUSY;
	}
	cpu = scx_bpf_select_cpu_and(p, prev_cpu, wake_flags, p->cpus_ptr, 0);
	here->none_idle_seen = cpu < 0;
	return cpu;
}

s32 BPF_STRUCT_OPS(fastpath_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	s32 cpu, this_cpu = bpf_get_smp_processor_id();
	bool here_ok = idle_hold_ns && bpf_cpumask_test_cpu(this_cpu, p->cpus_ptr);

	if (here_ok && FP_BRANCH(FP_BR_SELECT_HOLDER, can_redirect(p, prev_cpu, this_cpu))) {
		redirect_to_holder(p, prev_cpu, this_cpu);
		return this_cpu;
	}

	/*
	 * Cheap wakeups: if prev is idle, claiming it is the whole answer; the
	 * kernel's search would look at it first anyway, after a few cpumask
	 * operations. (It prefers a wholly idle SMT core to prev: we trade
	 * that for keeping the task's cache warm.)
	 */
	if (tune.cheap_wakeup &&
	    FP_BRANCH(FP_BR_SELECT_PREV_IDLE,
		      bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
		      scx_bpf_test_and_clear_cpu_idle(prev_cpu))) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tune.slice_ns, 0);
		stat_inc(FP_STAT_WAKE_PREV_IDLE);
		return prev_cpu;
	}

	/*
	 * The kernel's idle tracking picks and claims an idle CPU. Told that
	 * a wakeup is synchronous, it returns the waker's own CPU, busy, as
	 * long as any CPU is idle and nothing waits on the waker's local DSQ:
	 * the wakee then waits behind a waker that may not block at once,
	 * while an idle CPU stays idle. So it is not told.
	 */
	wake_flags &= ~SCX_WAKE_SYNC;
	cpu = select_idle_cpu(p, prev_cpu, wake_flags, cpu_ctx(this_cpu));
	if (unlikely(FP_BRANCH(FP_BR_SELECT_IDLE_FOUND, cpu >= 0))) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tune.slice_ns, 0);
		stat_inc(FP_STAT_DIRECT_LOCAL);
		return cpu;
	}

	if (here_ok) {
		cpu = find_holder(p, prev_cpu, this_cpu);
		if (cpu >= 0) {
			redirect_to_holder(p, cpu, this_cpu);
			return this_cpu;
		}
	}

	if (tune.rt_away) {
		cpu = rt_away_cpu(p, prev_cpu);
		if (cpu >= 0) {
			stat_inc(FP_STAT_WAKE_RT_AWAY);
			return cpu;
		}
	}
	return prev_cpu;
}
