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

	/* DSQ ids: DSQ n is CPU n's. */

	/* Tunable ranges, checked by the loader and relied upon by BPF. */
	FP_SLICE_US_MIN		= 100,
	FP_SLICE_US_MAX		= 100000,
	FP_TIMEOUT_MS		= 5000,

	/*
	 * Idle hold: --idle-hold-us is capped here, since a holding CPU spins
	 * with its runqueue locked and IRQs off. The adaptive window never
	 * shrinks below FP_HOLD_MIN_NS.
	 */
	FP_IDLE_HOLD_US_MAX	= 1000,
	FP_HOLD_MIN_NS		= 2000,
	/* How far ahead of vtime_now a task's DSQ key can be, in slices. */
	FP_AHEAD_SLICES		= 8,
	/*
	 * Most a waking task's DSQ key goes back by the time it slept: a
	 * fifth of the watchdog timeout, so that a task overtaken by every
	 * sleeper it can be still runs well within the timeout.
	 */
	FP_WAKE_BONUS_MS	= FP_TIMEOUT_MS / 5,
	/*
	 * Queue-depth slices: with more than FP_ROUND_SLICES tasks waiting
	 * per CPU, a queued task's slice shrinks so that one round over all
	 * of them takes about FP_ROUND_SLICES full slices, down to
	 * slice / FP_SLICE_DIV_MAX.
	 */
	FP_ROUND_SLICES		= 8,
	FP_SLICE_DIV_MAX	= 16,

	/* CPUs a wakeup looks at for a holder when none is idle. */
	FP_HOLD_SCAN		= 8,

	/*
	 * Dispatch looks at the DSQs of up to FP_STEAL_SCAN CPUs and steals a
	 * head that waited FP_STEAL_SLICES slices longer than its own.
	 */
	FP_STEAL_SCAN		= 8,
	FP_STEAL_SLICES		= 1,
};

/*
 * Event counters, one array per CPU, each written only by its own CPU and
 * summed by the loader. Keep the names in sync with src/stats.rs.
 */
enum fp_stat_idx {
	/* Where ops.select_cpu()/ops.enqueue() put a task. */
	FP_STAT_DIRECT_LOCAL,	/* straight to an idle CPU's local DSQ */
	FP_STAT_ENQ_QUEUED,	/* queued on its CPU's DSQ */

	/* Fast path 1: tasks with one possible CPU. */
	FP_STAT_PINNED,		/* queued straight on its CPU's DSQ */
	FP_STAT_PINNED_MIGDIS,	/* ... of which migration-disabled */

	/* Fast path 2: cheap wakeups. */
	FP_STAT_WAKE_PREV_IDLE,	/* prev CPU idle: claimed with no scan */
	FP_STAT_WAKE_NO_SCAN,	/* enqueue skipped a scan select_cpu just did */
	FP_STAT_WAKE_NO_KICK,	/* preemption kick skipped: it could not matter */
	FP_STAT_WAKE_QUEUED,	/* a queued wakeup (no select_cpu) reached enqueue */

	/* Fast path 3: hold a CPU briefly before idling. */
	FP_STAT_HOLD_START,	/* a CPU held instead of going idle */
	FP_STAT_HOLD_CAUGHT,	/* ... and work arrived within the window */
	FP_STAT_HOLD_EXPIRED,	/* ... and the window ran out */
	FP_STAT_HOLD_REDIRECT,	/* a wakeup was queued for a holding CPU */

	/* What ops.dispatch() found. */
	FP_STAT_DISP_CPU_DSQ,	/* moved a task from this CPU's DSQ */
	FP_STAT_DISP_STOLEN,	/* took the head of another CPU's DSQ */
	FP_STAT_KEEP_PREV,	/* nothing waited: prev got a new slice */

	/* Kicks sent by ops.enqueue(). */
	FP_STAT_KICK_IDLE,	/* woke an idle CPU for a queued task */
	FP_STAT_WAKE_PREEMPT,	/* preempted a CPU for a waking task */

	/* Queue-depth slices. */
	FP_STAT_SLICE_SHORT,	/* a task was queued with a shortened slice */

	FP_NR_STATS,
};

/*
 * Counters for one CPU. The BPF side aligns each to its own cache lines so
 * that CPUs never write to a line another CPU writes.
 */
struct fp_cpu_stats {
	u64 cnt[FP_NR_STATS];
};

/*
 * Data-dependent branches on the hot paths, counted per CPU in builds with
 * the branch-profile feature (FP_BRANCH() in main.bpf.c), so that
 * likely()/unlikely() go only where the counts justify them. Keep the names
 * in sync with src/stats.rs.
 */
enum fp_branch_idx {
	FP_BR_SELECT_HOLDER,	/* select_cpu: prev is holding, redirect */
	FP_BR_SELECT_PREV_IDLE,	/* select_cpu: prev idle and claimed */
	FP_BR_SELECT_IDLE_FOUND,	/* select_cpu: the kernel found an idle CPU */
	FP_BR_ENQ_REDIRECTED,	/* enqueue: a redirected wakeup */
	FP_BR_ENQ_PINNED,	/* enqueue: task has one possible CPU */
	FP_BR_PINNED_MIGDIS,	/* pinned_cpu: migration-disabled */
	FP_BR_ENQ_QUEUED_WAKEUP,	/* enqueue: a wakeup that skipped select_cpu */
	FP_BR_ENQ_NO_SCAN,	/* enqueue: wakeup select_cpu already scanned for */
	FP_BR_PREEMPT_NO_KICK,	/* preempt_if_behind: kick cannot matter */
	FP_BR_PREEMPT_BEHIND,	/* preempt_if_behind: current task is behind */
	FP_BR_DISPATCH_CONSUMED,	/* dispatch: found a waiting task */
	FP_BR_DISPATCH_KEEP_PREV,	/* dispatch: prev still runnable */
	FP_BR_RUNNING_KICKED,	/* running: a preemption kick was pending */
	FP_BR_RUNNING_ADAPT,	/* running: last hold expired, adapt window */
	FP_BR_QUEUE_SLICE_FULL,	/* queue_slice: few tasks wait, full slice */
	FP_NR_BRANCHES,
};

#endif /* __FASTPATH_INTF_H */
