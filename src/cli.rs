//! Command-line options.

use clap::Parser;

use crate::bpf_intf;

/// scx_fastpath: a sched_ext CPU scheduler with weighted virtual-time
/// fairness and fast paths for pinned tasks, cheap wakeups and brief idle
/// holds. Runs until interrupted; the kernel returns to its default
/// scheduler when it exits.
#[derive(Parser, Debug, Clone)]
#[command(name = "scx_fastpath", version)]
pub struct Opts {
    /// Time slice in microseconds: how long a task runs before a task waiting
    /// for its CPU gets a turn. Waking tasks preempt earlier when they are
    /// ahead in virtual time.
    #[arg(
        short = 's',
        long,
        value_name = "US",
        default_value_t = 5000,
        value_parser = clap::value_parser!(u64).range(
            bpf_intf::fp_consts_FP_SLICE_US_MIN as u64..=bpf_intf::fp_consts_FP_SLICE_US_MAX as u64
        )
    )]
    pub slice_us: u64,

    /// Print a line of scheduler counters every SECS seconds (0: off).
    #[arg(long, value_name = "SECS", default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=3600))]
    pub stats: u64,

    /// Bytes of the debug dump the kernel fills in when it ejects the
    /// scheduler (0: the kernel's default size).
    #[arg(long, value_name = "BYTES", default_value_t = 0)]
    pub exit_dump_len: u32,

    /// Verbose output: debug messages, including libbpf's. Repeat for more.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}
