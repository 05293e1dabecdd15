//! The scheduler's counters: read from the BPF side's per-CPU arrays,
//! summed, printed as one line per interval, and served on the scx_stats
//! socket.

use std::fmt::Write;

use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::bpf_intf;

pub const NR_STATS: usize = bpf_intf::fp_stat_idx_FP_NR_STATS as usize;

#[cfg_attr(not(feature = "branch-profile"), allow(dead_code))]
pub const NR_BRANCHES: usize = bpf_intf::fp_branch_idx_FP_NR_BRANCHES as usize;

// STAT_NAMES, STAT_DESCS and BRANCH_NAMES, made by build.rs from the enums
// in src/bpf/intf.h: adding a counter there is all it takes.
include!(concat!(env!("OUT_DIR"), "/names.rs"));

#[cfg_attr(not(feature = "branch-profile"), allow(dead_code))]
/// Per branch: how often its condition was false, and true, summed over CPUs.
pub type BranchCounts = [[u64; 2]; NR_BRANCHES];

#[cfg_attr(not(feature = "branch-profile"), allow(dead_code))]
/// A table of branch frequencies, one row per branch, with the hint the
/// counts justify: a branch that goes one way at least 95% of the time.
pub fn format_branch_table(counts: &BranchCounts) -> String {
    let mut out =
        String::from("| branch | true | false | true % | hint |\n|---|---:|---:|---:|---|\n");
    for (name, c) in BRANCH_NAMES.iter().zip(counts.iter()) {
        let total = c[0] + c[1];
        let (pct, hint) = if total == 0 {
            ("-".to_string(), "none (never reached)")
        } else {
            let p = 100.0 * c[1] as f64 / total as f64;
            let hint = if p >= 95.0 {
                "likely"
            } else if p <= 5.0 {
                "unlikely"
            } else {
                "none"
            };
            (format!("{p:.1}"), hint)
        };
        let _ = writeln!(out, "| {name} | {} | {} | {pct} | {hint} |", c[1], c[0]);
    }
    out
}

/// One line per counter: its name and what it counts (--help-stats).
pub fn describe_counters() -> String {
    let width = STAT_NAMES.iter().map(|n| n.len()).max().unwrap_or(0);
    STAT_NAMES
        .iter()
        .zip(STAT_DESCS.iter())
        .map(|(name, desc)| format!("{name:<width$}  {desc}\n"))
        .collect()
}

// Counters: a field per counter, made by build.rs from the same enum.
include!(concat!(env!("OUT_DIR"), "/counters.rs"));

/// The adaptive idle-hold windows of the CPUs, in microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "the CPUs' adaptive idle-hold windows, in microseconds")]
pub struct HoldWindows {
    #[stat(desc = "shortest window of any CPU")]
    pub min_us: f64,
    #[stat(desc = "average window")]
    pub avg_us: f64,
    #[stat(desc = "longest window of any CPU")]
    pub max_us: f64,
}

impl HoldWindows {
    pub fn from_ns(windows: &[u64]) -> Self {
        if windows.is_empty() {
            return Self::default();
        }
        let us: Vec<f64> = windows.iter().map(|&ns| ns as f64 / 1000.0).collect();
        Self {
            min_us: us.iter().cloned().fold(f64::INFINITY, f64::min),
            avg_us: us.iter().sum::<f64>() / us.len() as f64,
            max_us: us.iter().cloned().fold(0.0, f64::max),
        }
    }
}

/// What the scheduler reports: a point-in-time sum of every CPU's counters
/// and the gauges. The same struct is printed by --stats, served on the
/// scx_stats socket, and read back by --monitor, which derives the rates
/// from two samples.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(top, desc = "scx_fastpath's statistics")]
pub struct Metrics {
    #[stat(desc = "milliseconds since the scheduler attached")]
    pub at_ms: u64,
    #[stat(desc = "the tunables in force")]
    pub config: String,
    #[stat(desc = "tasks waiting on the scheduler's DSQs")]
    pub queued: u64,
    #[stat(desc = "idle-hold windows")]
    pub hold: HoldWindows,
    #[stat(desc = "event counters")]
    pub counters: Counters,
}

impl Metrics {
    /// Sum per-CPU counter arrays.
    pub fn from_per_cpu<'a>(per_cpu: impl Iterator<Item = &'a [u64; NR_STATS]>) -> Self {
        let mut sum = [0u64; NR_STATS];
        for cpu in per_cpu {
            for (s, v) in sum.iter_mut().zip(cpu.iter()) {
                *s = s.wrapping_add(*v);
            }
        }
        Metrics {
            counters: Counters::from_array(&sum),
            ..Default::default()
        }
    }

    /// Counter increments since `prev`.
    pub fn delta(&self, prev: &Metrics) -> [u64; NR_STATS] {
        let (now, before) = (self.counters.to_array(), prev.counters.to_array());
        std::array::from_fn(|i| now[i].wrapping_sub(before[i]))
    }

    /// One line: rate per second of each counter since `prev`, then the
    /// gauges.
    pub fn format_line(&self, prev: &Metrics) -> String {
        let secs = (self.at_ms.saturating_sub(prev.at_ms) as f64 / 1000.0).max(1e-3);
        let mut line = String::new();
        for (name, d) in STAT_NAMES.iter().zip(self.delta(prev).iter()) {
            // Writing to a String cannot fail.
            let _ = write!(line, "{name}={:.0}/s ", *d as f64 / secs);
        }
        let _ = write!(
            line,
            "queued={} hold_window_us={:.0}/{:.0}/{:.0}",
            self.queued, self.hold.min_us, self.hold.avg_us, self.hold.max_us
        );
        line
    }

    /// One line of running totals since the scheduler attached.
    pub fn format_totals(&self) -> String {
        STAT_NAMES
            .iter()
            .zip(self.counters.to_array().iter())
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
        let s = Metrics::from_per_cpu([a, b].iter());
        assert_eq!(s.counters.to_array()[0], 1);
        assert_eq!(s.counters.to_array()[2], 6);
    }

    #[test]
    fn rates_are_per_second() {
        let prev = Metrics {
            at_ms: 1000,
            ..Default::default()
        };
        let mut cnt = [0u64; NR_STATS];
        cnt[0] = 300;
        let now = Metrics {
            at_ms: 4000,
            queued: 4,
            counters: Counters::from_array(&cnt),
            ..Default::default()
        };
        let line = now.format_line(&prev);
        assert!(line.starts_with("direct_local=100/s "), "{line}");
        assert!(line.contains(" queued=4 "), "{line}");
    }

    #[test]
    fn totals_name_every_counter() {
        let mut cnt = [0u64; NR_STATS];
        cnt[NR_STATS - 1] = 7;
        let now = Metrics {
            counters: Counters::from_array(&cnt),
            ..Default::default()
        };
        let line = now.format_totals();
        assert!(line.starts_with("direct_local=0 "), "{line}");
        assert!(
            line.ends_with(&format!(" {}=7", STAT_NAMES[NR_STATS - 1])),
            "{line}"
        );
        assert_eq!(line.split(' ').count(), NR_STATS);
    }

    #[test]
    fn counters_round_trip_in_enum_order() {
        let a: [u64; NR_STATS] = std::array::from_fn(|i| i as u64 * 3 + 1);
        let c = Counters::from_array(&a);
        assert_eq!(c.to_array(), a);
        assert_eq!(
            c.direct_local,
            a[bpf_intf::fp_stat_idx_FP_STAT_DIRECT_LOCAL as usize]
        );
        assert_eq!(
            c.keep_fair,
            a[bpf_intf::fp_stat_idx_FP_STAT_KEEP_FAIR as usize]
        );
        let m = Metrics {
            counters: c,
            ..Default::default()
        };
        let json = serde_json::to_string(&m).expect("serialize");
        let back: Metrics = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, m);
    }

    #[test]
    fn hold_windows_summarise_cpus() {
        let h = HoldWindows::from_ns(&[2000, 50000, 8000]);
        assert_eq!(h.min_us, 2.0);
        assert_eq!(h.max_us, 50.0);
        assert_eq!(h.avg_us, 20.0);
        assert_eq!(HoldWindows::from_ns(&[]), HoldWindows::default());
    }

    #[test]
    fn branch_hints_need_95_percent() {
        let mut c: BranchCounts = [[0; 2]; NR_BRANCHES];
        c[0] = [1, 99]; // true 99%: likely
        c[1] = [50, 50]; // none
        c[2] = [96, 4]; // true 4%: unlikely
        let t = format_branch_table(&c);
        assert!(
            t.contains("| select_holder | 99 | 1 | 99.0 | likely |"),
            "{t}"
        );
        assert!(
            t.contains("| select_prev_idle | 50 | 50 | 50.0 | none |"),
            "{t}"
        );
        assert!(
            t.contains("| select_idle_found | 4 | 96 | 4.0 | unlikely |"),
            "{t}"
        );
        assert!(
            t.contains("| enq_redirected | 0 | 0 | - | none (never reached) |"),
            "{t}"
        );
        assert_eq!(BRANCH_NAMES.len(), NR_BRANCHES);
    }

    #[test]
    fn readme_shows_help_stats() {
        let readme = include_str!("../README.md");
        let start = readme
            .find("<!-- help-stats -->\n```\n")
            .expect("README has no help-stats block");
        let block = &readme[start + "<!-- help-stats -->\n```\n".len()..];
        let block = &block[..block.find("```").expect("help-stats block not closed")];
        assert_eq!(
            block,
            describe_counters(),
            "README's help-stats block is stale"
        );
    }

    #[test]
    fn names_match_the_bpf_enum() {
        for (idx, name) in [
            (bpf_intf::fp_stat_idx_FP_STAT_DIRECT_LOCAL, "direct_local"),
            (bpf_intf::fp_stat_idx_FP_STAT_WAKE_PREEMPT, "wake_preempt"),
            (bpf_intf::fp_stat_idx_FP_STAT_KEEP_PREV, "keep_prev"),
            (bpf_intf::fp_stat_idx_FP_STAT_PINNED, "pinned"),
            (bpf_intf::fp_stat_idx_FP_STAT_HOLD_REDIRECT, "hold_redirect"),
            (bpf_intf::fp_stat_idx_FP_STAT_WAKE_QUEUED, "wake_queued"),
            (bpf_intf::fp_stat_idx_FP_STAT_CGROUP_WEIGHT, "cgroup_weight"),
        ] {
            assert_eq!(STAT_NAMES[idx as usize], name);
        }
        assert_eq!(
            BRANCH_NAMES[bpf_intf::fp_branch_idx_FP_BR_RUNNING_ADAPT as usize],
            "running_adapt"
        );
        for (name, desc) in STAT_NAMES.iter().zip(STAT_DESCS.iter()) {
            assert!(!name.is_empty() && !desc.is_empty(), "{name}: {desc}");
        }
    }
}
