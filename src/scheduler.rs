//! Opening, loading, attaching and running the BPF scheduler.

use std::mem::MaybeUninit;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use libbpf_rs::{OpenObject, ProgramInput};
use log::{info, warn};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report, UserExitInfo};

use crate::bpf_intf;
use crate::bpf_skel::types::fp_tune as FpTune;
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::cli::Opts;
use crate::live;
use crate::preflight;
use crate::stats::{self, CpuMetrics, HoldWindows, Metrics, NR_STATS};
use crate::stats_server::{self, Reply, Request};
use crate::stdout;
use crate::topology;
use crate::tunables::Id;
use scx_stats::StatsServer;

/// How often the run loop looks at the exit state when no stats are due.
const POLL: Duration = Duration::from_millis(100);
/// How often, at most, the log names what the starvation guard ran.
const RESCUE_REPORT_EVERY: Duration = Duration::from_secs(5);

pub struct Scheduler<'obj> {
    skel: BpfSkel<'obj>,
    struct_ops: Option<libbpf_rs::Link>,
    _idle_resume: Option<std::fs::File>,
    compact_layout: bool,
    nr_cpus: usize,
    stats_every: Option<Duration>,
    /// --stats prints JSON objects (one per sample, and the totals at exit).
    stats_json: bool,
    /// --all-counters: every counter's rate under the summary line.
    all_counters: bool,
    queued_warned: bool,
    /// starve_rescue's total at the last report of the guard's rescues.
    rescues_counted: u64,
    events_warned: bool,
    attached_at: Instant,
    /// The options in force: the command line's, and what `set` changed.
    opts: Opts,
    stats_server: StatsServer<Request, Reply>,
}

/// libbpf's open options from the libbpf flags, whose values cli::parse
/// has checked; scx_utils returns None, dropping them all, when one cannot
/// be used.
fn libbpf_open_opts(
    o: &scx_utils::libbpf_clap_opts::LibbpfOpts,
) -> Result<Option<libbpf_rs::libbpf_sys::bpf_object_open_opts>> {
    let given = o.relaxed_maps.is_some()
        || o.pin_root_path.is_some()
        || o.kconfig.is_some()
        || o.btf_custom_path.is_some()
        || o.bpf_token_path.is_some();
    match o.clone().into_bpf_open_opts() {
        None if given => bail!("the libbpf options could not be turned into libbpf's open options"),
        open => Ok(open),
    }
}

include!(concat!(env!("OUT_DIR"), "/tune.rs"));

/// The live tunables (struct fp_tune) from the options: before load as the
/// map's initial value, and on every `set`.
fn tune_of(opts: &Opts) -> Result<FpTune> {
    tune_with(|field| opts.tun.tune_value(field))
}

impl<'obj> Scheduler<'obj> {
    /// Load and attach the scheduler. `None` when `stopping` was set while
    /// it loaded (the verifier takes seconds on a slow machine): a Ctrl-C
    /// or SIGTERM then ends the run without the scheduler ever attaching.
    pub fn init(
        opts: &Opts,
        open_object: &'obj mut MaybeUninit<OpenObject>,
        stopping: &AtomicBool,
    ) -> Result<Option<Self>> {
        let nr_cpus = preflight::nr_cpu_ids()?;
        // The one experimental setting; it cannot be turned on live.
        if opts.tun.num(Id::IdleHoldUs) > 0 {
            warn!(
                "the idle hold (--idle-hold-us) is experimental: under heavy sleeper storms it \
                 has tripped the kernel's watchdog (see README, Known limitations)"
            );
        }
        if nr_cpus > bpf_intf::fp_consts_FP_MAX_CPUS as usize {
            bail!(
                "possible CPU ids go up to {}, scx_fastpath supports at most {}",
                nr_cpus - 1,
                bpf_intf::fp_consts_FP_MAX_CPUS
            );
        }

        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(opts.verbose > 1);
        let open_opts = libbpf_open_opts(&opts.libbpf)?;
        let mut skel = scx_ops_open!(builder, open_object, fastpath_ops, open_opts)
            .context("failed to open the BPF scheduler")?;

        let ops = skel.struct_ops.fastpath_ops_mut();
        ops.exit_dump_len = opts.exit_dump_len;
        let rodata = skel
            .maps
            .rodata_data
            .as_mut()
            .context("BPF skeleton has no .rodata")?;
        rodata.idle_hold_ns = opts.tun.num(Id::IdleHoldUs) * 1000;
        rodata.compact_layout = opts.tun.on(Id::CompactLayout);
        let layout = topology::layout(&topology::places(nr_cpus)?);
        for (cpu, t) in layout.topo.iter().enumerate() {
            rodata.topo_cpus[cpu] = layout.cpus[cpu];
            rodata.cpu_topo[cpu].pos = t.pos;
            rodata.cpu_topo[cpu].base = t.base;
            rodata.cpu_topo[cpu].span = t.span;
        }
        let nr_llcs = layout.nr_llcs;
        let tune = skel
            .maps
            .data_tune_data
            .as_mut()
            .context("BPF skeleton has no .data.tune")?;
        tune.tune = tune_of(opts)?;

        let mut skel = scx_ops_load!(skel, fastpath_ops, uei)
            .map_err(|e| match preflight::load_failure_hint() {
                Some(hint) => e.context(hint),
                None => e,
            })
            .context("failed to load the BPF scheduler")?;
        if stopping.load(Ordering::SeqCst) {
            info!("a stop was requested while the scheduler loaded: not attaching it");
            return Ok(None);
        }
        // Re-check right before attaching: name a scheduler that won the race.
        preflight::check_no_other_scheduler()?;
        let struct_ops =
            scx_ops_attach!(skel, fastpath_ops).context("failed to attach the BPF scheduler")?;

        // Kept open while running: closing it restores the old latency.
        let idle_resume = match opts.tun.opt(Id::IdleResumeUs) {
            Some(us) => {
                let us = i32::try_from(us).context("--idle-resume-us does not fit an i32")?;
                Some(
                    scx_utils::pm::update_global_idle_resume_latency(us)
                        .context("failed to set the idle resume latency (/dev/cpu_dma_latency)")?,
                )
            }
            None => None,
        };

        info!(
            "scx_fastpath {} attached ({} CPUs, {} LLCs): {}",
            env!("FP_VERSION"),
            nr_cpus,
            nr_llcs,
            std::env::args().collect::<Vec<_>>().join(" ")
        );
        if opts.stats > 0.0 && !opts.json {
            stdout::line(format_args!("[fastpath] config: {}", opts.describe()))?;
        }
        let ops = preflight::loaded_scheduler()?.unwrap_or_else(|| "none".into());
        info!(
            "sched_ext state: {}, ops: {ops}",
            preflight::sched_ext_state()?
        );

        let stats_server = stats_server::launch()?;

        Ok(Some(Self {
            skel,
            struct_ops: Some(struct_ops),
            _idle_resume: idle_resume,
            compact_layout: opts.tun.on(Id::CompactLayout),
            nr_cpus,
            stats_every: (opts.stats > 0.0).then(|| Duration::from_secs_f64(opts.stats)),
            stats_json: opts.json,
            all_counters: opts.all_counters,
            queued_warned: false,
            rescues_counted: 0,
            events_warned: false,
            attached_at: Instant::now(),
            opts: opts.clone(),
            stats_server,
        }))
    }

    /// Every CPU's counters; one row, the shared array, without the
    /// compact layout.
    fn counters_per_cpu(&self) -> Result<Vec<[u64; NR_STATS]>> {
        // SAFETY (all volatile reads below): the arrays live in BPF maps'
        // mmap()ed memory and BPF programs update them concurrently; a
        // volatile read of an aligned u64 is the sound way to look at them.
        Ok(if self.compact_layout {
            let data = self
                .skel
                .maps
                .data_stats_data
                .as_ref()
                .context("BPF skeleton has no .data.stats")?;
            data.fp_stats[..self.nr_cpus]
                .iter()
                .map(|line| {
                    std::array::from_fn(|i| unsafe { std::ptr::read_volatile(&line.s.cnt[i]) })
                })
                .collect()
        } else {
            let data = self
                .skel
                .maps
                .data_stats_shared_data
                .as_ref()
                .context("BPF skeleton has no .data.stats_shared")?;
            vec![std::array::from_fn(|i| unsafe {
                std::ptr::read_volatile(&data.fp_stats_shared.cnt[i])
            })]
        })
    }

    /// Sum every CPU's counters, sample the DSQ depths, and read the
    /// kernel's event counters.
    fn metrics(&mut self) -> Result<Metrics> {
        let per_cpu = self.counters_per_cpu()?;
        let mut snap = Metrics::from_per_cpu(per_cpu.iter());
        snap.at_ms = self.attached_at.elapsed().as_millis() as u64;
        snap.config = self.opts.describe();
        snap.version = env!("FP_VERSION").to_string();

        let cpus = self
            .skel
            .maps
            .data_cpus_data
            .as_ref()
            .context("BPF skeleton has no .data.cpus")?;
        let windows: Vec<u64> = cpus.fp_cpus[..self.nr_cpus]
            .iter()
            .map(|c| unsafe { std::ptr::read_volatile(&c.hold_window_ns) })
            .collect();
        snap.hold = HoldWindows::from_ns(&windows);

        // Without the compact layout the counters are not kept per CPU:
        // the rows then carry the queue depths alone.
        let mut depths = vec![0u64; self.nr_cpus];
        match self
            .skel
            .progs
            .fp_sample_queued
            .test_run(ProgramInput::default())
        {
            Ok(_) => {
                let bss = self
                    .skel
                    .maps
                    .bss_data
                    .as_ref()
                    .context("BPF skeleton has no .bss")?;
                // SAFETY: as above, written by BPF.
                for (d, q) in depths.iter_mut().zip(bss.nr_queued_cpu.iter()) {
                    *d = unsafe { std::ptr::read_volatile(q) };
                }
                snap.queued = depths.iter().sum();
            }
            Err(e) if !self.queued_warned => {
                warn!("cannot sample queue depths: {e}");
                self.queued_warned = true;
            }
            Err(_) => {}
        }
        let zero = [0u64; NR_STATS];
        snap.cpus = depths
            .iter()
            .enumerate()
            .map(|(cpu, &q)| {
                let cnt = if self.compact_layout {
                    per_cpu.get(cpu).unwrap_or(&zero)
                } else {
                    &zero
                };
                CpuMetrics::from_counts(cnt, q)
            })
            .collect();

        match stats::read_kernel_events(Path::new(stats::KERNEL_EVENTS)) {
            Ok(events) => snap.kernel_events = events,
            Err(e) if !self.events_warned => {
                warn!("cannot read the kernel's event counters: {e:#}");
                self.events_warned = true;
            }
            Err(_) => {}
        }
        Ok(snap)
    }

    /// Take every CPU's pending starvation-guard record (struct fp_rescue),
    /// clearing it, so that the guard starts the next one.
    fn take_rescues(&mut self) -> Result<Vec<stats::Rescue>> {
        let data = self
            .skel
            .maps
            .data_rescues_data
            .as_mut()
            .context("BPF skeleton has no .data.rescues")?;
        let mut taken = Vec::new();
        for (cpu, r) in data.fp_rescues[..self.nr_cpus].iter_mut().enumerate() {
            // SAFETY: the map's mmap()ed memory, which the guard writes
            // concurrently; aligned volatile reads and writes. A longer
            // wait recorded between the read and the clear is lost, which
            // a log line can afford: the count comes from the counter.
            unsafe {
                if std::ptr::read_volatile(&r.pending) == 0 {
                    continue;
                }
                let comm: Vec<u8> = std::ptr::read_volatile(&r.comm)
                    .iter()
                    .map(|&c| c as u8)
                    .take_while(|&c| c != 0)
                    .collect();
                taken.push(stats::Rescue {
                    cpu,
                    waited_ms: std::ptr::read_volatile(&r.waited_ms),
                    pid: std::ptr::read_volatile(&r.pid),
                    comm: String::from_utf8_lossy(&comm).into_owned(),
                });
                std::ptr::write_volatile(&mut r.pending, 0);
            }
        }
        Ok(taken)
    }

    /// Log what the starvation guard ran since the last report, if anything:
    /// how many by the starve_rescue counter (exact), and which one had
    /// waited longest by the records. The guard counts, then records: a
    /// rescue between the counter's read and the records' take is named in
    /// this line and counted in the next. With nothing counted the records
    /// are left pending, so that one counted late is named with its count.
    fn report_rescues(&mut self) -> Result<()> {
        let total = Metrics::from_per_cpu(self.counters_per_cpu()?.iter())
            .counters
            .starve_rescue;
        let nr = total.saturating_sub(self.rescues_counted);
        self.rescues_counted = total;
        if nr == 0 {
            return Ok(());
        }
        let taken = self.take_rescues()?;
        if let Some(line) = stats::format_rescues(nr, &taken) {
            warn!("{line}");
        }
        Ok(())
    }

    /// The options in force, with what `set` changed.
    pub fn opts(&self) -> &Opts {
        &self.opts
    }

    /// `scx_fastpath set`: apply every change or none, write the tunables
    /// the BPF side reads, and log it; returns the tunables now in force.
    fn set_live(&mut self, changes: &std::collections::BTreeMap<String, String>) -> Result<String> {
        live::check_socket_root_only(Path::new(live::SOCKET))?;
        let mut opts = self.opts.clone();
        let done = live::apply_all(&mut opts, changes)?;
        let tune = self
            .skel
            .maps
            .data_tune_data
            .as_mut()
            .context("BPF skeleton has no .data.tune")?;
        let new = tune_of(&opts)?;
        // SAFETY: the map's mmap()ed memory, which BPF programs read
        // concurrently; store_tune writes it field by field.
        unsafe { store_tune(&mut tune.tune, &new) };
        info!(
            "set {} (live; was: {})",
            done.join(" "),
            self.opts.describe()
        );
        self.opts = opts;
        let config = self.opts.describe();
        // A JSON sample carries the config itself.
        if self.stats_every.is_some() && !self.stats_json {
            stdout::line(format_args!("[fastpath] config: {config}"))?;
        }
        Ok(config)
    }

    /// Run until Ctrl-C/SIGTERM or until the kernel ejects the scheduler;
    /// then detach and report why it exited.
    pub fn run(&mut self, shutdown: &Receiver<()>) -> Result<UserExitInfo> {
        let mut prev = self.metrics()?;
        let (stats_tx, stats_rx) = self.stats_server.channels();
        // How long since the last printed sample, by the sample's own clock.
        let attached_at = self.attached_at;
        let since_prev = |prev: &Metrics| {
            attached_at
                .elapsed()
                .saturating_sub(Duration::from_millis(prev.at_ms))
        };

        let mut rescues_reported = Instant::now();
        // A stats reader that has gone stops us, but only after the detach.
        let mut write_failed = None;
        while !uei_exited!(&self.skel, uei) {
            let wait = match self.stats_every {
                Some(every) => every.saturating_sub(since_prev(&prev)).min(POLL),
                None => POLL,
            };
            match shutdown.recv_timeout(wait) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            // Clients of the stats socket wait at most one POLL for this.
            while let Ok(req) = stats_rx.try_recv() {
                let reply = match req {
                    Request::Metrics => Reply::Metrics(Box::new(self.metrics()?)),
                    Request::Set(changes) => {
                        let res = self.set_live(&changes).map_err(|e| format!("{e:#}"));
                        // The next rate line starts at the change.
                        if res.is_ok() {
                            prev = self.metrics()?;
                        }
                        Reply::Set(res)
                    }
                };
                stats_tx
                    .send(reply)
                    .context("the stats socket's thread is gone")?;
            }
            if rescues_reported.elapsed() >= RESCUE_REPORT_EVERY {
                self.report_rescues()?;
                rescues_reported = Instant::now();
            }
            if let Some(every) = self.stats_every {
                if since_prev(&prev) >= every {
                    let now = self.metrics()?;
                    if let Err(e) = self.print_sample(&now, &prev) {
                        write_failed = Some(e);
                        break;
                    }
                    prev = now;
                }
            }
        }

        self.report_rescues()?;
        if write_failed.is_none() && self.stats_every.is_some() {
            let totals = self.metrics()?;
            write_failed = if self.stats_json {
                stdout::line(totals.json_line()?)
            } else {
                stdout::line(format_args!(
                    "[fastpath] totals: {}",
                    totals.format_totals()
                ))
            }
            .err();
        }
        #[cfg(feature = "branch-profile")]
        self.print_branch_profile()?;

        // Dropping the link unregisters the scheduler; the kernel then calls
        // ops.exit(), which records why.
        self.struct_ops.take();
        let uei = uei_report!(&self.skel, uei).context("the scheduler exited with an error")?;
        match write_failed {
            Some(e) => Err(e.context("detached: the stats could not be written")),
            None => Ok(uei),
        }
    }

    /// One --stats sample: a JSON object, or the summary line and, with
    /// --all-counters, every counter's rate.
    fn print_sample(&self, now: &Metrics, prev: &Metrics) -> Result<()> {
        if self.stats_json {
            return stdout::line(now.json_line()?);
        }
        for line in now.format_lines(prev, self.all_counters) {
            stdout::line(format_args!("[fastpath] {line}"))?;
        }
        Ok(())
    }
}

/// The scheduler is detached before anything else of ours goes: dropping the
/// skeleton first (its field comes first) would also leave the link to the
/// end, but only by the order of the fields.
impl Drop for Scheduler<'_> {
    fn drop(&mut self) {
        self.struct_ops.take();
    }
}

#[cfg(feature = "branch-profile")]
impl Scheduler<'_> {
    /// Print the branch table (docs/branch-profile.md is made from it).
    fn print_branch_profile(&self) -> Result<()> {
        use crate::stats::{format_branch_table, BranchCounts, NR_BRANCHES};

        let data = self
            .skel
            .maps
            .data_branches_data
            .as_ref()
            .context("BPF skeleton has no .data.branches")?;
        let mut sum: BranchCounts = [[0; 2]; NR_BRANCHES];
        for line in &data.fp_branches[..self.nr_cpus] {
            for (s, c) in sum.iter_mut().zip(line.cnt.iter()) {
                // SAFETY: as in snapshot().
                s[0] += unsafe { std::ptr::read_volatile(&c[0]) };
                s[1] += unsafe { std::ptr::read_volatile(&c[1]) };
            }
        }
        // scripts/branch-profile cuts the table out between these lines.
        stdout::text(format_args!(
            "[fastpath] branch profile:\n{}[fastpath] branch profile end\n",
            format_branch_table(&sum)
        ))
    }
}

/// After an exit the kernel finishes disabling asynchronously; a restart
/// must wait for it.
pub fn wait_until_disabled() -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(10);
    while preflight::sched_ext_state()? != "disabled" {
        if Instant::now() > deadline {
            bail!("sched_ext did not return to \"disabled\" within 10 s");
        }
        thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli;

    /// Every field of struct fp_tune comes from its row: a mechanism's
    /// ablation or a value option's value reaches exactly that field.
    #[test]
    fn every_live_tunable_reaches_its_field() {
        let o = cli::try_parse_from(["scx_fastpath"]).unwrap();
        let base = format!("{:#?}", tune_of(&o).unwrap());
        assert!(base.contains("slice_ns: 5000000,"), "{base}");
        assert!(base.contains("head_lag: 1,"), "{base}");
        for t in crate::tunables::TABLE.iter().filter(|t| t.live()) {
            let mut n = o.clone();
            let change = if t.is_mechanism() {
                format!("ablate={}", t.name)
            } else {
                format!("{}=321", t.name)
            };
            live::apply(&mut n, &change).unwrap();
            let field = t.tune.unwrap();
            let want = if t.is_mechanism() {
                "0".to_string()
            } else {
                "321000".to_string()
            };
            let tune = format!("{:#?}", tune_of(&n).unwrap());
            assert!(
                tune.contains(&format!("    {field}: {want},")),
                "{change}: {tune}"
            );
            let changed = base
                .lines()
                .zip(tune.lines())
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(changed, 1, "{change} changed more than {field}");
        }
    }
}
