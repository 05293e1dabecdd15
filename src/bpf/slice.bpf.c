/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How long a run lasts: a whole --slice-us, shorter behind a deep queue (so
 * that a round over a thousand tasks stays within the watchdog's timeout),
 * and cut to the weight of a task lighter than nice 0 where something waits
 * (light slices), with the preemption timer armed for the cut's end.
 *
 * Switch (ablation only): light_slice. Counters: slice_short, slice_light,
 * slice_light_kick, slice_light_alone. Tests: light_slice, hog_storm.
 */

/*
 * The slice of a task queued behind @waiting others. Whole, unless the queue
 * is deeper than FP_DEEP_QUEUE: then short enough that a round over it takes
 * about FP_DEEP_QUEUE slices, and the kernel's watchdog, which wants every
 * runnable task to run within FP_TIMEOUT_MS, sees every one of a thousand
 * hogs on one CPU run in time.
 */
static __always_inline u64 queue_slice(u64 waiting)
{
	u64 slice, floor = tune.slice_ns / FP_SLICE_DIV_MAX;

	if (likely(FP_BRANCH(FP_BR_QUEUE_SLICE_FULL, waiting <= FP_DEEP_QUEUE)))
		return tune.slice_ns;
	stat_inc(FP_STAT_SLICE_SHORT);
	slice = tune.slice_ns * FP_DEEP_QUEUE / waiting;
	return slice > floor ? slice : floor;
}

/*
 * Light slices: a task lighter than nice 0 (its own weight under 100; not
 * its cgroups' share, which falls with the number of tasks they run)
 * runs at most slice * weight / 100, and never less than
 * slice / FP_SLICE_DIV_MAX. Its share does not change, only how it is cut:
 * a run advances its vtime by run * 100 / weight, so a nice-10 hog that
 * runs a whole 5 ms slice comes back 47 ms of vtime ahead and then waits
 * while every task on its CPU uses that up: behind a few hogs its turns
 * come so far apart that the starvation guard has to step in. Cut to its
 * weight, it waits about one nice-0 slice per hog on its CPU
 * (docs/decisions.md, "Light slices"). Tasks at or above nice 0 keep the
 * whole slice.
 *
 * The core notices a used-up slice only at a tick (every 4 ms at HZ=250,
 * most of a default slice), so a cut slice also arms the CPU's preemption
 * timer (arm_preempt_timer()) for its end; only light tasks pay for the
 * timer.
 */
static __always_inline u64 light_slice(u64 slice, u64 weight)
{
	u64 cut, floor = tune.slice_ns / FP_SLICE_DIV_MAX;

	if (likely(FP_BRANCH(FP_BR_LIGHT_NONE, !tune.light_slice || weight >= 100)))
		return slice;
	cut = tune.slice_ns * weight / 100;
	cut = cut > floor ? cut : floor;
	return cut < slice ? cut : slice;
}

/*
 * Cut @p's slice to its weight, as it starts a run (ops.running(), which
 * every way onto a CPU passes: an idle CPU's local DSQ, a wake-local insert,
 * a CPU's DSQ, a steal) or is kept on in ops.dispatch().
 *
 * Not when nothing waits on the CPU: the cut only spaces out the turns of
 * the tasks that wait, and with none it buys a timer and a reschedule that
 * hands the CPU straight back. A task that changes its policy or nice level
 * all the time passes through ops.running() at each change, and would pay
 * for both each time (docs/decisions.md, "Light slices only where
 * something waits"). A task queued later meets a light task's fast-growing
 * vtime at wakeup preemption, or at the end of the whole slice in
 * ops.dispatch(), which cuts it from then on.
 */
static void cut_light_slice(struct task_struct *p, s32 cpu, u64 started)
{
	u64 slice = light_slice(p->scx.slice, p->scx.weight);

	if (likely(FP_BRANCH(FP_BR_LIGHT_UNCUT, slice >= p->scx.slice)))
		return;
	if (cpu_alone(cpu)) {
		stat_inc(FP_STAT_SLICE_LIGHT_ALONE);
		return;
	}
	scx_bpf_task_set_slice(p, slice);
	arm_preempt_timer(cpu, started, slice, true);
	stat_inc(FP_STAT_SLICE_LIGHT);
}
