//! Live tuning: `scx_fastpath set KEY=VALUE ...` changes a running
//! instance's tunables over its stats socket, without reloading the BPF
//! program, which reads them from its `.data.tune` map (struct fp_tune in
//! intf.h) at every use.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::Parser;

use crate::cli::{self, Opts};
use crate::stdout;

/// The stats socket: the server, `set` and the dashboard name it; it is
/// also scx_stats' default, which --monitor (scx_utils::monitor_stats)
/// uses, so the guest test `monitor` fails if the two part.
pub const SOCKET: &str = "/var/run/scx/root/stats";

/// The stats socket's request target that `set` uses ("top" is the figures).
pub const TARGET: &str = "set";

type Apply = fn(&mut Opts, &str) -> Result<()>;

/// The tunables a running instance can change: each is the command-line
/// flag of that name (a switch by its positive name, `on` or `off`), and a
/// value is checked exactly as the flag checks it. What stays out is fixed
/// at load: --idle-hold-us (the hold windows are set up from it),
/// --no-compact-layout (where the counters go) and --queued-wakeup (an ops
/// flag).
pub const LIVE: &[(&str, Apply)] = &[
    ("slice-us", |o, v| {
        o.slice_us = flag("--slice-us", v)?.slice_us;
        Ok(())
    }),
    ("wakeup-gran-us", |o, v| {
        o.wakeup_gran_us = flag("--wakeup-gran-us", v)?.wakeup_gran_us;
        Ok(())
    }),
    ("hog-gran-us", |o, v| {
        o.hog_gran_us = flag("--hog-gran-us", v)?.hog_gran_us;
        Ok(())
    }),
    ("hog-run-us", |o, v| {
        o.hog_run_us = flag("--hog-run-us", v)?.hog_run_us;
        Ok(())
    }),
    ("pull-gran-us", |o, v| {
        o.pull_gran_us = flag("--pull-gran-us", v)?.pull_gran_us;
        Ok(())
    }),
    ("deferred-preempt", |o, v| {
        switch(&mut o.no_deferred_preempt, v, false)
    }),
    ("fast-yield", |o, v| switch(&mut o.no_fast_yield, v, false)),
    ("head-lag", |o, v| switch(&mut o.no_head_lag, v, false)),
    ("displaced-head", |o, v| {
        switch(&mut o.no_displaced_head, v, false)
    }),
    ("rcu-first", |o, v| switch(&mut o.no_rcu_first, v, false)),
    ("light-slice", |o, v| {
        switch(&mut o.no_light_slice, v, false)
    }),
    ("local-preempt", |o, v| {
        switch(&mut o.local_preempt, v, true)
    }),
    ("wake-local", |o, v| switch(&mut o.no_wake_local, v, false)),
    ("llc-steal", |o, v| switch(&mut o.no_llc_steal, v, false)),
    ("lazy-vmin", |o, v| switch(&mut o.no_lazy_vmin, v, false)),
    ("hog-hysteresis", |o, v| {
        switch(&mut o.no_hog_hysteresis, v, false)
    }),
    ("wake-away", |o, v| switch(&mut o.no_wake_away, v, false)),
    ("rt-away", |o, v| switch(&mut o.no_rt_away, v, false)),
    ("rt-rescue", |o, v| switch(&mut o.no_rt_rescue, v, false)),
    ("pinned-fastpath", |o, v| {
        switch(&mut o.no_pinned_fastpath, v, false)
    }),
    ("cheap-wakeup", |o, v| {
        switch(&mut o.no_cheap_wakeup, v, false)
    }),
    ("sync-wake", |o, v| switch(&mut o.sync_wake, v, true)),
    ("sync-affine", |o, v| switch(&mut o.sync_affine, v, true)),
];

/// The live keys, for messages and `set --help`.
pub fn keys() -> String {
    LIVE.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
}

/// `VALUE` checked as `--FLAG=VALUE` on the command line would be.
fn flag(name: &str, value: &str) -> Result<Opts> {
    Opts::try_parse_from(["scx_fastpath".to_string(), format!("{name}={value}")])
        .map_err(|e| anyhow!("{}", cli::one_line(&e).trim_start_matches("error: ")))
}

/// A switch's `on` or `off` into its flag's field, which is true for `on`
/// (`--sync-wake`) or, for a `--no-...` flag, for `off`.
fn switch(field: &mut bool, value: &str, true_when_on: bool) -> Result<()> {
    let on = match value {
        "on" => true,
        "off" => false,
        _ => bail!("invalid value '{value}': a switch is on or off"),
    };
    *field = on == true_when_on;
    Ok(())
}

/// Apply one `KEY=VALUE` to `opts`; returns it as given, for the log.
pub fn apply(opts: &mut Opts, change: &str) -> Result<String> {
    let (key, value) = change
        .split_once('=')
        .ok_or_else(|| anyhow!("'{change}' is not KEY=VALUE"))?;
    let (_, set) = LIVE
        .iter()
        .find(|(k, _)| *k == key)
        .ok_or_else(|| anyhow!("'{key}' cannot be changed live; these can: {}", keys()))?;
    set(opts, value).with_context(|| key.to_string())?;
    Ok(format!("{key}={value}"))
}

/// The changes of one request (the socket's arguments, less the target).
pub fn apply_all(opts: &mut Opts, args: &BTreeMap<String, String>) -> Result<Vec<String>> {
    let done = args
        .iter()
        .filter(|(k, _)| k.as_str() != "target")
        .map(|(k, v)| apply(opts, &format!("{k}={v}")))
        .collect::<Result<Vec<_>>>()?;
    if done.is_empty() {
        bail!("nothing to change");
    }
    Ok(done)
}

/// Changing tunables is root's: connecting needs write permission on the
/// socket, which scx_stats creates as root's, 0755. Should someone open it
/// up (to let users monitor), `set` is refused rather than opened up too.
pub fn check_socket_root_only(path: &Path) -> Result<()> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    let mode = meta.permissions().mode();
    if meta.uid() != 0 || mode & 0o022 != 0 {
        bail!(
            "refused: {} can be written by others than root (owner uid {}, mode {:o}), \
             so changes through it are not root's alone",
            path.display(),
            meta.uid(),
            mode & 0o7777
        );
    }
    Ok(())
}

/// `scx_fastpath set`: check the changes here (a bad one is a usage error,
/// exit 2, before anything is sent), then have the running instance apply
/// them all or none, and print the tunables it now runs with.
pub fn request(changes: &[String]) -> Result<(), (u8, anyhow::Error)> {
    let mut args = BTreeMap::new();
    let mut check = Opts::parse_from(["scx_fastpath"]);
    for change in changes {
        apply(&mut check, change).map_err(|e| (cli::EXIT_USAGE, e))?;
        if let Some((k, v)) = change.split_once('=') {
            if args.insert(k.to_string(), v.to_string()).is_some() {
                return Err((cli::EXIT_USAGE, anyhow!("'{k}' given twice")));
            }
        }
    }
    send(args).map_err(|e| (1, e))
}

fn send(args: BTreeMap<String, String>) -> Result<()> {
    let mut client = scx_stats::prelude::StatsClient::new()
        .set_path(SOCKET)
        .connect(Some(Duration::from_secs(5).as_millis() as u64))
        .map_err(|e| {
            use std::io::ErrorKind;
            match e.downcast_ref::<std::io::Error>().map(|io| io.kind()) {
                Some(ErrorKind::PermissionDenied) => {
                    anyhow!(
                        "only root can change a running scx_fastpath ({SOCKET}: permission denied)"
                    )
                }
                Some(ErrorKind::NotFound | ErrorKind::ConnectionRefused) => {
                    anyhow!("no running scx_fastpath to tune (nothing serves {SOCKET})")
                }
                _ => anyhow!("cannot connect to {SOCKET}: {e}"),
            }
        })?;
    let mut req: Vec<(String, String)> = vec![("target".into(), TARGET.into())];
    req.extend(args);
    let config: String = client.request("stats", req).map_err(|e| {
        if e.downcast_ref::<scx_stats::prelude::StatsErrno>().is_none() {
            return anyhow!("lost the running scheduler before it answered: {e}");
        }
        // The server's reason: a JSON string, possibly an error's whole
        // chain; its first line says it.
        let why = e.root_cause().to_string();
        let why = serde_json::from_str::<String>(&why).unwrap_or(why);
        let why = why.lines().next().unwrap_or_default().to_string();
        if why.contains("unknown stat target") {
            anyhow!("the scheduler on {SOCKET} takes no `set` (not scx_fastpath, or an older one)")
        } else {
            anyhow!("the running scheduler refused the change: {why}")
        }
    })?;
    stdout::line(format_args!("scx_fastpath now runs with: {config}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Opts {
        Opts::parse_from(["scx_fastpath"])
    }

    #[test]
    fn every_live_key_is_a_flag_and_changes_the_description() {
        let help = {
            use clap::CommandFactory;
            Opts::command().render_long_help().to_string()
        };
        for (key, _) in LIVE {
            let o = defaults();
            let mut n = o.clone();
            let value = if help.contains(&format!("--{key} <")) {
                "4321"
            } else {
                assert!(
                    help.contains(&format!("--{key}")) || help.contains(&format!("--no-{key}")),
                    "{key} is not a flag"
                );
                if o.describe()
                    .contains(&format!("{}=on", key.replace('-', "_")))
                {
                    "off"
                } else {
                    "on"
                }
            };
            apply(&mut n, &format!("{key}={value}")).expect(key);
            assert_ne!(o.describe(), n.describe(), "{key}={value} changed nothing");
        }
    }

    #[test]
    fn values_are_checked_as_the_flags_check_them() {
        let mut o = defaults();
        let e = apply(&mut o, "slice-us=99").unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            "slice-us: invalid value '99' for '--slice-us <US>': not in 100..=100000"
        );
        assert!(apply(&mut o, "head-lag=maybe").is_err());
        assert!(apply(&mut o, "slice-us").is_err());
        let e = apply(&mut o, "idle-hold-us=10").unwrap_err();
        assert!(format!("{e}").contains("cannot be changed live"), "{e}");
        assert_eq!(apply(&mut o, "slice-us=3000").unwrap(), "slice-us=3000");
        apply(&mut o, "head-lag=off").unwrap();
        assert_eq!(o.slice_us, 3000);
        assert!(o.no_head_lag);
    }

    #[test]
    fn a_request_applies_all_or_fails() {
        let mut o = defaults();
        let args: BTreeMap<String, String> = [
            ("target", "set"),
            ("slice-us", "2000"),
            ("fast-yield", "off"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let done = apply_all(&mut o, &args).unwrap();
        assert_eq!(done, ["fast-yield=off", "slice-us=2000"]);
        let only_target: BTreeMap<String, String> =
            [("target".to_string(), "set".to_string())].into();
        assert!(apply_all(&mut o, &only_target).is_err());
    }
}
