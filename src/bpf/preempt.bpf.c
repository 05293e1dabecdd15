/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Wakeup preemption: a waking task preempts the task on its CPU when that
 * one has run at least the granularity (--wakeup-gran-us, --hog-gran-us
 * for CPU hogs) and is behind the wakee in vtime by more than that; where
 * the floor has not passed yet for a hog, a per-CPU timer preempts it when
 * it has (deferred preemption).
 *
 * Switches (ablations only): deferred_preempt, hog_hysteresis. Counters:
 * wake_preempt, wake_no_preempt, wake_deferred, wake_defer_kick,
 * wake_short_runner, wake_hog_gran, wake_hog_held, wake_kthread_kept,
 * wake_no_kick. Tests: deferred_preempt, hog_hysteresis, rt_hog.
 */

/*
 * Deferred wakeup preemption. A wakee that may preempt a CPU's task only
 * once that task has had its --wakeup-gran-us would otherwise wait for the
 * end of the task's whole slice (nothing looks again before then), so a
 * periodic sleeper against a CPU hog would often wait most of a slice.
 * Instead, a timer per CPU kicks it when the floor has passed, if the same
 * run is still going on (curr_started unchanged) and nobody kicked it
 * meanwhile (docs/decisions.md, "Deferred preemption timer"). The same
 * timer ends light slices (light_slice()) on time.
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
 * Without the margin nearly every wakeup would preempt: a producer and a
 * consumer (a pipe, a message queue) would then switch once per message,
 * where letting the producer run on batches the messages.
 *
 * The granularity is --hog-gran-us if the running task's runs are long
 * (update_hog()), else --wakeup-gran-us. Both count from the start of its
 * run, and a hog's run starts when the last wakee blocked: with the long
 * floor for hogs too, a sleeper waking every millisecond against a hog
 * could run only once per floor plus its own run, so it would wake later
 * each period. The default is no floor at all for hogs: a floor is kept by
 * the deferred-preemption timer, and a timer fires late on a loaded
 * machine, so a wakee would wait far longer than the floor
 * (docs/decisions.md, "No floor for CPU hogs"). Tasks with short runs keep
 * the long floor: they usually block before it, and preempting them sooner
 * turns message-passing loads into a switch per message (docs/decisions.md,
 * "Wakeup granularity of 1000 us").
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
	 * on: a low-weight one preempted at every wakeup can stay inside an
	 * RCU read-side section long enough to stall RCU grace periods, and
	 * an RCU stall ejects the scheduler (docs/decisions.md, "Kernel
	 * threads are not preempted by wakeups").
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
	 * floor every wakeup would preempt it within microseconds.
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
	 * usually blocks within --hog-run-us will most likely do so before
	 * the timer fires, and timer preemptions of such tasks cost
	 * message-passing loads throughput (docs/decisions.md, "Deferred
	 * preemption timer").
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
