//! Opening, loading, attaching and running the BPF scheduler.

use std::mem::MaybeUninit;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use libbpf_rs::{OpenObject, ProgramInput};
use log::{info, warn};
use scx_utils::{scx_ops_attach, scx_ops_load, scx_ops_open, uei_exited, uei_report, UserExitInfo};

use crate::bpf_intf;
use crate::bpf_skel::{BpfSkel, BpfSkelBuilder};
use crate::cli::Opts;
use crate::preflight;
use crate::stats::{Snapshot, NR_STATS};

/// How often the run loop looks at the exit state when no stats are due.
const POLL: Duration = Duration::from_millis(100);

pub struct Scheduler<'obj> {
    skel: BpfSkel<'obj>,
    struct_ops: Option<libbpf_rs::Link>,
    nr_cpus: usize,
    stats_every: Option<Duration>,
    queued_warned: bool,
}

impl<'obj> Scheduler<'obj> {
    pub fn init(opts: &Opts, open_object: &'obj mut MaybeUninit<OpenObject>) -> Result<Self> {
        let nr_cpus = libbpf_rs::num_possible_cpus().context("failed to count possible CPUs")?;
        if nr_cpus > bpf_intf::fp_consts_FP_MAX_CPUS as usize {
            bail!(
                "{nr_cpus} possible CPUs, scx_fastpath supports at most {}",
                bpf_intf::fp_consts_FP_MAX_CPUS
            );
        }

        let mut builder = BpfSkelBuilder::default();
        builder.obj_builder.debug(opts.verbose > 1);
        let mut skel = scx_ops_open!(builder, open_object, fastpath_ops, None)
            .context("failed to open the BPF scheduler")?;

        skel.struct_ops.fastpath_ops_mut().exit_dump_len = opts.exit_dump_len;
        let rodata = skel
            .maps
            .rodata_data
            .as_mut()
            .context("BPF skeleton has no .rodata")?;
        rodata.nr_cpu_ids = nr_cpus as u32;
        rodata.slice_ns = opts.slice_us * 1000;

        let mut skel = scx_ops_load!(skel, fastpath_ops, uei).context("failed to load the BPF scheduler")?;
        // Re-check right before attaching: name a scheduler that won the race.
        preflight::check_no_other_scheduler()?;
        let struct_ops = scx_ops_attach!(skel, fastpath_ops).context("failed to attach the BPF scheduler")?;

        info!(
            "scx_fastpath {} attached ({} CPUs, slice {} us)",
            env!("CARGO_PKG_VERSION"),
            nr_cpus,
            opts.slice_us
        );
        let ops = preflight::loaded_scheduler()?.unwrap_or_else(|| "none".into());
        info!("sched_ext state: {}, ops: {ops}", preflight::sched_ext_state()?);

        Ok(Self {
            skel,
            struct_ops: Some(struct_ops),
            nr_cpus,
            stats_every: (opts.stats > 0).then(|| Duration::from_secs(opts.stats)),
            queued_warned: false,
        })
    }

    /// Sum every CPU's counters, and sample the DSQ depths.
    fn snapshot(&mut self) -> Result<Snapshot> {
        let data = self
            .skel
            .maps
            .data_stats_data
            .as_ref()
            .context("BPF skeleton has no .data.stats")?;
        let per_cpu: Vec<[u64; NR_STATS]> = data.fp_stats[..self.nr_cpus]
            .iter()
            // SAFETY: the array lives in the BPF map's mmap()ed memory and
            // BPF programs update it concurrently; a volatile read of an
            // aligned u64 is the only sound way to look at it.
            .map(|line| std::array::from_fn(|i| unsafe { std::ptr::read_volatile(&line.s.cnt[i]) }))
            .collect();
        let mut snap = Snapshot::from_per_cpu(per_cpu.iter());

        match self.skel.progs.fp_sample_queued.test_run(ProgramInput::default()) {
            Ok(_) => {
                let bss = self.skel.maps.bss_data.as_ref().context("BPF skeleton has no .bss")?;
                // SAFETY: as above, written by BPF.
                snap.queued_shared = unsafe { std::ptr::read_volatile(&bss.nr_queued_shared) };
                snap.queued_cpu = unsafe { std::ptr::read_volatile(&bss.nr_queued_cpu) };
            }
            Err(e) if !self.queued_warned => {
                warn!("cannot sample queue depths: {e}");
                self.queued_warned = true;
            }
            Err(_) => {}
        }
        Ok(snap)
    }

    /// Run until Ctrl-C/SIGTERM or until the kernel ejects the scheduler;
    /// then detach and report why it exited.
    pub fn run(&mut self, shutdown: &Receiver<()>) -> Result<UserExitInfo> {
        let mut prev = self.snapshot()?;
        let mut prev_at = Instant::now();

        while !uei_exited!(&self.skel, uei) {
            let wait = match self.stats_every {
                Some(every) => every.saturating_sub(prev_at.elapsed()).min(POLL),
                None => POLL,
            };
            match shutdown.recv_timeout(wait) {
                Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                Err(RecvTimeoutError::Timeout) => {}
            }
            if let Some(every) = self.stats_every {
                if prev_at.elapsed() >= every {
                    let now = self.snapshot()?;
                    let line = now.format_line(&prev, prev_at.elapsed());
                    println!("[fastpath] {line}");
                    prev = now;
                    prev_at = Instant::now();
                }
            }
        }

        if self.stats_every.is_some() {
            println!("[fastpath] totals: {}", self.snapshot()?.format_totals());
        }

        // Dropping the link unregisters the scheduler; the kernel then calls
        // ops.exit(), which records why.
        self.struct_ops.take();
        uei_report!(&self.skel, uei).context("the scheduler exited with an error")
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
