/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every mechanism of scx_fastpath shares: the loader's settings and
 * tunables, the per-CPU state and counters, the per-task state, and small
 * helpers. The BPF program is one translation unit: main.bpf.c includes
 * this header, then one file per mechanism, in the order they build on
 * each other.
 */
#ifndef __FASTPATH_BPF_H
#define __FASTPATH_BPF_H

#include <scx/common.bpf.h>
#include "intf.h"

/*
 * Set by the loader before load, and fixed from then on: these decide what
 * state exists (the idle-hold windows, where the counters go), so changing
 * them under a running scheduler would strand it.
 */
const volatile u64 idle_hold_ns;

const volatile bool compact_layout = true;

/*
 * The tunables a running instance can change (scx_fastpath set): the loader
 * writes them before load (so their defaults are the command line's, kept
 * nowhere else) and again when told to, through the mmap()ed map, and every
 * use reads them afresh. One read-mostly cache line of its own (fast path
 * 4): it is written only by such a change.
 */
struct fp_tune tune SEC(".data.tune");

/*
 * The highest possible CPU id + 1, from the kernel at init: the possible
 * mask can have holes (0-3,8-11), so it is not the number of CPUs.
 */
u32 nr_cpu_ids = 1;

/*
 * The machine's topology, as the order CPU scans follow (cpu_near()): the
 * loader fills both arrays from the topology before load (a CPU that is
 * offline then is a core, LLC and node of its own; the loader restarts when
 * one comes online) and never changes them while attached.
 */
const volatile u16 topo_cpus[FP_MAX_CPUS];

const volatile struct fp_topo cpu_topo[FP_MAX_CPUS];

/*
 * Branch hints (fast path 5). A build with -DFP_BRANCH_PROFILE counts how
 * often each hinted branch goes which way, per CPU; the loader prints the
 * table. A build with -DFP_NO_BRANCH_HINTS drops the hints, for ablation.
 */
#ifdef FP_NO_BRANCH_HINTS

#undef likely

#undef unlikely

#define likely(x)	(x)

#define unlikely(x)	(x)

#endif

#ifdef FP_BRANCH_PROFILE

struct fp_branch_line {
	u64 cnt[FP_NR_BRANCHES][2];
} __attribute__((aligned(FP_CACHELINE)));

struct fp_branch_line fp_branches[FP_MAX_CPUS] SEC(".data.branches");

static __always_inline bool fp_branch(enum fp_branch_idx idx, bool cond)
{
	u32 cpu = bpf_get_smp_processor_id() & (FP_MAX_CPUS - 1);

	if (idx < FP_NR_BRANCHES)
		fp_branches[cpu].cnt[idx][cond]++;
	return cond;
}

#define FP_BRANCH(idx, cond)	fp_branch(idx, !!(cond))

#else

#define FP_BRANCH(idx, cond)	(cond)

#endif

/*
 * Per-CPU state (fast path 4). Two cache lines per CPU:
 *
 * Line 0, written only by its CPU, read by other CPUs' wakeups:
 *   vmin	the CPU's virtual clock (see cpu_vmin()): ops.running()
 *		and a kept run in ops.dispatch() write it; every enqueue
 *		onto the CPU reads it.
 *   curr_vtime, curr_started, curr_weight, curr_busy, curr_kthread,
 *   curr_long	ops.running()/stopping() write; enqueue's wakeup_preempts()
 *		reads.
 *   holding	idle_hold() writes; select_cpu() (can_redirect()) and the
 *		debug dump read; the redirected enqueue checks redirect_pid.
 *   kicked	set by whoever sends a preemption kick, cleared by the
 *		kicked CPU's next ops.dispatch() or ops.running(): the one
 *		field written from outside, and only once per kick.
 *
 * Line 1, only ever touched by its own CPU:
 *   hold_window_ns, hold_expired_at	idle_hold() and ops.running().
 *   guard_at	when guard_starved() last looked (ops.dispatch()).
 *   redirect_pid, redirect_cpu	select_cpu() writes, the enqueue() of the
 *		same wakeup (same CPU, IRQs still off) reads.
 *   curr_blocked	ops.running() writes; the enqueue of a wakeup on this
 *		CPU reads it about the waker (see wake_local_ok()).
 *   start_head	ops.running() writes the vtime of the DSQ head the task
 *		started with if that is the task it displaced,
 *		ops.stopping() reads it (block_clock()).
 *   prev_pid	ops.stopping() writes the pid of a task that stops still
 *		runnable (0 if it blocks), the next ops.running() reads it
 *		(start_head()).
 *   none_idle_seen	select_cpu() on this CPU found no idle CPU the last
 *		time it looked (see select_idle_cpu()).
 */
struct fp_cpu {
	/* line 0: shared, read remotely */
	u64 vmin;
	u64 curr_vtime;
	u64 curr_started;
	u32 curr_weight;
	u32 curr_busy;
	u32 curr_kthread;
	u32 holding;
	u32 kicked;
	u32 curr_long;
	u8 __pad0[FP_CACHELINE - 48];

	/* line 1: private */
	u64 hold_window_ns;
	u64 hold_expired_at;
	u64 guard_at;
	s32 redirect_pid;
	s32 redirect_cpu;
	u32 curr_blocked;
	u64 start_head;
	s32 prev_pid;
	u32 none_idle_seen;
} __attribute__((aligned(FP_CACHELINE)));

_Static_assert(sizeof(struct fp_cpu) == 2 * FP_CACHELINE,
	       "struct fp_cpu must be exactly two cache lines");

_Static_assert(__builtin_offsetof(struct fp_cpu, kicked) < FP_CACHELINE,
	       "remotely read fields must all sit on line 0");

_Static_assert(__builtin_offsetof(struct fp_cpu, hold_window_ns) == FP_CACHELINE,
	       "private fields must start line 1");

_Static_assert(__builtin_offsetof(struct fp_cpu, none_idle_seen) < 2 * FP_CACHELINE,
	       "private fields must all sit on line 1");

/*
 * .data.* sections become BPF_F_MMAPABLE array maps whose values start on a
 * page boundary, so the alignment above holds in memory too.
 */
struct fp_cpu fp_cpus[FP_MAX_CPUS] SEC(".data.cpus");

/*
 * Counters: each CPU increments only its own element, padded to whole cache
 * lines, so counting never bounces a line between CPUs. The loader reads
 * them through the mmap()ed map and sums them. Without compact_layout they
 * go to one array shared by all CPUs, with atomic adds, as a naive
 * scheduler would do it: that is the ablation of fast path 4.
 */
struct fp_cpu_stats_line {
	struct fp_cpu_stats s;
} __attribute__((aligned(FP_CACHELINE)));

_Static_assert(sizeof(struct fp_cpu_stats_line) % FP_CACHELINE == 0,
	       "per-CPU counters must fill whole cache lines");

struct fp_cpu_stats_line fp_stats[FP_MAX_CPUS] SEC(".data.stats");

struct fp_cpu_stats fp_stats_shared SEC(".data.stats_shared");

static __always_inline struct fp_cpu *cpu_ctx(s32 cpu)
{
	return &fp_cpus[cpu & (FP_MAX_CPUS - 1)];
}

static __always_inline void stat_inc(enum fp_stat_idx idx)
{
	u32 cpu;

	if (idx >= FP_NR_STATS)
		return;
	if (!compact_layout) {
		__sync_fetch_and_add(&fp_stats_shared.cnt[idx], 1);
		return;
	}
	cpu = bpf_get_smp_processor_id() & (FP_MAX_CPUS - 1);
	fp_stats[cpu].s.cnt[idx]++;
}

/*
 * @a - @b for two clock readings that may come from different CPUs: a
 * reading taken "later" elsewhere can be a little smaller, and as u64 the
 * difference would wrap to centuries. Never below 0.
 */
static __always_inline u64 clock_delta(u64 a, u64 b)
{
	s64 d = (s64)(a - b);

	return d > 0 ? d : 0;
}

/* Per-task state. */
struct task_ctx {
	u64 vtime;	/* fairness virtual time, relative to CPU @cpu's vmin */
	s64 lag;	/* @cpu's vmin - vtime when it last blocked, bounded */
	s32 cpu;	/* the CPU whose virtual clock @vtime is measured on */
	u32 asleep;	/* blocked since it last ran: place it on wakeup */
	u64 cgid;	/* its cgroup's id (cgroup v2 kernfs id), 0 for the root */
	u64 counted_cg;	/* the cgroup whose child_sum counts it (runnable), or 0 */
	u32 counted_w;	/* the weight it added to that child_sum */
	u64 avg_run;	/* CPU time per run (running to stopping), averaged */
	u32 last_kept;	/* its last run ended with it still runnable */
	u32 hog;	/* in the CPU hog class (hog_class()) */
	/*
	 * Its run: se.sum_exec_runtime when it began, and the weight it is
	 * charged at. Set by ops.running(), and by ops.enable() for a task
	 * that enters sched_ext while it runs (attaching to a loaded
	 * machine): the core calls ops.stopping() for that run without an
	 * ops.running() before it.
	 */
	u64 run_sum;
	u32 run_weight;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_ctx);
} task_ctxs SEC(".maps");

static __always_inline struct task_ctx *lookup_task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_ctxs, p, 0, 0);
}

/* Nothing waits on @cpu, the CPU this runs on: its DSQ and local DSQ are empty. */
static bool cpu_alone(s32 cpu)
{
	return !scx_bpf_dsq_nr_queued(cpu) && !scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL);
}

/* Scheduling-class priorities below this are RT or deadline (and stop). */
#define FP_MAX_RT_PRIO	100

/*
 * @cpu, which reads not busy (ops.stopping() ran, and ops.running() has not
 * since: idle, between two of our tasks, or held), runs a task of a class
 * above ours.
 */
static bool rt_holds(s32 cpu)
{
	struct task_struct *curr = __COMPAT_scx_bpf_cpu_curr(cpu);

	return curr && curr->prio < FP_MAX_RT_PRIO;
}

/* @p may run on @cpu: allowed there, and not migration-disabled elsewhere. */
static bool can_run_on(struct task_struct *p, s32 cpu)
{
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	return !is_migration_disabled(p) || scx_bpf_task_cpu(p) == cpu;
}

/* How many CPUs of @cpu's scan order, itself included, are in its @level. */
static __always_inline u32 topo_span(s32 cpu, u32 level)
{
	return cpu_topo[cpu & (FP_MAX_CPUS - 1)].span[level];
}

/*
 * The @i-th CPU of @cpu's scan order, for @i in [0, nr_cpu_ids): @cpu
 * itself (i = 0), its SMT siblings, the rest of its LLC, the rest of its
 * node, then the rest of the machine. Every CPU comes once. Each level's
 * part starts right after the level below it and wraps around inside the
 * level's block, so that the CPUs of one LLC, scanning at once, start at
 * different places. Every CPU scan is a loop over @i and one call of this:
 * a scope is an upper bound on @i (topo_span()).
 *
 * A global function: the verifier checks it once, not once per path of
 * every loop that calls it (inlined, it took ops.dispatch() from about
 * 7,000 instructions processed to 58,000).
 */
__noinline s32 cpu_near(s32 cpu, u32 i)
{
	const volatile struct fp_topo *t = &cpu_topo[cpu & (FP_MAX_CPUS - 1)];
	u32 inner = t->pos, base = 0, span = nr_cpu_ids, level;

	for (level = 0; level < FP_TOPO_LEVELS; level++) {
		if (i < t->span[level]) {
			base = t->base[level];
			span = t->span[level];
			break;
		}
		inner = t->base[level];
	}
	if (!span)
		return cpu;
	return topo_cpus[(base + (inner - base + i) % span) & (FP_MAX_CPUS - 1)];
}

/* The end of a scan of the nearest CPUs (FP_NEAR_SCAN of them at most). */
static __always_inline u32 near_scan_end(void)
{
	return nr_cpu_ids < FP_NEAR_SCAN ? nr_cpu_ids : FP_NEAR_SCAN;
}

#endif /* __FASTPATH_BPF_H */
