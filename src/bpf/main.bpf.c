/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_fastpath: a weighted virtual-time scheduler for sched_ext.
 *
 * Policy
 * ------
 * Every task carries a virtual time (task_ctx->vtime) that advances by the
 * CPU time it consumed, scaled by 100 / weight, so nice levels divide the CPU
 * in the kernel's weight ratios. Runnable tasks wait on per-CPU DSQs
 * ordered by a key derived from it (see task_pos()):
 *
 *  - a waking task that finds an idle CPU (the kernel's built-in idle
 *    tracking) is inserted straight into that CPU's local DSQ;
 *  - every other task waits on the DSQ of the CPU it is on (the one
 *    ops.select_cpu() returned, for a wakeup).
 *
 * ops.dispatch() takes the head of its own DSQ, or of another CPU's when
 * that one has waited a slice longer (see consume()); if there is nothing,
 * the previous task keeps the CPU. Under a deep queue slices shrink (see
 * queue_slice()).
 *
 * Responsiveness: a sleeper's vtime is clamped to at most 2 slices behind
 * the system's vtime, so it cannot hoard credit, but it comes back ahead of
 * CPU hogs. When it wakes and no CPU is idle, the CPU it last ran on is
 * preempted if the task running there is behind it in virtual time.
 *
 * Fast paths
 * ----------
 * Five ideas from scheduler-core work, each with a switch (rodata, set by
 * the loader) and counters (enum fp_stat_idx):
 *
 *  1. pinned_fastpath: a task with one possible CPU goes straight to that
 *     CPU's DSQ: no idle scan, no kick of another CPU.
 *  2. cheap_wakeup: a wakeup whose answer is known does no more work: an
 *     idle prev CPU is claimed without a scan, enqueue does not rescan what
 *     select_cpu just scanned, and no kick goes out when it cannot matter.
 *  3. idle_hold_ns: a CPU whose task just blocked spins a short, adaptive
 *     window for work before going idle. See idle_hold().
 *  4. compact_layout: per-CPU state on cache lines of its own, counters
 *     never shared between CPUs, and the global vtime written rarely.
 *  5. likely()/unlikely() only where branch counts justify them, see
 *     docs/branch-profile.md; FP_BRANCH() counts them in profiling builds.
 */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

/* Set by the loader before load. */
const volatile u32 nr_cpu_ids = 1;
const volatile u64 slice_ns = 5ULL * 1000 * 1000;
const volatile bool pinned_fastpath = true;
const volatile bool cheap_wakeup = true;
const volatile u64 idle_hold_ns;
const volatile bool compact_layout = true;

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
 * The system's virtual time: the largest vtime any task started running
 * with, give or take FP_VTIME_STEP. New tasks start here, sleepers are
 * clamped relative to it. Every CPU reads it on every enqueue, so it has a
 * cache line of its own and, with compact_layout, is only written when it
 * has moved by a sixteenth of a slice: a floor that lags by that much
 * changes no decision, and the line stays shared-clean between writes.
 */
u64 vtime_now SEC(".data.vtime") __attribute__((aligned(FP_CACHELINE)));

/*
 * Per-CPU state (fast path 4). Two cache lines per CPU:
 *
 * Line 0, written only by its CPU, read by other CPUs' wakeups:
 *   curr_vtime, curr_started, curr_weight, curr_busy
 *	ops.running()/stopping() write; enqueue's preempt_if_behind() reads.
 *   holding	idle_hold() writes; select_cpu() and the enqueue of a
 *		redirected wakeup read.
 *   kicked	set by whoever sends a preemption kick, cleared by
 *		ops.running(): the one field written from outside, and only
 *		once per kick.
 *
 * Line 1, only ever touched by its own CPU:
 *   curr_sum_start	ops.running() writes, ops.stopping() reads.
 *   hold_window_ns, hold_expired_at	idle_hold() and ops.running().
 *   redirect_pid, redirect_cpu	select_cpu() writes, the enqueue() of the
 *		same wakeup (same CPU, IRQs still off) reads.
 */
struct fp_cpu {
	/* line 0: shared, read remotely */
	u64 curr_vtime;
	u64 curr_started;
	u32 curr_weight;
	u32 curr_busy;
	u32 holding;
	u32 kicked;
	u8 __pad0[FP_CACHELINE - 32];

	/* line 1: private */
	u64 curr_sum_start;
	u64 hold_window_ns;
	u64 hold_expired_at;
	s32 redirect_pid;
	s32 redirect_cpu;
	u8 __pad1[FP_CACHELINE - 32];
} __attribute__((aligned(FP_CACHELINE)));

_Static_assert(sizeof(struct fp_cpu) == 2 * FP_CACHELINE,
	       "struct fp_cpu must be exactly two cache lines");
_Static_assert(__builtin_offsetof(struct fp_cpu, kicked) < FP_CACHELINE,
	       "remotely read fields must all sit on line 0");
_Static_assert(__builtin_offsetof(struct fp_cpu, curr_sum_start) == FP_CACHELINE,
	       "private fields must start line 1");
_Static_assert(__builtin_offsetof(struct fp_cpu, redirect_cpu) < 2 * FP_CACHELINE,
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

/* Tasks waiting on all DSQs, refreshed on demand by fp_sample_queued. */
u64 nr_queued;

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

/* Per-task state. */
struct task_ctx {
	u64 vtime;	/* fairness virtual time */
	u64 slept_at;	/* when it last blocked (scx_bpf_now()) */
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
 * Where a task waits. Ordering by fairness vtime alone starves: a task whose
 * vtime is ahead of vtime_now (a nice-19 kthread that just ran) waits for
 * every queued task to pass it, while each sleeper that wakes comes back up
 * to two slices behind vtime_now, and vtime_now only moves when a task ahead
 * of it runs. With hundreds of sleepers that took seconds (the watchdog
 * ejected us: khugepaged waited 6.9 s). So the DSQ key is the enqueue time
 * plus the task's distance from vtime_now, bounded: up to two slices behind
 * (a sleeper's credit, which keeps wakeups ahead of CPU hogs) and up to
 * FP_AHEAD_SLICES slices ahead (a heavy user waits longer). Any task enqueued
 * more than FP_AHEAD_SLICES + 2 slices after another sorts behind it, so
 * every wait is bounded, whatever vtime_now does.
 *
 * A waking task also goes back in time by as long as it slept, up to
 * FP_WAKE_BONUS_MS. The vtime floor alone gives every sleeper the same two
 * slices of credit, which is nothing when hundreds of tasks wait: a kworker
 * that slept for seconds then queued behind all of them, and the kernel's
 * own watchdog work (a chain of timer, ksoftirqd and kworker wakeups) missed
 * its deadline. With the bonus a long sleeper goes ahead of tasks that
 * waited less than it slept; tasks that sleep briefly and often get little.
 * Only tasks that slept can overtake, each once per sleep and by at most
 * FP_WAKE_BONUS_MS, so every wait stays bounded.
 *
 * A waking kernel thread gets the whole bonus, however briefly it slept:
 * kworkers and ksoftirqd do short work others wait on (I/O completions, the
 * kernel's sched_ext watchdog, timers), often as a chain of wakeups, and
 * under a deep queue each link of the chain cost a full round (the storm
 * test found unbound kworkers serving 9p I/O waiting ~0.5 s per item). A
 * kthread that keeps running is requeued without a wakeup: no bonus then.
 *
 * Clamps the task's vtime to the sleeper floor on the way. @now is the
 * caller's one clock read.
 */
static __always_inline void task_pos(struct task_struct *p, u64 now,
				     u64 enq_flags, u64 *vtime, u64 *key)
{
	struct task_ctx *tctx = lookup_task_ctx(p);
	u64 vnow = READ_ONCE(vtime_now), floor = vnow - 2 * slice_ns;
	u64 slept, bonus_max = FP_WAKE_BONUS_MS * 1000000ULL;
	s64 ahead, cap = FP_AHEAD_SLICES * slice_ns;

	*vtime = vnow;
	*key = now;
	if (!tctx)
		return;

	if (time_before(tctx->vtime, floor))
		tctx->vtime = floor;
	ahead = (s64)(tctx->vtime - vnow);
	*vtime = tctx->vtime;
	*key = now + (ahead < cap ? ahead : cap);

	if (enq_flags & SCX_ENQ_WAKEUP) {
		slept = p->flags & PF_KTHREAD ? bonus_max : now - tctx->slept_at;
		*key -= slept < bonus_max ? slept : bonus_max;
	}
}

/*
 * The slice of a task queued behind @waiting tasks per CPU. Full while few
 * wait; when many do, shorter, so that one round over all of them takes
 * about FP_ROUND_SLICES full slices and no wait grows with the queue: with
 * full slices, 512 always-runnable sleepers on 2 CPUs made rounds of 2.3 s
 * and the kernel's watchdog (FP_TIMEOUT_MS) ejected us. Never shorter than
 * slice_ns / FP_SLICE_DIV_MAX, so a context switch stays cheap next to the
 * work it buys.
 */
static __always_inline u64 queue_slice(u64 waiting)
{
	u64 slice, floor = slice_ns / FP_SLICE_DIV_MAX;

	if (likely(FP_BRANCH(FP_BR_QUEUE_SLICE_FULL, waiting <= FP_ROUND_SLICES)))
		return slice_ns;
	stat_inc(FP_STAT_SLICE_SHORT);
	slice = slice_ns * FP_ROUND_SLICES / waiting;
	return slice > floor ? slice : floor;
}

/*
 * Preempt @cpu for waking task @p if the task running there is behind @p in
 * virtual time, counting its runtime so far.
 */
static void preempt_if_behind(struct task_struct *p, s32 cpu, u64 vtime, u64 now)
{
	struct fp_cpu *cctx = cpu_ctx(cpu);
	u64 curr_vtime, ran;
	u32 weight;

	/*
	 * Cheap wakeups: no kick when it cannot matter. The CPU runs none of
	 * our tasks (an idle CPU is rescheduled by the core's wakeup path),
	 * or a kick is already on its way there.
	 */
	if (cheap_wakeup &&
	    FP_BRANCH(FP_BR_PREEMPT_NO_KICK,
		      !READ_ONCE(cctx->curr_busy) || READ_ONCE(cctx->kicked))) {
		stat_inc(FP_STAT_WAKE_NO_KICK);
		return;
	}

	weight = READ_ONCE(cctx->curr_weight) ?: 100;
	ran = now - READ_ONCE(cctx->curr_started);
	curr_vtime = READ_ONCE(cctx->curr_vtime) + ran * 100 / weight;

	if (FP_BRANCH(FP_BR_PREEMPT_BEHIND, time_before(vtime, curr_vtime))) {
		WRITE_ONCE(cctx->kicked, 1);
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
		stat_inc(FP_STAT_WAKE_PREEMPT);
	}
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

static void redirect_to_holder(struct task_struct *p, s32 cpu, s32 this_cpu)
{
	struct fp_cpu *here = cpu_ctx(this_cpu);

	here->redirect_pid = p->pid;
	here->redirect_cpu = cpu;
	stat_inc(FP_STAT_HOLD_REDIRECT);
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

s32 BPF_STRUCT_OPS(fastpath_select_cpu, struct task_struct *p, s32 prev_cpu,
		   u64 wake_flags)
{
	s32 cpu, this_cpu = bpf_get_smp_processor_id();
	bool here_ok = idle_hold_ns && bpf_cpumask_test_cpu(this_cpu, p->cpus_ptr);

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
	if (cheap_wakeup &&
	    FP_BRANCH(FP_BR_SELECT_PREV_IDLE,
		      bpf_cpumask_test_cpu(prev_cpu, p->cpus_ptr) &&
		      scx_bpf_test_and_clear_cpu_idle(prev_cpu))) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
		stat_inc(FP_STAT_WAKE_PREV_IDLE);
		return prev_cpu;
	}

	/* The kernel's idle tracking picks and claims an idle CPU. */
	cpu = scx_bpf_select_cpu_and(p, prev_cpu, wake_flags, p->cpus_ptr, 0);
	if (FP_BRANCH(FP_BR_SELECT_IDLE_FOUND, cpu >= 0)) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, 0);
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
	return prev_cpu;
}

/*
 * Queue @p on @cpu's DSQ at the position task_pos() gives it, with the slice
 * the queue's depth allows. Returns the task's vtime for preemption checks.
 */
static __always_inline u64 queue_on(struct task_struct *p, s32 cpu,
				    u64 enq_flags, u64 now)
{
	u64 vtime, key;

	task_pos(p, now, enq_flags, &vtime, &key);
	scx_bpf_dsq_insert_vtime(p, cpu, queue_slice(scx_bpf_dsq_nr_queued(cpu)),
				 key, enq_flags);
	return vtime;
}

/*
 * Fast path 1. A task with one possible CPU waits on that CPU's own DSQ,
 * ordered by vtime with everything else that CPU runs, so it neither starves
 * nor is starved. One lookup, no idle scan, no kick of another CPU.
 */
static void enqueue_pinned(struct task_struct *p, s32 cpu, bool migdis,
			   u64 enq_flags, u64 now)
{
	u64 vtime = queue_on(p, cpu, enq_flags, now);

	stat_inc(FP_STAT_PINNED);
	if (migdis)
		stat_inc(FP_STAT_PINNED_MIGDIS);

	if (enq_flags & SCX_ENQ_WAKEUP) {
		/*
		 * An idle target is rescheduled by the core's wakeup path;
		 * a busy one may need preempting.
		 */
		preempt_if_behind(p, cpu, vtime, now);
	} else if (cpu != bpf_get_smp_processor_id()) {
		/* E.g. an affinity change: make sure the CPU looks. */
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
	}
}

/*
 * Fast path 3: the enqueue of a wakeup that select_cpu() redirected from a
 * holding CPU. Queue it on the holder's DSQ, which the holder polls, and
 * kick it. The kick is not optional: the insert only lands after this op
 * returns, so no check made here can tell whether the holder will still be
 * looking by then. SCX_KICK_IDLE is delivered from irq_work after the insert
 * has landed and only wakes the holder if it went idle without the task.
 */
static void enqueue_redirected(struct task_struct *p, s32 cpu, u64 enq_flags,
			       u64 now)
{
	queue_on(p, cpu, enq_flags, now);
	scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
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
	s32 cpu, task_cpu = scx_bpf_task_cpu(p);
	u64 vtime;

	if (unlikely(FP_BRANCH(FP_BR_ENQ_QUEUED_WAKEUP, is_queued_wakeup(p, enq_flags)))) {
		stat_inc(FP_STAT_WAKE_QUEUED);
		/*
		 * Cheap wakeups: this runs on the task's own CPU, and the
		 * kernel queues a wakeup there mostly when that CPU has
		 * nothing to run. If it is idle, claiming it is the answer.
		 */
		if (cheap_wakeup && task_cpu == bpf_get_smp_processor_id() &&
		    scx_bpf_test_and_clear_cpu_idle(task_cpu)) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice_ns, enq_flags);
			stat_inc(FP_STAT_WAKE_PREV_IDLE);
			return;
		}
	}

	vtime = queue_on(p, task_cpu, enq_flags, now);
	stat_inc(FP_STAT_ENQ_QUEUED);

	/*
	 * Cheap wakeups: ops.select_cpu() just looked for an idle CPU and
	 * found none; a CPU that goes idle after that runs ops.dispatch() and
	 * steals this task. Only tasks that skipped select_cpu need a scan.
	 */
	if (cheap_wakeup &&
	    FP_BRANCH(FP_BR_ENQ_NO_SCAN, wakeup && __COMPAT_is_enq_cpu_selected(enq_flags))) {
		stat_inc(FP_STAT_WAKE_NO_SCAN);
	} else {
		cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
		if (cpu >= 0) {
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			stat_inc(FP_STAT_KICK_IDLE);
			return;
		}
	}

	if (wakeup)
		preempt_if_behind(p, task_cpu, vtime, now);
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
				enqueue_redirected(p, here->redirect_cpu, enq_flags, now);
				return;
			}
		}
	}

	if (pinned_fastpath) {
		cpu = pinned_cpu(p, &migdis);
		if (FP_BRANCH(FP_BR_ENQ_PINNED, cpu >= 0)) {
			enqueue_pinned(p, cpu, migdis, enq_flags, now);
			return;
		}
	}
	enqueue_on_cpu(p, enq_flags, now);
}

/* DSQ order: p->scx.dsq_vtime holds the key task_pos() computed. */
static bool key_less(struct task_struct *a, struct task_struct *b)
{
	return time_before(a->scx.dsq_vtime, b->scx.dsq_vtime);
}

/*
 * Move a waiting task to the local DSQ: this CPU's own head, unless another
 * CPU's head has waited longer by more than FP_STEAL_SLICES slices (or this
 * CPU has nothing), then that one. Preferring our own keeps tasks on their
 * CPU (a steal migrates the task between runqueues, with both locked); the
 * margin keeps the CPUs' backlogs level. Looks at up to FP_STEAL_SCAN CPUs
 * after this one.
 */
static bool consume(s32 cpu)
{
	struct task_struct *mine, *head, *best = NULL;
	u32 i, n = nr_cpu_ids < FP_STEAL_SCAN ? nr_cpu_ids : FP_STEAL_SCAN;
	s32 c, best_cpu = -1;

	mine = __COMPAT_scx_bpf_dsq_peek(cpu);
	bpf_for(i, 1, n) {
		c = (cpu + i) % nr_cpu_ids;
		head = __COMPAT_scx_bpf_dsq_peek(c);
		if (head && (!best || key_less(head, best))) {
			best = head;
			best_cpu = c;
		}
	}

	if (mine && (!best || !time_before(best->scx.dsq_vtime + FP_STEAL_SLICES * slice_ns,
					   mine->scx.dsq_vtime)) &&
	    scx_bpf_dsq_move_to_local(cpu, 0)) {
		stat_inc(FP_STAT_DISP_CPU_DSQ);
		return true;
	}
	if (best && scx_bpf_dsq_move_to_local(best_cpu, 0)) {
		stat_inc(FP_STAT_DISP_STOLEN);
		return true;
	}
	/*
	 * Our head lost to another CPU's, but that steal failed (the head
	 * went elsewhere), or we saw nothing at the peek: try ours after all,
	 * since a task may have landed since.
	 */
	if (scx_bpf_dsq_move_to_local(cpu, 0)) {
		stat_inc(FP_STAT_DISP_CPU_DSQ);
		return true;
	}
	return false;
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
			caught = consume(cpu);
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

void BPF_STRUCT_OPS(fastpath_dispatch, s32 cpu, struct task_struct *prev)
{
	if (FP_BRANCH(FP_BR_DISPATCH_CONSUMED, consume(cpu)))
		return;

	/* Nothing else wants this CPU: let prev run another slice. */
	if (FP_BRANCH(FP_BR_DISPATCH_KEEP_PREV,
		      prev && (prev->scx.flags & SCX_TASK_QUEUED))) {
		prev->scx.slice = slice_ns;
		stat_inc(FP_STAT_KEEP_PREV);
		return;
	}

	/* prev just blocked: hold the CPU briefly before it goes idle. */
	if (idle_hold_ns && prev)
		idle_hold(cpu);
}

void BPF_STRUCT_OPS(fastpath_running, struct task_struct *p)
{
	struct fp_cpu *cctx = cpu_ctx(bpf_get_smp_processor_id());
	struct task_ctx *tctx = lookup_task_ctx(p);
	u64 vtime = tctx ? tctx->vtime : READ_ONCE(vtime_now);
	u64 now = scx_bpf_now(), step = compact_layout ? slice_ns / 16 : 0;

	if (time_before(READ_ONCE(vtime_now) + step, vtime))
		WRITE_ONCE(vtime_now, vtime);

	cctx->curr_vtime = vtime;
	cctx->curr_started = now;
	cctx->curr_weight = p->scx.weight;
	WRITE_ONCE(cctx->curr_busy, 1);
	if (FP_BRANCH(FP_BR_RUNNING_KICKED, READ_ONCE(cctx->kicked)))
		WRITE_ONCE(cctx->kicked, 0);

	cctx->curr_sum_start = p->se.sum_exec_runtime;
	if (unlikely(FP_BRANCH(FP_BR_RUNNING_ADAPT, cctx->hold_expired_at)))
		adapt_hold_window(cctx, bpf_ktime_get_ns());
}

void BPF_STRUCT_OPS(fastpath_stopping, struct task_struct *p, bool runnable)
{
	struct fp_cpu *cctx = cpu_ctx(bpf_get_smp_processor_id());
	struct task_ctx *tctx = lookup_task_ctx(p);
	u64 used;

	WRITE_ONCE(cctx->curr_busy, 0);
	if (!tctx)
		return;

	/*
	 * The core updated se.sum_exec_runtime just before calling us, so the
	 * time used needs no clock read here.
	 */
	used = p->se.sum_exec_runtime - cctx->curr_sum_start;
	tctx->vtime += scale_by_task_weight_inverse(p, used);

	/* The rq clock the core just updated: no new clock read either. */
	if (!runnable)
		tctx->slept_at = scx_bpf_now();
}

s32 BPF_STRUCT_OPS(fastpath_init_task, struct task_struct *p,
		   struct scx_init_task_args *args)
{
	if (!bpf_task_storage_get(&task_ctxs, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE))
		return -ENOMEM;
	return 0;
}

void BPF_STRUCT_OPS(fastpath_enable, struct task_struct *p)
{
	struct task_ctx *tctx = lookup_task_ctx(p);

	if (tctx) {
		tctx->vtime = READ_ONCE(vtime_now);
		tctx->slept_at = scx_bpf_now();
	}
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
		cpu_ctx(cpu)->hold_window_ns = idle_hold_ns;
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
	u64 sum = 0;
	s32 cpu;

	bpf_for(cpu, 0, nr_cpu_ids)
		sum += scx_bpf_dsq_nr_queued(cpu);

	nr_queued = sum;
	return 0;
}

SCX_OPS_DEFINE(fastpath_ops,
	       .select_cpu	= (void *)fastpath_select_cpu,
	       .enqueue		= (void *)fastpath_enqueue,
	       .dispatch	= (void *)fastpath_dispatch,
	       .running		= (void *)fastpath_running,
	       .stopping	= (void *)fastpath_stopping,
	       .init_task	= (void *)fastpath_init_task,
	       .enable		= (void *)fastpath_enable,
	       .init		= (void *)fastpath_init,
	       .exit		= (void *)fastpath_exit,
	       .flags		= SCX_OPS_ENQ_MIGRATION_DISABLED,
	       .timeout_ms	= FP_TIMEOUT_MS,
	       .name		= "fastpath");
