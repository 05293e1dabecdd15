//! Live tuning: `scx_fastpath set KEY=VALUE ...` changes a running
//! instance's tunables over its stats socket, without reloading the BPF
//! program, which reads them from its `.data.tune` map (struct fp_tune in
//! intf.h) at every use.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use crate::cli::{self, Opts};
use crate::flags_file;
use crate::stdout;
use crate::tunables::{self, Settings};

/// The stats socket: the server, `set` and the dashboard name it; it is
/// also scx_stats' default, which --monitor (scx_utils::monitor_stats)
/// uses, so the guest test `monitor` fails if the two part.
pub const SOCKET: &str = "/var/run/scx/root/stats";

/// The stats socket's request target that `set` uses ("top" is the figures).
pub const TARGET: &str = "set";

/// `VALUE` checked as `--FLAG=VALUE` on the command line would be: the
/// tunables that command line gives.
fn check(flag: &str) -> Result<Settings> {
    cli::try_parse_from(["scx_fastpath", flag])
        .map(|o| o.tun)
        .map_err(|e| anyhow!("{}", cli::one_line(&e).trim_start_matches("error: ")))
}

/// Apply one `KEY=VALUE` to `opts` (src/tunables.rs says which keys there
/// are); returns it as given, for the log.
pub fn apply(opts: &mut Opts, change: &str) -> Result<String> {
    let (key, value) = change
        .split_once('=')
        .ok_or_else(|| anyhow!("'{change}' is not KEY=VALUE"))?;
    opts.tun
        .apply(key, value, check)
        .with_context(|| key.to_string())?;
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
/// them all or none, print the tunables it now runs with and the flags
/// that give them, and with `save` write those flags to the service's
/// flags file.
pub fn request(changes: &[String], save: bool) -> Result<(), (u8, anyhow::Error)> {
    let mut args = BTreeMap::new();
    let mut defaults =
        cli::try_parse_from(["scx_fastpath"]).map_err(|e| (1, anyhow!("{}", cli::one_line(&e))))?;
    for change in changes {
        let (k, v) = change
            .split_once('=')
            .ok_or_else(|| (cli::EXIT_USAGE, anyhow!("'{change}' is not KEY=VALUE")))?;
        // Which mechanisms stay as loaded is the running instance's to say.
        let checked = if k == tunables::ABLATE {
            check(&format!("--{k}={v}"))
                .map(drop)
                .context(k.to_string())
        } else {
            apply(&mut defaults, change).map(drop)
        };
        checked.map_err(|e| (cli::EXIT_USAGE, e))?;
        if args.insert(k.to_string(), v.to_string()).is_some() {
            return Err((cli::EXIT_USAGE, anyhow!("'{k}' given twice")));
        }
    }
    let config = send(args).map_err(|e| (1, e))?;
    let now = Settings::from_config(&config);
    let flags = now.as_ref().map(|s| s.flags().join(" "));
    let printed =
        stdout::line(format_args!("scx_fastpath now runs with: {config}")).and_then(|()| {
            match &flags {
                Ok(f) if f.is_empty() => stdout::line("as flags: (none: the defaults)"),
                Ok(f) => stdout::line(format_args!("as flags: {f}")),
                Err(_) => Ok(()),
            }
        });
    printed.map_err(|e| (1, e))?;
    if save {
        let now = now
            .context("the change is live, but the running instance's config line is not one this scx_fastpath can save")
            .map_err(|e| (1, e))?;
        let path = std::path::Path::new(flags_file::PATH);
        let line = flags_file::save(path, &now)
            .context("the change is live, but not saved")
            .map_err(|e| (1, e))?;
        stdout::line(format_args!("saved in {}: {line}", path.display())).map_err(|e| (1, e))?;
    }
    Ok(())
}

/// Send the changes; the config line the instance now runs with.
fn send(args: BTreeMap<String, String>) -> Result<String> {
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
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tunables::{Id, Kind, TABLE};

    fn defaults() -> Opts {
        cli::try_parse_from(["scx_fastpath"]).unwrap()
    }

    /// Every live tunable is a key of `set` that changes the config line;
    /// nothing else is.
    #[test]
    fn every_live_tunable_is_a_key_and_changes_the_description() {
        for t in TABLE {
            let o = defaults();
            let mut n = o.clone();
            let change = match t.kind {
                Kind::Mechanism => format!("ablate={}", t.name),
                Kind::Micros { max, .. } | Kind::OptMicros { max, .. } => {
                    format!("{}={max}", t.name)
                }
                Kind::Build { .. } => continue,
            };
            match apply(&mut n, &change) {
                Ok(_) => {
                    assert!(t.live(), "{change} is not live but was applied");
                    assert_ne!(o.describe(), n.describe(), "{change} changed nothing");
                    assert!(n.describe().contains(&change), "{change}: {}", n.describe());
                }
                Err(e) => assert!(!t.live(), "{change}: {e:#}"),
            }
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
        let e = apply(&mut o, "ablate=maybe").unwrap_err();
        assert!(
            format!("{e:#}").starts_with(
                "ablate: invalid value 'maybe' for '--ablate <NAME>': not a mechanism; one of: "
            ),
            "{e:#}"
        );
        assert!(apply(&mut o, "slice-us").is_err());
        let e = apply(&mut o, "idle-hold-us=10").unwrap_err();
        assert!(format!("{e:#}").contains("fixed at start"), "{e:#}");
        let e = apply(&mut o, "head-lag=off").unwrap_err();
        assert!(format!("{e:#}").contains("ablate=LIST"), "{e:#}");
        let e = apply(&mut o, "bogus=1").unwrap_err();
        assert!(format!("{e:#}").contains("not a tunable"), "{e:#}");
        assert_eq!(apply(&mut o, "slice-us=3000").unwrap(), "slice-us=3000");
        apply(&mut o, "ablate=head-lag").unwrap();
        assert_eq!(o.tun.num(Id::SliceUs), 3000);
        assert!(!o.tun.on(Id::HeadLag));
    }

    /// `ablate=LIST` makes exactly LIST ablated; `none` restores them all.
    /// What was ablated at load stays, and must stay in the list.
    #[test]
    fn ablate_sets_the_whole_list() {
        let mut o = defaults();
        apply(&mut o, "ablate=head-lag,fast-yield").unwrap();
        assert!(
            o.describe().ends_with(" ablate=fast-yield,head-lag"),
            "{}",
            o.describe()
        );
        apply(&mut o, "ablate=fast-yield").unwrap();
        assert!(o.tun.on(Id::HeadLag) && !o.tun.on(Id::FastYield));
        apply(&mut o, "ablate=none").unwrap();
        assert_eq!(o.describe(), defaults().describe());
        assert!(apply(&mut o, "ablate=compact-layout").is_err());

        let mut o = cli::try_parse_from(["scx_fastpath", "--ablate", "compact-layout"]).unwrap();
        let e = apply(&mut o, "ablate=none").unwrap_err();
        assert!(format!("{e:#}").contains("keep it in the list"), "{e:#}");
        apply(&mut o, "ablate=compact-layout,wake-local").unwrap();
        assert!(
            o.describe().ends_with(" ablate=wake-local,compact-layout"),
            "{}",
            o.describe()
        );
    }

    #[test]
    fn a_request_applies_all_or_fails() {
        let mut o = defaults();
        let args: BTreeMap<String, String> = [
            ("target", "set"),
            ("slice-us", "2000"),
            ("ablate", "fast-yield"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let done = apply_all(&mut o, &args).unwrap();
        assert_eq!(done, ["ablate=fast-yield", "slice-us=2000"]);
        let only_target: BTreeMap<String, String> =
            [("target".to_string(), "set".to_string())].into();
        assert!(apply_all(&mut o, &only_target).is_err());
    }
}
