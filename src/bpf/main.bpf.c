/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_fastpath: a weighted virtual-time scheduler for sched_ext.
 *
 * Every task carries a vtime that advances by the CPU time it uses times
 * 100 / its weight (its nice level's, and its cgroups' share of the
 * hierarchy). Each CPU keeps its own virtual clock and a DSQ ordered by
 * vtime; a CPU runs the head of its own DSQ, keeps its task on while that
 * task is still behind the head, and takes from other CPUs' DSQs what is
 * further behind their clocks. A waking task comes back with the lag it
 * had when it blocked, bounded, and preempts a task that is behind it by
 * more than a granularity. A starvation guard bounds every wait.
 *
 * Five fast paths from scheduler-core work, each counted:
 *  1. a task with one possible CPU goes straight to that CPU's DSQ;
 *  2. cheap wakeups: a wakeup whose answer is known does no more work;
 *  3. a CPU whose task just blocked holds briefly before idling
 *     (--idle-hold-us, off by default);
 *  4. hot data on few cache lines: per-CPU state on lines of its own,
 *     counters never shared between CPUs (fastpath.bpf.h);
 *  5. likely()/unlikely() only where measured branch counts justify them
 *     (FP_BRANCH(), docs/branch-profile.md).
 *
 * This file is the program: it includes the shared header, then one file
 * per mechanism, each building on those before it, and ends with the
 * callbacks that belong to no mechanism (init, exit, the debug dump) and
 * the ops table.
 */
#include "fastpath.bpf.h"

#include "cgroup.bpf.c"
#include "clock.bpf.c"
#include "preempt.bpf.c"
#include "slice.bpf.c"
#include "idle_hold.bpf.c"
#include "guard.bpf.c"
#include "select_cpu.bpf.c"
#include "enqueue.bpf.c"
#include "dispatch.bpf.c"
#include "running.bpf.c"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/*
 * Tasks waiting on each CPU's DSQ, refreshed on demand by fp_sample_queued
 * (the loader sums them).
 */
u64 nr_queued_cpu[FP_MAX_CPUS];

void BPF_STRUCT_OPS(fastpath_dump, struct scx_dump_ctx *dctx)
{
	scx_bpf_dump("fastpath: slice_ns=%llu wakeup_gran_ns=%llu hog_run_ns=%llu",
		     tune.slice_ns, tune.wakeup_gran_ns, tune.hog_run_ns);
}

void BPF_STRUCT_OPS(fastpath_dump_cpu, struct scx_dump_ctx *dctx, s32 cpu, bool idle)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	s32 queued = scx_bpf_dsq_nr_queued(cpu);

	/* An idle CPU with nothing queued has nothing to say. */
	if (idle && queued <= 0)
		return;
	scx_bpf_dump("fastpath: dsq %d queued=%d vmin=%llu curr_vtime=%llu busy=%u kthread=%u long=%u kicked=%u holding=%u",
		     cpu, queued, cctx->vmin, cctx->curr_vtime, cctx->curr_busy,
		     cctx->curr_kthread, cctx->curr_long, cctx->kicked,
		     cctx->holding);
}

void BPF_STRUCT_OPS(fastpath_dump_task, struct scx_dump_ctx *dctx, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (!tctx)
		return;
	scx_bpf_dump("fastpath: vtime=%llu lag=%lld cpu=%d asleep=%u avg_run_ns=%llu weight=%u cgroup=%llu counted=%u",
		     tctx->vtime, tctx->lag, tctx->cpu, tctx->asleep, tctx->avg_run,
		     p->scx.weight, tctx->cgid, !!tctx->counted_cg);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(fastpath_init)
{
	s32 cpu, ret;

	nr_cpu_ids = scx_bpf_nr_cpu_ids();
	init_jiffies = bpf_jiffies64();
	init_ns = bpf_ktime_get_ns();
	if (nr_cpu_ids > FP_MAX_CPUS) {
		scx_bpf_error("%u CPU ids, at most %d supported", nr_cpu_ids, FP_MAX_CPUS);
		return -E2BIG;
	}
	ret = scx_bpf_create_dsq(FP_DSQ_RESCUE, -1);
	if (ret) {
		scx_bpf_error("failed to create the rescue DSQ: %d", ret);
		return ret;
	}
	bpf_for(cpu, 0, nr_cpu_ids) {
		ret = scx_bpf_create_dsq(cpu, -1);
		if (ret) {
			scx_bpf_error("failed to create DSQ for CPU %d: %d", cpu, ret);
			return ret;
		}
		cpu_ctx(cpu)->hold_window_ns = idle_hold_ns;
		ret = init_defer_timer(cpu);
		if (ret) {
			scx_bpf_error("failed to set up CPU %d's preemption timer: %d", cpu, ret);
			return ret;
		}
	}
	return 0;
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
	s32 cpu;

	bpf_for(cpu, 0, nr_cpu_ids) {
		s32 n = scx_bpf_dsq_nr_queued(cpu);

		if (n < 0)
			n = 0;
		nr_queued_cpu[cpu & (FP_MAX_CPUS - 1)] = n;
	}
	return 0;
}

SCX_OPS_DEFINE(fastpath_ops,
	       .select_cpu		= (void *)fastpath_select_cpu,
	       .enqueue			= (void *)fastpath_enqueue,
	       .dispatch		= (void *)fastpath_dispatch,
	       .yield			= (void *)fastpath_yield,
	       .running			= (void *)fastpath_running,
	       .stopping		= (void *)fastpath_stopping,
	       .init_task		= (void *)fastpath_init_task,
	       .enable			= (void *)fastpath_enable,
	       .disable			= (void *)fastpath_disable,
	       .set_weight		= (void *)fastpath_set_weight,
	       .cgroup_init		= (void *)fastpath_cgroup_init,
	       .cgroup_exit		= (void *)fastpath_cgroup_exit,
	       .cgroup_set_weight	= (void *)fastpath_cgroup_set_weight,
	       .cgroup_move		= (void *)fastpath_cgroup_move,
	       .init			= (void *)fastpath_init,
	       .exit			= (void *)fastpath_exit,
	       .dump			= (void *)fastpath_dump,
	       .dump_cpu		= (void *)fastpath_dump_cpu,
	       .dump_task		= (void *)fastpath_dump_task,
	       .flags			= SCX_OPS_ENQ_MIGRATION_DISABLED,
	       .timeout_ms		= FP_TIMEOUT_MS,
	       .name			= "fastpath");
