/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The starvation guard: every FP_GUARD_MS, each CPU moves every task that
 * has waited FP_STARVE_MS on its DSQ to the rescue DSQ, which every CPU
 * takes from first, and wakes an idle CPU that may run it. Weighted
 * fairness alone cannot bound waits; the kernel's watchdog ejects a
 * scheduler that leaves a task runnable for FP_TIMEOUT_MS.
 *
 * Switch: none. Counter: starve_rescue. Tests: sleeper_storm,
 * hog_storm, soak, attach_under_load.
 */

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
 * A task the guard rescued waits on FP_DSQ_RESCUE, which every CPU looks at
 * before anything else: wake an idle CPU that may run it, so that it does
 * not wait for the CPU that found it, which may be busy with the rest.
 */
static void kick_for_rescued(struct task_struct *p)
{
	s32 idle = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);

	if (idle < 0)
		return;
	scx_bpf_kick_cpu(idle, SCX_KICK_IDLE);
}

/*
 * The starvation guard. Every FP_GUARD_MS, walk this CPU's DSQ from the head
 * and move every task that has been runnable for FP_STARVE_MS without
 * running to FP_DSQ_RESCUE, a FIFO that every CPU takes from first
 * (ops.dispatch()): any CPU the task may run on can take it, and an idle
 * one is woken for it. p->scx.runnable_at is what the kernel's watchdog
 * checks: when the task last became runnable after running.
 *
 * All of them, not a batch: a guard that moves a batch per look and returns
 * can find itself due at every ops.dispatch() under a deep queue, and the
 * head of the DSQ (the lowest vtime of all) is then never taken
 * (docs/decisions.md, "The starvation guard runs every starved task").
 * Moving every starved task bounds any wait to about FP_STARVE_MS plus a
 * round over the rescued, one slice each, spread over every CPU that may
 * run them. Costs one compare per dispatch, and one walk of the DSQ per
 * FP_GUARD_MS. Each task it moves is counted
 * (starve_rescue), and the one that waited longest is kept for the loader's
 * log (record_rescue()): what starved, not only how many.
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
		if (scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, FP_DSQ_RESCUE, 0)) {
			stat_inc(FP_STAT_STARVE_RESCUE);
			record_rescue(cpu, p,
				      (jiffies_now - runnable_at) * npj / 1000000ULL);
			kick_for_rescued(p);
			moved = true;
		}
	}
	return moved;
}

/*
 * What the starvation guard rescued, on any CPU, that @cpu may run: a read
 * of the rescue DSQ's count, which is written only by rescues, and the move
 * only where there is something.
 */
static bool take_rescued(void)
{
	if (likely(FP_BRANCH(FP_BR_DISPATCH_NO_RESCUED, !scx_bpf_dsq_nr_queued(FP_DSQ_RESCUE))))
		return false;
	return scx_bpf_dsq_move_to_local(FP_DSQ_RESCUE, 0);
}
