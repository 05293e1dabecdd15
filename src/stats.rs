//! The scheduler's counters: read from the BPF side's per-CPU arrays,
//! summed, and printed as one line per interval.

use std::fmt::Write;
use std::time::Duration;

use crate::bpf_intf;

pub const NR_STATS: usize = bpf_intf::fp_stat_idx_FP_NR_STATS as usize;

/// Short names of the counters in enum fp_stat_idx order, as printed.
pub const STAT_NAMES: [&str; NR_STATS] = [
    "direct_local",
    "enq_cpu_dsq",
    "enq_shared",
    "disp_cpu_dsq",
    "disp_shared",
    "keep_prev",
    "kick_idle",
    "wake_preempt",
];

/// A point-in-time sum of every CPU's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub cnt: [u64; NR_STATS],
    pub queued_shared: u64,
    pub queued_cpu: u64,
}

impl Snapshot {
    /// Sum per-CPU counter arrays.
    pub fn from_per_cpu<'a>(per_cpu: impl Iterator<Item = &'a [u64; NR_STATS]>) -> Self {
        let mut snap = Snapshot::default();
        for cpu in per_cpu {
            for (sum, v) in snap.cnt.iter_mut().zip(cpu.iter()) {
                *sum = sum.wrapping_add(*v);
            }
        }
        snap
    }

    /// Counter increments since `prev`.
    pub fn delta(&self, prev: &Snapshot) -> [u64; NR_STATS] {
        let mut d = [0u64; NR_STATS];
        for (i, v) in d.iter_mut().enumerate() {
            *v = self.cnt[i].wrapping_sub(prev.cnt[i]);
        }
        d
    }

    /// One line: rate per second of each counter over `elapsed`, then the
    /// queue depths.
    pub fn format_line(&self, prev: &Snapshot, elapsed: Duration) -> String {
        let secs = elapsed.as_secs_f64().max(1e-3);
        let mut line = String::new();
        for (name, d) in STAT_NAMES.iter().zip(self.delta(prev).iter()) {
            // Writing to a String cannot fail.
            let _ = write!(line, "{name}={:.0}/s ", *d as f64 / secs);
        }
        let _ = write!(
            line,
            "queued_shared={} queued_cpu={}",
            self.queued_shared, self.queued_cpu
        );
        line
    }

    /// One line of running totals since the scheduler attached.
    pub fn format_totals(&self) -> String {
        STAT_NAMES
            .iter()
            .zip(self.cnt.iter())
            .map(|(name, v)| format!("{name}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_every_cpu() {
        let a = [1u64; NR_STATS];
        let mut b = [0u64; NR_STATS];
        b[2] = 5;
        let s = Snapshot::from_per_cpu([a, b].iter());
        assert_eq!(s.cnt[0], 1);
        assert_eq!(s.cnt[2], 6);
    }

    #[test]
    fn rates_are_per_second() {
        let prev = Snapshot::default();
        let mut now = Snapshot::default();
        now.cnt[0] = 300;
        now.queued_shared = 4;
        let line = now.format_line(&prev, Duration::from_secs(3));
        assert!(line.starts_with("direct_local=100/s "), "{line}");
        assert!(line.ends_with("queued_shared=4 queued_cpu=0"), "{line}");
    }

    #[test]
    fn totals_name_every_counter() {
        let mut now = Snapshot::default();
        now.cnt[NR_STATS - 1] = 7;
        let line = now.format_totals();
        assert!(line.starts_with("direct_local=0 "), "{line}");
        assert!(line.ends_with(" wake_preempt=7"), "{line}");
        assert_eq!(line.split(' ').count(), NR_STATS);
    }

    #[test]
    fn names_match_the_bpf_enum() {
        assert_eq!(STAT_NAMES.len(), NR_STATS);
        assert_eq!(
            STAT_NAMES[bpf_intf::fp_stat_idx_FP_STAT_WAKE_PREEMPT as usize],
            "wake_preempt"
        );
        assert_eq!(
            STAT_NAMES[bpf_intf::fp_stat_idx_FP_STAT_KEEP_PREV as usize],
            "keep_prev"
        );
    }
}
