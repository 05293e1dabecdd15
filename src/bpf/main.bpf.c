/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_fastpath: a weighted virtual-time scheduler for sched_ext.
 *
 * Policy
 * ------
 * Weighted virtual-time fairness. Every task carries a vtime (task_ctx) that
 * advances by the CPU time it used times 100 / its weight, where the weight
 * is the task's (its nice level) scaled by the cpu.weight of each cgroup on
 * its path. Runnable tasks wait on per-CPU DSQs ordered by vtime:
 *
 *  - a waking task that finds an idle CPU (the kernel's built-in idle
 *    tracking) is inserted straight into that CPU's local DSQ;
 *  - a wakee that lands on its waker's CPU, where nothing else waits and
 *    the waker usually blocks next, goes to that CPU's local DSQ too
 *    (wake_local_ok());
 *  - every other task waits on the DSQ of the CPU it is on (the one
 *    ops.select_cpu() returned, for a wakeup).
 *
 * ops.dispatch() lets the running task go on while it is still behind the
 * head of its CPU's DSQ in vtime (that is what makes weights hold between
 * tasks that never sleep), else takes that head, or another CPU's head
 * that is further behind that CPU's clock by more than --pull-gran-us
 * (pull()); a CPU with nothing queued takes, from the other CPUs' DSQs,
 * the head furthest behind its own CPU's clock (per-CPU clocks do not
 * compare), in its own last-level cache first (steal()).
 *
 * Responsiveness: a waking task comes back with the lag it had when it
 * blocked, bounded to a few slices, so a sleeper comes back ahead of CPU
 * hogs without hoarding credit, and it preempts the CPU it lands on when
 * the task there is behind it by more than --wakeup-gran-us (a CPU hog:
 * the smaller of that and --hog-gran-us, see wakeup_preempts()).
 *
 * Bounded waits: fairness by weight cannot bound how long a task waits (a
 * nice-19 task that just ran is far ahead), but the kernel's watchdog
 * ejects a scheduler that leaves a task runnable for FP_TIMEOUT_MS. A
 * starvation guard in ops.dispatch() runs any task that has waited
 * FP_STARVE_MS, see guard_starved().
 *
 * Fast paths
 * ----------
 * Five ideas from scheduler-core work, each with a switch (set by the
 * loader; see struct fp_tune for those a running instance can change) and
 * counters (enum fp_stat_idx):
 *
 *  1. pinned_fastpath: a task with one possible CPU goes straight to that
 *     CPU's DSQ: no idle scan, no kick of another CPU.
 *  2. cheap_wakeup: a wakeup whose answer is known does no more work: an
 *     idle prev CPU is claimed without a scan, enqueue does not rescan what
 *     select_cpu just scanned, and no kick goes out when it cannot matter.
 *  3. idle_hold_ns: a CPU whose task just blocked spins a short, adaptive
 *     window for work before going idle. See idle_hold().
 *  4. Hot data: per-CPU state on cache lines of its own; compact_layout:
 *     counters never shared between CPUs; lazy_vmin: each CPU's clock,
 *     which other CPUs read, written rarely.
 *  5. likely()/unlikely() only where branch counts justify them, see
 *     docs/branch-profile.md; FP_BRANCH() counts them in profiling builds.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

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
 * The last-level cache of each CPU: CPUs with the same id share one. The
 * loader fills it from the machine's topology before load, and sets
 * multi_llc only where there is more than one LLC, so that on the rest the
 * verifier drops every use of cpu_llc as dead code.
 */
const volatile u32 cpu_llc[FP_MAX_CPUS];
const volatile bool multi_llc;

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
 *		writes it, with lazy_vmin only when it has moved by a
 *		sixteenth of a slice (a reference that lags by that much
 *		changes no decision, and the line stays shared-clean between
 *		writes); every enqueue onto the CPU reads it.
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
 *   curr_sum_start	ops.running() writes, ops.stopping() and
 *		ops.dispatch() read.
 *   hold_window_ns, hold_expired_at	idle_hold() and ops.running().
 *   guard_at	when guard_starved() last looked (ops.dispatch()).
 *   redirect_pid, redirect_cpu	select_cpu() writes, the enqueue() of the
 *		same wakeup (same CPU, IRQs still off) reads.
 *   curr_keeps_running	ops.running() writes; select_cpu() on this CPU
 *		reads it about the waker (see wake_away_cpu()).
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
	u64 curr_sum_start;
	u64 hold_window_ns;
	u64 hold_expired_at;
	u64 guard_at;
	s32 redirect_pid;
	s32 redirect_cpu;
	u32 curr_keeps_running;
	u32 curr_blocked;
	u64 start_head;
	s32 prev_pid;
	u32 none_idle_seen;
} __attribute__((aligned(FP_CACHELINE)));

_Static_assert(sizeof(struct fp_cpu) == 2 * FP_CACHELINE,
	       "struct fp_cpu must be exactly two cache lines");
_Static_assert(__builtin_offsetof(struct fp_cpu, kicked) < FP_CACHELINE,
	       "remotely read fields must all sit on line 0");
_Static_assert(__builtin_offsetof(struct fp_cpu, curr_sum_start) == FP_CACHELINE,
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

/*
 * Tasks waiting on each CPU's DSQ, refreshed on demand by fp_sample_queued
 * (the loader sums them).
 */
u64 nr_queued_cpu[FP_MAX_CPUS];

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

/*
 * The one CPU a task can go to, or -1 if it has a choice. A migration-disabled
 * task must stay where it is, even if its affinity has just been changed to
 * exclude that CPU; a task allowed on one CPU must go there.
 */
static s32 pinned_cpu(struct task_struct *p, bool *migdis)
{
	*migdis = is_migration_disabled(p);
	if (unlikely(FP_BRANCH(FP_BR_PINNED_MIGDIS, *migdis)))
		return scx_bpf_task_cpu(p);
	if (p->nr_cpus_allowed == 1)
		return bpf_cpumask_first(p->cpus_ptr);
	return -1;
}

/* ------------------------------------------------------------------------
 * Weights: the task's, scaled by its cgroup path's cpu.weight.
 * ------------------------------------------------------------------------ */

/* Per-task state. */
struct task_ctx {
	u64 vtime;	/* fairness virtual time, relative to CPU @cpu's vmin */
	s64 lag;	/* @cpu's vmin - vtime when it last blocked, bounded */
	s32 cpu;	/* the CPU whose virtual clock @vtime is measured on */
	u32 asleep;	/* blocked since it last ran: place it on wakeup */
	u64 cgid;	/* its cgroup's id (cgroup v2 kernfs id) */
	u32 cg_weight;	/* its cgroup path's weight, cached */
	u32 cg_gen;	/* cgroup_gen when cg_weight was read */
	u64 avg_run;	/* CPU time per run (running to stopping), averaged */
	u32 runs_kept;	/* runs in a row that ended with it still runnable */
	u32 hog;	/* in the CPU hog class (hog_class()) */
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

/*
 * Every cgroup the kernel told us about (ops.cgroup_init), by cgroup id: its
 * cpu.weight (ops.cgroup_set_weight keeps it current) and its parent's id.
 * Tasks cache the weight of their cgroup's path; cgroup_gen moves whenever a
 * weight changes, and a task whose cache is older computes it again the
 * next time it starts running (task_weight() from ops.running()). So the
 * hot path pays one compare, and a walk up the tree only after a change.
 */
struct fp_cgroup {
	u64 parent;	/* the parent's id; 0 for the root */
	u32 weight;	/* cpu.weight, 1-10000, 100 by default */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, u64);
	__type(value, struct fp_cgroup);
} cgroup_weights SEC(".maps");

u32 cgroup_gen;

/*
 * The cgroup's weight relative to the root's children, in hundredths: the
 * product of cpu.weight / 100 along its path, as the kernel's hierarchy
 * would give a task in it, with its siblings and each ancestor's siblings,
 * at its own level. What it does not model: a cgroup's share split among
 * its tasks (each task is weighted, not each cgroup). A cgroup missing from
 * the map (the map was full) ends the path there.
 */
static u32 cgroup_weight_of(u64 cgid)
{
	struct fp_cgroup *cg;
	u64 w = FP_CGROUP_WEIGHT_DFL;
	u32 i;

	bpf_for(i, 0, FP_CGROUP_DEPTH_MAX) {
		cg = bpf_map_lookup_elem(&cgroup_weights, &cgid);
		if (!cg)
			break;
		w = w * cg->weight / FP_CGROUP_WEIGHT_DFL;
		if (w > FP_CGROUP_PATH_WEIGHT_MAX)
			w = FP_CGROUP_PATH_WEIGHT_MAX;
		cgid = cg->parent;
		if (!cgid)
			break;
	}
	return w ?: 1;
}

static void task_set_cgroup(struct task_ctx *tctx, struct cgroup *cgrp)
{
	tctx->cgid = cgrp->kn->id;
	tctx->cg_gen = READ_ONCE(cgroup_gen);
	tctx->cg_weight = cgroup_weight_of(tctx->cgid);
}

/*
 * The weight vtime is scaled by: the task's own (from its nice level, 100
 * for nice 0) times its cgroup path's weight / 100 (cgroup_weight_of()).
 */
static u64 task_weight(struct task_struct *p, struct task_ctx *tctx)
{
	u64 w;

	if (unlikely(FP_BRANCH(FP_BR_WEIGHT_CGROUP_NEW, tctx->cg_gen != READ_ONCE(cgroup_gen)))) {
		tctx->cg_gen = READ_ONCE(cgroup_gen);
		tctx->cg_weight = cgroup_weight_of(tctx->cgid);
	}
	w = (u64)p->scx.weight * tctx->cg_weight / FP_CGROUP_WEIGHT_DFL;
	return w ?: 1;
}

/* ------------------------------------------------------------------------
 * Where a task waits: its vtime on wakeup, its slice.
 * ------------------------------------------------------------------------ */

/*
 * Each CPU keeps its own virtual clock, vmin: the lowest vtime among what it
 * runs and what waits on its DSQ, never going back (the kernel's old
 * min_vruntime). A task's vtime is measured on the clock of the CPU it is
 * queued on (task_ctx->cpu). One clock for the whole system does not work
 * with per-CPU queues: a CPU with three hogs runs each a third of the time,
 * one with a single hog runs it all the time, their vtimes drift apart by
 * seconds, and a sleeper placed by the fast CPU's clock on the slow one
 * waited behind all of its hogs (the mixed_load test's probe, ~1 s). Taking
 * the lowest vtime, not the highest, matters with weights: next to a nice-19
 * task that jumps far ahead, a nice-0 hog runs behind, and a sleeper placed
 * by the nice-19 task's vtime would wait out the hog's whole catch-up.
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
 * FP_LAG_SLICES slices either way): a task that slept while others ran
 * comes back ahead of them by what it had not used, a task that had run
 * ahead comes back behind. Giving every sleeper the full credit instead
 * made nearly every wakeup preempt (hackbench, pipes: one switch per
 * message).
 *
 * A waking kernel thread is put FP_KTHREAD_LAG_SLICES behind, even if that
 * is credit it did not earn: kworkers and ksoftirqd do short work that
 * others wait on (I/O completions, timers, the kernel's own sched_ext
 * watchdog) as chains of wakeups, and under a deep queue each link of the
 * chain would wait a round (the sleeper storm test ejected us that way:
 * "watchdog failed to check in for 5.004s"). A kthread that keeps running
 * is requeued without a wakeup and gets nothing.
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
		if (p->flags & PF_KTHREAD) {
			tctx->vtime = cpu_vmin(cpu) - FP_KTHREAD_LAG_SLICES * tune.slice_ns;
			stat_inc(FP_STAT_KTHREAD_WAKE);
		} else {
			tctx->vtime = cpu_vmin(cpu) - tctx->lag;
		}
	} else if (tctx->cpu != cpu) {
		tctx->vtime = cpu_vmin(cpu) + (tctx->vtime - cpu_vmin(tctx->cpu));
	}
	tctx->cpu = cpu;
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
 * Deferred wakeup preemption. A wakee that may preempt a CPU's task only
 * once that task has had its --wakeup-gran-us would otherwise wait for the
 * end of the task's whole slice (nothing looks again before then): a
 * periodic sleeper against a CPU hog waited most of a slice one wakeup in
 * five. Instead, a timer per CPU kicks it when the floor has passed, if the
 * same run is still going on (curr_started unchanged) and nobody kicked it
 * meanwhile. The same timer ends light slices (light_slice()) on time.
 */
struct fp_defer {
	struct bpf_timer timer;
	u64 started;	/* curr_started of the run to preempt */
	u32 light;	/* armed to end a light slice, not for a wakee */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FP_MAX_CPUS);
	__type(key, u32);
	__type(value, struct fp_defer);
} defer_timers SEC(".maps");

static int defer_fire(void *map, u32 *key, struct fp_defer *d)
{
	s32 cpu = *key & (FP_MAX_CPUS - 1);
	struct fp_cpu *cctx = cpu_ctx(cpu);

	bool light = READ_ONCE(d->light);

	if ((!light && !tune.deferred_preempt) ||
	    READ_ONCE(cctx->curr_started) != READ_ONCE(d->started) ||
	    !READ_ONCE(cctx->curr_busy) || READ_ONCE(cctx->kicked))
		return 0;
	WRITE_ONCE(cctx->kicked, 1);
	scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	stat_inc(light ? FP_STAT_SLICE_LIGHT_KICK : FP_STAT_WAKE_DEFER_KICK);
	return 0;
}

/* Arm @cpu's timer to preempt the run that started at @started. */
static bool arm_preempt_timer(s32 cpu, u64 started, u64 delay, bool light)
{
	u32 key = cpu;
	struct fp_defer *d = bpf_map_lookup_elem(&defer_timers, &key);

	if (!d)
		return false;
	/*
	 * A second arming replaces the first: a wakee whose floor ends after
	 * a light slice lets that run go on to the floor (or the next tick),
	 * not longer.
	 */
	WRITE_ONCE(d->started, started);
	WRITE_ONCE(d->light, light);
	return !bpf_timer_start(&d->timer, delay, 0);
}

static void defer_preempt(s32 cpu, u64 started, u64 delay)
{
	if (arm_preempt_timer(cpu, started, delay, false))
		stat_inc(FP_STAT_WAKE_DEFERRED);
}

static s32 init_defer_timer(s32 cpu)
{
	u32 key = cpu;
	struct fp_defer *d = bpf_map_lookup_elem(&defer_timers, &key);
	s32 ret;

	if (!d)
		return -ENOENT;
	ret = bpf_timer_init(&d->timer, &defer_timers, CLOCK_MONOTONIC);
	if (ret)
		return ret;
	return bpf_timer_set_callback(&d->timer, defer_fire);
}

/*
 * Whether a waking task at @vtime, queued on @cpu, preempts the task running
 * there: yes if that task has run for at least the granularity and is behind
 * the wakee in virtual time, counting its runtime so far, by more than that.
 * Without the margin nearly every wakeup preempted: a producer and a
 * consumer (a pipe, a message queue) then switch once per message, where
 * letting the producer run on batches the messages.
 *
 * The granularity is --hog-gran-us if the running task's runs are long
 * (update_hog()), else --wakeup-gran-us. Both count from the start of its
 * run, and a hog's run starts when the last wakee blocked: with the long
 * floor for hogs too, a sleeper waking every millisecond against a hog
 * could run only once per floor plus its own run, so it woke later each
 * period and cyclictest's average latency read twice the default
 * scheduler's. The default is no floor at all for hogs: a floor is kept
 * by the deferred-preemption timer, and a timer fires late in a loaded
 * guest, so a wakee waited far longer than the floor (docs/ab,
 * 2026-11-30-hog-gran-0.log). Tasks with short runs keep the long floor:
 * they usually block before it, and preempting them sooner cost hackbench
 * and stress-ng switch most of their throughput (docs/ab,
 * 2026-11-30-wakeup-gran.log).
 */
enum fp_preempt {
	FP_PREEMPT_NO,		/* leave the running task alone */
	FP_PREEMPT_NOW,		/* preempt it now */
	FP_PREEMPT_LATER,	/* have the timer preempt it in *@delay ns */
};

/* The running task's hog classes, cctx->curr_long (hog_class()). */
enum fp_long {
	FP_LONG_RUNS = 1,	/* its runs average --hog-run-us or more */
	FP_LONG_HELD = 2,	/* less, but held in the class by hog_hysteresis */
};

/* A preemption (now or by the timer) of a task of class @hog at its floor. */
static __always_inline void count_hog(u32 hog, bool hog_floor)
{
	if (!hog_floor)
		return;
	stat_inc(FP_STAT_WAKE_HOG_GRAN);
	if (hog == FP_LONG_HELD)
		stat_inc(FP_STAT_WAKE_HOG_HELD);
}

static enum fp_preempt wakeup_preempts(s32 cpu, u64 vtime, u64 now, u64 *started,
				       u64 *delay)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	u64 curr_vtime, ran, at, need, gran, hog_gran;
	u32 weight, hog;
	bool hog_floor;

	/*
	 * Cheap wakeups: no kick when it cannot matter. The CPU runs none of
	 * our tasks (an idle CPU is rescheduled by the core's wakeup path),
	 * or a kick is already on its way there.
	 */
	if (tune.cheap_wakeup &&
	    unlikely(FP_BRANCH(FP_BR_PREEMPT_NO_KICK,
			       !READ_ONCE(cctx->curr_busy) || READ_ONCE(cctx->kicked)))) {
		stat_inc(FP_STAT_WAKE_NO_KICK);
		return FP_PREEMPT_NO;
	}

	/*
	 * A kernel thread is never preempted by a wakeup: it runs until its
	 * slice ends or it blocks, as with the kernel's lazy preemption,
	 * where a wakeup preempts kernel code only at the next tick. Kernel
	 * threads hold locks and RCU read-side sections that others wait
	 * on: khugepaged (nice 19), preempted within a millisecond of every
	 * turn inside an RCU read-side section, made too little progress in
	 * 21 s and the kernel ejected us for an RCU stall (mixed_load).
	 */
	if (READ_ONCE(cctx->curr_kthread)) {
		stat_inc(FP_STAT_WAKE_KTHREAD_KEPT);
		return FP_PREEMPT_NO;
	}

	*started = READ_ONCE(cctx->curr_started);
	weight = READ_ONCE(cctx->curr_weight) ?: 100;
	ran = clock_delta(now, *started);
	hog = READ_ONCE(cctx->curr_long);
	/*
	 * Each tunable read once: `set` may change them meanwhile. Counted in
	 * wake_hog_gran when it preempts, now or by the timer.
	 */
	gran = tune.wakeup_gran_ns;
	hog_gran = tune.hog_gran_ns;
	hog_floor = hog && hog_gran < gran;
	if (hog_floor)
		gran = hog_gran;

	/*
	 * When, counted from the start of its run, the running task will be
	 * behind the wakee by the granularity in vtime (at its weight, real
	 * time goes 100 / weight times as fast in vtime); never before it has
	 * run that long in real time either. A nice-19 task's vtime races
	 * ahead (a microsecond of CPU is a hundred in vtime), so without that
	 * floor every wakeup preempted it within microseconds.
	 */
	curr_vtime = READ_ONCE(cctx->curr_vtime);
	at = gran;
	if (time_before(curr_vtime, vtime + gran)) {
		need = (vtime + gran - curr_vtime) * weight / 100;
		if (need > at)
			at = need;
	}

	if (FP_BRANCH(FP_BR_PREEMPT_BEHIND, at <= ran)) {
		count_hog(hog, hog_floor);
		stat_inc(FP_STAT_WAKE_PREEMPT);
		return FP_PREEMPT_NOW;
	}
	/* Its slice ends first: ops.dispatch() decides then. */
	if (!tune.deferred_preempt || at - ran >= tune.slice_ns) {
		stat_inc(FP_STAT_WAKE_NO_PREEMPT);
		return FP_PREEMPT_NO;
	}
	/*
	 * Only a task whose runs are long is preempted later: one that
	 * usually blocks within --hog-run-us will most likely do so
	 * before the timer, and preempting the rest of such tasks cost
	 * hackbench a third and stress-ng switch half their throughput.
	 */
	if (!hog) {
		stat_inc(FP_STAT_WAKE_SHORT_RUNNER);
		return FP_PREEMPT_NO;
	}
	count_hog(hog, hog_floor);
	*delay = at - ran;
	return FP_PREEMPT_LATER;
}

/* Carry out wakeup_preempts()'s answer for a wakee queued on @cpu's DSQ. */
static void preempt_as(s32 cpu, enum fp_preempt how, u64 started, u64 delay)
{
	if (how == FP_PREEMPT_NOW) {
		WRITE_ONCE(cpu_ctx(cpu)->kicked, 1);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	} else if (how == FP_PREEMPT_LATER) {
		defer_preempt(cpu, started, delay);
	}
}

static void preempt_if_behind(s32 cpu, u64 vtime, u64 now)
{
	u64 started = 0, delay = 0;

	preempt_as(cpu, wakeup_preempts(cpu, vtime, now, &started, &delay), started, delay);
}

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
 * tracking cannot see it (it has not gone idle). Look at a few CPUs after
 * @prev_cpu; this only runs when the idle search already came up empty.
 */
static s32 find_holder(struct task_struct *p, s32 prev_cpu, s32 this_cpu)
{
	u32 i, n = nr_cpu_ids < FP_HOLD_SCAN ? nr_cpu_ids : FP_HOLD_SCAN;
	s32 cpu;

	bpf_for(i, 1, n) {
		cpu = (prev_cpu + i) % nr_cpu_ids;
		if (can_redirect(p, cpu, this_cpu))
			return cpu;
	}
	return -1;
}

/* Nothing waits on @cpu, the CPU this runs on: its DSQ and local DSQ are empty. */
static bool cpu_alone(s32 cpu)
{
	return !scx_bpf_dsq_nr_queued(cpu) && !scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL);
}

/*
 * Wake away. When no CPU is idle, a wakee goes back to its previous CPU. If
 * that is the waker's CPU and the waker keeps running (a non-sync wakeup,
 * made from task context, by a task whose last FP_AWAY_RUNS runs all ended
 * with it still runnable: a spinner, a producer that does not wait), the
 * wakee can only preempt its waker or wait behind it, and the two never run
 * at the same time. stress-ng futex x2 (a spinning waker and its waiter per
 * instance, four tasks on two CPUs) read 0.17x of the default whenever the
 * pairs settled on one CPU each. Instead, queue the wakee on another CPU
 * whose queue is no longer than this one's, the shortest of a few.
 *
 * A wakeup from an interrupt (a timer, a softirq) is left alone: the task
 * running here is not its waker.
 */
extern const int __preempt_count __ksym __weak;

static bool in_task_context(void)
{
	/* NMI, hardirq and softirq counts: bits 8-23 (include/linux/preempt.h). */
	const int irq_mask = 0xffff00;

	/* Where the per-CPU preempt count is not known (not x86), say no. */
	if (!bpf_ksym_exists(&__preempt_count))
		return false;
	return !(*(int *)bpf_this_cpu_ptr(&__preempt_count) & irq_mask);
}

/*
 * @p may run on @cpu, and @cpu runs one of our tasks, which @p can preempt
 * or follow by vtime. A CPU that an RT or deadline task holds reads not
 * busy: ops.stopping() ran for ours when it was preempted, or none of ours
 * ran.
 */
static bool can_take_away(struct task_struct *p, s32 cpu)
{
	return bpf_cpumask_test_cpu(cpu, p->cpus_ptr) &&
	       READ_ONCE(cpu_ctx(cpu)->curr_busy);
}

static s32 wake_away_cpu(struct task_struct *p, s32 prev_cpu, s32 this_cpu, u64 wake_flags)
{
	u32 i, n = nr_cpu_ids < FP_AWAY_SCAN ? nr_cpu_ids : FP_AWAY_SCAN;
	struct fp_cpu *here = cpu_ctx(this_cpu);
	s32 cpu, queued, fewest, best = -1;

	if (prev_cpu != this_cpu || (wake_flags & SCX_WAKE_SYNC) ||
	    !(wake_flags & SCX_WAKE_TTWU) || !READ_ONCE(here->curr_busy) ||
	    !here->curr_keeps_running || !in_task_context())
		return -1;

	fewest = scx_bpf_dsq_nr_queued(this_cpu);
	bpf_for(i, 1, n) {
		cpu = (this_cpu + i) % nr_cpu_ids;
		if (!can_take_away(p, cpu))
			continue;
		queued = scx_bpf_dsq_nr_queued(cpu);
		if (queued < fewest || (best < 0 && queued == fewest)) {
			best = cpu;
			fewest = queued;
		}
	}
	return best;
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

/*
 * RT away. No CPU is idle (the kernel's search just found none), yet
 * @prev_cpu runs none of ours: it runs a task of a higher class (RT,
 * deadline), which took it from us or from idle. A wakee queued there waits
 * until another CPU finds nothing of its own to run and steals it, or for
 * the kernel's ext server, 50 ms a second: a sleeper's worst wait in the
 * rt_hog test was 375 ms. Return the first CPU after @prev_cpu that runs one
 * of ours, where it takes its turn by vtime, or -1. Returned by
 * ops.select_cpu(), so the task is counted on the CPU whose DSQ it waits on
 * (see enqueue_on_cpu()).
 *
 * Not busy is not enough: a CPU between two of our tasks, or one that an
 * earlier wakeup of the same timer interrupt has just claimed out of idle,
 * reads the same. forksleep (32 sleepers a CPU whose timers fire together)
 * sent a twelfth of its wakeups away so, from a CPU about to run them to a
 * busy one, which the first CPU then stole back: with no RT task at all,
 * wake_rt_away 3,038 and disp_stolen 3,020 in one run, and 0 and 1,285
 * once @prev_cpu must be held by RT (docs/ab/2026-12-03-rtholds.log).
 */
static s32 rt_away_cpu(struct task_struct *p, s32 prev_cpu)
{
	u32 i, n = nr_cpu_ids < FP_AWAY_SCAN ? nr_cpu_ids : FP_AWAY_SCAN;
	s32 cpu;

	if (READ_ONCE(cpu_ctx(prev_cpu)->curr_busy) ||
	    !bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) || !rt_holds(prev_cpu))
		return -1;
	bpf_for(i, 1, n) {
		cpu = (prev_cpu + i) % nr_cpu_ids;
		if (can_take_away(p, cpu))
			return cpu;
	}
	return -1;
}

/*
 * Cheap wakeups: the kernel's idle search, unless it can only come back
 * empty. Every step of it (prev, the LLC, the node, then any CPU; the
 * waker's CPU for a synchronous wakeup, as long as some CPU is idle) needs
 * a bit in the idle mask, and where every message is a wakeup on a busy
 * machine (stress-ng switch x2: about 13 us of BPF a switch in the TCG
 * guest, 5.9 of it ops.select_cpu()) the search is the largest single
 * cost. Read before every search, the mask cost switch x1 (whose pair
 * waits on the other CPU, so the search finds it) about 5%; read only
 * after a search or read on this CPU found no CPU idle (none_idle_seen),
 * it took ops.select_cpu() in switch x2 from 5.5-5.8 us a call to 4.6-4.9
 * and left switch x1's alone (docs/ab, 2026-12-05 none-idle). A CPU that
 * goes idle just after the mask was read steals the task from its DSQ, as
 * after an empty search.
 */
static bool mask_none_idle(void)
{
	const struct cpumask *idle = scx_bpf_get_idle_cpumask();
	bool none = bpf_cpumask_empty(idle);

	scx_bpf_put_idle_cpumask(idle);
	return none;
}

static s32 select_idle_cpu(struct task_struct *p, s32 prev_cpu, u64 wake_flags,
			   struct fp_cpu *here)
{
	s32 cpu;

	if (tune.cheap_wakeup && here->none_idle_seen &&
	    FP_BRANCH(FP_BR_SELECT_NONE_IDLE, mask_none_idle())) {
		stat_inc(FP_STAT_WAKE_NONE_IDLE);
		return -EBUSY;
	}
	cpu = scx_bpf_select_cpu_and(p, prev_cpu, wake_flags, p->cpus_ptr, 0);
	here->none_idle_seen = cpu < 0;
	return cpu;
}

s32 BPF_STRUCT_OPS(fastpath_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	s32 cpu, this_cpu = bpf_get_smp_processor_id();
	bool here_ok = idle_hold_ns && bpf_cpumask_test_cpu(this_cpu, p->cpus_ptr);
	/* As the waker passed them: the idle pick below may mask SCX_WAKE_SYNC. */
	u64 waker_flags = wake_flags;

	if (here_ok && FP_BRANCH(FP_BR_SELECT_HOLDER, can_redirect(p, prev_cpu, this_cpu))) {
		redirect_to_holder(p, prev_cpu, this_cpu);
		return this_cpu;
	}

	/*
	 * Cheap wakeups: if prev is idle, claiming it is the whole answer; the
	 * kernel's search would look at it first anyway, after a few cpumask
	 * operations. (It prefers a wholly idle SMT core to prev: we trade
	 * that for keeping the task's cache warm.)
	 */
	if (tune.cheap_wakeup &&
	    FP_BRANCH(FP_BR_SELECT_PREV_IDLE,
		      bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
		      scx_bpf_test_and_clear_cpu_idle(prev_cpu))) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tune.slice_ns, 0);
		stat_inc(FP_STAT_WAKE_PREV_IDLE);
		return prev_cpu;
	}

	/*
	 * The kernel's idle tracking picks and claims an idle CPU. Told that
	 * a wakeup is synchronous, it returns the waker's own CPU, busy, as
	 * long as any CPU is idle and nothing waits on the waker's local DSQ:
	 * the wakee then waits behind a waker that may not block at once,
	 * while an idle CPU stays idle. So it is not told.
	 */
	if (wake_flags & SCX_WAKE_SYNC) {
		wake_flags &= ~SCX_WAKE_SYNC;
		stat_inc(FP_STAT_WAKE_SYNC_MASKED);
	}
	cpu = select_idle_cpu(p, prev_cpu, wake_flags, cpu_ctx(this_cpu));
	if (unlikely(FP_BRANCH(FP_BR_SELECT_IDLE_FOUND, cpu >= 0))) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tune.slice_ns, 0);
		stat_inc(FP_STAT_DIRECT_LOCAL);
		return cpu;
	}

	if (here_ok) {
		cpu = find_holder(p, prev_cpu, this_cpu);
		if (cpu >= 0) {
			redirect_to_holder(p, cpu, this_cpu);
			return this_cpu;
		}
	}

	if (tune.wake_away) {
		cpu = wake_away_cpu(p, prev_cpu, this_cpu, waker_flags);
		if (cpu >= 0) {
			stat_inc(FP_STAT_WAKE_AWAY);
			return cpu;
		}
	}
	if (tune.rt_away) {
		cpu = rt_away_cpu(p, prev_cpu);
		if (cpu >= 0) {
			stat_inc(FP_STAT_WAKE_RT_AWAY);
			return cpu;
		}
	}
	return prev_cpu;
}

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
 * Light slices: a task lighter than nice 0 (weight under 100, its cgroup's
 * included) runs at most slice * weight / 100, and never less than
 * slice / FP_SLICE_DIV_MAX. Its share does not change, only how it is cut:
 * a run advances its vtime by run * 100 / weight, so a nice-10 hog that ran
 * a whole 5 ms slice came back 47 ms of vtime ahead and then waited while
 * every task on its CPU used that up, turns about a second apart behind a
 * few hogs, where the starvation guard rescued it (soak_shares: 40-50
 * rescues in 30 s) and the default scheduler's turns were 0.3-0.4 s apart.
 * Cut to its weight, it waits about one nice-0 slice per hog on its CPU.
 * Tasks at or above nice 0 keep the whole slice.
 *
 * The core notices a used-up slice only at a tick (4 ms at HZ=250), so a
 * cut slice also arms the CPU's preemption timer (arm_preempt_timer()) for
 * its end; only light tasks pay for the timer. In the light_slice test the
 * nice-10 loop's runs averaged 1.1 ms with the timer, 4.0 ms with the cut
 * but no timer (a tick), and 3.8-7.8 ms with the whole 5 ms slice.
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
 * all the time passes through ops.running() at each change: stress-ng
 * schedpolicy x2 (random nice levels, RT and deadline in turn) read 0.85x
 * of the default scheduler cutting every such run. A task queued later
 * meets a light task's fast-growing vtime at wakeup preemption, or at the
 * end of the whole slice in ops.dispatch(), which cuts it from then on.
 */
static void cut_light_slice(struct task_struct *p, s32 cpu, u64 started,
			    u64 weight)
{
	u64 slice = light_slice(p->scx.slice, weight);

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

/* Insert @p on @cpu's DSQ at @vtime, with the slice the queue's depth allows. */
static __always_inline void insert_on(struct task_struct *p, s32 cpu, u64 vtime,
				      u64 enq_flags)
{
	scx_bpf_dsq_insert_vtime(p, cpu, queue_slice(scx_bpf_dsq_nr_queued(cpu)),
				 vtime, enq_flags);
}

/*
 * RCU readers first. A task preempted inside an RCU read-side critical
 * section (CONFIG_PREEMPT_RCU) holds up every grace period until it runs
 * again and leaves the section. The kernel's remedy, RCU priority boosting,
 * is not built into Debian's kernels, and under the default scheduler's lazy
 * preemption kernel code is seldom preempted. Here a slice that ends
 * preempts a task wherever it is: khugepaged (nice 19), preempted inside one
 * while it copied a huge page, waited its nice-19 turns behind CPU hogs
 * until the kernel's stall detector fired after 21 s and ejected us (the
 * soak and mixed_load tests; docs/faults/2026-12-02.md). So such a task is
 * queued ahead of its CPU's DSQ head. Only the key changes, not its vtime:
 * it is still charged for what it runs, and the section bounds the favour.
 * Only a preempted task can be inside one: an RCU reader may not block.
 */
static __always_inline bool in_rcu_reader(struct task_struct *p)
{
	/*
	 * The BPF trampoline that runs this program holds rcu_read_lock() in
	 * the current task's name, and a preempted task is queued again from
	 * its own __schedule(): that level is ours, not its. Counting it
	 * queued nearly every preempted task first (16,950 of 20,428 in
	 * mixed_load).
	 */
	int ours = p == bpf_get_current_task_btf();

	if (!bpf_core_field_exists(p->rcu_read_lock_nesting))
		return false;
	return p->rcu_read_lock_nesting > ours;
}

/* The DSQ key for @p, at @vtime, re-queued on @cpu (not a wakeup). */
static __always_inline u64 requeue_key(struct task_struct *p, s32 cpu, u64 vtime)
{
	struct task_struct *head;

	if (!tune.rcu_first || !in_rcu_reader(p))
		return vtime;
	stat_inc(FP_STAT_RCU_FIRST);
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (head && !time_before(vtime, head->scx.dsq_vtime))
		return head->scx.dsq_vtime - 1;
	return vtime;
}

/*
 * Queue @p on @cpu's DSQ, ordered by its vtime. Returns the vtime for the
 * preemption check.
 */
static __always_inline u64 queue_on(struct task_struct *p, s32 cpu, u64 enq_flags)
{
	u64 vtime = task_vtime(p, cpu), key = vtime;

	if (!(enq_flags & SCX_ENQ_WAKEUP))
		key = requeue_key(p, cpu, vtime);
	insert_on(p, cpu, key, enq_flags);
	return vtime;
}

/*
 * Wake local: a wakee that does not preempt, woken by a task with short
 * runs (no CPU hog, no kernel thread) whose last run ended with it
 * blocking, on the waker's own CPU, with nothing queued there, is next
 * there anyway, once the waker blocks: a pipe or socket ping-pong. A
 * waker whose last run ended runnable (a hackbench sender that writes
 * until it is preempted) keeps running after the wakeup, and its wakee
 * is left where an idle CPU can steal it. Queued on the CPU's DSQ it
 * would cost an ops.dispatch() and a move from the DSQ when the waker
 * blocks; in the local DSQ the core runs it with neither. What it gives
 * up: no other CPU can steal it meanwhile, and a task queued after it
 * with an earlier vtime waits for its run; both last as long as the
 * waker's run, which is short. A CPU whose current task is not ours
 * (idle, RT) reads curr_busy 0, and a kicked one is about to run someone
 * else.
 */
static __always_inline bool wake_local_ok(s32 cpu)
{
	struct fp_cpu *cctx;

	if (!tune.wake_local || cpu != bpf_get_smp_processor_id())
		return false;
	cctx = cpu_ctx(cpu);
	if (!READ_ONCE(cctx->curr_busy) || READ_ONCE(cctx->curr_long) ||
	    READ_ONCE(cctx->curr_kthread) || READ_ONCE(cctx->kicked) ||
	    !cctx->curr_blocked)
		return false;
	return cpu_alone(cpu);
}

/*
 * Queue waking task @p on @cpu, whose idle search is done, and preempt the
 * task running there if it should. Cheap wakeups, the preempting wakee:
 * queued on the DSQ and kicked, it would cost an irq_work kick, an
 * ops.dispatch() and a move from the DSQ before it runs. With local_preempt
 * it goes straight to @cpu's local DSQ with SCX_ENQ_PREEMPT instead: the
 * core takes the running task's slice and reschedules at once, and
 * ops.dispatch() is not called, since the local DSQ has a task. Only when
 * nothing on the DSQ is ahead of @p in vtime, which would otherwise run
 * first. Off by default: the 5-round
 * benchmark of d7de441 read 1.002x for it, and cyclictest's average
 * latency against hogs 0.89x (inside the noise, but the one row this
 * policy must not lose). Returns true if @p went to the local DSQ (wake
 * local or local_preempt), false if it was queued on @cpu's DSQ.
 */
static bool queue_wakeup(struct task_struct *p, s32 cpu, u64 enq_flags, u64 now)
{
	u64 vtime = task_vtime(p, cpu), started = 0, delay = 0;
	enum fp_preempt how = wakeup_preempts(cpu, vtime, now, &started, &delay);

	if (how == FP_PREEMPT_NO && wake_local_ok(cpu)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tune.slice_ns, enq_flags);
		stat_inc(FP_STAT_WAKE_LOCAL);
		return true;
	}

	insert_on(p, cpu, vtime, enq_flags);
	preempt_as(cpu, how, started, delay);
	return false;
}

/*
 * Fast path 1. A task with one possible CPU waits on that CPU's own DSQ,
 * ordered by vtime with everything else that CPU runs, so it neither starves
 * nor is starved. One lookup, no idle scan, no kick of another CPU.
 */
static void enqueue_pinned(struct task_struct *p, s32 cpu, bool migdis,
			   u64 enq_flags, u64 now)
{
	stat_inc(FP_STAT_PINNED);
	if (migdis)
		stat_inc(FP_STAT_PINNED_MIGDIS);

	if (enq_flags & SCX_ENQ_WAKEUP) {
		/*
		 * An idle target is rescheduled by the core's wakeup path;
		 * a busy one may need preempting.
		 */
		queue_wakeup(p, cpu, enq_flags, now);
		return;
	}
	queue_on(p, cpu, enq_flags);
	/* E.g. an affinity change: make sure the CPU looks. */
	if (cpu != bpf_get_smp_processor_id())
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
}

/*
 * Fast path 3: the enqueue of a wakeup that select_cpu() redirected from a
 * holding CPU. Queue it on the holder's DSQ, which the holder polls, and
 * kick it. The kick is not optional: the insert only lands after this op
 * returns, so no check made here can tell whether the holder will still be
 * looking by then. SCX_KICK_IDLE is delivered from irq_work after the insert
 * has landed and only wakes the holder if it went idle without the task.
 */
static void enqueue_redirected(struct task_struct *p, s32 cpu, u64 enq_flags)
{
	queue_on(p, cpu, enq_flags);
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	stat_inc(FP_STAT_HOLD_REDIRECT);
}

/*
 * A wakeup the kernel queued on the task's CPU without asking ops.select_cpu()
 * (SCX_OPS_ALLOW_QUEUED_WAKEUP: the task was still on its CPU when woken).
 * Tasks with one possible CPU skip select_cpu too, but are no queued wakeup.
 */
static bool is_queued_wakeup(struct task_struct *p, u64 enq_flags)
{
	return (enq_flags & SCX_ENQ_WAKEUP) &&
	       !__COMPAT_is_enq_cpu_selected(enq_flags) &&
	       p->nr_cpus_allowed > 1 && !is_migration_disabled(p);
}

static void enqueue_on_cpu(struct task_struct *p, u64 enq_flags, u64 now)
{
	bool wakeup = enq_flags & SCX_ENQ_WAKEUP;
	s32 idle, task_cpu = scx_bpf_task_cpu(p);
	u64 vtime;

	if (unlikely(FP_BRANCH(FP_BR_ENQ_QUEUED_WAKEUP, is_queued_wakeup(p, enq_flags)))) {
		stat_inc(FP_STAT_WAKE_QUEUED);
		/*
		 * Cheap wakeups: this runs on the task's own CPU, and the
		 * kernel queues a wakeup there mostly when that CPU has
		 * nothing to run. If it is idle, claiming it is the answer.
		 */
		if (tune.cheap_wakeup && task_cpu == bpf_get_smp_processor_id() &&
		    scx_bpf_test_and_clear_cpu_idle(task_cpu)) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, tune.slice_ns, enq_flags);
			stat_inc(FP_STAT_WAKE_PREV_IDLE);
			return;
		}
	}

	/*
	 * Always a DSQ of the CPU the task is counted on (its rq): its own,
	 * or its local DSQ for a wakee that preempts. That CPU's ext server,
	 * the one thing that runs our tasks while RT holds every CPU, stops
	 * for good the first time its dispatch finds nothing while tasks are
	 * still counted there. Queuing elsewhere did that
	 * (docs/faults/2026-12-01-mutex-hang.md). The one exception is an
	 * idle-hold redirect, to a CPU that is polling for it.
	 *
	 * Cheap wakeups: ops.select_cpu() just looked for an idle CPU and
	 * found none; a CPU that goes idle after that runs ops.dispatch() and
	 * steals this task. Only tasks that skipped select_cpu need a scan.
	 * Whichever idle CPU the scan wakes sees the task: a CPU with nothing
	 * of its own looks at every CPU's DSQ (steal()).
	 */
	if (tune.cheap_wakeup &&
	    FP_BRANCH(FP_BR_ENQ_NO_SCAN, wakeup && __COMPAT_is_enq_cpu_selected(enq_flags))) {
		stat_inc(FP_STAT_WAKE_NO_SCAN);
		if (!queue_wakeup(p, task_cpu, enq_flags, now))
			stat_inc(FP_STAT_ENQ_QUEUED);
		return;
	}

	vtime = queue_on(p, task_cpu, enq_flags);
	stat_inc(FP_STAT_ENQ_QUEUED);
	idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (idle >= 0) {
		scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
		stat_inc(FP_STAT_KICK_IDLE);
		return;
	}
	if (wakeup)
		preempt_if_behind(task_cpu, vtime, now);
}

void BPF_STRUCT_OPS(fastpath_enqueue, struct task_struct *p, u64 enq_flags)
{
	u64 now = scx_bpf_now();
	struct fp_cpu *here;
	bool migdis;
	s32 cpu;

	if (idle_hold_ns) {
		here = cpu_ctx(bpf_get_smp_processor_id());
		if (FP_BRANCH(FP_BR_ENQ_REDIRECTED, here->redirect_pid == p->pid)) {
			here->redirect_pid = 0;
			if (enq_flags & SCX_ENQ_WAKEUP) {
				enqueue_redirected(p, here->redirect_cpu, enq_flags);
				return;
			}
		}
	}

	if (tune.pinned_fastpath) {
		cpu = pinned_cpu(p, &migdis);
		if (FP_BRANCH(FP_BR_ENQ_PINNED, cpu >= 0)) {
			enqueue_pinned(p, cpu, migdis, enq_flags, now);
			return;
		}
	}
	enqueue_on_cpu(p, enq_flags, now);
}

/* ------------------------------------------------------------------------
 * Dispatch: who runs next on a CPU.
 * ------------------------------------------------------------------------ */

/* @p may run on @cpu: allowed there, and not migration-disabled elsewhere. */
static bool can_run_on(struct task_struct *p, s32 cpu)
{
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	return !is_migration_disabled(p) || scx_bpf_task_cpu(p) == cpu;
}

static __always_inline u32 llc_of(s32 cpu)
{
	return cpu_llc[cpu & (FP_MAX_CPUS - 1)];
}

/*
 * This CPU has nothing queued: take, among the other CPUs' DSQ heads that it
 * may run, the one furthest behind its own CPU's clock (the clocks of two
 * CPUs are not comparable, distances to them are). Every CPU is looked at,
 * so a task queued anywhere is seen by any CPU that goes idle, and a kick to
 * any idle CPU reaches it. Peeks are lockless; only the move takes a DSQ
 * lock.
 *
 * LLC first (llc_steal, machines with several LLCs): a head queued in
 * another LLC is taken only when no head in this CPU's LLC may run here, or
 * when it is further behind than the best of them by more than
 * FP_STEAL_FAR_SLICES: "behind" includes a wakee's sleeper credit, up to
 * FP_LAG_SLICES, which is not time spent waiting. A task moved across LLCs
 * finds its data in none of this CPU's caches; the kernel's own balancer
 * likewise moves tasks within an LLC first.
 */
/*
 * The CPU @i places after @cpu, wrapping: scans start at the next CPU, so
 * that CPUs scanning at once do not all look at CPU 0 first.
 */
static __always_inline s32 cpu_after(s32 cpu, u32 i)
{
	s32 c = cpu + i;

	return c >= nr_cpu_ids ? c - nr_cpu_ids : c;
}

/*
 * Whether @c's DSQ has a head that @cpu may run; if so, *@behind is how far
 * it is behind @c's clock.
 */
static __always_inline bool head_behind(s32 c, s32 cpu, s64 *behind)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(c);

	if (!head || !can_run_on(head, cpu))
		return false;
	*behind = (s64)(cpu_vmin(c) - head->scx.dsq_vtime);
	return true;
}

static bool steal(s32 cpu)
{
	s64 behind, best = 0, best_far = 0;
	s32 c, best_cpu = -1, far_cpu = -1;
	bool llc_first = multi_llc && tune.llc_steal;
	u32 i, llc = 0;

	if (multi_llc)
		llc = llc_of(cpu);
	bpf_for(i, 1, nr_cpu_ids) {
		c = cpu_after(cpu, i);
		if (!head_behind(c, cpu, &behind))
			continue;
		if (llc_first && llc_of(c) != llc) {
			if (far_cpu < 0 || behind > best_far) {
				best_far = behind;
				far_cpu = c;
			}
			continue;
		}
		if (best_cpu < 0 || behind > best) {
			best = behind;
			best_cpu = c;
		}
	}
	if (far_cpu >= 0) {
		if (best_cpu < 0 || best_far - best > (s64)(FP_STEAL_FAR_SLICES * tune.slice_ns))
			best_cpu = far_cpu;
		else if (best_far > best)
			stat_inc(FP_STAT_STEAL_NEAR_KEPT);
	}
	if (best_cpu >= 0 && scx_bpf_dsq_move_to_local(best_cpu, 0)) {
		stat_inc(FP_STAT_DISP_STOLEN);
		if (multi_llc && llc_of(best_cpu) != llc)
			stat_inc(FP_STAT_DISP_STOLEN_FAR);
		return true;
	}
	return false;
}

/*
 * Pull (--pull-gran-us, 0 = off): this CPU has a head of its own, but
 * another CPU's head (in its LLC) is further behind its own clock by more
 * than pull_gran_ns: take that one instead. Per-CPU DSQs otherwise make a
 * task wait behind whatever was queued on its own CPU while another CPU
 * runs a task that is well ahead of it; one shared queue would have run
 * it first. A pipeline's stages (stress-ng tee: a writer, a tee() stage
 * and a reader per instance) queue behind each other that way: tee x2 ran
 * 3x as fast with it. The cost is lockless peeks of every CPU in the LLC
 * on each dispatch that has a head of its own. Two ways to spare futex x2
 * the pulls that cost it were tried and did not pay: passing over a head
 * that wake away had placed (level over two A/Bs), or one queued less
 * than pull_gran_ns ago (cost tee x2 a third of its gain); docs/ab/README.md.
 */
static bool pull(s32 cpu, struct task_struct *head)
{
	s64 behind, best = (s64)(cpu_vmin(cpu) - head->scx.dsq_vtime) +
			   (s64)tune.pull_gran_ns;
	s32 c, best_cpu = -1;
	u32 i, llc = 0;

	if (multi_llc)
		llc = llc_of(cpu);
	bpf_for(i, 1, nr_cpu_ids) {
		c = cpu_after(cpu, i);
		if (multi_llc && llc_of(c) != llc)
			continue;
		if (!head_behind(c, cpu, &behind))
			continue;
		if (behind > best) {
			best = behind;
			best_cpu = c;
		}
	}
	if (best_cpu >= 0 && scx_bpf_dsq_move_to_local(best_cpu, 0)) {
		stat_inc(FP_STAT_DISP_PULLED);
		return true;
	}
	return false;
}

/*
 * RT rescue. A CPU that an RT or deadline task holds runs our tasks only in
 * the kernel's ext server (50 ms a second), and steal() looks at other CPUs
 * only when this one has nothing queued. So what is queued there (a wakeup
 * that found no better CPU, or what the RT task preempted once the server
 * has run it) waited: in the rt_each_cpu test the busy loops left there got
 * 10-17% of their fair share, and a sleeper once waited 1349 ms. Take the
 * head of the first of the next few CPUs that is held so and has something
 * queued, before this CPU's own head: it waited behind a task of a higher
 * class, which no vtime accounts for. Not when this CPU is held itself
 * (its ext server is running: its own queue first). Each held CPU is
 * watched by the FP_AWAY_SCAN - 1 CPUs before it.
 *
 * On unless --no-rt-rescue. This code, under the policy of c1836b5, got us
 * ejected in 2 of 9 sleeper storms (an RR cyclic task and 512 sleepers on
 * 2 CPUs; "watchdog failed to check in"); under today's it passed 20 of 20
 * with the rescue firing 2-465 times a run (README, Known issues). It moves a
 * task counted on the held CPU's runqueue, as steal() does: the move takes
 * it off that CPU's count, so the held CPU's ext server does not look for
 * it there.
 */
static bool rescue_from_rt(s32 cpu)
{
	u32 i, n = nr_cpu_ids < FP_AWAY_SCAN ? nr_cpu_ids : FP_AWAY_SCAN;
	struct task_struct *head;
	s32 c;

	if (!READ_ONCE(cpu_ctx(cpu)->curr_busy) && rt_holds(cpu))
		return false;
	bpf_for(i, 1, n) {
		c = (cpu + i) % nr_cpu_ids;
		/*
		 * Cheapest test first: a busy CPU's line 0 is read by every
		 * wakeup anyway, its DSQ and its task are not.
		 */
		if (READ_ONCE(cpu_ctx(c)->curr_busy))
			continue;
		head = __COMPAT_scx_bpf_dsq_peek(c);
		if (!head || !can_run_on(head, cpu) || !rt_holds(c))
			continue;
		if (scx_bpf_dsq_move_to_local(c, 0)) {
			stat_inc(FP_STAT_RT_RESCUED);
			return true;
		}
	}
	return false;
}

/*
 * Jiffies and clock at ops.init(). The watchdog counts in jiffies, and the
 * tick rate (CONFIG_HZ) is not something BPF can read without the kernel's
 * config file, which a guest booted from the host's root does not have; so
 * it is measured: how many jiffies passed per nanosecond since init.
 */
u64 init_jiffies, init_ns;

/*
 * Nanoseconds per jiffy, as measured since init, or 0 while less than a
 * second has passed to measure. Converting with it (and not with the
 * product of two deltas) cannot overflow however long the uptime.
 */
static u64 ns_per_jiffy(u64 jiffies_now, u64 ns_now)
{
	u64 dns = clock_delta(ns_now, init_ns);
	u64 dj = jiffies_now - init_jiffies;

	if (dns < 1000000000ULL || !dj)
		return 0;
	return dns / dj;
}

/* See struct fp_rescue. */
struct fp_rescue fp_rescues[FP_MAX_CPUS] SEC(".data.rescues");

/* The guard ran @p on @cpu after it had waited @waited_ms: keep the record. */
static void record_rescue(s32 cpu, struct task_struct *p, u64 waited_ms)
{
	struct fp_rescue *r = &fp_rescues[cpu & (FP_MAX_CPUS - 1)];

	if (r->pending && waited_ms <= r->waited_ms)
		return;
	r->waited_ms = waited_ms;
	r->pid = p->pid;
	bpf_probe_read_kernel_str(r->comm, sizeof(r->comm), p->comm);
	WRITE_ONCE(r->pending, 1);
}

/*
 * The starvation guard. Every FP_GUARD_MS, walk this CPU's DSQ from the head
 * and move every task that has been runnable for FP_STARVE_MS without
 * running to the local DSQ, where they run in that order, one slice each,
 * before anything else. p->scx.runnable_at is what the kernel's watchdog
 * checks: when the task last became runnable after running.
 *
 * All of them, not a batch: an earlier guard moved at most 64 per look,
 * from the tail, and returned. Under the sleeper storm, running a batch took
 * longer than FP_GUARD_MS, so every ops.dispatch() found the guard due, the
 * head of the DSQ was never taken, and the kworker waiting there (the lowest
 * vtime of all) starved for 10 s ("kworker/1:1 failed to run for 10.016s").
 * Moving every starved task bounds any wait to about FP_STARVE_MS plus one
 * round over the rescued, which is one slice each. Costs one compare per
 * dispatch, and one walk of the DSQ per FP_GUARD_MS. Each task it runs is
 * counted (starve_rescue), and the one that waited longest is kept for the
 * loader's log (record_rescue()): what starved, not only how many.
 */
static bool guard_starved(s32 cpu, u64 now)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	u64 jiffies_now, npj, starve;
	struct task_struct *p;
	bool moved = false;

	if (clock_delta(now, cctx->guard_at) < FP_GUARD_MS * 1000000ULL)
		return false;
	cctx->guard_at = now;

	jiffies_now = bpf_jiffies64();
	npj = ns_per_jiffy(jiffies_now, bpf_ktime_get_ns());
	if (!npj)
		return false;
	starve = FP_STARVE_MS * 1000000ULL / npj;

	/* A flag, not a count: the verifier's walk of the loop converges. */
	bpf_for_each(scx_dsq, p, cpu, 0) {
		u64 runnable_at = p->scx.runnable_at;

		if (!time_after(jiffies_now, runnable_at + starve))
			continue;
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
			stat_inc(FP_STAT_STARVE_RESCUE);
			record_rescue(cpu, p,
				      (jiffies_now - runnable_at) * npj / 1000000ULL);
			moved = true;
		}
	}
	return moved;
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
	used = prev->se.sum_exec_runtime - cctx->curr_sum_start;
	return tctx->vtime + used * 100 / (cctx->curr_weight ?: 1);
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

/*
 * Who runs next on @cpu:
 *  1. the tasks the starvation guard finds waiting too long, if any;
 *     then the head of a nearby CPU's DSQ that an RT task holds (RT
 *     rescue);
 *  2. @prev again, if it is still runnable and still behind (or level
 *     with) the head of this CPU's DSQ in vtime: it has not had its share
 *     yet. (The core asks for a successor at the end of every slice; taking
 *     the head then would be round robin, whatever the weights.)
 *  3. the head of another CPU's DSQ in this LLC, if it is further behind
 *     than this CPU's own head by more than --pull-gran-us (pull()), else
 *     the head of this CPU's DSQ;
 *  4. the head of another CPU's DSQ furthest behind, in this LLC first
 *     (steal());
 *  5. @prev again if it is still runnable, else a brief idle hold.
 */
void BPF_STRUCT_OPS(fastpath_dispatch, s32 cpu, struct task_struct *prev)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	bool prev_runnable = prev && (prev->scx.flags & SCX_TASK_QUEUED);
	struct task_struct *head;
	u64 now = scx_bpf_now();

	/* Whoever kicked us has been served: this is the reschedule. */
	if (READ_ONCE(cctx->kicked))
		WRITE_ONCE(cctx->kicked, 0);

	if (guard_starved(cpu, now))
		return;

	if (tune.rt_rescue && rescue_from_rt(cpu))
		return;

	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (head) {
		if (prev_runnable && can_run_on(prev, cpu) &&
		    !time_before(head->scx.dsq_vtime, running_vtime(prev, cpu))) {
			scx_bpf_task_set_slice(prev, tune.slice_ns);
			cut_light_slice(prev, cpu, cctx->curr_started,
					cctx->curr_weight);
			stat_inc(FP_STAT_KEEP_FAIR);
			return;
		}
		if (tune.pull_gran_ns && pull(cpu, head))
			return;
		if (likely(FP_BRANCH(FP_BR_DISPATCH_CONSUMED, scx_bpf_dsq_move_to_local(cpu, 0)))) {
			stat_inc(FP_STAT_DISP_CPU_DSQ);
			return;
		}
	}
	if (steal(cpu))
		return;

	/* Nothing else wants this CPU: let prev run another slice. */
	if (unlikely(FP_BRANCH(FP_BR_DISPATCH_KEEP_PREV, prev_runnable))) {
		scx_bpf_task_set_slice(prev, tune.slice_ns);
		stat_inc(FP_STAT_KEEP_PREV);
		return;
	}

	/* prev just blocked: hold the CPU briefly before it goes idle. */
	if (idle_hold_ns && prev)
		idle_hold(cpu);
}

/*
 * sched_yield(). Without ops.yield the core zeroes the slice, and the task
 * goes through ops.dispatch(), ops.stopping(), ops.enqueue() and
 * ops.running() only to be picked again when nothing else waits. With
 * fast_yield that round trip is skipped when this CPU's DSQ is empty; when
 * something waits, the yielder gives up its slice and goes behind it.
 */
bool BPF_STRUCT_OPS(fastpath_yield, struct task_struct *from, struct task_struct *to)
{
	struct task_struct *head;
	struct task_ctx *tctx;
	s32 cpu;

	if (to)
		return false;

	cpu = scx_bpf_task_cpu(from);
	head = __COMPAT_scx_bpf_dsq_peek(cpu);
	if (tune.fast_yield && !head && !scx_bpf_dsq_nr_queued(SCX_DSQ_LOCAL)) {
		stat_inc(FP_STAT_YIELD_KEPT);
		return false;
	}
	tctx = lookup_task_ctx(from);
	if (tctx && head && time_before(tctx->vtime, head->scx.dsq_vtime))
		tctx->vtime = head->scx.dsq_vtime;
	scx_bpf_task_set_slice(from, 0);
	stat_inc(FP_STAT_YIELD_GIVEN);
	return false;
}

/*
 * The CPU hog class, which wakeups preempt at --hog-gran-us: a task enters
 * it when its runs average --hog-run-us or more, and with hog_hysteresis
 * leaves it only when they average under half that. A busy loop that a
 * periodic sleeper preempts every millisecond has runs of about a
 * millisecond: on the single threshold it went in and out of the class,
 * and while out of it the sleeper waited for the end of its slice
 * (wake_short_runner). It holds hackbench's tasks too where their runs
 * average about that long (a slow machine: docs/ab, 2026-12-02-hog-awake),
 * and each wakeup then preempts one of them; on a host where they average
 * well under it, it halved cyclictest's latency against hogs and cost no
 * row (2026-12-02 short wakees; README, Benchmarks).
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

/* fp_cpu->start_head when the task started with no displaced task at the head. */
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
 * Advance @cpu's clock to the lowest vtime among @vtime (the task starting
 * to run) and the head of its DSQ, if that is ahead of it; the same peek
 * records the run's start_head(). With lazy_vmin a
 * move of under a sixteenth of a slice is left unwritten: every enqueue
 * onto this CPU, from any CPU, reads the clock's line, and a write makes
 * each of those readers miss.
 */
static __always_inline void advance_vmin(struct fp_cpu *cctx, s32 cpu, u64 vtime)
{
	struct task_struct *head = __COMPAT_scx_bpf_dsq_peek(cpu);
	u64 step = 0;

	cctx->start_head = start_head(cctx, head);
	if (head && time_before(head->scx.dsq_vtime, vtime))
		vtime = head->scx.dsq_vtime;
	if (!time_before(cctx->vmin, vtime))
		return;
	if (time_before(cctx->vmin + step, vtime))
		WRITE_ONCE(cctx->vmin, vtime);
	else
		stat_inc(FP_STAT_VMIN_LAZY);
}

void BPF_STRUCT_OPS(fastpath_running, struct task_struct *p)
{
	s32 cpu = bpf_get_smp_processor_id();
	struct fp_cpu *cctx = cpu_ctx(cpu);
	struct task_ctx *tctx = lookup_task_ctx(p);
	u64 vtime, now = scx_bpf_now();

	/* A task inserted straight into a local DSQ was never placed. */
	if (tctx) {
		place_task(p, tctx, cpu);
		vtime = tctx->vtime;
	} else {
		vtime = cctx->vmin;
	}
	advance_vmin(cctx, cpu, vtime);

	cctx->curr_vtime = vtime;
	cctx->curr_started = now;
	cctx->curr_weight = tctx ? task_weight(p, tctx) : 100;
	cut_light_slice(p, cpu, now, cctx->curr_weight);
	WRITE_ONCE(cctx->curr_busy, 1);
	WRITE_ONCE(cctx->curr_kthread, !!(p->flags & PF_KTHREAD));
	WRITE_ONCE(cctx->curr_long, hog_class(tctx));
	if (unlikely(FP_BRANCH(FP_BR_RUNNING_KICKED, READ_ONCE(cctx->kicked))))
		WRITE_ONCE(cctx->kicked, 0);

	cctx->curr_sum_start = p->se.sum_exec_runtime;
	cctx->curr_keeps_running = tctx && tctx->runs_kept >= FP_AWAY_RUNS;
	cctx->curr_blocked = tctx && !tctx->runs_kept;
	if (unlikely(FP_BRANCH(FP_BR_RUNNING_ADAPT, cctx->hold_expired_at)))
		adapt_hold_window(cctx, bpf_ktime_get_ns());
}

/*
 * The clock a blocking task's lag is measured from. A CPU's clock moves only
 * when a task starts to run (advance_vmin()), so while a task that ran ahead
 * of it is preempted by a wakee, the clock still reads where that task
 * started: a periodic sleeper that preempts a CPU hog every millisecond
 * blocks against a clock one hog run behind and loses a little lag per
 * wakeup instead of gaining what the hog ran meanwhile. With head_lag the
 * clock is where it will be when the next queued task starts: the DSQ
 * head's vtime, if that is ahead. Measured at cd53b67 (docs/bench/head-lag):
 * 1.034x over 29 metrics, cyclictest's maximum latency against hogs halved,
 * hackbench pipe and socket worse.
 *
 * With displaced_head, only the head the task displaced counts (start_head(),
 * else lag_head_new). A task that wakes another and then blocks would
 * otherwise be credited with its own wakee's lead: both tasks of a pipe pair
 * beside CPU hogs kept their vtime across every message that way, as if
 * neither ever slept, and the pair got 1.6 times the default's share (the
 * wakee_share test; 24.2% of the CPU where the default gives 15.4%). Counting
 * any head already queued when the task started (same_head, the step between,
 * since folded in) brought that to 17.9-18.7% and read 1.057x over 29
 * metrics at 412abc1 (docs/bench/same-head), but still let a pipe task whose
 * partner was queued behind a hog take the hog's lead; counting only the
 * displaced task brought it to 16.2-17.0% (the default 15.2-16.1%) and read
 * a further 1.018x at 76500b0 (docs/bench/displaced-head). The sleeper that
 * preempted a hog blocks with that hog at the head and keeps its credit.
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
	 * time used needs no clock read here. The weight is the one
	 * ops.running() recorded for this run.
	 */
	used = p->se.sum_exec_runtime - cctx->curr_sum_start;
	tctx->vtime += used * 100 / (cctx->curr_weight ?: 1);
	tctx->avg_run = tctx->avg_run - tctx->avg_run / 4 + used / 4;
	update_hog(tctx);
	if (runnable)
		tctx->runs_kept += tctx->runs_kept < FP_AWAY_RUNS;
	else
		tctx->runs_kept = 0;

	/* Blocking: remember how far behind (or ahead) it was, bounded. */
	if (!runnable) {
		s64 lag = (s64)(block_clock(cctx, cpu) - tctx->vtime);
		s64 max = FP_LAG_SLICES * tune.slice_ns;

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
	tctx->cg_weight = FP_CGROUP_WEIGHT_DFL;
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
	}
}

/* ------------------------------------------------------------------------
 * cgroups: cpu.weight (systemd's CPUWeight=).
 * ------------------------------------------------------------------------ */

/*
 * A cgroup's weight is no longer the default: every task re-reads its
 * path's weight at its next use (cgroup_gen), since a parent's weight is
 * part of its children's. Rare (a write to cpu.weight), hence the atomic.
 */
static void cgroup_weight_changed(void)
{
	__sync_fetch_and_add(&cgroup_gen, 1);
	stat_inc(FP_STAT_CGROUP_WEIGHT);
}

static void set_cgroup_weight(struct cgroup *cgrp, u32 weight)
{
	u64 cgid = cgrp->kn->id;
	struct fp_cgroup *cg = bpf_map_lookup_elem(&cgroup_weights, &cgid);

	if (!cg)
		return;
	cg->weight = weight;
	cgroup_weight_changed();
}

/*
 * Every cgroup goes into the map, whatever its weight, so that a path can
 * be walked to the root; the kernel calls this for a parent before its
 * children.
 */
s32 BPF_STRUCT_OPS(fastpath_cgroup_init, struct cgroup *cgrp,
		   struct scx_cgroup_init_args *args)
{
	struct fp_cgroup cg = { .weight = args->weight };
	struct cgroup *parent;
	u64 cgid = cgrp->kn->id;

	if (cgrp->level > 0) {
		parent = bpf_cgroup_ancestor(cgrp, cgrp->level - 1);
		if (parent) {
			cg.parent = parent->kn->id;
			bpf_cgroup_release(parent);
		}
	}
	bpf_map_update_elem(&cgroup_weights, &cgid, &cg, BPF_ANY);
	if (args->weight != FP_CGROUP_WEIGHT_DFL)
		cgroup_weight_changed();
	return 0;
}

void BPF_STRUCT_OPS(fastpath_cgroup_exit, struct cgroup *cgrp)
{
	u64 cgid = cgrp->kn->id;

	bpf_map_delete_elem(&cgroup_weights, &cgid);
}

void BPF_STRUCT_OPS(fastpath_cgroup_set_weight, struct cgroup *cgrp, u32 weight)
{
	set_cgroup_weight(cgrp, weight);
}

void BPF_STRUCT_OPS(fastpath_cgroup_move, struct task_struct *p,
		    struct cgroup *from, struct cgroup *to)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx)
		task_set_cgroup(tctx, to);
}

/* ------------------------------------------------------------------------
 * The kernel's debug dump (an error exit with --exit-dump-len, or sysrq-D):
 * our own state beside the kernel's, so a dump says why a task waited.
 * ------------------------------------------------------------------------ */

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
	scx_bpf_dump("fastpath: vtime=%llu lag=%lld cpu=%d asleep=%u avg_run_ns=%llu weight=%u cg_weight=%u",
		     tctx->vtime, tctx->lag, tctx->cpu, tctx->asleep, tctx->avg_run,
		     p->scx.weight, tctx->cg_weight);
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
