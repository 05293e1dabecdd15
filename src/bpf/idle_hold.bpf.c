/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Fast path 3: hold a CPU briefly before idling. A CPU whose task just
 * blocked spins for an adaptive window (up to --idle-hold-us, off by
 * default) for work before going idle; wakeups aimed at it meanwhile are
 * redirected to its DSQ, which it polls, rather than blocked on its
 * runqueue lock.
 *
 * Option: --idle-hold-us. Counters: hold_start, hold_caught, hold_expired,
 * hold_redirect. Tests: idle_hold, hold_races.
 */

/*
 * Fast path 3, the waker's side: @cpu is holding (spinning in ops.dispatch()
 * with its runqueue locked), so sending the wakeup there would make this CPU
 * spin on that lock until the hold ends. Instead, let the task be enqueued
 * here and have ops.enqueue() put it on @cpu's DSQ, which @cpu polls.
 */
static bool can_redirect(struct task_struct *p, s32 cpu, s32 this_cpu)
{
	return cpu != this_cpu && READ_ONCE(cpu_ctx(cpu)->holding) &&
	       bpf_cpumask_test_cpu(cpu, p->cpus_ptr);
}

/*
 * Mark @p's wakeup for redirection; ops.enqueue() does it and counts it
 * (a fork also passes through select_cpu(), but is never redirected).
 */
static void redirect_to_holder(struct task_struct *p, s32 cpu, s32 this_cpu)
{
	struct fp_cpu *here = cpu_ctx(this_cpu);

	here->redirect_pid = p->pid;
	here->redirect_cpu = cpu;
}

/*
 * No CPU is idle: a holding CPU is the next best thing, but the kernel's idle
 * tracking cannot see it (it has not gone idle). Look at the CPUs nearest
 * @prev_cpu (cpu_near()); this only runs when the idle search already came
 * up empty.
 */
static s32 find_holder(struct task_struct *p, s32 prev_cpu, s32 this_cpu)
{
	u32 i, n = near_scan_end();
	s32 cpu;

	bpf_for(i, 1, n) {
		cpu = cpu_near(prev_cpu, i);
		if (can_redirect(p, cpu, this_cpu))
			return cpu;
	}
	return -1;
}

/*
 * Fast path 3, the holder's side. This CPU's task just blocked and nothing
 * waits; spin up to the CPU's current window for work to arrive before
 * letting it go idle. We run with the runqueue locked and IRQs off, so the
 * window is short and capped, and wakeups aimed here are redirected (see
 * redirect_to_holder()) rather than blocked on our lock.
 */
static bool idle_hold(s32 cpu)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	u64 start, window = cctx->hold_window_ns;
	bool caught = false;
	u32 i;

	if (!window)
		window = cctx->hold_window_ns = idle_hold_ns;

	stat_inc(FP_STAT_HOLD_START);
	WRITE_ONCE(cctx->holding, 1);

	/* The clock is read inside the loop: scx_bpf_now() is frozen here. */
	start = bpf_ktime_get_ns();
	bpf_for(i, 0, 1 << 20) {
		if (scx_bpf_dsq_nr_queued(cpu)) {
			caught = scx_bpf_dsq_move_to_local(cpu, 0);
			if (caught)
				break;
		}
		if (bpf_ktime_get_ns() - start >= window)
			break;
	}

	/*
	 * A wakeup redirected here after this point is kicked over by its
	 * waker (enqueue_redirected()), so nothing is stranded.
	 */
	WRITE_ONCE(cctx->holding, 0);

	if (caught) {
		stat_inc(FP_STAT_HOLD_CAUGHT);
		stat_inc(FP_STAT_DISP_CPU_DSQ);
		cctx->hold_expired_at = 0;
	} else {
		stat_inc(FP_STAT_HOLD_EXPIRED);
		cctx->hold_expired_at = bpf_ktime_get_ns();
	}
	return caught;
}

/*
 * Adapt the hold window like the kernel's haltpoll governor: after a
 * fruitless hold, if work came soon after the window ended, a longer window
 * would have caught it: double it, up to --idle-hold-us. If it came much
 * later, holding was wasted: halve it, down to FP_HOLD_MIN_NS.
 */
static void adapt_hold_window(struct fp_cpu *cctx, u64 now)
{
	u64 window = cctx->hold_window_ns;

	if (now - cctx->hold_expired_at < idle_hold_ns)
		window = window * 2 < idle_hold_ns ? window * 2 : idle_hold_ns;
	else
		window = window / 2 > FP_HOLD_MIN_NS ? window / 2 : FP_HOLD_MIN_NS;
	cctx->hold_window_ns = window;
	cctx->hold_expired_at = 0;
}
