/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Queueing (ops.enqueue()): every task waits on the DSQ of the CPU it is
 * counted on, ordered by vtime. A pinned task goes straight to its CPU's
 * DSQ (fast path 1); a wakee whose idle search is done is not searched for
 * again (cheap wakeups) and may preempt; a wakee of a waker that blocks
 * goes to the local DSQ, next there (wake local); a task preempted inside
 * an RCU read-side section is queued first (RCU readers first).
 *
 * Switches (ablations only): pinned_fastpath, cheap_wakeup, wake_local,
 * rcu_first. Counters: pinned, pinned_migdis, enq_queued, wake_no_scan,
 * wake_local, kick_idle, rcu_first, hold_redirect. Tests: pinned_path,
 * cheap_wakeup, wake_local, rcu_first, mixed_load.
 */

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
 * preempts a task wherever it is, and a low-weight task (a nice-19 kernel
 * thread) preempted inside a section then waits its turns behind CPU hogs
 * long enough for the RCU stall detector to fire, which ejects the
 * scheduler (docs/decisions.md, "RCU readers first"). So such a task is
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
	 * would queue nearly every preempted task first.
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
 * task running there if it should. Returns true if @p went to the local DSQ
 * (wake local), false if it was queued on @cpu's DSQ.
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

static void enqueue_on_cpu(struct task_struct *p, u64 enq_flags, u64 now)
{
	bool wakeup = enq_flags & SCX_ENQ_WAKEUP;
	s32 idle, task_cpu = scx_bpf_task_cpu(p);
	u64 vtime;

	/*
	 * Always a DSQ of the CPU the task is counted on (its rq): its own,
	 * or its local DSQ for a wakee that preempts. That CPU's ext server,
	 * the one thing that runs our tasks while RT holds every CPU, stops
	 * for good the first time its dispatch finds nothing while tasks are
	 * still counted there, which queuing them elsewhere brings about
	 * (docs/decisions.md, "Moving tasks off an RT-held CPU in
	 * ops.enqueue"). The one exception is an idle-hold redirect, to a CPU
	 * that is polling for it.
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
