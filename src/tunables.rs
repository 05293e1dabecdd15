//! Every tunable in one table. A row gives the tunable's name, what it
//! takes, its default, its help, and the field of struct fp_tune (intf.h)
//! that the BPF side reads it from, if any: a tunable with a field there is
//! live, `scx_fastpath set` changes it in a running instance. Made from the
//! table: the command-line flags, `set`'s keys, the config line (also the
//! JSON's `config`), struct fp_tune's contents, the benchmark's ablation
//! variants (`--list-ablations`) and the README's option table
//! (`--readme-options`).
//!
//! One spelling: a value option's name is its long flag (`--slice-us`),
//! `set`'s key (`set slice-us=3000`) and its word in the config line
//! (`slice-us=3000`). A mechanism is on unless ablated, by name:
//! `--ablate head-lag` on the command line, `set ablate=head-lag` live,
//! `ablate=head-lag` in the config line.

use std::fmt::Write as _;

use anyhow::{anyhow, bail, Context, Result};

use crate::bpf_intf;
use crate::cli::int_in;

/// What a tunable takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Microseconds in `min..=max`; `default` when not given.
    Micros { min: u64, max: u64, default: u64 },
    /// Microseconds in `min..=max`; off when not given.
    OptMicros { min: u64, max: u64 },
    /// A mechanism: on unless `--ablate NAME`.
    Mechanism,
    /// A mechanism that only a build leaves out: on unless built with cargo
    /// feature `feature` (`on` is whether this build has it).
    Build { feature: &'static str, on: bool },
}

/// A benchmark variant of the tunable (scripts/bench runs it beside the
/// default), as `--list-ablations` prints it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Variant {
    /// The variant is `fastpath-<name>`: `no-<tunable>` for a mechanism
    /// ablated, which the report reads as "that mechanism off".
    pub name: &'static str,
    /// The value the variant gives a value option; None for a mechanism,
    /// which the variant ablates.
    pub value: Option<u64>,
    /// The benchmark's workload groups that exercise it, comma-separated.
    pub groups: &'static str,
    /// Why: what the variant shows, for the report's table.
    pub why: &'static str,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct Tunable {
    /// The long flag (a value option) or the name `--ablate` takes (a
    /// mechanism); `set`'s key and the config line's word.
    pub name: &'static str,
    pub short: Option<char>,
    pub kind: Kind,
    /// The struct fp_tune field the BPF side reads it from (microseconds
    /// times 1000 for an _ns field, 1 or 0 for a mechanism); None for what
    /// is fixed at start or at build time.
    pub tune: Option<&'static str>,
    /// One line, for -h and the README's table.
    pub help: &'static str,
    /// What it does, for --help (value options) and the README.
    pub long_help: &'static str,
    pub bench: &'static [Variant],
}

impl Tunable {
    /// `set` can change it in a running instance: the BPF side reads it
    /// from struct fp_tune at every use.
    pub fn live(&self) -> bool {
        self.tune.is_some()
    }

    pub fn is_mechanism(&self) -> bool {
        matches!(self.kind, Kind::Mechanism | Kind::Build { .. })
    }

    fn default_value(&self) -> Value {
        match self.kind {
            Kind::Micros { default, .. } => Value::Num(default),
            Kind::OptMicros { .. } => Value::Unset,
            Kind::Mechanism => Value::On(true),
            Kind::Build { on, .. } => Value::On(on),
        }
    }
}

const US_MAX: u64 = bpf_intf::fp_consts_FP_WAKEUP_GRAN_US_MAX as u64;

/// Workload groups of scripts/bench that most variants run.
const WAKEUP_GROUPS: &str = "stress-nproc,stress-1,pipe,hackbench,cyclictest";
const PAIR_GROUPS: &str = "stress-nproc,stress-1,pipe,hackbench,tbench";
const STRESS_GROUPS: &str = "stress-nproc,stress-1";

/// Builds `Id` and `TABLE` from one list, so that `TABLE[id as usize]` is
/// `id`'s row by construction.
macro_rules! table {
    ($($id:ident => $row:expr,)*) => {
        /// A tunable: its row in TABLE.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        // The loader names only the rows it reads itself (the rest it
        // reads through the table).
        #[allow(dead_code)]
        pub enum Id { $($id),* }

        /// Every tunable, in Id order; the value options first, in the
        /// order -h lists them.
        pub const TABLE: &[Tunable] = &[$($row),*];

        /// Every Id, in table order.
        #[cfg(test)]
        const ALL_IDS: &[Id] = &[$(Id::$id),*];
    };
}

table! {
    SliceUs => Tunable {
        name: "slice-us",
        short: Some('s'),
        kind: Kind::Micros {
            min: bpf_intf::fp_consts_FP_SLICE_US_MIN as u64,
            max: bpf_intf::fp_consts_FP_SLICE_US_MAX as u64,
            default: 5000,
        },
        tune: Some("slice_ns"),
        help: "Time slice in microseconds",
        long_help: "Time slice in microseconds: how long a task runs before a task \
            waiting for its CPU gets a turn. A waking task that is ahead in virtual \
            time can preempt sooner (--wakeup-gran-us). With many tasks waiting on a \
            CPU the slices there shrink, down to a sixteenth of this, so that a round \
            over them stays short.",
        bench: &[Variant {
            name: "slice-10000",
            value: Some(10000),
            groups: "stress-nproc,stress-1,pipe,hackbench,tbench,execl,forksleep,cyclictest",
            why: "a 10 ms slice instead of 5 ms: every workload, since how long a task \
                runs before the next gets its turn touches all of them",
        }],
    },
    WakeupGranUs => Tunable {
        name: "wakeup-gran-us",
        short: None,
        kind: Kind::Micros { min: 0, max: US_MAX, default: 1000 },
        tune: Some("wakeup_gran_ns"),
        help: "Wakeup preemption granularity in microseconds",
        long_help: "Wakeup preemption granularity in microseconds: a waking task \
            preempts the task running on its CPU only when that task has run this \
            long and is behind the wakee in virtual time by more than this. 0 \
            preempts whenever the running task is behind at all. CPU hogs \
            (--hog-run-us) are preempted at --hog-gran-us instead.",
        bench: &[Variant {
            name: "no-wakeup-gran",
            value: Some(0),
            groups: WAKEUP_GROUPS,
            why: "wakeup preemption granularity: 0 preempts whenever the running task \
                is behind the wakee at all (producer/consumer loads, wakeup latency)",
        }],
    },
    HogGranUs => Tunable {
        name: "hog-gran-us",
        short: None,
        kind: Kind::Micros { min: 0, max: US_MAX, default: 0 },
        tune: Some("hog_gran_ns"),
        help: "Wakeup preemption granularity against CPU hogs, in microseconds",
        long_help: "Wakeup preemption granularity against CPU hogs, in microseconds: \
            a task whose runs average at least --hog-run-us is preempted for a waking \
            task once it has run this long and is behind the wakee by this much, by a \
            timer if need be. Other tasks keep --wakeup-gran-us, and so do hogs when \
            that is the shorter. 0: a wakee preempts a hog that is behind it in \
            virtual time at once.",
        bench: &[
            Variant {
                name: "no-hog-gran",
                value: Some(1000),
                groups: WAKEUP_GROUPS,
                why: "long-running tasks preempted by a wakeup at --wakeup-gran-us (1000) \
                    instead of at once: a periodic sleeper against CPU hogs \
                    (cyclictest), producer/consumer loads",
            },
            Variant {
                name: "hog-gran-250",
                value: Some(250),
                groups: WAKEUP_GROUPS,
                why: "a 250 us floor for preempting long-running tasks, kept by the \
                    deferred-preemption timer: a periodic sleeper against CPU hogs, \
                    futex and producer/consumer loads",
            },
        ],
    },
    HogRunUs => Tunable {
        name: "hog-run-us",
        short: None,
        kind: Kind::Micros { min: 1, max: US_MAX, default: 1000 },
        tune: Some("hog_run_ns"),
        help: "Average run, in microseconds, from which a task is a CPU hog",
        long_help: "Average run, in microseconds, from which a task is a CPU hog: a \
            wakeup preempts it at --hog-gran-us instead of --wakeup-gran-us. It stays \
            a hog until its runs average under half of this, so that a busy loop a \
            periodic sleeper keeps preempting stays one.",
        bench: &[Variant {
            name: "hog-run-500",
            value: Some(500),
            groups: WAKEUP_GROUPS,
            why: "the CPU hog class from runs averaging 500 us instead of 1000: \
                pipelines (stress-ng tee), producer/consumer loads, a periodic sleeper \
                against CPU hogs",
        }],
    },
    PullGranUs => Tunable {
        name: "pull-gran-us",
        short: None,
        kind: Kind::Micros { min: 0, max: US_MAX, default: 1000 },
        tune: Some("pull_gran_ns"),
        help: "Take another CPU's queued task over this CPU's own, in microseconds",
        long_help: "A CPU about to run the head of its own queue takes instead the \
            head of another CPU's queue in its last-level cache when that one is \
            further behind its CPU's clock by more than this many microseconds, as \
            one shared queue would. 0 never does.",
        bench: &[Variant {
            name: "no-pull",
            value: Some(0),
            groups: WAKEUP_GROUPS,
            why: "a CPU about to run its own DSQ's head takes another CPU's (in its \
                LLC) when that one is further behind by more than --pull-gran-us: \
                pipelines whose stages queue behind each other per CPU (stress-ng \
                tee), producer/consumer loads, wakeup latency",
        }],
    },
    IdleHoldUs => Tunable {
        name: "idle-hold-us",
        short: None,
        kind: Kind::Micros {
            min: 0,
            max: bpf_intf::fp_consts_FP_IDLE_HOLD_US_MAX as u64,
            default: 0,
        },
        tune: None,
        help: "Longest idle hold in microseconds (0: off; experimental)",
        long_help: "Longest time, in microseconds, that a CPU whose task just blocked \
            spins for new work before going idle; the window adapts per CPU between \
            2 us and this. 0 never holds. Experimental: a holding CPU spins with its \
            runqueue locked and interrupts off.",
        bench: &[Variant {
            name: "idle-hold-50",
            value: Some(50),
            groups: "stress-nproc,stress-1,pipe,tbench",
            why: "idle hold (off by default, so the variant turns it on): \
                request-response workloads whose partner wakes just after a CPU idles",
        }],
    },
    IdleResumeUs => Tunable {
        name: "idle-resume-us",
        short: None,
        kind: Kind::OptMicros { min: 0, max: 1_000_000 },
        tune: None,
        help: "PM QoS idle resume latency in microseconds while running",
        long_help: "Ask the CPU idle governor (PM QoS, /dev/cpu_dma_latency) for idle \
            states that resume within this many microseconds while the scheduler \
            runs; restored on exit. Off when not given.",
        bench: &[],
    },
    DeferredPreempt => Tunable {
        name: "deferred-preempt",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("deferred_preempt"),
        help: "A timer preempts once the running task has had --wakeup-gran-us",
        long_help: "A wakee entitled to preempt a task that has not yet run \
            --wakeup-gran-us has a timer preempt that task as soon as it has. \
            Ablated: the wakee waits for the end of the task's slice.",
        bench: &[Variant {
            name: "no-deferred-preempt",
            value: None,
            groups: WAKEUP_GROUPS,
            why: "deferred wakeup preemption: a timer preempts the running task once \
                it has had --wakeup-gran-us, instead of the wakee waiting out the \
                slice (wakeup latency)",
        }],
    },
    FastYield => Tunable {
        name: "fast-yield",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("fast_yield"),
        help: "sched_yield() with nothing waiting keeps the CPU",
        long_help: "sched_yield() with nothing else waiting on the CPU lets the task \
            go on, without the dispatch, stop, enqueue and run round trip. Ablated: \
            every yield takes the round trip.",
        bench: &[Variant {
            name: "no-fast-yield",
            value: None,
            groups: STRESS_GROUPS,
            why: "ops.yield: sched_yield() with nothing waiting keeps the CPU \
                (stress-ng yield)",
        }],
    },
    HeadLag => Tunable {
        name: "head-lag",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("head_lag"),
        help: "A blocking task's lag counts from the queue head when that is ahead",
        long_help: "A task that blocks keeps its lag (how far behind its CPU's clock \
            it is) for its wakeup. The clock moves only when a task starts, so it is \
            taken as the vtime of the task queued next on the CPU when that is ahead: \
            a sleeper that preempted a CPU hog is measured against where the hog got \
            to, not where it started. Ablated: from the CPU's clock only.",
        bench: &[Variant {
            name: "no-head-lag",
            value: None,
            groups: WAKEUP_GROUPS,
            why: "a blocking task's lag measured from the DSQ head when that is ahead \
                of the CPU's clock (a sleeper that preempts a hog keeps its credit: \
                wakeup latency against hogs)",
        }],
    },
    DisplacedHead => Tunable {
        name: "displaced-head",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("displaced_head"),
        help: "Head lag counts only the head that the blocking task displaced",
        long_help: "Head lag counts only the queue head that the blocking task \
            displaced: the task that ran on the CPU before it and stopped still \
            runnable. A task that wakes another and blocks is not credited with its \
            wakee's lead. Ablated: any head counts.",
        bench: &[Variant {
            name: "no-displaced-head",
            value: None,
            groups: WAKEUP_GROUPS,
            why: "head lag counts only the DSQ head that the blocking task displaced \
                from the CPU, not any head, such as a wakee it queued itself (fairness \
                beside a pipe pair, wakee_share; the variant shows what it costs in \
                wakeup latency against hogs and producer/consumer loads)",
        }],
    },
    RcuFirst => Tunable {
        name: "rcu-first",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("rcu_first"),
        help: "A task preempted inside an RCU read-side section is queued first",
        long_help: "A task preempted inside an RCU read-side critical section holds \
            up every RCU grace period until it runs again, and kernels without RCU \
            priority boosting rely on the scheduler to run it soon: it is queued \
            ahead of everything waiting on its CPU. Ablated: queued by vtime.",
        bench: &[Variant {
            name: "no-rcu-first",
            value: None,
            groups: "stress-nproc,stress-1,hackbench",
            why: "a task preempted inside an RCU read-side section queued by vtime, \
                not first on its CPU (a reliability fix against RCU stalls; the \
                variant shows what it costs: tasks that spend their time in the \
                kernel)",
        }],
    },
    LightSlice => Tunable {
        name: "light-slice",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("light_slice"),
        help: "Tasks lighter than nice 0 get slices cut to their weight",
        long_help: "A task whose own weight (its nice level, not its cgroups' share) \
            is under nice 0's runs at most --slice-us times its weight over nice \
            0's, and at least a sixteenth of --slice-us: the same share in shorter, \
            more frequent turns. Ablated: every task gets the whole slice.",
        bench: &[Variant {
            name: "no-light-slice",
            value: None,
            groups: STRESS_GROUPS,
            why: "slices cut to the weight of tasks lighter than nice 0, ended by a \
                timer, where something waits: of the suite only stress-ng schedpolicy \
                and race-sched set nice levels, so this line shows mostly what it \
                costs; what it is for is measured by the light_slice and soak_shares \
                guest tests",
        }],
    },
    WakeLocal => Tunable {
        name: "wake-local",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("wake_local"),
        help: "A wakee of a waker that usually blocks goes to their CPU's local queue",
        long_help: "A wakee that does not preempt, woken on its waker's CPU by a task \
            with short runs whose last run ended blocking, while nothing else waits \
            there, goes to that CPU's local queue, to run when the waker blocks \
            without an ops.dispatch(). Ablated: it is queued on the CPU's queue.",
        bench: &[Variant {
            name: "no-wake-local",
            value: None,
            groups: PAIR_GROUPS,
            why: "a non-preempting wakee of a waker that usually blocks goes to their \
                CPU's local DSQ when nothing else waits there, skipping an \
                ops.dispatch() and a DSQ move: pipe and socket ping-pongs, \
                producer/consumer loads",
        }],
    },
    HogHysteresis => Tunable {
        name: "hog-hysteresis",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("hog_hysteresis"),
        help: "A CPU hog stays one until its runs average under half of --hog-run-us",
        long_help: "A CPU hog leaves the class only when its runs average under half \
            of --hog-run-us, so a busy loop that a periodic sleeper preempts stays in \
            it. Ablated: it leaves as soon as they average less than --hog-run-us.",
        bench: &[Variant {
            name: "no-hog-hysteresis",
            value: None,
            groups: WAKEUP_GROUPS,
            why: "a CPU hog (preempted by a wakeup at --hog-gran-us) leaves the class \
                only when its runs average under half of --hog-run-us: a periodic \
                sleeper against CPU hogs, producer/consumer loads",
        }],
    },
    RtAway => Tunable {
        name: "rt-away",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("rt_away"),
        help: "A wakee whose CPU runs an RT task goes to one that runs ours",
        long_help: "When no CPU is idle, a task whose previous CPU runs an RT or \
            deadline task goes to a CPU that runs one of ours instead. Ablated: it \
            goes back there all the same, to wait until another CPU finds nothing of \
            its own to run or the kernel's ext server runs it.",
        bench: &[],
    },
    RtRescue => Tunable {
        name: "rt-rescue",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("rt_rescue"),
        help: "A task queued where an RT task runs is taken by another CPU first",
        long_help: "A task queued on a CPU that an RT or deadline task holds is taken \
            by the next CPUs that run ours, before their own queues. Ablated: it \
            waits until its CPU is free, another CPU has nothing of its own to run, \
            or the kernel's ext server runs it.",
        bench: &[Variant {
            name: "no-rt-rescue",
            value: None,
            groups: STRESS_GROUPS,
            why: "a CPU takes the head of a nearby CPU's DSQ that an RT or deadline \
                task holds before its own: stress-ng mutex (SCHED_FIFO threads that \
                change their priorities) and schedpolicy (tasks that switch \
                scheduling class)",
        }],
    },
    PinnedFastpath => Tunable {
        name: "pinned-fastpath",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("pinned_fastpath"),
        help: "Fast path 1: a task with one possible CPU goes straight to its queue",
        long_help: "Fast path 1: a task allowed on one CPU (or migration-disabled) \
            goes straight to its CPU's queue. Ablated: it takes the generic path \
            (idle scan, kicks).",
        bench: &[Variant {
            name: "no-pinned-fastpath",
            value: None,
            groups: "stress-nproc,stress-1,execl,forksleep",
            why: "pinned and migration-disabled tasks: execl runs pinned to cpu 0 \
                (exec), forksleep's fork/exit/timer wakeups involve per-CPU kthreads",
        }],
    },
    CheapWakeup => Tunable {
        name: "cheap-wakeup",
        short: None,
        kind: Kind::Mechanism,
        tune: Some("cheap_wakeup"),
        help: "Fast path 2: wakeups skip idle searches and checks that cannot matter",
        long_help: "Fast path 2: a wakeup claims an idle previous CPU without the \
            kernel's idle search and skips the search when no CPU is idle, enqueue \
            skips the idle scan that select_cpu has just done, and preemption checks \
            that cannot matter are skipped. Ablated: every search, scan and check \
            runs.",
        bench: &[Variant {
            name: "no-cheap-wakeup",
            value: None,
            groups: "stress-nproc,stress-1,pipe,hackbench,tbench,cyclictest",
            why: "wakeup path (prev-idle claim, no rescan, no kick): request-response \
                and wakeup-latency workloads",
        }],
    },
    CompactLayout => Tunable {
        name: "compact-layout",
        short: None,
        kind: Kind::Mechanism,
        tune: None,
        help: "Fast path 4: each CPU counts on cache lines of its own",
        long_help: "Fast path 4: each CPU keeps its counters on cache lines of its \
            own. Ablated: the counters are atomic adds to one array that all CPUs \
            share.",
        bench: &[Variant {
            name: "no-compact-layout",
            value: None,
            groups: "stress-nproc,stress-1,hackbench",
            why: "counters in one shared array of atomics instead of per-CPU lines: \
                many CPUs scheduling at once (stress-ng nproc, hackbench)",
        }],
    },
    BranchHints => Tunable {
        name: "branch-hints",
        short: None,
        kind: Kind::Build {
            feature: "no-branch-hints",
            on: !cfg!(feature = "no-branch-hints"),
        },
        tune: None,
        help: "likely()/unlikely() hints on the hot paths",
        long_help: "likely()/unlikely() hints on the BPF hot paths, where branch \
            counts justify them. Left out only by a build with cargo feature \
            no-branch-hints.",
        bench: &[Variant {
            name: "no-branch-hints",
            value: None,
            groups: STRESS_GROUPS,
            why: "branch hints (a second build without likely()/unlikely()): the \
                stress-ng scheduler stressors' geomean",
        }],
    },
}

/// The command-line flag that ablates mechanisms, `set`'s key for them and
/// their word in the config line.
pub const ABLATE: &str = "ablate";

/// What `ablate` takes for no mechanism at all.
const NONE: &str = "none";

pub fn row(id: Id) -> &'static Tunable {
    &TABLE[id as usize]
}

fn find(name: &str) -> Option<(usize, &'static Tunable)> {
    TABLE.iter().enumerate().find(|(_, t)| t.name == name)
}

/// The mechanisms `--ablate` takes, for messages.
fn mechanism_names() -> String {
    TABLE
        .iter()
        .filter(|t| t.kind == Kind::Mechanism)
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// One name `--ablate` takes: a mechanism's row, or None for `none`.
fn parse_ablate(s: &str) -> std::result::Result<Option<usize>, String> {
    if s == NONE {
        return Ok(None);
    }
    match find(s) {
        Some((i, t)) if t.kind == Kind::Mechanism => Ok(Some(i)),
        Some((
            _,
            Tunable {
                kind: Kind::Build { feature, .. },
                ..
            },
        )) => Err(format!(
            "only a build leaves it out (cargo build --release --features {feature})"
        )),
        _ => Err(format!("not a mechanism; one of: {}", mechanism_names())),
    }
}

/// A tunable's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Value {
    Num(u64),
    /// An optional value not given.
    Unset,
    /// A mechanism: on, or ablated.
    On(bool),
}

/// Every tunable's value, by row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings(Vec<Value>);

impl Default for Settings {
    fn default() -> Self {
        Self(TABLE.iter().map(Tunable::default_value).collect())
    }
}

impl Settings {
    fn get(&self, id: Id) -> Value {
        self.0.get(id as usize).copied().unwrap_or(Value::Unset)
    }

    /// A value option's number (0 for one not given).
    pub fn num(&self, id: Id) -> u64 {
        match self.get(id) {
            Value::Num(n) => n,
            _ => 0,
        }
    }

    /// An optional value option's number, if given.
    pub fn opt(&self, id: Id) -> Option<u64> {
        match self.get(id) {
            Value::Num(n) => Some(n),
            _ => None,
        }
    }

    /// Whether a mechanism is on (not ablated).
    pub fn on(&self, id: Id) -> bool {
        !matches!(self.get(id), Value::On(false))
    }

    /// The values the command line gave, or their defaults.
    pub fn from_matches(m: &clap::ArgMatches) -> Self {
        let mut s = Self::default();
        for (i, t) in TABLE.iter().enumerate() {
            if !t.is_mechanism() {
                if let Some(&n) = m.get_one::<u64>(t.name) {
                    s.0[i] = Value::Num(n);
                }
            }
        }
        for i in m
            .get_many::<Option<usize>>(ABLATE)
            .into_iter()
            .flatten()
            .flatten()
        {
            s.0[*i] = Value::On(false);
        }
        s
    }

    /// The mechanisms ablated, by name, in table order.
    fn ablated(&self) -> Vec<&'static str> {
        TABLE
            .iter()
            .zip(&self.0)
            .filter(|(_, v)| **v == Value::On(false))
            .map(|(t, _)| t.name)
            .collect()
    }

    /// The config line: `NAME=VALUE` for every value option, then
    /// `ablate=` the mechanisms ablated (`none`). The stats print it and
    /// the JSON carries it; `set` takes its live words as they are.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        for (t, v) in TABLE.iter().zip(&self.0) {
            match v {
                Value::Num(n) => {
                    let _ = write!(out, "{}={n} ", t.name);
                }
                Value::Unset => {
                    let _ = write!(out, "{}=off ", t.name);
                }
                Value::On(_) => {}
            }
        }
        let _ = write!(out, "{ABLATE}={}", self.ablated_list());
        out
    }

    /// The mechanisms ablated, as `ablate=` takes them.
    fn ablated_list(&self) -> String {
        let ablated = self.ablated();
        if ablated.is_empty() {
            NONE.to_string()
        } else {
            ablated.join(",")
        }
    }

    /// The settings a config line describes (what `describe` wrote).
    pub fn from_config(config: &str) -> Result<Self> {
        let mut s = Self::default();
        for word in config.split_whitespace() {
            let (key, value) = word
                .split_once('=')
                .ok_or_else(|| anyhow!("'{word}' in the config line is not KEY=VALUE"))?;
            if key == ABLATE {
                for (t, v) in TABLE.iter().zip(s.0.iter_mut()) {
                    if t.is_mechanism() {
                        *v = Value::On(true);
                    }
                }
                for name in value.split(',').filter(|n| *n != NONE) {
                    match find(name) {
                        Some((i, t)) if t.is_mechanism() => s.0[i] = Value::On(false),
                        _ => bail!("'{name}' in the config line is not a mechanism"),
                    }
                }
                continue;
            }
            let Some((i, t)) = find(key).filter(|(_, t)| !t.is_mechanism()) else {
                bail!("'{key}' in the config line is not an option");
            };
            s.0[i] =
                match (t.kind, value) {
                    (Kind::OptMicros { .. }, "off") => Value::Unset,
                    _ => Value::Num(value.parse().with_context(|| {
                        format!("'{word}' in the config line: not a whole number")
                    })?),
                };
        }
        Ok(s)
    }

    /// The command-line flags that give these settings: every value that is
    /// not its default, and the mechanisms ablated (those a build left out
    /// are no flag's).
    pub fn flags(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (t, v) in TABLE.iter().zip(&self.0) {
            if let (Value::Num(n), false) = (v, *v == t.default_value()) {
                out.extend([format!("--{}", t.name), n.to_string()]);
            }
        }
        let ablated: Vec<&str> = TABLE
            .iter()
            .zip(&self.0)
            .filter(|(t, v)| t.kind == Kind::Mechanism && **v == Value::On(false))
            .map(|(t, _)| t.name)
            .collect();
        if !ablated.is_empty() {
            out.extend([format!("--{ABLATE}"), ablated.join(",")]);
        }
        out
    }

    /// The value the BPF side reads from struct fp_tune's field `field`:
    /// microseconds times 1000, or 1 for a mechanism on. A field no row
    /// names is an error.
    pub fn tune_value(&self, field: &str) -> Result<u64> {
        let (i, t) = TABLE
            .iter()
            .enumerate()
            .find(|(_, t)| t.tune == Some(field))
            .ok_or_else(|| anyhow!("struct fp_tune's {field} has no row in src/tunables.rs"))?;
        Ok(match (t.kind, self.0[i]) {
            (_, Value::On(on)) => u64::from(on),
            (_, Value::Num(us)) => us
                .checked_mul(1000)
                .ok_or_else(|| anyhow!("{}: {us} us overflows in ns", t.name))?,
            (_, Value::Unset) => 0,
        })
    }

    /// `set KEY=VALUE`: `value` checked as the command line checks
    /// `--KEY=VALUE`, by `check`, which parses a command line. A value
    /// option's KEY is its flag; `ablate=LIST` makes exactly the live
    /// mechanisms in LIST (comma-separated, or `none`) ablated. What is
    /// fixed at start cannot change.
    pub fn apply(
        &mut self,
        key: &str,
        value: &str,
        check: impl Fn(&str) -> Result<Settings>,
    ) -> Result<()> {
        let given = || check(&format!("--{key}={value}"));
        if key == ABLATE {
            let given = given()?;
            for (i, t) in TABLE.iter().enumerate() {
                if t.kind != Kind::Mechanism || given.0[i] == self.0[i] {
                    continue;
                }
                if !t.live() && self.0[i] == Value::On(false) {
                    bail!(
                        "{} was ablated at start and stays so: keep it in the list",
                        t.name
                    );
                }
                if !t.live() {
                    bail!("{} is fixed at start: it cannot be ablated live", t.name);
                }
                self.0[i] = given.0[i];
            }
            return Ok(());
        }
        match find(key) {
            Some((_, t)) if t.is_mechanism() => bail!(
                "a mechanism: {ABLATE}=LIST names those off, e.g. {ABLATE}={key} (now: {ABLATE}={})",
                self.ablated_list()
            ),
            Some((i, t)) if t.live() => {
                self.0[i] = given()?.0[i];
                Ok(())
            }
            Some(_) => bail!("fixed at start; `set` takes: {}", live_keys()),
            None => bail!("not a tunable; `set` takes: {}", live_keys()),
        }
    }
}

/// `set`'s keys, for messages and `set --help`.
pub fn live_keys() -> String {
    let mut keys: Vec<String> = TABLE
        .iter()
        .filter(|t| t.live() && !t.is_mechanism())
        .map(|t| t.name.to_string())
        .collect();
    keys.push(format!("{ABLATE}=LIST"));
    keys.join(", ")
}

/// The mechanisms `set ablate=` can change, for `set --help`.
pub fn live_mechanisms() -> String {
    TABLE
        .iter()
        .filter(|t| t.kind == Kind::Mechanism && t.live())
        .map(|t| t.name)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the config line `config` says mechanism `id` is ablated.
pub fn config_ablates(config: &str, id: Id) -> bool {
    config
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(ABLATE)?.strip_prefix('='))
        .any(|list| list.split(',').any(|n| n == row(id).name))
}

/// The table's flags: a value option each, and `--ablate` (hidden: for
/// ablation runs, not for use).
pub fn args() -> Vec<clap::Arg> {
    let mut args: Vec<clap::Arg> = TABLE
        .iter()
        .filter_map(|t| {
            let when = if t.live() {
                format!("A running instance takes `scx_fastpath set {}=US`.", t.name)
            } else {
                "Fixed at start: `set` cannot change it.".to_string()
            };
            let arg = clap::Arg::new(t.name)
                .long(t.name)
                .value_name("US")
                .help(t.help)
                .long_help(format!("{} {when}", t.long_help))
                .allow_negative_numbers(true);
            let arg = match t.short {
                Some(c) => arg.short(c),
                None => arg,
            };
            match t.kind {
                Kind::Micros { min, max, default } => Some(
                    arg.value_parser(int_in(min, max))
                        .default_value(default.to_string()),
                ),
                Kind::OptMicros { min, max } => Some(arg.value_parser(int_in(min, max))),
                Kind::Mechanism | Kind::Build { .. } => None,
            }
        })
        .collect();
    args.push(
        clap::Arg::new(ABLATE)
            .long(ABLATE)
            .value_name("NAME")
            .help("Turn mechanism NAME off (repeatable; comma-separated)")
            .action(clap::ArgAction::Append)
            .value_delimiter(',')
            .value_parser(parse_ablate)
            .hide(true),
    );
    args
}

/// `--list-ablations`: the benchmark's variants, one a line,
/// NAME<TAB>SWITCH<TAB>GROUPS<TAB>WHY, for scripts/bench. SWITCH is the
/// variant's command-line arguments, or `--features F` for a build.
pub fn ablation_list() -> String {
    let mut out = String::new();
    for t in TABLE {
        for v in t.bench {
            let switch = match (t.kind, v.value) {
                (Kind::Build { feature, .. }, _) => format!("--features {feature}"),
                (Kind::Mechanism, _) => format!("--{ABLATE} {}", t.name),
                (_, Some(n)) => format!("--{} {n}", t.name),
                (_, None) => continue,
            };
            let why = v.why.split_whitespace().collect::<Vec<_>>().join(" ");
            let _ = writeln!(out, "fastpath-{}\t{switch}\t{}\t{why}", v.name, v.groups);
        }
    }
    out
}

/// `--readme-options`: the README's option table, in Markdown.
pub fn readme_table() -> String {
    let cell = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::from("| Option | Default | Live | What it does |\n|---|---|---|---|\n");
    for t in TABLE.iter().filter(|t| !t.is_mechanism()) {
        let flag = match t.short {
            Some(c) => format!("`-{c}`, `--{} US`", t.name),
            None => format!("`--{} US`", t.name),
        };
        let default = match t.kind {
            Kind::Micros { min, max, default } => format!("{default} ({min}..={max})"),
            Kind::OptMicros { min, max } => format!("off ({min}..={max})"),
            _ => String::new(),
        };
        let live = if t.live() { "yes" } else { "no" };
        let _ = writeln!(
            out,
            "| {flag} | {default} | {live} | {} |",
            cell(t.long_help)
        );
    }
    out.push_str(
        "\n| Mechanism (`--ablate NAME` turns it off) | Live | What it does |\n|---|---|---|\n",
    );
    for t in TABLE.iter().filter(|t| t.is_mechanism()) {
        let live = if t.live() { "yes" } else { "no" };
        let _ = writeln!(out, "| `{}` | {live} | {} |", t.name, cell(t.long_help));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    include!(concat!(env!("OUT_DIR"), "/tune_fields.rs"));

    #[test]
    fn ids_are_rows() {
        assert_eq!(ALL_IDS.len(), TABLE.len());
        for (i, id) in ALL_IDS.iter().enumerate() {
            assert_eq!(*id as usize, i, "{id:?}");
        }
    }

    /// Every struct fp_tune field (intf.h, read by build.rs) has exactly one
    /// row, and every row's field is in the struct.
    #[test]
    fn every_tune_field_has_one_row_and_back() {
        for f in TUNE_FIELDS {
            let rows: Vec<&str> = TABLE
                .iter()
                .filter(|t| t.tune == Some(f))
                .map(|t| t.name)
                .collect();
            assert_eq!(rows.len(), 1, "struct fp_tune's {f}: rows {rows:?}");
        }
        for t in TABLE {
            if let Some(f) = t.tune {
                assert!(
                    TUNE_FIELDS.contains(&f),
                    "{}: no field {f} in fp_tune",
                    t.name
                );
                let ns = matches!(t.kind, Kind::Micros { .. } | Kind::OptMicros { .. });
                assert_eq!(f.ends_with("_ns"), ns, "{}: field {f}", t.name);
            }
        }
    }

    #[test]
    fn names_are_unique_flags() {
        let mut names: Vec<&str> = TABLE.iter().map(|t| t.name).collect();
        names.push(ABLATE);
        let n = names.len();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), n, "a name is used twice");
        for t in TABLE {
            assert!(
                t.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}",
                t.name
            );
            assert!(
                !t.help.ends_with('.'),
                "{}: -h lines end without a stop",
                t.name
            );
            assert!(t.long_help.ends_with('.'), "{}", t.name);
        }
    }

    /// A mechanism's variant ablates it and is named for it, which the
    /// report reads as "that mechanism off"; a value option's gives it a
    /// value in its range, not its default.
    #[test]
    fn bench_variants_fit_their_rows() {
        for t in TABLE {
            for v in t.bench {
                match t.kind {
                    Kind::Mechanism | Kind::Build { .. } => {
                        assert_eq!(v.name, format!("no-{}", t.name));
                        assert_eq!(v.value, None, "{}", v.name);
                    }
                    Kind::Micros { min, max, default } => {
                        let n = v.value.expect("a value option's variant has a value");
                        assert!((min..=max).contains(&n) && n != default, "{}", v.name);
                    }
                    Kind::OptMicros { min, max } => {
                        let n = v.value.expect("a value option's variant has a value");
                        assert!((min..=max).contains(&n), "{}", v.name);
                    }
                }
                assert!(!v.groups.is_empty() && !v.why.is_empty(), "{}", v.name);
            }
        }
        let list = ablation_list();
        for line in list.lines() {
            assert_eq!(line.split('\t').count(), 4, "{line}");
        }
        assert!(list.contains("fastpath-no-head-lag\t--ablate head-lag\t"));
        assert!(list.contains("fastpath-no-pull\t--pull-gran-us 0\t"));
        assert!(list.contains("fastpath-no-branch-hints\t--features no-branch-hints\t"));
    }

    #[test]
    fn config_line_round_trips() {
        let d = Settings::default();
        assert_eq!(
            d.describe(),
            "slice-us=5000 wakeup-gran-us=1000 hog-gran-us=0 hog-run-us=1000 \
             pull-gran-us=1000 idle-hold-us=0 idle-resume-us=off ablate=none"
        );
        assert_eq!(Settings::from_config(&d.describe()).unwrap(), d);
        assert!(d.flags().is_empty());
        let mut s = d.clone();
        s.0[Id::SliceUs as usize] = Value::Num(3000);
        s.0[Id::IdleResumeUs as usize] = Value::Num(0);
        s.0[Id::HeadLag as usize] = Value::On(false);
        s.0[Id::CompactLayout as usize] = Value::On(false);
        let line = s.describe();
        assert!(line.starts_with("slice-us=3000 "), "{line}");
        assert!(line.contains(" idle-resume-us=0 "), "{line}");
        assert!(line.ends_with(" ablate=head-lag,compact-layout"), "{line}");
        assert_eq!(Settings::from_config(&line).unwrap(), s);
        assert_eq!(
            s.flags(),
            [
                "--slice-us",
                "3000",
                "--idle-resume-us",
                "0",
                "--ablate",
                "head-lag,compact-layout"
            ]
        );
        assert!(config_ablates(&line, Id::CompactLayout));
        assert!(!config_ablates(&line, Id::FastYield));
        assert!(Settings::from_config("slice-us=x").is_err());
        assert!(Settings::from_config("bogus=1").is_err());
        assert!(Settings::from_config("ablate=slice-us").is_err());
    }

    #[test]
    fn tune_values_scale_and_switch() {
        let mut s = Settings::default();
        assert_eq!(s.tune_value("slice_ns").unwrap(), 5_000_000);
        assert_eq!(s.tune_value("head_lag").unwrap(), 1);
        s.0[Id::HeadLag as usize] = Value::On(false);
        assert_eq!(s.tune_value("head_lag").unwrap(), 0);
        assert!(s.tune_value("no_such_field").is_err());
    }

    /// The README's option table is `scx_fastpath --readme-options`.
    #[test]
    fn readme_shows_options_table() {
        let block = crate::readme::block(
            "<!-- options: scx_fastpath --readme-options -->\n",
            "<!-- /options -->",
        );
        assert_eq!(
            block,
            readme_table(),
            "README's option table is stale: paste `scx_fastpath --readme-options` between the markers"
        );
    }

    #[test]
    fn readme_table_has_every_row() {
        let t = readme_table();
        for row in TABLE {
            assert!(
                t.contains(&format!("`{}", row.name)) || t.contains(&format!("--{}", row.name))
            );
        }
    }
}
