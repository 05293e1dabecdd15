//! scx_fastpath: loads the BPF scheduler, sets its tunables, prints its
//! counters, and detaches it on exit.

mod bpf_intf;
mod bpf_skel;
mod cli;
mod flags_file;
mod live;
mod preflight;
#[cfg(test)]
mod readme;
mod scheduler;
mod stats;
mod stats_server;
mod stdout;
mod topology;
mod tui;
mod tunables;

use std::io::IsTerminal;
use std::mem::MaybeUninit;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use anyhow::{Context, Result};
use log::info;

use crate::cli::{Command, Opts};
use crate::scheduler::Scheduler;

fn init_logging(verbose: u8) -> Result<()> {
    let level = match verbose {
        0 => simplelog::LevelFilter::Info,
        1 => simplelog::LevelFilter::Debug,
        _ => simplelog::LevelFilter::Trace,
    };
    let config = simplelog::ConfigBuilder::new()
        .set_time_level(simplelog::LevelFilter::Off)
        .set_target_level(simplelog::LevelFilter::Off)
        .set_thread_level(simplelog::LevelFilter::Off)
        .build();
    // Colour only on a terminal: logs that go to files stay plain text.
    let color = if std::io::stderr().is_terminal() {
        simplelog::ColorChoice::Auto
    } else {
        simplelog::ColorChoice::Never
    };
    simplelog::TermLogger::init(level, config, simplelog::TerminalMode::Stderr, color)
        .context("failed to set up logging")?;
    if verbose > 0 {
        scx_utils::init_libbpf_logging(Some(libbpf_rs::PrintLevel::Debug));
    }
    Ok(())
}

fn run(opts: Opts) -> Result<()> {
    init_logging(opts.verbose)?;
    preflight::check_all()?;

    // Ctrl-C and SIGTERM end the run loop; dropping the scheduler detaches
    // it. The flag outlives the message: a signal that arrives just as the
    // kernel asks for a restart (and is taken by that run's loop) must still
    // stop us rather than let us restart.
    let (shutdown_tx, shutdown_rx) = mpsc::channel();
    let stopping = Arc::new(AtomicBool::new(false));
    let stopping_handler = Arc::clone(&stopping);
    ctrlc::set_handler(move || {
        stopping_handler.store(true, Ordering::SeqCst);
        let _ = shutdown_tx.send(());
    })
    .context("failed to install the SIGINT/SIGTERM handler")?;

    let mut open_object = MaybeUninit::uninit();
    let mut opts = opts;
    loop {
        let Some(mut sched) = Scheduler::init(&opts, &mut open_object, &stopping)? else {
            return Ok(());
        };
        let uei = sched.run(&shutdown_rx)?;
        // A restart keeps what `set` changed.
        opts = sched.opts().clone();
        drop(sched);
        if !uei.should_restart() {
            return Ok(());
        }
        if stopping.load(Ordering::SeqCst) {
            info!("the kernel asked for a restart, but a stop was requested: not restarting");
            return Ok(());
        }
        info!("the kernel asked for a restart (e.g. a CPU went on- or offline); restarting");
        scheduler::wait_until_disabled()?;
    }
}

fn main() -> ExitCode {
    let opts = match cli::parse() {
        Ok(opts) => opts,
        Err(code) => return code,
    };
    if let Some(Command::Set { changes, save }) = &opts.command {
        return match live::request(changes, *save) {
            Ok(()) => ExitCode::SUCCESS,
            Err((code, e)) => {
                eprintln!("scx_fastpath: error: {e:#}");
                ExitCode::from(code)
            }
        };
    }
    let res = if opts.help_stats {
        stdout::text(stats::describe_counters())
    } else if opts.list_ablations {
        stdout::text(tunables::ablation_list())
    } else if opts.readme_options {
        stdout::text(tunables::readme_table())
    } else if let Some(shell) = opts.completions {
        // Into memory first: clap_complete panics when the write fails.
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut cli::command(), "scx_fastpath", &mut script);
        stdout::text(String::from_utf8_lossy(&script))
    } else if opts.man {
        clap_mangen::Man::new(cli::command())
            .render(&mut std::io::stdout())
            .context("failed to write the man page")
    } else {
        match opts
            .monitor
            .map(|secs| Duration::from_secs_f64(secs.max(0.1)))
        {
            // No logging under --tui: a message would scribble over the
            // screen; the dashboard shows the connection's state itself.
            Some(every) if opts.tui => tui::run(every),
            Some(every) => init_logging(opts.verbose)
                .and_then(|()| stats_server::monitor(every, opts.json, opts.all_counters)),
            None => run(opts),
        }
    };
    match res {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("scx_fastpath: error: {e:#}");
            if e.downcast_ref::<preflight::OtherScheduler>().is_some() {
                ExitCode::from(cli::EXIT_BUSY)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
