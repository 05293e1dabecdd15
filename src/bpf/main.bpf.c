/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_fastpath: a weighted virtual-time scheduler for sched_ext.
 *
 * Policy
 * ------
 * Every task carries a virtual time (p->scx.dsq_vtime) that advances by the
 * CPU time it consumed, scaled by 100 / weight, so nice levels divide the CPU
 * in the kernel's weight ratios. Runnable tasks wait on vtime-ordered DSQs
 * and each CPU runs the waiting task with the smallest vtime:
 *
 *  - a waking task that finds an idle CPU (the kernel's built-in idle
 *    tracking) is inserted straight into that CPU's local DSQ;
 *  - a task that can run on one CPU only waits on that CPU's own DSQ;
 *  - every other task waits on the shared DSQ.
 *
 * ops.dispatch() takes whichever of its own DSQ and the shared DSQ has the
 * smaller head vtime; if both are empty the previous task keeps the CPU.
 *
 * Responsiveness: a sleeper's vtime is clamped to at most 2 slices behind
 * the system's vtime, so it cannot hoard credit, but it comes back ahead of
 * CPU hogs. When it wakes and no CPU is idle, the CPU it last ran on is
 * preempted if the task running there is behind it in virtual time. This is
 * what keeps the wakeup latency of periodic sleepers near the kernel's
 * default scheduler instead of a whole slice behind each hog.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/* Set by the loader before load. */
const volatile u32 nr_cpu_ids = 1;
const volatile u64 slice_ns = 5ULL * 1000 * 1000;

/*
 * The system's virtual time: the largest vtime any task started running
 * with. New tasks start here, sleepers are clamped relative to it. It has a
 * cache line of its own: it is read on every enqueue and written whenever
 * it advances.
 */
u64 vtime_now SEC(".data.vtime") __attribute__((aligned(FP_CACHELINE)));

/*
 * State of the task running on a CPU, written by that CPU in ops.running()
 * and ops.stopping(), read by wakers on other CPUs to decide whether to
 * preempt it. One cache line per CPU.
 */
struct fp_cpu {
	u64 curr_vtime;		/* vtime the current task started with */
	u64 curr_started;	/* when it started, scx_bpf_now() */
	u64 curr_sum_start;	/* its se.sum_exec_runtime when it started */
	u32 curr_weight;	/* its weight */
	u32 curr_busy;		/* a task of ours is running here */
} __attribute__((aligned(FP_CACHELINE)));

struct fp_cpu fp_cpus[FP_MAX_CPUS] SEC(".data.cpus");

/*
 * Counters: each CPU increments only its own element, which is padded to
 * whole cache lines, so counting never bounces a line between CPUs. The
 * loader reads them through the mmap()ed map and sums them.
 */
struct fp_cpu_stats_line {
	struct fp_cpu_stats s;
} __attribute__((aligned(FP_CACHELINE)));

struct fp_cpu_stats_line fp_stats[FP_MAX_CPUS] SEC(".data.stats");

/* Snapshot of DSQ depths, refreshed on demand by fp_sample_queued. */
u64 nr_queued_shared;
u64 nr_queued_cpu;

static __always_inline struct fp_cpu *cpu_ctx(s32 cpu)
{
	return &fp_cpus[cpu & (FP_MAX_CPUS - 1)];
}

static __always_inline void stat_inc(enum fp_stat_idx idx)
{
	u32 cpu = bpf_get_smp_processor_id() & (FP_MAX_CPUS - 1);

	if (idx < FP_NR_STATS)
		fp_stats[cpu].s.cnt[idx]++;
}

/*
 * The one CPU a task can go to, or -1 if it has a choice. A migration-disabled
 * task must stay where it is, even if its affinity has just been changed to
 * exclude that CPU; a task allowed on one CPU must go there.
 */
static s32 pinned_cpu(struct task_struct *p)
{
	if (is_migration_disabled(p))
		return scx_bpf_task_cpu(p);
	if (p->nr_cpus_allowed == 1)
		return bpf_cpumask_first(p->cpus_ptr);
	return -1;
}

/*
 * Clamp a task's vtime so that a long sleep earns at most two slices of
 * credit, then return it.
 */
static u64 task_vtime(struct task_struct *p)
{
	u64 floor = READ_ONCE(vtime_now) - 2 * slice_ns;

	if (time_before(p->scx.dsq_vtime, floor))
		p->scx.dsq_vtime = floor;
	return p->scx.dsq_vtime;
}

/*
 * Preempt @cpu for waking task @p if the task running there is behind @p in
 * virtual time, counting its runtime so far. @now is the caller's one clock
 * read.
 */
static void preempt_if_behind(struct task_struct *p, s32 cpu, u64 vtime, u64 now)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	u64 curr_vtime, ran;
	u32 weight;

	if (!READ_ONCE(cctx->curr_busy))
		return;

	weight = READ_ONCE(cctx->curr_weight) ?: 100;
	ran = now - READ_ONCE(cctx->curr_started);
	curr_vtime = READ_ONCE(cctx->curr_vtime) + ran * 100 / weight;

	if (time_before(vtime, curr_vtime)) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		stat_inc(FP_STAT_WAKE_PREEMPT);
	}
}

s32 BPF_STRUCT_OPS(fastpath_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	s32 cpu;

	/* The kernel's idle tracking picks and claims an idle CPU. */
	cpu = scx_bpf_select_cpu_and(p, prev_cpu, wake_flags, p->cpus_ptr, 0);
	if (cpu >= 0) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		stat_inc(FP_STAT_DIRECT_LOCAL);
		return cpu;
	}
	return prev_cpu;
}

/*
 * A task with one possible CPU waits on that CPU's own DSQ, ordered by vtime
 * with everything else that CPU runs, so it neither starves nor is starved.
 */
static void enqueue_pinned(struct task_struct *p, s32 cpu, u64 enq_flags)
{
	u64 vtime = task_vtime(p);

	scx_bpf_dsq_insert_vtime(p, cpu, slice_ns, vtime, enq_flags);
	stat_inc(FP_STAT_ENQ_CPU_DSQ);

	if (enq_flags & SCX_ENQ_WAKEUP) {
		/*
		 * An idle target is rescheduled by the core's wakeup path;
		 * a busy one may need preempting.
		 */
		preempt_if_behind(p, cpu, vtime, scx_bpf_now());
	} else if (cpu != bpf_get_smp_processor_id()) {
		/* E.g. an affinity change: make sure the CPU looks. */
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	}
}

static void enqueue_shared(struct task_struct *p, u64 enq_flags)
{
	u64 vtime = task_vtime(p);
	s32 cpu;

	scx_bpf_dsq_insert_vtime(p, FP_SHARED_DSQ, slice_ns, vtime, enq_flags);
	stat_inc(FP_STAT_ENQ_SHARED);

	/*
	 * ops.select_cpu() just looked for an idle CPU and found none; a CPU
	 * that goes idle after that runs ops.dispatch() and finds this task
	 * on the shared DSQ. Only tasks that skipped select_cpu need a scan.
	 */
	if (!(enq_flags & SCX_ENQ_WAKEUP) || !__COMPAT_is_enq_cpu_selected(enq_flags)) {
		cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		if (cpu >= 0) {
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			stat_inc(FP_STAT_KICK_IDLE);
			return;
		}
	}

	if (enq_flags & SCX_ENQ_WAKEUP)
		preempt_if_behind(p, scx_bpf_task_cpu(p), vtime, scx_bpf_now());
}

void BPF_STRUCT_OPS(fastpath_enqueue, struct task_struct *p, u64 enq_flags)
{
	s32 cpu = pinned_cpu(p);

	if (cpu >= 0)
		enqueue_pinned(p, cpu, enq_flags);
	else
		enqueue_shared(p, enq_flags);
}

static bool vtime_less(struct task_struct *a, struct task_struct *b)
{
	return time_before(a->scx.dsq_vtime, b->scx.dsq_vtime);
}

void BPF_STRUCT_OPS(fastpath_dispatch, s32 cpu, struct task_struct *prev)
{
	struct task_struct *mine, *shared;
	bool mine_first;

	mine = __COMPAT_scx_bpf_dsq_peek(cpu);
	shared = __COMPAT_scx_bpf_dsq_peek(FP_SHARED_DSQ);
	mine_first = mine && (!shared || vtime_less(mine, shared));

	if (mine_first && scx_bpf_dsq_move_to_local(cpu, 0)) {
		stat_inc(FP_STAT_DISP_CPU_DSQ);
		return;
	}
	if (scx_bpf_dsq_move_to_local(FP_SHARED_DSQ, 0)) {
		stat_inc(FP_STAT_DISP_SHARED);
		return;
	}
	if (!mine_first && mine && scx_bpf_dsq_move_to_local(cpu, 0)) {
		stat_inc(FP_STAT_DISP_CPU_DSQ);
		return;
	}

	/* Nothing else wants this CPU: let prev run another slice. */
	if (prev && (prev->scx.flags & SCX_TASK_QUEUED)) {
		prev->scx.slice = slice_ns;
		stat_inc(FP_STAT_KEEP_PREV);
	}
}

void BPF_STRUCT_OPS(fastpath_running, struct task_struct *p)
{
	struct fp_cpu *cctx = cpu_ctx(bpf_get_smp_processor_id());
	u64 vtime = p->scx.dsq_vtime;

	if (time_before(READ_ONCE(vtime_now), vtime))
		WRITE_ONCE(vtime_now, vtime);

	cctx->curr_vtime = vtime;
	cctx->curr_started = scx_bpf_now();
	cctx->curr_sum_start = p->se.sum_exec_runtime;
	cctx->curr_weight = p->scx.weight;
	WRITE_ONCE(cctx->curr_busy, 1);
}

void BPF_STRUCT_OPS(fastpath_stopping, struct task_struct *p, bool runnable)
{
	struct fp_cpu *cctx = cpu_ctx(bpf_get_smp_processor_id());
	u64 used;

	/*
	 * The core updated se.sum_exec_runtime just before calling us, so the
	 * time used needs no clock read here.
	 */
	used = p->se.sum_exec_runtime - cctx->curr_sum_start;
	p->scx.dsq_vtime += scale_by_task_weight_inverse(p, used);
	WRITE_ONCE(cctx->curr_busy, 0);
}

void BPF_STRUCT_OPS(fastpath_enable, struct task_struct *p)
{
	p->scx.dsq_vtime = READ_ONCE(vtime_now);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(fastpath_init)
{
	s32 cpu, ret;

	bpf_for(cpu, 0, nr_cpu_ids) {
		ret = scx_bpf_create_dsq(cpu, -1);
		if (ret) {
			scx_bpf_error("failed to create DSQ for CPU %d: %d", cpu, ret);
			return ret;
		}
	}

	ret = scx_bpf_create_dsq(FP_SHARED_DSQ, -1);
	if (ret)
		scx_bpf_error("failed to create the shared DSQ: %d", ret);
	return ret;
}

void BPF_STRUCT_OPS(fastpath_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

/*
 * Run by the loader (BPF_PROG_TEST_RUN) when it prints stats, so that the
 * hot paths never pay for queue-depth accounting.
 */
SEC("syscall")
int fp_sample_queued(void *ctx)
{
	u64 sum = 0;
	s32 cpu;

	bpf_for(cpu, 0, nr_cpu_ids)
		sum += scx_bpf_dsq_nr_queued(cpu);

	nr_queued_cpu = sum;
	nr_queued_shared = scx_bpf_dsq_nr_queued(FP_SHARED_DSQ);
	return 0;
}

SCX_OPS_DEFINE(fastpath_ops,
	       .select_cpu	= (void *)fastpath_select_cpu,
	       .enqueue		= (void *)fastpath_enqueue,
	       .dispatch	= (void *)fastpath_dispatch,
	       .running		= (void *)fastpath_running,
	       .stopping	= (void *)fastpath_stopping,
	       .enable		= (void *)fastpath_enable,
	       .init		= (void *)fastpath_init,
	       .exit		= (void *)fastpath_exit,
	       .flags		= SCX_OPS_ENQ_MIGRATION_DISABLED,
	       .timeout_ms	= FP_TIMEOUT_MS,
	       .name		= "fastpath");
