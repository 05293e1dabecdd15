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
typedef unsigned short u16;
typedef unsigned int u32;
typedef int s32;
typedef unsigned long long u64;
typedef long long s64;
#endif

enum fp_consts {
	/*
	 * Per-CPU state is kept in fixed arrays indexed by CPU id so that the
	 * loader can read counters straight from the mmap()ed .data.* maps;
	 * the loader refuses a machine with CPU ids beyond it. Must be a
	 * power of two: the BPF side masks indices with FP_MAX_CPUS - 1.
	 */
	FP_MAX_CPUS		= 1024,
	FP_CACHELINE		= 64,

	/*
	 * DSQ ids: DSQ n is CPU n's; FP_DSQ_RESCUE holds what the
	 * starvation guard rescued, for any CPU that may run it.
	 */
	FP_DSQ_RESCUE		= FP_MAX_CPUS,

	/* Tunable ranges, checked by the loader and relied upon by BPF. */
	FP_SLICE_US_MIN		= 100,
	FP_SLICE_US_MAX		= 100000,
	/*
	 * The kernel's watchdog: a task runnable this long without running
	 * ejects the scheduler. A CPU notices a used-up slice only at its
	 * tick (4 ms at HZ=250), so 1,000 always-runnable tasks confined to
	 * one CPU (which any user can start with taskset) need about 4 s for
	 * a round however short the slices: 5 s would leave no margin.
	 */
	FP_TIMEOUT_MS		= 10000,

	/*
	 * Idle hold: --idle-hold-us is capped here, since a holding CPU spins
	 * with its runqueue locked and IRQs off. The adaptive window never
	 * shrinks below FP_HOLD_MIN_NS.
	 */
	FP_IDLE_HOLD_US_MAX	= 1000,
	FP_HOLD_MIN_NS		= 2000,
	/*
	 * Sleeper credit: a waking task keeps the lag it had when it blocked
	 * (how far behind its CPU's clock, vmin, it was), bounded to
	 * FP_LAG_SLICES slices either way, so it comes back ahead of CPU hogs
	 * without hoarding credit. A kernel thread may keep up to
	 * FP_KTHREAD_LAG_SLICES of the lag it earned: kworkers and ksoftirqd
	 * do short work that others wait on, often as a chain of wakeups; one
	 * that runs long earns none.
	 */
	FP_LAG_SLICES		= 2,
	FP_KTHREAD_LAG_SLICES	= 4,
	/*
	 * Levels of the topology that CPU scans follow (cpu_near()): the
	 * core (SMT siblings), the LLC, the NUMA node; the machine is the
	 * level above them all.
	 */
	FP_TOPO_CORE		= 0,
	FP_TOPO_LLC		= 1,
	FP_TOPO_NODE		= 2,
	FP_TOPO_LEVELS		= 3,

	/*
	 * Starvation guard: every FP_GUARD_MS each CPU looks through its DSQ
	 * and runs every task that has been runnable for FP_STARVE_MS without
	 * running (a tenth of the watchdog timeout). Weighted fairness alone
	 * cannot bound waits: a nice-19 task that ran one slice is a hundred
	 * slices ahead in vtime, which hundreds of runnable tasks take minutes
	 * to catch up with.
	 */
	FP_STARVE_MS		= 1000,
	FP_GUARD_MS		= 100,

	/*
	 * Deep-queue slices: with more than FP_DEEP_QUEUE tasks waiting on a
	 * CPU, a task queued there gets slice * FP_DEEP_QUEUE / depth, at
	 * least slice / FP_SLICE_DIV_MAX, so that a round over them stays
	 * near FP_DEEP_QUEUE slices (in practice a tick each). Below it slices
	 * are whole: under a moderate queue shorter slices only add switches,
	 * which message-passing loads pay for (docs/decisions.md, "Deep-queue
	 * slices from 64 waiting tasks").
	 */
	FP_DEEP_QUEUE		= 64,
	FP_SLICE_DIV_MAX	= 16,

	/*
	 * The scans that look for one CPU (a holder, a CPU to send a wakee
	 * to, an RT-held CPU to rescue from) look at this many CPUs of the
	 * scan order, the CPU itself included: its nearest neighbours.
	 */
	FP_NEAR_SCAN		= 8,

	/* --wakeup-gran-us range. */
	FP_WAKEUP_GRAN_US_MAX	= 100000,

	/* The cgroup weight of a cgroup without cpu.weight (the default). */
	FP_CGROUP_WEIGHT_DFL	= 100,
	/*
	 * A task's weight in the flattened cgroup hierarchy takes at most
	 * this many cgroups up from its own into account, and is capped at
	 * the second (a thousand times the default).
	 */
	FP_CGROUP_DEPTH_MAX	= 32,
	FP_CGROUP_PATH_WEIGHT_MAX = 100000,
};

/*
 * Which task the starvation guard ran, per CPU: of those it ran since the
 * loader last took the record (pending 0), the one that had waited longest.
 * The guard writes it and sets pending; the loader logs it and clears
 * pending, so that a report names what starved and on which CPU. How many
 * it ran is the starve_rescue counter's, not kept twice. Cold: written only
 * on a rescue.
 */
struct fp_rescue {
	u64 waited_ms;	/* how long it had been runnable without running */
	s32 pid;
	u32 pending;
	char comm[16];	/* TASK_COMM_LEN */
};

/*
 * A CPU's place in the scan order (cpu_near()): topo_cpus lists every CPU
 * id grouped by node, then LLC, then core, and each level's CPUs around
 * this one are the block topo_cpus[base[level] .. base[level] + span[level]).
 * pos is this CPU's own index there. Filled by the loader before load.
 */
struct fp_topo {
	u16 pos;
	u16 base[FP_TOPO_LEVELS];
	u16 span[FP_TOPO_LEVELS];
};

/*
 * The tunables a running instance can change without reloading
 * (scx_fastpath set KEY=VALUE): the BPF side reads them at every use from
 * its .data.tune map, which the loader writes before load and on request.
 * src/tunables.rs has a row for each field, which names it: an _ns field is
 * the option of the same name in microseconds, times 1000; a u8 is a
 * mechanism, 1 unless --ablate NAME turned it off.
 */
struct fp_tune {
	u64 slice_ns;
	u64 wakeup_gran_ns;
	u64 hog_gran_ns;
	u64 hog_run_ns;
	u64 pull_gran_ns;
	u8 pinned_fastpath;
	u8 cheap_wakeup;
	u8 fast_yield;
	u8 head_lag;
	u8 displaced_head;
	u8 deferred_preempt;
	u8 rt_away;
	u8 rt_rescue;
	u8 wake_local;
	u8 rcu_first;
	u8 hog_hysteresis;
	u8 light_slice;
};

/*
 * Event counters, one array per CPU, each written only by its own CPU and
 * summed by the loader. build.rs makes the loader's names and descriptions
 * from this enum (FP_STAT_FOO -> "foo", the comment -> its description),
 * so a counter is added here and nowhere else.
 */
enum fp_stat_idx {
	/* Where ops.select_cpu()/ops.enqueue() put a task. */
	FP_STAT_DIRECT_LOCAL,	/* a waking task went straight to an idle CPU */
	FP_STAT_ENQ_QUEUED,	/* a task was queued on its CPU's DSQ */
	FP_STAT_WAKE_LOCAL,	/* a wakee of a waker that usually blocks went to their CPU's local DSQ, next there */
	FP_STAT_WAKE_RT_AWAY,	/* no CPU idle: a wakee's CPU ran an RT or deadline task, so it went to one that runs ours */
	FP_STAT_RT_RESCUED,	/* a CPU took a task queued on a CPU that an RT or deadline task holds, before its own */

	/* Fast path 1: tasks with one possible CPU. */
	FP_STAT_PINNED,		/* a pinned task went straight to its CPU's DSQ */
	FP_STAT_PINNED_MIGDIS,	/* ... of which migration-disabled */

	/* Fast path 2: cheap wakeups. */
	FP_STAT_WAKE_PREV_IDLE,	/* the idle previous CPU was claimed with no search */
	FP_STAT_WAKE_NONE_IDLE,	/* select_cpu skipped the kernel's idle search: no CPU was idle */
	FP_STAT_WAKE_NO_SCAN,	/* enqueue skipped the idle scan select_cpu had just done */
	FP_STAT_WAKE_NO_KICK,	/* no preemption check: the CPU runs none of ours or was kicked */

	/* Fast path 3: hold a CPU briefly before idling. */
	FP_STAT_HOLD_START,	/* a CPU held instead of going idle */
	FP_STAT_HOLD_CAUGHT,	/* ... and work arrived within the window */
	FP_STAT_HOLD_EXPIRED,	/* ... and the window ran out */
	FP_STAT_HOLD_REDIRECT,	/* a wakeup was queued on a holding CPU's DSQ */

	/* What ops.dispatch() found. */
	FP_STAT_DISP_CPU_DSQ,	/* the CPU took the head of its own DSQ */
	FP_STAT_DISP_STOLEN,	/* the CPU took the head of another CPU's DSQ */
	FP_STAT_DISP_STOLEN_FAR,	/* ... of a CPU in another LLC (machines with several LLCs) */
	FP_STAT_DISP_PULLED,	/* with --pull-gran-us: the CPU took another CPU's DSQ head over its own, further behind by more than that */
	FP_STAT_KEEP_PREV,	/* nothing else waited: the running task got another slice */
	FP_STAT_KEEP_FAIR,	/* the running task is still behind the DSQ head in vtime: it went on */

	/* Kicks sent by ops.enqueue(). */
	FP_STAT_KICK_IDLE,	/* an idle CPU was woken for a task that skipped select_cpu */
	FP_STAT_WAKE_PREEMPT,	/* a waking task preempted a CPU whose task was behind it */
	FP_STAT_WAKE_NO_PREEMPT,	/* no preemption: the running task ran less than --wakeup-gran-us, or is not that far behind */
	FP_STAT_WAKE_DEFERRED,	/* the running task had not had --wakeup-gran-us yet: a timer will preempt it when it has */
	FP_STAT_WAKE_DEFER_KICK,	/* ... and the timer preempted it (the same run was still going on) */
	FP_STAT_WAKE_SHORT_RUNNER,	/* no later preemption: the running task is not a CPU hog (its runs average under --hog-run-us) */
	FP_STAT_WAKE_HOG_GRAN,	/* a long-running task was preempted (now or by the timer) at --hog-gran-us */
	FP_STAT_WAKE_HOG_HELD,	/* ... of which one held in the class by hog_hysteresis (runs averaging half to all of --hog-run-us) */
	FP_STAT_WAKE_KTHREAD_KEPT,	/* no preemption: the CPU runs a kernel thread, which keeps it to the end of its slice */

	/* ops.yield(). */
	FP_STAT_YIELD_KEPT,	/* sched_yield() with nothing waiting: the task went on */
	FP_STAT_YIELD_GIVEN,	/* sched_yield() gave the CPU to a waiting task */

	/* Weights and the starvation guard. */
	FP_STAT_LAG_HEAD,	/* a blocking task's lag was measured from its CPU's DSQ head, ahead of the CPU's clock */
	FP_STAT_LAG_HEAD_NEW,	/* a blocking task's lag was measured from its CPU's clock: the DSQ head was not the task it displaced (displaced_head) */
	FP_STAT_KTHREAD_WAKE,	/* a waking kernel thread came back with more credit than FP_LAG_SLICES, lag it had earned */
	FP_STAT_STARVE_RESCUE,	/* the guard moved a task that had waited FP_STARVE_MS to the rescue DSQ, which every CPU looks at first */
	FP_STAT_RCU_FIRST,	/* a task preempted inside an RCU read-side section was queued first on its CPU */
	FP_STAT_CGROUP_WEIGHT,	/* a cgroup's cpu.weight was set or changed */
	FP_STAT_SLICE_SHORT,	/* a task was queued behind more than FP_DEEP_QUEUE with a shorter slice */
	FP_STAT_SLICE_LIGHT,	/* with light_slice: a task lighter than nice 0 started a run with its slice cut to its weight */
	FP_STAT_SLICE_LIGHT_KICK,	/* ... and the timer armed for the cut slice's end preempted it (before the tick would have) */
	FP_STAT_SLICE_LIGHT_ALONE,	/* with light_slice: a task lighter than nice 0 started a run with nothing waiting on its CPU, and its slice was left whole */

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
 * the branch-profile feature (FP_BRANCH() in fastpath.bpf.h), so that
 * likely()/unlikely() go only where the counts justify them. build.rs makes
 * the loader's names from this enum, as for the counters, and reads which
 * hint, if any, each FP_BRANCH() site in src/bpf/ carries, so the table
 * compares the counts with the source.
 */
enum fp_branch_idx {
	FP_BR_SELECT_HOLDER,	/* select_cpu: prev is holding, redirect */
	FP_BR_SELECT_PREV_IDLE,	/* select_cpu: prev idle and claimed */
	FP_BR_SELECT_NONE_IDLE,	/* select_cpu: no CPU idle, no search */
	FP_BR_SELECT_IDLE_FOUND,	/* select_cpu: the kernel found an idle CPU */
	FP_BR_ENQ_REDIRECTED,	/* enqueue: a redirected wakeup */
	FP_BR_ENQ_PINNED,	/* enqueue: task has one possible CPU */
	FP_BR_PINNED_MIGDIS,	/* pinned_cpu: migration-disabled */
	FP_BR_ENQ_NO_SCAN,	/* enqueue: wakeup select_cpu already scanned for */
	FP_BR_PREEMPT_NO_KICK,	/* preempt_if_behind: kick cannot matter */
	FP_BR_PREEMPT_BEHIND,	/* preempt_if_behind: current task is behind */
	FP_BR_DISPATCH_NO_RESCUED,	/* dispatch: nothing on the rescue DSQ */
	FP_BR_DISPATCH_CONSUMED,	/* dispatch: found a waiting task */
	FP_BR_DISPATCH_KEEP_PREV,	/* dispatch: prev still runnable */
	FP_BR_RUNNING_KICKED,	/* running: a preemption kick was pending */
	FP_BR_RUNNING_ADAPT,	/* running: last hold expired, adapt window */
	FP_BR_QUEUE_SLICE_FULL,	/* queue_slice: few tasks wait, whole slice */
	FP_BR_WEIGHT_ROOT_CGROUP,	/* task_weight: a task of the root cgroup */
	FP_BR_LIGHT_NONE,	/* light_slice: not lighter than nice 0 (or off) */
	FP_BR_LIGHT_UNCUT,	/* running: the slice was not cut to the weight */
	FP_NR_BRANCHES,
};

#endif /* __FASTPATH_INTF_H */
