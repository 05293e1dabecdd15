/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-CPU virtual clocks and where a task is placed on them: each CPU's
 * clock (vmin) is the lowest vtime among what it runs and what waits on its
 * DSQ; a waking task comes back at the clock minus the lag it had when it
 * blocked (bounded), and a task moved to another CPU keeps its distance
 * from the clock. The clock advances when a task starts to run and when
 * ops.dispatch() keeps the running task on.
 *
 * Switches (ablations only): head_lag, displaced_head. Counters: lag_head,
 * lag_head_new, kthread_wake, keep_fair, keep_prev. Tests: weights,
 * wakee_share, mixed_load, attach_under_load.
 */

/*
 * Each CPU keeps its own virtual clock, vmin: the lowest vtime among what it
 * runs and what waits on its DSQ, never going back (the kernel's old
 * min_vruntime). A task's vtime is measured on the clock of the CPU it is
 * queued on (task_ctx->cpu). One clock for the whole system does not work
 * with per-CPU queues: a CPU with three hogs runs each a third of the time,
 * one with a single hog runs it all the time, their vtimes drift apart by
 * seconds, and a sleeper placed by the fast CPU's clock on the slow one
 * would wait behind all of its hogs (docs/decisions.md, "Per-CPU virtual
 * clocks"). Taking the lowest vtime, not the highest, matters with weights:
 * next to a nice-19 task that jumps far ahead, a nice-0 hog runs behind,
 * and a sleeper placed by the nice-19 task's vtime would wait out the hog's
 * whole catch-up.
 */
static __always_inline u64 cpu_vmin(s32 cpu)
{
	return READ_ONCE(cpu_ctx(cpu)->vmin);
}

/*
 * Put @p on @cpu's clock before it is queued or runs there.
 *
 * A task that blocked is placed at @cpu's clock minus the lag it had when
 * it blocked (how far behind its CPU's clock it was, bounded to
 * FP_LAG_SLICES slices either way, FP_KTHREAD_LAG_SLICES for a kernel
 * thread: see fastpath_stopping()): a task that slept while others ran
 * comes back ahead of them by what it had not used, a task that had run
 * ahead comes back behind. The credit is bounded because with the full
 * credit nearly every wakee would preempt, and a producer and its consumer
 * would switch once per message (docs/decisions.md, "Bounded sleeper
 * credit").
 *
 * A task that stays runnable keeps the vtime it earned, so weights hold
 * between tasks that never sleep; moved to another CPU it keeps its
 * distance from the clock.
 */
static __always_inline void place_task(struct task_struct *p,
				       struct task_ctx *tctx, s32 cpu)
{
	if (tctx->asleep) {
		tctx->asleep = 0;
		tctx->vtime = cpu_vmin(cpu) - tctx->lag;
		if (tctx->lag > (s64)(FP_LAG_SLICES * tune.slice_ns))
			stat_inc(FP_STAT_KTHREAD_WAKE);
	} else if (tctx->cpu != cpu) {
		tctx->vtime = cpu_vmin(cpu) + (tctx->vtime - cpu_vmin(tctx->cpu));
	}
	tctx->cpu = cpu;
}

/*
 * @p's run begins: what it is charged from and at (see task_ctx->run_sum).
 * Charging a run against another task's start, or at weight 0, would add
 * the task's whole lifetime of CPU time to its vtime, times 100: a task
 * that had run 4 s before the scheduler attached came back 400 s ahead,
 * behind everything, and ran only when the starvation guard took it.
 */
static __always_inline void start_run(struct task_struct *p, struct task_ctx *tctx,
				      u32 weight)
{
	tctx->run_sum = p->se.sum_exec_runtime;
	tctx->run_weight = weight ?: 1;
}

/* @p's vtime as it is queued on @cpu's DSQ. */
static __always_inline u64 task_vtime(struct task_struct *p, s32 cpu)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (!tctx)
		return cpu_vmin(cpu);
	place_task(p, tctx, cpu);
	return tctx->vtime;
}

/*
 * @prev's vtime including what it ran since ops.running(): the core has not
 * called ops.stopping() yet when it asks ops.dispatch() for a successor.
 */
static u64 running_vtime(struct task_struct *prev, s32 cpu)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	struct task_ctx *tctx = lookup_task_ctx(prev);
	u64 used;

	if (!tctx)
		return cctx->vmin;
	used = prev->se.sum_exec_runtime - tctx->run_sum;
	return tctx->vtime + used * 100 / tctx->run_weight;
}

/*
 * Advance @cpu's clock to the lowest vtime among @vtime (the task on the
 * CPU) and @head, the head of its DSQ, if that is ahead of it. The clock
 * never goes back.
 */
static __always_inline void advance_vmin(struct fp_cpu *cctx, struct task_struct *head,
					 u64 vtime)
{
	if (head && time_before(head->scx.dsq_vtime, vtime))
		vtime = head->scx.dsq_vtime;
	if (time_before(cctx->vmin, vtime))
		WRITE_ONCE(cctx->vmin, vtime);
}

/*
 * ops.dispatch() keeps @prev on @cpu for another slice: move the CPU's clock
 * with it, as ops.running() would at a switch. Otherwise a task that keeps
 * the CPU for many slices leaves the clock where its run began: a task
 * waking there then lands behind it by the whole run and, still behind the
 * DSQ's head, is kept on until it has caught up, while the tasks queued
 * there wait; and a task moved to another CPU carries that whole distance
 * with it (docs/decisions.md, "The clock advances when the running task is
 * kept on").
 */
static void keep_clock(struct fp_cpu *cctx, struct task_struct *prev, s32 cpu,
		       struct task_struct *head)
{
	advance_vmin(cctx, head, running_vtime(prev, cpu));
}

/*
 * fp_cpu->start_head when the task started with no displaced task at the
 * head.
 */
#define FP_NO_HEAD	((u64)-1)

/*
 * The head a task starts with, for block_clock(): its vtime if it is the task
 * this one displaced (it stopped still runnable just before, and went back to
 * the DSQ's head), whose progress the clock has not seen: the case head lag
 * is for. Else FP_NO_HEAD. The filter does not depend on displaced_head:
 * block_clock() ignores start_head when that is off, and a live switch on
 * finds start_head already right.
 */
static __always_inline u64 start_head(struct fp_cpu *cctx, struct task_struct *head)
{
	if (!head || head->pid != cctx->prev_pid)
		return FP_NO_HEAD;
	return head->scx.dsq_vtime;
}

/*
 * The clock a blocking task's lag is measured from. A CPU's clock moves only
 * when a task starts to run (advance_vmin()), so while a task that ran ahead
 * of it is preempted by a wakee, the clock still reads where that task
 * started: a periodic sleeper that preempts a CPU hog every millisecond
 * blocks against a clock one hog run behind and loses a little lag per
 * wakeup instead of gaining what the hog ran meanwhile. With head_lag the
 * clock is where it will be when the next queued task starts: the DSQ
 * head's vtime, if that is ahead (docs/decisions.md, "Head lag").
 *
 * With displaced_head, only the head the task displaced counts (start_head(),
 * else lag_head_new). A task that wakes another and then blocks would
 * otherwise be credited with its own wakee's lead: both tasks of a pipe pair
 * beside CPU hogs would keep their vtime across every message, as if
 * neither ever slept, and take more than their share (the wakee_share
 * test). Any head already queued when the task started is not enough
 * either: a pipe task whose partner was queued behind a hog would take the
 * hog's lead (docs/decisions.md, "Displaced head, same head and earned
 * lag"). The sleeper that preempted a hog blocks with that hog at the head
 * and keeps its credit.
 */
static __always_inline u64 block_clock(struct fp_cpu *cctx, s32 cpu)
{
	u64 clock = cctx->vmin;
	struct task_struct *head;

	if (!tune.head_lag)
		return clock;
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (!head || !time_before(clock, head->scx.dsq_vtime))
		return clock;
	if (tune.displaced_head && head->scx.dsq_vtime != cctx->start_head) {
		stat_inc(FP_STAT_LAG_HEAD_NEW);
		return clock;
	}
	stat_inc(FP_STAT_LAG_HEAD);
	return head->scx.dsq_vtime;
}
