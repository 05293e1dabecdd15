/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A run's start and end (ops.running(), ops.stopping()) and a task's
 * arrival (ops.init_task(), ops.enable()): the CPU's clock and the running
 * task's state that wakeups read, the vtime a run costs at the task's
 * weight, the lag a blocking task keeps, and the CPU hog class (tasks
 * whose runs average --hog-run-us or more), which wakeups preempt at
 * --hog-gran-us.
 *
 * Options: --hog-run-us. Tests: hog_hysteresis, weights, wakee_share.
 */

/*
 * The CPU hog class, which wakeups preempt at --hog-gran-us: a task enters
 * it when its runs average --hog-run-us or more, and with hog_hysteresis
 * leaves it only when they average under half that. A busy loop that a
 * periodic sleeper preempts every millisecond has runs of about a
 * millisecond: on a single threshold it would go in and out of the class,
 * and while out of it the sleeper would wait for the end of its slice
 * (wake_short_runner). The price: where a message-passing load's runs
 * average near the threshold (hackbench on a slow machine), its tasks are
 * held in the class too, and each wakeup then preempts one of them
 * (docs/decisions.md, "Hog hysteresis").
 */
static __always_inline void update_hog(struct task_ctx *tctx)
{
	u64 run = tune.hog_run_ns;

	if (tctx->avg_run >= run)
		tctx->hog = 1;
	else if (!tune.hog_hysteresis || tctx->avg_run < run / 2)
		tctx->hog = 0;
}

/* The running task's class for wakeup_preempts(): FP_LONG_*, 0 if none. */
static __always_inline u32 hog_class(struct task_ctx *tctx)
{
	if (!tctx || !tctx->hog)
		return 0;
	return tctx->avg_run >= tune.hog_run_ns ? FP_LONG_RUNS : FP_LONG_HELD;
}

void BPF_STRUCT_OPS(fastpath_running, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct fp_cpu *cctx = cpu_ctx(cpu);
	struct task_ctx *tctx = lookup_task_ctx(p);
	u64 vtime, now = scx_bpf_now();
	struct task_struct *head;

	/* A task inserted straight into a local DSQ was never placed. */
	if (tctx) {
		place_task(p, tctx, cpu);
		vtime = tctx->vtime;
	} else {
		vtime = cctx->vmin;
	}
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	cctx->start_head = start_head(cctx, head);
	advance_vmin(cctx, head, vtime);

	cctx->curr_vtime = vtime;
	cctx->curr_started = now;
	if (tctx)
		cgroup_count_task(p, tctx);
	cctx->curr_weight = tctx ? task_weight(p, tctx) : 100;
	if (tctx)
		start_run(p, tctx, cctx->curr_weight);
	cut_light_slice(p, cpu, now);
	WRITE_ONCE(cctx->curr_busy, 1);
	WRITE_ONCE(cctx->curr_kthread, !!(p->flags & PF_KTHREAD));
	WRITE_ONCE(cctx->curr_long, hog_class(tctx));
	if (unlikely(FP_BRANCH(FP_BR_RUNNING_KICKED, READ_ONCE(cctx->kicked))))
		WRITE_ONCE(cctx->kicked, 0);

	cctx->curr_blocked = tctx && !tctx->last_kept;
	if (unlikely(FP_BRANCH(FP_BR_RUNNING_ADAPT, cctx->hold_expired_at)))
		adapt_hold_window(cctx, bpf_ktime_get_ns());
}

void BPF_STRUCT_OPS(fastpath_stopping, struct task_struct *p, bool runnable)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct fp_cpu *cctx = cpu_ctx(cpu);
	struct task_ctx *tctx = lookup_task_ctx(p);
	u64 used;

	WRITE_ONCE(cctx->curr_busy, 0);
	cctx->prev_pid = runnable ? p->pid : 0;
	if (!tctx)
		return;

	/*
	 * The core updated se.sum_exec_runtime just before calling us, so the
	 * time used needs no clock read here.
	 */
	used = p->se.sum_exec_runtime - tctx->run_sum;
	tctx->vtime += used * 100 / tctx->run_weight;
	tctx->avg_run = tctx->avg_run - tctx->avg_run / 4 + used / 4;
	update_hog(tctx);
	tctx->last_kept = runnable;
	if (!runnable)
		cgroup_uncount_task(tctx);

	/*
	 * Blocking: remember how far behind (or ahead) it was, bounded. A
	 * kernel thread may keep more of what it earned: kworkers and
	 * ksoftirqd do short work that others wait on (I/O completions,
	 * timers, the kernel's own sched_ext watchdog) as chains of wakeups,
	 * and under a deep queue each link of the chain would wait a round
	 * (the sleeper storm test). Only earned lag counts: a kthread that
	 * runs long between blocks comes back behind, like any task.
	 */
	if (!runnable) {
		s64 lag = (s64)(block_clock(cctx, cpu) - tctx->vtime);
		s64 max = ((p->flags & PF_KTHREAD) ? FP_KTHREAD_LAG_SLICES : FP_LAG_SLICES) *
			  tune.slice_ns;

		tctx->lag = lag > max ? max : (lag < -max ? -max : lag);
		tctx->asleep = 1;
	}
}

s32 BPF_STRUCT_OPS(fastpath_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	struct task_ctx *tctx;

	tctx = bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!tctx)
		return -ENOMEM;
	if (args->cgroup)
		task_set_cgroup(tctx, args->cgroup);
	return 0;
}

void BPF_STRUCT_OPS(fastpath_enable, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx) {
		tctx->cpu = scx_bpf_task_cpu(p);
		tctx->vtime = cpu_vmin(tctx->cpu);
		tctx->asleep = 0;
		start_run(p, tctx, task_weight(p, tctx));
	}
}
