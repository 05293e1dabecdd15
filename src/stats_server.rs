//! The scx_stats socket (/var/run/scx/root/stats, as every sched_ext
//! scheduler serves it): the running scheduler answers with its Metrics;
//! `--monitor` is the client that prints them.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use scx_stats::prelude::*;

use crate::live;
use crate::stats::{Counters, CpuMetrics, HoldWindows, Metrics};

/// What a client asks the scheduler's run loop for.
pub enum Request {
    /// Fresh figures ("top", the default target).
    Metrics,
    /// `scx_fastpath set`: the changes, KEY -> VALUE (live::TARGET).
    Set(BTreeMap<String, String>),
}

/// The run loop's answer.
pub enum Reply {
    Metrics(Box<Metrics>),
    /// The tunables now in force, or why nothing changed.
    Set(std::result::Result<String, String>),
}

/// Send a request to the run loop over a reader's channels and wait for its
/// answer (crossbeam's channels, which scx_stats does not re-export).
macro_rules! ask {
    ($ch:expr, $req:expr) => {{
        let (tx, rx) = $ch;
        tx.send($req).context("the scheduler's run loop is gone")?;
        rx.recv()
            .context("the scheduler's run loop did not answer")?
    }};
}

/// Start serving. A client's request goes over the server's channels to the
/// scheduler's run loop, which answers with fresh Metrics, or applies a
/// `set`.
pub fn launch() -> Result<StatsServer<Request, Reply>> {
    let data = StatsServerData::<Request, Reply>::new()
        .add_meta(Metrics::meta())
        .add_meta(Counters::meta())
        .add_meta(HoldWindows::meta())
        .add_meta(CpuMetrics::meta())
        .add_stats(
            "top",
            Box::new(|_args, ch| match ask!(ch, Request::Metrics) {
                Reply::Metrics(m) => m.to_json(),
                Reply::Set(_) => bail!("the run loop answered a request for figures with a set"),
            }),
        )
        .add_stats(
            live::TARGET,
            Box::new(|args, ch| match ask!(ch, Request::Set(args.clone())) {
                Reply::Set(Ok(config)) => Ok(serde_json::Value::String(config)),
                Reply::Set(Err(why)) => Err(anyhow!(why)),
                Reply::Metrics(_) => bail!("the run loop answered a set with figures"),
            }),
        );
    StatsServer::new(data)
        .set_path(live::SOCKET)
        .launch()
        .with_context(|| format!("failed to open the stats socket ({})", live::SOCKET))
}

/// `--monitor`: print the running scheduler's figures every `every`, as
/// --stats does (rates from two samples; with `all`, --all-counters, every
/// counter's rate too), or as one JSON object per line,
/// until Ctrl-C or SIGTERM. Waits for a scheduler to appear.
pub fn monitor(every: Duration, json: bool, all: bool) -> Result<()> {
    let stop = Arc::new(AtomicBool::new(false));
    let stop_handler = Arc::clone(&stop);
    ctrlc::set_handler(move || stop_handler.store(true, Ordering::SeqCst))
        .context("failed to install the SIGINT/SIGTERM handler")?;

    let mut prev: Option<Metrics> = None;
    let mut out = std::io::stdout();
    scx_utils::monitor_stats::<Metrics>(
        &[],
        every,
        || stop.load(Ordering::SeqCst),
        |now| {
            if json {
                writeln!(out, "{}", now.json_line()?)?;
            } else {
                match &prev {
                    // A restarted scheduler starts its counters again;
                    // `set` changes the tunables.
                    Some(p) if p.at_ms < now.at_ms && p.config == now.config => {
                        for line in now.format_lines(p, all) {
                            writeln!(out, "[fastpath] {line}")?;
                        }
                    }
                    _ => writeln!(out, "[fastpath] config: {}", now.config)?,
                }
            }
            out.flush()?;
            prev = Some(now);
            Ok(())
        },
    )
    .context("monitoring the stats socket failed")
}
