//! The scheduler's counters: read from the BPF side's per-CPU arrays,
//! summed, printed as one line per interval, and served on the scx_stats
//! socket.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::io::ErrorKind;
use std::path::Path;

use anyhow::{Context, Result};

use scx_stats_derive::Stats;
use serde::{Deserialize, Serialize};

use crate::bpf_intf;

pub const NR_STATS: usize = bpf_intf::fp_stat_idx_FP_NR_STATS as usize;

#[cfg_attr(not(feature = "branch-profile"), allow(dead_code))]
pub const NR_BRANCHES: usize = bpf_intf::fp_branch_idx_FP_NR_BRANCHES as usize;

// STAT_NAMES, STAT_DESCS and BRANCH_NAMES, made by build.rs from the enums
// in src/bpf/intf.h: adding a counter there is all it takes. BRANCH_HINTS,
// from the FP_BRANCH() sites in the sources under src/bpf/.
include!(concat!(env!("OUT_DIR"), "/names.rs"));

#[cfg_attr(not(feature = "branch-profile"), allow(dead_code))]
/// Per branch: how often its condition was false, and true, summed over CPUs.
pub type BranchCounts = [[u64; 2]; NR_BRANCHES];

#[cfg_attr(not(feature = "branch-profile"), allow(dead_code))]
/// A table of branch frequencies, one row per branch, with the hint the
/// counts justify (a branch that goes one way at least 95% of the time)
/// beside the one the BPF source carries (BRANCH_HINTS), and a closing
/// line naming every branch where the two differ.
pub fn format_branch_table(counts: &BranchCounts) -> String {
    let mut out = String::from(
        "| branch | true | false | true % | counts justify | in source |\n|---|---:|---:|---:|---|---|\n",
    );
    let mut differ = Vec::new();
    for ((name, c), src) in BRANCH_NAMES.iter().zip(counts.iter()).zip(BRANCH_HINTS) {
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
        // A never-reached branch justifies no hint, and needs none.
        if !hint.starts_with(src) {
            differ.push(format!("{name} (counts: {hint}, source: {src})"));
        }
        let _ = writeln!(
            out,
            "| {name} | {} | {} | {pct} | {hint} | {src} |",
            c[1], c[0]
        );
    }
    if differ.is_empty() {
        out.push_str("\nThe source's hints agree with these counts on every branch.\n");
    } else {
        let _ = writeln!(
            out,
            "\nThe source's hints and these counts differ on: {}.",
            differ.join(", ")
        );
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

/// One CPU's figures: its DSQ's depth now, and totals, since the scheduler
/// attached, of what the scheduler did while running on that CPU (a
/// wakeup is counted on the waker's CPU, a dispatch on the dispatching
/// CPU). Each is a sum of counters (--help-stats).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, Stats)]
#[stat(desc = "one CPU's queue depth, and totals of what the scheduler did on it")]
pub struct CpuMetrics {
    #[stat(desc = "tasks waiting on this CPU's DSQ now")]
    pub queued: u64,
    #[stat(
        desc = "tasks placed (sent to a CPU or queued on a DSQ): direct_local + wake_prev_idle + enq_queued + pinned + hold_redirect"
    )]
    pub placed: u64,
    #[stat(desc = "placements that took a fast path: pinned + wake_prev_idle + wake_no_scan")]
    pub fastpath: u64,
    #[stat(desc = "tasks taken from a DSQ to run: disp_cpu_dsq + disp_stolen")]
    pub dispatched: u64,
    #[stat(desc = "... of which from another CPU's DSQ: disp_stolen")]
    pub stolen: u64,
    #[stat(desc = "wakeup preemptions: wake_preempt + wake_defer_kick")]
    pub preempted: u64,
}

impl CpuMetrics {
    /// From one CPU's counters (or the totals), in enum fp_stat_idx order.
    pub fn from_counts(cnt: &[u64; NR_STATS], queued: u64) -> Self {
        let c = Counters::from_array(cnt);
        let sum = |v: &[u64]| v.iter().fold(0u64, |a, b| a.wrapping_add(*b));
        Self {
            queued,
            placed: sum(&[
                c.direct_local,
                c.wake_prev_idle,
                c.enq_queued,
                c.pinned,
                c.hold_redirect,
            ]),
            fastpath: sum(&[c.pinned, c.wake_prev_idle, c.wake_no_scan]),
            dispatched: sum(&[c.disp_cpu_dsq, c.disp_stolen]),
            stolen: c.disp_stolen,
            preempted: sum(&[c.wake_preempt, c.wake_defer_kick]),
        }
    }
}

/// Where the kernel shows its own sched_ext event counters (kernel 6.16
/// and later): a `NAME VALUE` line per event.
pub const KERNEL_EVENTS: &str = "/sys/kernel/sched_ext/root/events";

/// The kernel's sched_ext event counters from `path`: an empty map when the
/// kernel has no such file. Lines that are not `NAME VALUE` are skipped.
pub fn read_kernel_events(path: &Path) -> Result<BTreeMap<String, u64>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e).with_context(|| format!("failed to read {}", path.display())),
    };
    Ok(parse_kernel_events(&text))
}

fn parse_kernel_events(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (name, value, rest) = (words.next()?, words.next()?, words.next());
            if rest.is_some() {
                return None;
            }
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect()
}

/// `part` as a percentage of `whole`: 0 when `whole` is, never above 100.
pub fn share_pct(part: f64, whole: f64) -> f64 {
    if whole > 0.0 {
        (100.0 * part / whole).min(100.0)
    } else {
        0.0
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
    #[stat(desc = "the running scheduler's version")]
    #[serde(default)]
    pub version: String,
    #[stat(
        desc = "per CPU, by CPU id: queue depth and counter totals (with --ablate compact-layout the counters are not kept per CPU and read 0)"
    )]
    #[serde(default)]
    pub cpus: Vec<CpuMetrics>,
    #[stat(
        desc = "the kernel's sched_ext event counters (/sys/kernel/sched_ext/root/events), totals; empty when the kernel has none"
    )]
    #[serde(default)]
    pub kernel_events: BTreeMap<String, u64>,
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

    /// Seconds from `prev` to this sample (at least a millisecond).
    pub fn secs_since(&self, prev: &Metrics) -> f64 {
        (self.at_ms.saturating_sub(prev.at_ms) as f64 / 1000.0).max(1e-3)
    }

    /// The lines printed per interval since `prev`: the summary, and with
    /// `all` (--all-counters) the rate of every counter too.
    pub fn format_lines(&self, prev: &Metrics, all: bool) -> Vec<String> {
        let mut lines = vec![self.format_summary(prev)];
        if all {
            lines.push(self.format_rates(prev));
        }
        lines
    }

    /// One short line (about 100 columns at the rates a 2-CPU guest sees)
    /// of what matters at a glance, per second since `prev`: tasks placed
    /// and the share that took a fast path, tasks dispatched to run and the
    /// share stolen from another CPU, slices renewed in place (keep_prev +
    /// keep_fair), wakeup preemptions, sched_yield() calls, tasks the
    /// starvation guard rescued, and the queue depth now. The groups are
    /// the per-CPU figures' (CpuMetrics), so their definitions live there.
    pub fn format_summary(&self, prev: &Metrics) -> String {
        let secs = self.secs_since(prev);
        let d = self.delta(prev);
        let g = CpuMetrics::from_counts(&d, self.queued);
        let c = Counters::from_array(&d);
        let rate = |v: u64| v as f64 / secs;
        let pct = |part: u64, whole: u64| share_pct(part as f64, whole as f64);
        let mut line = format!(
            "placed {:.0}/s fast {:.0}%, run {:.0}/s stolen {:.0}% kept {:.0}/s, preempt {:.0}/s, yield {:.0}/s",
            rate(g.placed),
            pct(g.fastpath, g.placed),
            rate(g.dispatched),
            pct(g.stolen, g.dispatched),
            rate(c.keep_prev.wrapping_add(c.keep_fair)),
            rate(g.preempted),
            rate(c.yield_kept.wrapping_add(c.yield_given)),
        );
        if c.starve_rescue > 0 {
            let _ = write!(line, ", rescued {:.0}/s", rate(c.starve_rescue));
        }
        let _ = write!(line, ", queued {}", self.queued);
        line
    }

    /// One line: rate per second of each counter since `prev`, then the
    /// gauges (--all-counters).
    pub fn format_rates(&self, prev: &Metrics) -> String {
        let secs = self.secs_since(prev);
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

    /// One line of JSON, as `--json` prints it (the schema --monitor's
    /// clients and the guest tests read).
    pub fn json_line(&self) -> Result<String> {
        serde_json::to_string(self).context("failed to serialize the stats as JSON")
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

/// One CPU's starvation-guard record (struct fp_rescue), as the loader took
/// it: of the tasks the guard ran there since the last take, the one that
/// had waited longest.
#[derive(Debug, Clone, PartialEq)]
pub struct Rescue {
    pub cpu: usize,
    pub waited_ms: u64,
    pub pid: i32,
    pub comm: String,
}

/// The log line for @nr rescues (starve_rescue's delta) since the last
/// report, with the records taken since, or None when the guard ran
/// nothing. A record can lag its count by one report (the guard counts,
/// then records); a count with no record says so.
pub fn format_rescues(nr: u64, rescues: &[Rescue]) -> Option<String> {
    if nr == 0 {
        return None;
    }
    let mut line = format!(
        "starvation guard: ran {nr} task{} that had waited over {} ms",
        if nr == 1 { "" } else { "s" },
        bpf_intf::fp_consts_FP_STARVE_MS,
    );
    match rescues.iter().max_by_key(|r| r.waited_ms) {
        Some(l) => {
            let _ = write!(
                line,
                "; the longest: {} (pid {}) on CPU {}, {} ms",
                l.comm, l.pid, l.cpu, l.waited_ms
            );
        }
        None => line.push_str("; the longest not yet recorded"),
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rescues_name_the_longest_wait() {
        let r = |cpu, waited_ms, pid, comm: &str| Rescue {
            cpu,
            waited_ms,
            pid,
            comm: comm.to_string(),
        };
        assert_eq!(format_rescues(0, &[]), None);
        // A record whose count went out with the last report.
        assert_eq!(format_rescues(0, &[r(0, 1200, 10, "a")]), None);
        let line = format_rescues(5, &[r(0, 1200, 10, "a"), r(1, 4100, 11, "kworker/1:1")])
            .expect("a report");
        assert_eq!(
            line,
            format!(
                "starvation guard: ran 5 tasks that had waited over {} ms; the longest: kworker/1:1 (pid 11) on CPU 1, 4100 ms",
                bpf_intf::fp_consts_FP_STARVE_MS
            )
        );
        let one = format_rescues(1, &[r(2, 1001, 7, "b")]).expect("a report");
        assert!(
            one.starts_with("starvation guard: ran 1 task that"),
            "{one}"
        );
        let unnamed = format_rescues(2, &[]).expect("a report");
        assert!(
            unnamed.ends_with("ms; the longest not yet recorded"),
            "{unnamed}"
        );
    }

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
        let line = now.format_rates(&prev);
        assert!(line.starts_with("direct_local=100/s "), "{line}");
        assert!(line.contains(" queued=4 "), "{line}");
        assert_eq!(now.format_lines(&prev, false).len(), 1);
        assert_eq!(now.format_lines(&prev, true)[1], line);
    }

    /// Metrics at `at_ms` with `queued` waiting and the given counters set.
    fn sample(at_ms: u64, queued: u64, set: &[(u32, u64)]) -> Metrics {
        let mut cnt = [0u64; NR_STATS];
        for &(idx, v) in set {
            cnt[idx as usize] = v;
        }
        Metrics {
            at_ms,
            queued,
            counters: Counters::from_array(&cnt),
            ..Default::default()
        }
    }

    #[test]
    fn summary_groups_rates_and_shares() {
        let prev = sample(1000, 0, &[]);
        let now = sample(
            3000,
            7,
            &[
                // 40 placements in 2 s, 30 of them by a fast path: 20/s, 75%.
                (bpf_intf::fp_stat_idx_FP_STAT_ENQ_QUEUED, 40),
                (bpf_intf::fp_stat_idx_FP_STAT_WAKE_NO_SCAN, 30),
                // 10 dispatches, 5 stolen: 50%.
                (bpf_intf::fp_stat_idx_FP_STAT_DISP_CPU_DSQ, 5),
                (bpf_intf::fp_stat_idx_FP_STAT_DISP_STOLEN, 5),
                (bpf_intf::fp_stat_idx_FP_STAT_WAKE_PREEMPT, 4),
                (bpf_intf::fp_stat_idx_FP_STAT_STARVE_RESCUE, 2),
            ],
        );
        assert_eq!(
            now.format_summary(&prev),
            "placed 20/s fast 75%, run 5/s stolen 50% kept 0/s, preempt 2/s, yield 0/s, rescued 1/s, queued 7"
        );
        // Rates well above what a busy 2-CPU guest shows (stress-ng switch:
        // ~20,000 context switches a second) still fit in about 100
        // columns, prefix included.
        let busy = sample(
            2000,
            512,
            &[
                (bpf_intf::fp_stat_idx_FP_STAT_ENQ_QUEUED, 49_999),
                (bpf_intf::fp_stat_idx_FP_STAT_WAKE_NO_SCAN, 29_999),
                (bpf_intf::fp_stat_idx_FP_STAT_DISP_CPU_DSQ, 49_999),
                (bpf_intf::fp_stat_idx_FP_STAT_KEEP_PREV, 9_999),
                (bpf_intf::fp_stat_idx_FP_STAT_WAKE_PREEMPT, 9_999),
                (bpf_intf::fp_stat_idx_FP_STAT_YIELD_GIVEN, 49_999),
            ],
        );
        let line = format!("[fastpath] {}", busy.format_summary(&prev));
        assert!(line.len() <= 115, "{} columns: {line}", line.len());
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
    fn cpu_figures_sum_their_counters() {
        let mut cnt = [0u64; NR_STATS];
        let set = |cnt: &mut [u64; NR_STATS], idx: u32, v: u64| cnt[idx as usize] = v;
        set(&mut cnt, bpf_intf::fp_stat_idx_FP_STAT_DIRECT_LOCAL, 1);
        set(&mut cnt, bpf_intf::fp_stat_idx_FP_STAT_WAKE_PREV_IDLE, 2);
        set(&mut cnt, bpf_intf::fp_stat_idx_FP_STAT_ENQ_QUEUED, 4);
        set(&mut cnt, bpf_intf::fp_stat_idx_FP_STAT_PINNED, 8);
        set(&mut cnt, bpf_intf::fp_stat_idx_FP_STAT_WAKE_NO_SCAN, 3);
        set(&mut cnt, bpf_intf::fp_stat_idx_FP_STAT_DISP_CPU_DSQ, 10);
        set(&mut cnt, bpf_intf::fp_stat_idx_FP_STAT_DISP_STOLEN, 5);
        set(&mut cnt, bpf_intf::fp_stat_idx_FP_STAT_WAKE_PREEMPT, 7);
        let c = CpuMetrics::from_counts(&cnt, 9);
        assert_eq!(
            c,
            CpuMetrics {
                queued: 9,
                placed: 15,
                fastpath: 13,
                dispatched: 15,
                stolen: 5,
                preempted: 7,
            }
        );
    }

    #[test]
    fn kernel_events_parse_and_may_be_absent() {
        let ev = parse_kernel_events(
            "SCX_EV_SELECT_CPU_FALLBACK 12\nSCX_EV_BYPASS_DURATION 0\nnonsense\nA 1 2\nB x\n",
        );
        assert_eq!(ev.len(), 2, "{ev:?}");
        assert_eq!(ev["SCX_EV_SELECT_CPU_FALLBACK"], 12);
        assert_eq!(ev["SCX_EV_BYPASS_DURATION"], 0);
        let none = read_kernel_events(Path::new("/nonexistent/sched_ext/root/events"))
            .expect("an absent file is not an error");
        assert!(none.is_empty());
    }

    #[test]
    fn older_json_still_reads() {
        // What an instance from before the per-CPU figures served.
        let json = r#"{"at_ms":5,"config":"c","queued":1,"hold":{"min_us":0.0,"avg_us":0.0,"max_us":0.0},"counters":COUNTERS}"#
            .replace(
                "COUNTERS",
                &serde_json::to_string(&Counters::default()).expect("serialize"),
            );
        let m: Metrics = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(m.at_ms, 5);
        assert!(m.cpus.is_empty() && m.kernel_events.is_empty() && m.version.is_empty());
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
        let row = |name: &str, rest: &str| {
            let i = BRANCH_NAMES.iter().position(|n| *n == name).expect(name);
            format!("| {name} | {rest} | {} |", BRANCH_HINTS[i])
        };
        for (name, rest) in [
            ("select_holder", "99 | 1 | 99.0 | likely"),
            ("select_prev_idle", "50 | 50 | 50.0 | none"),
            ("select_none_idle", "4 | 96 | 4.0 | unlikely"),
            ("enq_redirected", "0 | 0 | - | none (never reached)"),
        ] {
            let want = row(name, rest);
            assert!(t.contains(&want), "{want} not in\n{t}");
        }
        // None of these four carries a hint in the source, so the first
        // and third differ, and a never-reached branch does not.
        assert!(
            t.contains("select_holder (counts: likely, source: none)"),
            "{t}"
        );
        assert!(!t.contains("enq_redirected (counts"), "{t}");
        assert_eq!(BRANCH_NAMES.len(), NR_BRANCHES);
        assert_eq!(BRANCH_HINTS.len(), NR_BRANCHES);
    }

    #[test]
    fn design_doc_shows_help_stats() {
        let block = crate::readme::design_block("<!-- help-stats -->\n```\n", "```");
        assert_eq!(
            block,
            describe_counters(),
            "docs/design.md's help-stats block is stale"
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
            (bpf_intf::fp_stat_idx_FP_STAT_STARVE_RESCUE, "starve_rescue"),
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
