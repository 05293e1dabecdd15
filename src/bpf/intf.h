/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Constants and structures shared by the BPF scheduler and its Rust loader.
 * build.rs runs bindgen over this file, so everything here must be plain C
 * that both sides understand.
 */
#ifndef __FASTPATH_INTF_H
#define __FASTPATH_INTF_H

#ifndef __VMLINUX_H__
typedef unsigned char u8;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum fp_consts {
	/*
	 * Per-CPU state is kept in fixed arrays indexed by CPU id so that the
	 * loader can read counters straight from the mmap()ed .bss. Must be a
	 * power of two: the BPF side masks indices with FP_MAX_CPUS - 1.
	 */
	FP_MAX_CPUS		= 1024,
	FP_CACHELINE		= 64,

	/*
	 * DSQ ids: 0 .. nr_cpu_ids - 1 are the per-CPU DSQs, this one is the
	 * DSQ shared by all CPUs.
	 */
	FP_SHARED_DSQ		= FP_MAX_CPUS,

	/* Tunable ranges, checked by the loader and relied upon by BPF. */
	FP_SLICE_US_MIN		= 100,
	FP_SLICE_US_MAX		= 100000,
	FP_TIMEOUT_MS		= 5000,
};

/*
 * Event counters, one array per CPU, each written only by its own CPU and
 * summed by the loader. Keep the names in sync with src/stats.rs.
 */
enum fp_stat_idx {
	/* Where ops.select_cpu()/ops.enqueue() put a task. */
	FP_STAT_DIRECT_LOCAL,	/* straight to an idle CPU's local DSQ */
	FP_STAT_ENQ_CPU_DSQ,	/* to the per-CPU DSQ of its only CPU */
	FP_STAT_ENQ_SHARED,	/* to the shared DSQ */

	/* What ops.dispatch() found. */
	FP_STAT_DISP_CPU_DSQ,	/* moved a task from this CPU's DSQ */
	FP_STAT_DISP_SHARED,	/* moved a task from the shared DSQ */
	FP_STAT_KEEP_PREV,	/* nothing waited: prev got a new slice */

	/* Kicks sent by ops.enqueue(). */
	FP_STAT_KICK_IDLE,	/* woke an idle CPU for a queued task */
	FP_STAT_WAKE_PREEMPT,	/* preempted a CPU for a waking task */

	FP_NR_STATS,
};

/*
 * Counters for one CPU. The BPF side aligns each to its own cache lines so
 * that CPUs never write to a line another CPU writes.
 */
struct fp_cpu_stats {
	u64 cnt[FP_NR_STATS];
};

#endif /* __FASTPATH_INTF_H */
