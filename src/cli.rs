//! Command-line options.

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::bpf_intf;

/// A sched_ext CPU scheduler: weighted fairness, and fast paths.
///
/// scx_fastpath: a sched_ext CPU scheduler with weighted virtual-time
/// fairness and fast paths for pinned tasks, cheap wakeups and brief idle
/// holds. Runs until interrupted; the kernel returns to its default
/// scheduler when it exits.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "scx_fastpath",
    version = env!("FP_VERSION"),
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true,
    group(clap::ArgGroup::new("stats_out").args(["stats", "monitor"]).multiple(true))
)]
pub struct Opts {
    /// Time slice in microseconds
    ///
    /// Time slice in microseconds: how long a task runs before a task waiting
    /// for its CPU gets a turn. Waking tasks preempt earlier when they are
    /// ahead in virtual time. 5000 (the default): 2500 read the benchmark
    /// suite's geomean 5% lower; 10000 read it 4.9% higher in one run and
    /// 1.1% lower in the next, and makes CPU hogs wait longer for their
    /// turn (README, Benchmarks: the slice).
    #[arg(
        short = 's',
        long,
        value_name = "US",
        default_value_t = 5000,
        allow_negative_numbers = true,
        value_parser = int_in(
            bpf_intf::fp_consts_FP_SLICE_US_MIN as u64,
            bpf_intf::fp_consts_FP_SLICE_US_MAX as u64
        )
    )]
    pub slice_us: u64,

    /// Wakeup preemption granularity in microseconds
    ///
    /// Wakeup granularity in microseconds: a waking task preempts the task
    /// running on its CPU only when that one has run this long and is behind
    /// it in virtual time by more than this. 0 preempts whenever it is
    /// behind at all (which made a pipe or message-queue producer switch
    /// once per message).
    #[arg(
        long,
        value_name = "US",
        default_value_t = 1000,
        allow_negative_numbers = true,
        value_parser = int_in(0, bpf_intf::fp_consts_FP_WAKEUP_GRAN_US_MAX as u64)
    )]
    pub wakeup_gran_us: u64,

    /// Wakeup preemption granularity against long-running tasks, in microseconds
    ///
    /// A task whose runs average at least --hog-run-us (a CPU hog) is
    /// preempted for a waking task once it has run this long and is behind
    /// the wakee by this much, by the deferred-preemption timer if need be.
    /// Tasks with short runs keep --wakeup-gran-us, and so do hogs when it
    /// is the shorter of the two. Measured from the start
    /// of the hog's run, which is the moment the last wakee blocked: with
    /// the long floor a periodic sleeper waking every millisecond came back
    /// later each period. 0 (the default): a wakee behind the hog in
    /// virtual time preempts it at once, with no timer (README: measured).
    #[arg(
        long,
        value_name = "US",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = int_in(0, bpf_intf::fp_consts_FP_WAKEUP_GRAN_US_MAX as u64)
    )]
    pub hog_gran_us: u64,

    /// Average run, in microseconds, from which a task is a CPU hog
    ///
    /// A task whose runs average this long or more is in the CPU hog
    /// class: a wakeup preempts it at --hog-gran-us instead of
    /// --wakeup-gran-us. With the hysteresis (the default) it leaves the
    /// class only when they average under half of this. 1000 (the
    /// default) is where the threshold stood when it was --wakeup-gran-us
    /// itself (README, Benchmarks: the hog-run ablation).
    #[arg(
        long,
        value_name = "US",
        default_value_t = 1000,
        allow_negative_numbers = true,
        value_parser = int_in(1, bpf_intf::fp_consts_FP_WAKEUP_GRAN_US_MAX as u64)
    )]
    pub hog_run_us: u64,

    /// Take another CPU's queued task over this CPU's own, in microseconds
    ///
    /// A CPU about to run the head of its own DSQ takes instead the head
    /// of another CPU's (in its LLC) when that one is further behind its
    /// CPU's clock by more than this, as one shared queue would. 0 never
    /// does. 1000 (the default): stress-ng tee x2 2.0-2.4x of the default
    /// scheduler against 0.6-0.7x with 0, in two same-guest A/Bs where 500
    /// and 10000 did no better (README, Benchmarks: pull).
    #[arg(
        long,
        value_name = "US",
        default_value_t = 1000,
        allow_negative_numbers = true,
        value_parser = int_in(0, bpf_intf::fp_consts_FP_WAKEUP_GRAN_US_MAX as u64)
    )]
    pub pull_gran_us: u64,

    /// Run a sync wakeup's wakee on the waker's CPU
    ///
    /// Run the wakee of a synchronous wakeup (the waker is about to block,
    /// e.g. a pipe write answered by a read) on the waker's CPU when nothing
    /// else waits there, instead of waking an idle CPU. Off by default:
    /// measured, it did not pay (README, Benchmarks).
    #[arg(long)]
    pub sync_wake: bool,

    /// Let a sync wakeup's idle pick choose the waker's busy CPU
    ///
    /// Pass SCX_WAKE_SYNC to the kernel's idle-CPU pick, which then puts a
    /// synchronous wakeup on the waker's own CPU, behind the waker, whenever
    /// any CPU is idle. Off: the flag is masked and an idle CPU is taken.
    #[arg(long)]
    pub sync_affine: bool,

    /// No timer-deferred wakeup preemption
    ///
    /// A wakee entitled to preempt a task that has not yet run
    /// --wakeup-gran-us waits for the end of that task's slice, instead of
    /// having a timer preempt it as soon as it has.
    #[arg(long)]
    pub no_deferred_preempt: bool,

    /// sched_yield() always goes through dispatch
    ///
    /// sched_yield() with nothing else waiting on the CPU goes through the
    /// whole dispatch/stop/enqueue/run round trip, as without ops.yield (by
    /// default the yielding task just goes on).
    #[arg(long)]
    pub no_fast_yield: bool,

    /// A blocking task's lag measured from the CPU's clock only
    ///
    /// A task that blocks remembers its lag (how far behind its CPU's
    /// clock it is) for its wakeup. By default the clock is taken as the
    /// vtime of the task queued next on the CPU, if that is ahead: the
    /// clock itself moves only when a task starts, so a sleeper that
    /// preempts a CPU hog blocked against where the hog started, not where
    /// it got to. This flag measures from the CPU's clock only.
    #[arg(long)]
    pub no_head_lag: bool,

    /// Measure head lag from whatever task is queued next
    ///
    /// By default head lag counts only the DSQ head that the blocking task
    /// displaced: the task that ran on the CPU just before it and stopped
    /// still runnable (a CPU hog that a periodic sleeper preempted), whose
    /// progress the CPU's clock has not seen yet (otherwise counted in
    /// lag_head_new). A task that wakes another and blocks would otherwise
    /// be credited with its wakee's lead: a pipe pair beside CPU hogs kept
    /// both tasks' credit that way and took 1.6 times the default's share.
    /// This flag measures from any head.
    #[arg(long)]
    pub no_displaced_head: bool,

    /// Queue a task preempted inside an RCU read-side section by vtime only
    ///
    /// A task preempted inside an RCU read-side critical section holds up
    /// every RCU grace period until it runs again; kernels without RCU
    /// priority boosting (Debian's) rely on the scheduler to run it soon. By
    /// default such a task is queued ahead of everything waiting on its CPU
    /// (counted in rcu_first): without it, khugepaged at nice 19 waited
    /// behind CPU hogs until the kernel's RCU stall detector ejected the
    /// scheduler (README, Reliability). This flag queues it by vtime.
    #[arg(long)]
    pub no_rcu_first: bool,

    /// Whole slices for tasks lighter than nice 0
    ///
    /// By default a task whose weight (nice level and cgroup cpu.weight
    /// together) is under nice 0's runs at most --slice-us times its weight
    /// over nice 0's, and at least a sixteenth of --slice-us: the same
    /// share in shorter, more frequent turns (a nice-10 hog behind a few
    /// hogs otherwise waits about a second between turns). With this flag
    /// every task gets the whole slice.
    #[arg(long)]
    pub no_light_slice: bool,

    /// A wakee waits behind a waker that keeps running
    ///
    /// When no CPU is idle, a task woken by one that keeps running (a
    /// non-sync wakeup from a task whose last runs all ended still
    /// runnable) goes back to its previous CPU even when that is the
    /// waker's, where it can only preempt the waker or wait behind it. By
    /// default it goes to another CPU whose queue is no longer instead, so
    /// that waker and wakee run side by side.
    #[arg(long)]
    pub no_wake_away: bool,

    /// A preempting wakee goes straight to its CPU's local queue
    ///
    /// A waking task that is to preempt the running task is queued on that
    /// CPU's own queue and the CPU kicked; it then picks its queue's head.
    /// With this flag such a wakee goes straight to the CPU's local queue
    /// with the kernel's preempt flag instead: no kick, no ops.dispatch().
    /// Off by default: the benchmark could not tell it from off (README).
    #[arg(long)]
    pub local_preempt: bool,

    /// No wakee straight to its waker's local DSQ
    ///
    /// By default a wakee that does not preempt, woken on its waker's CPU
    /// by a task with short runs whose last run ended blocking, while
    /// nothing else waits there, goes to that CPU's local DSQ, to run when
    /// the waker blocks without an ops.dispatch() and a move from the
    /// CPU's DSQ (stress-ng switch x2 about 1.09x faster, README:
    /// measured). With this flag it is queued on the CPU's DSQ.
    #[arg(long)]
    pub no_wake_local: bool,

    /// Steals ignore which CPUs share a last-level cache
    ///
    /// By default, on a machine with several LLCs, a CPU with nothing
    /// queued takes a task queued in another LLC only when none in its own
    /// may run there, or the far one is further behind by more than a
    /// wakeup's sleeper credit and a slice. With this flag it takes
    /// whichever is furthest behind. No effect on a machine with one LLC.
    #[arg(long)]
    pub no_llc_steal: bool,

    /// No hysteresis on the CPU hog class
    ///
    /// A wakeup preempts a CPU hog, a task whose runs average
    /// --hog-run-us or more, at --hog-gran-us. By default a hog leaves
    /// the class only when its runs average under half of that, so a busy
    /// loop that a periodic sleeper preempts every millisecond stays in it
    /// (cyclictest's average latency against hogs about halves, README).
    /// With this flag it leaves the class as soon as they average less.
    #[arg(long)]
    pub no_hog_hysteresis: bool,

    /// A wakee whose CPU runs an RT task waits there
    ///
    /// When no CPU is idle, a task whose previous CPU runs an RT or
    /// deadline task goes back there all the same, to wait until another
    /// CPU finds nothing of its own to run or the kernel's ext server gives
    /// it its 50 ms a second. By default it goes to a CPU that runs one of
    /// ours instead.
    #[arg(long)]
    pub no_rt_away: bool,

    /// A task queued where an RT task runs waits there (RT rescue off)
    ///
    /// A task queued on a CPU that an RT or deadline task holds (the task
    /// it preempted, once the kernel's ext server has run it, or a wakeup
    /// that found no better CPU) waits until that CPU is free, another CPU
    /// has nothing of its own to run, or the ext server gives it its 50 ms
    /// a second. By default the next CPUs that run ours take it before
    /// their own queue (README, How it schedules).
    #[arg(long)]
    pub no_rt_rescue: bool,

    /// Fast path 1 off (pinned tasks)
    ///
    /// Fast path 1 off: tasks allowed on one CPU (or migration-disabled) go
    /// through the generic path (idle scan, kicks) instead of
    /// straight to their CPU's DSQ.
    #[arg(long)]
    pub no_pinned_fastpath: bool,

    /// Fast path 2 off (cheap wakeups)
    ///
    /// Fast path 2 off: wakeups always use the kernel's idle search, enqueue
    /// always rescans for an idle CPU, and preemption checks always run.
    #[arg(long)]
    pub no_cheap_wakeup: bool,

    /// Allow queued wakeups (SCX_OPS_ALLOW_QUEUED_WAKEUP)
    ///
    /// Let the kernel queue a wakeup on the woken task's CPU when the task
    /// is still switching out there (SCX_OPS_ALLOW_QUEUED_WAKEUP). Such a
    /// wakeup skips ops.select_cpu; ops.enqueue claims that CPU when it is
    /// idle. Off by default (see README: measured, it did not pay here).
    #[arg(long)]
    pub queued_wakeup: bool,

    /// Fast path 3: longest idle hold in microseconds (0: off)
    ///
    /// Fast path 3: longest time, in microseconds, a CPU whose task just
    /// blocked spins for new work before going idle; the window adapts per
    /// CPU between 2 us and this. 0 (the default, see README: measured, it
    /// did not pay) disables holding.
    #[arg(
        long,
        value_name = "US",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = int_in(0, bpf_intf::fp_consts_FP_IDLE_HOLD_US_MAX as u64)
    )]
    pub idle_hold_us: u64,

    /// PM QoS idle resume latency in microseconds while running
    ///
    /// Ask the CPU idle governor (PM QoS, /dev/cpu_dma_latency) for idle
    /// states that resume within this many microseconds, while running;
    /// restored on exit. Complements --idle-hold-us. Off when not given.
    #[arg(
        long,
        value_name = "US",
        allow_negative_numbers = true,
        value_parser = int_in(0i32, 1_000_000)
    )]
    pub idle_resume_us: Option<i32>,

    /// Counters in one shared array (fast path 4's counter layout off)
    ///
    /// By default each CPU counts on cache lines of its own. With this flag
    /// the counters become atomic adds to one array shared by all CPUs, as
    /// a scheduler without cache-line care would keep them.
    #[arg(long)]
    pub no_compact_layout: bool,

    /// Write each CPU's clock on every switch (fast path 4's lazy clock off)
    ///
    /// By default ops.running() writes a CPU's virtual clock, which every
    /// enqueue onto that CPU reads from other CPUs, only when it has moved
    /// by a sixteenth of a slice. With this flag it is written whenever it
    /// moves.
    #[arg(long)]
    pub no_lazy_vmin: bool,

    /// Print a line of counters every SECS seconds (0: off)
    ///
    /// Print a line of scheduler counters every SECS seconds (fractions
    /// allowed; 0: off): tasks placed and the share that took a fast path,
    /// dispatched and the share stolen, preemptions, yields, the queue
    /// depth; with -v also every counter's rate. A totals line at exit.
    /// The same figures are always served on the scx_stats socket,
    /// /var/run/scx/root/stats.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 0.0,
        allow_negative_numbers = true,
        value_parser = parse_secs
    )]
    pub stats: f64,

    /// Load nothing: show the running instance's counters
    ///
    /// Load nothing: show the running scx_fastpath's figures (from its stats
    /// socket) every SECS seconds, until Ctrl-C. Waits for one to start.
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = parse_secs)]
    pub monitor: Option<f64>,

    /// With --monitor or --stats: one JSON object per sample
    ///
    /// With --monitor or --stats: one JSON object per line and sample (the
    /// totals since the scheduler attached, not rates), for scripts; with
    /// --stats also one at exit, the final totals.
    #[arg(long, requires = "stats_out")]
    pub json: bool,

    /// With --monitor: a full-screen live dashboard (q quits)
    ///
    /// With --monitor: a full-screen dashboard of the running instance,
    /// refreshed every SECS: a row per CPU (queue depth, rates), recent
    /// rates as sparklines, the kernel's sched_ext event counters and the
    /// tunables in force. q, Esc or Ctrl-C quits. Needs a terminal.
    #[arg(long, requires = "monitor", conflicts_with = "json")]
    pub tui: bool,

    /// Size of the kernel's debug dump on an error exit
    ///
    /// Bytes of the debug dump the kernel fills in when it ejects the
    /// scheduler (0: the kernel's default size). At most 2147483647: the
    /// kernel refuses a larger BPF array value, so the load would fail.
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = int_in(0u32, EXIT_DUMP_LEN_MAX)
    )]
    pub exit_dump_len: u32,

    /// Print a completion script for SHELL and exit
    ///
    /// Print the shell completion script for SHELL (bash, zsh, fish, elvish,
    /// powershell) and exit; scripts/install and scripts/package install
    /// the bash, zsh and fish ones.
    #[arg(long, value_name = "SHELL", allow_negative_numbers = true, value_enum)]
    pub completions: Option<clap_complete::Shell>,

    /// Print the man page (roff) and exit
    ///
    /// Print the manual page, made from these options, in roff (man -l -
    /// reads it), and exit.
    #[arg(long)]
    pub man: bool,

    /// Describe every counter and exit
    ///
    /// Describe every counter the stats show, and exit.
    #[arg(long)]
    pub help_stats: bool,

    /// Debug messages, including libbpf's (repeat for more)
    ///
    /// Verbose output: debug messages, including libbpf's, and with --stats
    /// or --monitor every counter's rate under the summary line. Repeat for
    /// more.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// The libbpf object-open options every scx scheduler takes.
    #[command(flatten, next_help_heading = "Libbpf options")]
    pub libbpf: scx_utils::libbpf_clap_opts::LibbpfOpts,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// Change a running instance's tunables (root)
    ///
    /// Change the running scx_fastpath's tunables without reloading it,
    /// over its stats socket (root only): KEY is a flag's name, for a
    /// switch its positive name with on or off, e.g. `set slice-us=3000
    /// head-lag=off`. Values are checked as the flags check them, and all
    /// changes apply or none. The scheduler logs each change; the stats
    /// show the new tunables; a restart (CPU hotplug) keeps them, a new
    /// start does not.
    Set {
        /// A change, e.g. slice-us=3000 or head-lag=off
        #[arg(value_name = "KEY=VALUE", required = true)]
        changes: Vec<String>,
    },
}

/// Largest --exit-dump-len: scx_utils sizes the exit dump's BPF array map
/// value to it, and the kernel refuses an array value above INT_MAX (-E2BIG
/// in array_map_alloc_check), so a larger one could only fail the load.
const EXIT_DUMP_LEN_MAX: u32 = 2_147_483_647;

/// A whole number in `min..=max`, for the integer options. clap's own
/// parsers call -1 an "invalid digit" and 2^64 "too large to fit in target
/// type"; this names the range instead. The value itself is in clap's part
/// of the message ("invalid value '-1' for '--slice-us <US>': ...").
fn int_in<T>(min: T, max: T) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: Copy + Into<i128> + TryFrom<i128> + Send + Sync + 'static,
{
    move |s: &str| {
        let (lo, hi): (i128, i128) = (min.into(), max.into());
        let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("not a whole number ({lo}..={hi})"));
        }
        // More digits than an i128 holds is out of range too.
        match s.parse::<i128>() {
            Ok(v) if (lo..=hi).contains(&v) => {
                T::try_from(v).map_err(|_| format!("not in {lo}..={hi}"))
            }
            _ => Err(format!("not in {lo}..={hi}")),
        }
    }
}

/// Seconds for --stats and --monitor: a number from 0 to 3600, fractions
/// allowed (NaN and infinities are not in range).
fn parse_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| "not a number of seconds (0..=3600)".to_string())?;
    if !(0.0..=3600.0).contains(&v) {
        return Err("not in 0..=3600".to_string());
    }
    Ok(v)
}

/// Exit status for bad usage (a flag or its value, a `set` change): 1 is
/// any other failure. contrib/scx_fastpath.service names it and EXIT_BUSY in
/// RestartPreventExitStatus= (a test checks it): a restart cannot help.
pub const EXIT_USAGE: u8 = 2;

/// Exit status when another sched_ext scheduler holds the kernel.
pub const EXIT_BUSY: u8 = 3;

/// Parses the command line. --help and --version print and exit 0 as clap
/// does; a usage error is one line on stderr, "error: ...", and exit status
/// 2. (clap's own rendering adds a usage line and tips: up to 7 lines.)
pub fn parse() -> Result<Opts, ExitCode> {
    match command()
        .try_get_matches()
        .and_then(|mut m| Opts::from_arg_matches_mut(&mut m))
    {
        Ok(opts) => match check_libbpf(&opts.libbpf) {
            Ok(()) => Ok(opts),
            Err(why) => {
                eprintln!("error: {why}");
                Err(ExitCode::from(EXIT_USAGE))
            }
        },
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            Err(ExitCode::from(
                u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE),
            ))
        }
    }
}

/// The libbpf options' values, checked as bad input: scx_utils turns them
/// into libbpf's open options, but drops all of them, silently, when it
/// cannot read the --kconfig file, and the scheduler would load with
/// settings nobody asked for.
fn check_libbpf(o: &scx_utils::libbpf_clap_opts::LibbpfOpts) -> Result<(), String> {
    if let Some(path) = &o.kconfig {
        // {path:?}: a path may hold a newline; the error stays one line.
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--kconfig {path:?}: cannot read it: {e}"))?;
        if text.contains('\0') {
            return Err(format!("--kconfig {path:?}: the file has a NUL byte"));
        }
    }
    Ok(())
}

/// The command line's definition: Opts, with the keys `set` takes (from
/// live::LIVE) added to its help.
pub fn command() -> clap::Command {
    let keys = crate::live::keys();
    Opts::command().mut_subcommand("set", |c| {
        let about = c
            .get_long_about()
            .map(|a| a.to_string())
            .unwrap_or_default();
        c.long_about(format!("{about}\n\nKEY is one of: {keys}."))
    })
}

/// clap's error as one line: its message (the first paragraph, whose lines,
/// e.g. "[possible values: ...]", are joined), and the similar flag or value
/// it suggests, if any.
pub fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};

    let text = e.render().to_string();
    let message = text.split("\n\n").next().unwrap_or_default();
    let mut line = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    for kind in [ContextKind::SuggestedArg, ContextKind::SuggestedValue] {
        match e.get(kind) {
            Some(ContextValue::String(s)) => line.push_str(&format!(" (did you mean '{s}'?)")),
            Some(ContextValue::Strings(v)) if !v.is_empty() => {
                line.push_str(&format!(" (did you mean '{}'?)", v.join("' or '")))
            }
            _ => {}
        }
    }
    if line.is_empty() {
        line = format!("error: {}", e.kind());
    }
    line
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

impl Opts {
    /// The tunables as the stats show them.
    pub fn describe(&self) -> String {
        format!(
            "slice_us={} wakeup_gran_us={} hog_gran_us={} hog_run_us={} pull_gran_us={} deferred_preempt={} sync_wake={} sync_affine={} fast_yield={} head_lag={} displaced_head={} rcu_first={} light_slice={} local_preempt={} wake_local={} llc_steal={} hog_hysteresis={} wake_away={} rt_away={} rt_rescue={} pinned_fastpath={} cheap_wakeup={} queued_wakeup={} idle_hold_us={} idle_resume_us={} compact_layout={} lazy_vmin={} branch_hints={}",
            self.slice_us,
            self.wakeup_gran_us,
            self.hog_gran_us,
            self.hog_run_us,
            self.pull_gran_us,
            on_off(!self.no_deferred_preempt),
            on_off(self.sync_wake),
            on_off(self.sync_affine),
            on_off(!self.no_fast_yield),
            on_off(!self.no_head_lag),
            on_off(!self.no_displaced_head),
            on_off(!self.no_rcu_first),
            on_off(!self.no_light_slice),
            on_off(self.local_preempt),
            on_off(!self.no_wake_local),
            on_off(!self.no_llc_steal),
            on_off(!self.no_hog_hysteresis),
            on_off(!self.no_wake_away),
            on_off(!self.no_rt_away),
            on_off(!self.no_rt_rescue),
            on_off(!self.no_pinned_fastpath),
            on_off(!self.no_cheap_wakeup),
            on_off(self.queued_wakeup),
            self.idle_hold_us,
            self.idle_resume_us.map_or("off".to_string(), |us| us.to_string()),
            on_off(!self.no_compact_layout),
            on_off(!self.no_lazy_vmin),
            on_off(!cfg!(feature = "no-branch-hints")),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The systemd unit does not restart on the statuses that say retrying
    /// cannot help: these two, and only these.
    #[test]
    fn unit_prevents_restart_on_usage_and_busy() {
        let unit = include_str!("../contrib/scx_fastpath.service");
        let line = unit
            .lines()
            .find_map(|l| l.strip_prefix("RestartPreventExitStatus="))
            .expect("RestartPreventExitStatus= in the unit");
        assert_eq!(line, format!("{EXIT_USAGE} {EXIT_BUSY}"));
    }

    #[test]
    fn defaults_turn_every_fast_path_on() {
        let o = Opts::parse_from(["scx_fastpath"]);
        let d = o.describe();
        assert!(d.contains("pinned_fastpath=on"), "{d}");
        assert!(d.contains("cheap_wakeup=on"), "{d}");
        assert!(d.contains("idle_hold_us=0"), "{d}");
        assert!(d.contains("queued_wakeup=off"), "{d}");
        assert!(d.contains("compact_layout=on"), "{d}");
        assert!(d.contains("lazy_vmin=on"), "{d}");
        assert!(d.contains("light_slice=on"), "{d}");
        assert!(d.contains("wakeup_gran_us=1000"), "{d}");
        assert!(d.contains("hog_run_us=1000"), "{d}");
        assert!(d.contains("fast_yield=on"), "{d}");
        assert!(d.contains("sync_wake=off"), "{d}");
        assert!(d.contains("deferred_preempt=on"), "{d}");
        assert!(d.contains("rt_away=on"), "{d}");
        assert!(d.contains("rt_rescue=on"), "{d}");
        assert!(d.contains("wake_local=on"), "{d}");
        assert!(d.contains("llc_steal=on"), "{d}");
        assert!(d.contains("pull_gran_us=1000"), "{d}");
    }

    #[test]
    fn switches_turn_them_off_and_hold_on() {
        let o = Opts::parse_from([
            "scx_fastpath",
            "--no-pinned-fastpath",
            "--no-cheap-wakeup",
            "--idle-hold-us",
            "200",
            "--no-compact-layout",
            "--no-lazy-vmin",
            "--no-fast-yield",
            "--no-light-slice",
            "--wakeup-gran-us",
            "0",
        ]);
        let d = o.describe();
        for off in [
            "pinned_fastpath=off",
            "cheap_wakeup=off",
            "idle_hold_us=200",
            "compact_layout=off",
            "lazy_vmin=off",
            "fast_yield=off",
            "light_slice=off",
            "wakeup_gran_us=0",
        ] {
            assert!(d.contains(off), "{d}");
        }
    }

    #[test]
    fn out_of_range_values_are_refused() {
        assert!(Opts::try_parse_from(["scx_fastpath", "--idle-hold-us", "1001"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--slice-us", "99"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--idle-resume-us", "-1"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--wakeup-gran-us", "100001"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--hog-run-us", "0"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--hog-run-us", "100001"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--stats", "-1"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--stats", "x"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--json"]).is_err());
        assert!(Opts::try_parse_from(["scx_fastpath", "--tui"]).is_err());
        assert!(
            Opts::try_parse_from(["scx_fastpath", "--monitor", "1", "--tui", "--json"]).is_err()
        );
    }

    #[test]
    fn bad_numbers_name_the_range() {
        let err = |args: &[&str]| {
            let mut argv = vec!["scx_fastpath"];
            argv.extend_from_slice(args);
            match Opts::try_parse_from(argv) {
                Ok(_) => panic!("{args:?} was accepted"),
                Err(e) => one_line(&e),
            }
        };
        let e = err(&["--slice-us", "-1"]);
        assert_eq!(
            e,
            "error: invalid value '-1' for '--slice-us <US>': not in 100..=100000"
        );
        let e = err(&["--wakeup-gran-us", "18446744073709551616"]);
        assert!(e.ends_with("not in 0..=100000"), "{e}");
        let e = err(&["--idle-resume-us", "abc"]);
        assert!(e.ends_with("not a whole number (0..=1000000)"), "{e}");
        let e = err(&["--exit-dump-len", "2147483648"]);
        assert!(e.ends_with("not in 0..=2147483647"), "{e}");
        let e = err(&["--stats", "-0.5"]);
        assert!(e.ends_with("'--stats <SECS>': not in 0..=3600"), "{e}");
        let e = err(&["--monitor", "NaN"]);
        assert!(e.ends_with("not in 0..=3600"), "{e}");
        let e = err(&["--json"]);
        assert_eq!(
            e,
            "error: the following required arguments were not provided: <--stats <SECS>|--monitor <SECS>>"
        );
        let e = err(&["--jsn"]);
        assert!(e.ends_with("(did you mean '--json'?)"), "{e}");
        let e = err(&["--completions", "bsh"]);
        assert!(e.contains("[possible values: bash,"), "{e}");
        assert!(e.ends_with("(did you mean 'bash'?)"), "{e}");
    }

    #[test]
    fn whole_numbers_take_a_sign_and_leading_zeros() {
        let o = Opts::parse_from(["scx_fastpath", "--slice-us", "+0200", "--idle-resume-us=-0"]);
        assert_eq!(o.slice_us, 200);
        assert_eq!(o.idle_resume_us, Some(0));
        let o = Opts::parse_from(["scx_fastpath", "--exit-dump-len", "2147483647"]);
        assert_eq!(o.exit_dump_len, 2_147_483_647);
    }

    #[test]
    fn readme_shows_short_help() {
        use clap::CommandFactory;

        let block = crate::readme::block("<!-- usage: scx_fastpath -h -->\n```\n", "```");
        let help = Opts::command().render_help().to_string();
        assert_eq!(
            block.trim_end(),
            help.trim_end(),
            "README's usage block is stale"
        );
    }

    #[test]
    fn kconfig_must_be_readable() {
        let o = Opts::parse_from(["scx_fastpath", "--kconfig", "/nonexistent/kconfig"]);
        let e = check_libbpf(&o.libbpf).unwrap_err();
        assert!(
            e.starts_with("--kconfig \"/nonexistent/kconfig\": cannot read it"),
            "{e}"
        );
        let o = Opts::parse_from(["scx_fastpath", "--kconfig", "/dev/null"]);
        assert_eq!(check_libbpf(&o.libbpf), Ok(()));
        assert!(o.libbpf.into_bpf_open_opts().is_some());
    }

    #[test]
    fn seconds_take_fractions() {
        let o = Opts::parse_from(["scx_fastpath", "--stats", "0.5"]);
        assert_eq!(o.stats, 0.5);
        let o = Opts::parse_from(["scx_fastpath", "--monitor", "2", "--json"]);
        assert_eq!(o.monitor, Some(2.0));
        assert!(o.json);
        let o = Opts::parse_from(["scx_fastpath", "--monitor", "1", "--tui"]);
        assert!(o.tui && !o.json);
        let o = Opts::parse_from(["scx_fastpath", "--stats", "1", "--json"]);
        assert!(o.stats == 1.0 && o.json);
    }
}
