//! Command-line options.

use std::process::ExitCode;

use clap::{FromArgMatches, Parser};

use crate::tunables::{self, Settings};

/// A sched_ext CPU scheduler: weighted fairness, and fast paths.
///
/// scx_fastpath: a sched_ext CPU scheduler with weighted virtual-time
/// fairness and fast paths for pinned tasks, cheap wakeups and brief idle
/// holds. Runs until interrupted; the kernel returns to its default
/// scheduler when it exits.
#[derive(Parser, Debug, Clone)]
#[command(
    name = "scx_fastpath",
    version = env!("FP_VERSION"),
    args_conflicts_with_subcommands = true,
    disable_help_subcommand = true,
    group(clap::ArgGroup::new("stats_out").args(["stats", "monitor"]).multiple(true))
)]
pub struct Opts {
    /// The tunables (src/tunables.rs), whose flags `command()` adds.
    #[arg(skip)]
    pub tun: Settings,

    /// Print a line of counters every SECS seconds (0: off)
    ///
    /// Print a line of scheduler counters every SECS seconds (fractions
    /// allowed; 0: off): tasks placed and the share that took a fast path,
    /// dispatched and the share stolen, preemptions, yields, the queue
    /// depth; with --all-counters also every counter's rate. A totals line
    /// at exit.
    /// The same figures are always served on the scx_stats socket,
    /// /var/run/scx/root/stats.
    #[arg(
        long,
        value_name = "SECS",
        default_value_t = 0.0,
        allow_negative_numbers = true,
        value_parser = parse_secs
    )]
    pub stats: f64,

    /// Load nothing: show the running instance's counters
    ///
    /// Load nothing: show the running scx_fastpath's figures (from its stats
    /// socket) every SECS seconds, until Ctrl-C. Waits for one to start.
    #[arg(long, value_name = "SECS", allow_negative_numbers = true, value_parser = parse_secs)]
    pub monitor: Option<f64>,

    /// With --monitor or --stats: one JSON object per sample
    ///
    /// With --monitor or --stats: one JSON object per line and sample (the
    /// totals since the scheduler attached, not rates), for scripts; with
    /// --stats also one at exit, the final totals.
    #[arg(long, requires = "stats_out")]
    pub json: bool,

    /// With --monitor: a full-screen live dashboard (q quits)
    ///
    /// With --monitor: a full-screen dashboard of the running instance,
    /// refreshed every SECS: a row per CPU (queue depth, rates), recent
    /// rates as sparklines, the kernel's sched_ext event counters and the
    /// tunables in force. q, Esc or Ctrl-C quits. Needs a terminal.
    #[arg(long, requires = "monitor", conflicts_with = "json")]
    pub tui: bool,

    /// Size of the kernel's debug dump on an error exit
    ///
    /// Bytes of the debug dump the kernel fills in when it ejects the
    /// scheduler (0: the kernel's default size). At most 2147483647: the
    /// kernel refuses a larger BPF array value, so the load would fail.
    #[arg(
        long,
        value_name = "BYTES",
        default_value_t = 0,
        allow_negative_numbers = true,
        value_parser = int_in(0u32, EXIT_DUMP_LEN_MAX)
    )]
    pub exit_dump_len: u32,

    /// Print a completion script for SHELL and exit
    ///
    /// Print the shell completion script for SHELL (bash, zsh, fish, elvish,
    /// powershell) and exit; scripts/install and scripts/package install
    /// the bash, zsh and fish ones.
    #[arg(long, value_name = "SHELL", allow_negative_numbers = true, value_enum)]
    pub completions: Option<clap_complete::Shell>,

    /// Print the man page (roff) and exit
    ///
    /// Print the manual page, made from these options, in roff (man -l -
    /// reads it), and exit.
    #[arg(long)]
    pub man: bool,

    /// Describe every counter and exit
    ///
    /// Describe every counter the stats show, and exit.
    #[arg(long)]
    pub help_stats: bool,

    /// With --stats or --monitor: every counter's rate too
    ///
    /// With --stats or --monitor: under each summary line, a line with the
    /// rate of every counter (--help-stats describes them) and the gauges.
    #[arg(long, requires = "stats_out", conflicts_with_all = ["json", "tui"])]
    pub all_counters: bool,

    /// Debug messages, including libbpf's (repeat for more)
    ///
    /// Debug messages, including libbpf's; twice, also trace messages and
    /// libbpf's debug output of the BPF object.
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,

    /// Print the benchmark's ablation variants and exit (for scripts/bench)
    #[arg(long, hide = true)]
    pub list_ablations: bool,

    /// Print the README's option table (Markdown) and exit
    #[arg(long, hide = true)]
    pub readme_options: bool,

    /// The libbpf object-open options every scx scheduler takes.
    #[command(flatten, next_help_heading = "Libbpf options")]
    pub libbpf: scx_utils::libbpf_clap_opts::LibbpfOpts,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum Command {
    /// Change a running instance's tunables (root)
    ///
    /// Change the running scx_fastpath's tunables without reloading it,
    /// over its stats socket (root only). KEY is an option's long name, as
    /// in the config line the stats print, e.g. `set slice-us=3000`;
    /// `ablate=LIST` turns off exactly the mechanisms in LIST
    /// (comma-separated; `none` turns them all back on). Values are checked
    /// as the flags check them, and all changes apply or none. Then prints
    /// the tunables now in force and the flags that give them. A restart
    /// after CPU hotplug keeps them; a new start does not, unless --save.
    Set {
        /// A change, e.g. slice-us=3000 or ablate=head-lag,fast-yield
        #[arg(value_name = "KEY=VALUE", required = true)]
        changes: Vec<String>,

        /// Also write the flags to the service's flags file
        ///
        /// After the change, write the flags that give the tunables now in
        /// force into SCX_FASTPATH_FLAGS in /etc/default/scx_fastpath (what
        /// contrib/scx_fastpath.service starts with), in place of the
        /// tunables' flags there; its other flags, lines and comments stay.
        #[arg(long)]
        save: bool,
    },
}

/// Largest --exit-dump-len: scx_utils sizes the exit dump's BPF array map
/// value to it, and the kernel refuses an array value above INT_MAX (-E2BIG
/// in array_map_alloc_check), so a larger one could only fail the load.
const EXIT_DUMP_LEN_MAX: u32 = 2_147_483_647;

/// A whole number in `min..=max`, for the integer options. clap's own
/// parsers call -1 an "invalid digit" and 2^64 "too large to fit in target
/// type"; this names the range instead. The value itself is in clap's part
/// of the message ("invalid value '-1' for '--slice-us <US>': ...").
pub fn int_in<T>(
    min: T,
    max: T,
) -> impl Fn(&str) -> Result<T, String> + Clone + Send + Sync + 'static
where
    T: Copy + Into<i128> + TryFrom<i128> + Send + Sync + 'static,
{
    move |s: &str| {
        let (lo, hi): (i128, i128) = (min.into(), max.into());
        let digits = s.strip_prefix(['-', '+']).unwrap_or(s);
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("not a whole number ({lo}..={hi})"));
        }
        // More digits than an i128 holds is out of range too.
        match s.parse::<i128>() {
            Ok(v) if (lo..=hi).contains(&v) => {
                T::try_from(v).map_err(|_| format!("not in {lo}..={hi}"))
            }
            _ => Err(format!("not in {lo}..={hi}")),
        }
    }
}

/// Seconds for --stats and --monitor: a number from 0 to 3600, fractions
/// allowed (NaN and infinities are not in range).
fn parse_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| "not a number of seconds (0..=3600)".to_string())?;
    if !(0.0..=3600.0).contains(&v) {
        return Err("not in 0..=3600".to_string());
    }
    Ok(v)
}

/// Exit status for bad usage (a flag or its value, a `set` change): 1 is
/// any other failure. contrib/scx_fastpath.service names it and EXIT_BUSY in
/// RestartPreventExitStatus= (a test checks it): a restart cannot help.
pub const EXIT_USAGE: u8 = 2;

/// Exit status when another sched_ext scheduler holds the kernel.
pub const EXIT_BUSY: u8 = 3;

/// Parses the command line. --help and --version print and exit 0 as clap
/// does; a usage error is one line on stderr, "error: ...", and exit status
/// 2. (clap's own rendering adds a usage line and tips: up to 7 lines.)
pub fn parse() -> Result<Opts, ExitCode> {
    match try_parse_from(std::env::args_os()) {
        Ok(opts) => match check_libbpf(&opts.libbpf) {
            Ok(()) => Ok(opts),
            Err(why) => {
                eprintln!("error: {why}");
                Err(ExitCode::from(EXIT_USAGE))
            }
        },
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprintln!("{}", one_line(&e));
            Err(ExitCode::from(
                u8::try_from(e.exit_code()).unwrap_or(EXIT_USAGE),
            ))
        }
    }
}

/// The libbpf options' values, checked as bad input: scx_utils turns them
/// into libbpf's open options, but drops all of them, silently, when it
/// cannot read the --kconfig file, and the scheduler would load with
/// settings nobody asked for.
fn check_libbpf(o: &scx_utils::libbpf_clap_opts::LibbpfOpts) -> Result<(), String> {
    if let Some(path) = &o.kconfig {
        // {path:?}: a path may hold a newline; the error stays one line.
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("--kconfig {path:?}: cannot read it: {e}"))?;
        if text.contains('\0') {
            return Err(format!("--kconfig {path:?}: the file has a NUL byte"));
        }
    }
    Ok(())
}

/// The command line's definition: the tunables' flags (src/tunables.rs),
/// then Opts', with the keys `set` takes added to its help.
pub fn command() -> clap::Command {
    let cmd = clap::Command::new("scx_fastpath").args(tunables::args());
    <Opts as clap::Args>::augment_args(cmd).mut_subcommand("set", |c| {
        let about = c
            .get_long_about()
            .map(|a| a.to_string())
            .unwrap_or_default();
        c.long_about(format!(
            "{about}\n\nKEY is one of: {}. The mechanisms that can change live: {}.",
            tunables::live_keys(),
            tunables::live_mechanisms()
        ))
    })
}

/// Parse a command line (its first word is the program's name).
pub fn try_parse_from<I, T>(args: I) -> Result<Opts, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut m = command().try_get_matches_from(args)?;
    let mut opts = Opts::from_arg_matches_mut(&mut m)?;
    opts.tun = Settings::from_matches(&m);
    Ok(opts)
}

/// clap's error as one line: its message (the first paragraph, whose lines,
/// e.g. "[possible values: ...]", are joined), and the similar flag or value
/// it suggests, if any.
pub fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};

    let text = e.render().to_string();
    let message = text.split("\n\n").next().unwrap_or_default();
    let mut line = message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    for kind in [ContextKind::SuggestedArg, ContextKind::SuggestedValue] {
        match e.get(kind) {
            Some(ContextValue::String(s)) => line.push_str(&format!(" (did you mean '{s}'?)")),
            Some(ContextValue::Strings(v)) if !v.is_empty() => {
                line.push_str(&format!(" (did you mean '{}'?)", v.join("' or '")))
            }
            _ => {}
        }
    }
    if line.is_empty() {
        line = format!("error: {}", e.kind());
    }
    line
}

impl Opts {
    /// The tunables as the stats show them: the config line.
    pub fn describe(&self) -> String {
        self.tun.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The systemd unit does not restart on the statuses that say retrying
    /// cannot help: these two, and only these.
    #[test]
    fn unit_prevents_restart_on_usage_and_busy() {
        let unit = include_str!("../contrib/scx_fastpath.service");
        let line = unit
            .lines()
            .find_map(|l| l.strip_prefix("RestartPreventExitStatus="))
            .expect("RestartPreventExitStatus= in the unit");
        assert_eq!(line, format!("{EXIT_USAGE} {EXIT_BUSY}"));
    }

    /// A command line that must parse.
    fn parse_ok(args: &[&str]) -> Opts {
        let mut argv = vec!["scx_fastpath"];
        argv.extend_from_slice(args);
        try_parse_from(argv).unwrap_or_else(|e| panic!("{args:?}: {}", one_line(&e)))
    }

    fn parse_err(args: &[&str]) -> String {
        let mut argv = vec!["scx_fastpath"];
        argv.extend_from_slice(args);
        match try_parse_from(argv) {
            Ok(_) => panic!("{args:?} was accepted"),
            Err(e) => one_line(&e),
        }
    }

    #[test]
    fn defaults_turn_every_mechanism_on() {
        let d = parse_ok(&[]).describe();
        assert_eq!(
            d,
            "slice-us=5000 wakeup-gran-us=1000 hog-gran-us=0 hog-run-us=1000 \
             pull-gran-us=1000 idle-hold-us=0 idle-resume-us=off ablate=none"
        );
    }

    #[test]
    fn ablate_turns_mechanisms_off() {
        let o = parse_ok(&[
            "--ablate",
            "pinned-fastpath",
            "--ablate=cheap-wakeup,compact-layout",
            "--idle-hold-us",
            "200",
            "--wakeup-gran-us",
            "0",
            "--ablate",
            "none",
        ]);
        assert_eq!(
            o.describe(),
            "slice-us=5000 wakeup-gran-us=0 hog-gran-us=0 hog-run-us=1000 \
             pull-gran-us=1000 idle-hold-us=200 idle-resume-us=off \
             ablate=pinned-fastpath,cheap-wakeup,compact-layout"
        );
        assert!(!o.tun.on(tunables::Id::CompactLayout));
        assert!(o.tun.on(tunables::Id::HeadLag));
        assert_eq!(o.tun.num(tunables::Id::IdleHoldUs), 200);
    }

    #[test]
    fn ablate_names_its_mechanisms() {
        let e = parse_err(&["--ablate", "bogus"]);
        assert!(
            e.starts_with("error: invalid value 'bogus' for '--ablate <NAME>': not a mechanism; one of: deferred-preempt, "),
            "{e}"
        );
        assert!(!e.contains('\n'));
        let e = parse_err(&["--ablate", "branch-hints"]);
        assert!(e.ends_with("--features no-branch-hints)"), "{e}");
        let e = parse_err(&["--ablate", "slice-us"]);
        assert!(e.contains("not a mechanism"), "{e}");
        for t in tunables::TABLE {
            if t.kind == tunables::Kind::Mechanism {
                let o = parse_ok(&["--ablate", t.name]);
                assert!(o.describe().ends_with(&format!("ablate={}", t.name)));
            }
        }
    }

    /// The removed switches are gone, and -h shows at most 12 policy
    /// options: the table's value options.
    #[test]
    fn short_help_lists_the_value_options_only() {
        for gone in [
            "--sync-wake",
            "--sync-affine",
            "--local-preempt",
            "--queued-wakeup",
            "--no-lazy-vmin",
            "--no-head-lag",
        ] {
            parse_err(&[gone]);
        }
        let help = command().render_help().to_string();
        let shown: Vec<&str> = tunables::TABLE
            .iter()
            .filter(|t| help.contains(&format!("--{} ", t.name)))
            .map(|t| t.name)
            .collect();
        assert!(shown.len() <= 12, "{shown:?}");
        for t in tunables::TABLE {
            assert_eq!(shown.contains(&t.name), !t.is_mechanism(), "{}", t.name);
        }
        assert!(!help.contains("--ablate"), "{help}");
        assert!(!help.contains("README"), "{help}");
        let long = command().render_long_help().to_string();
        assert!(
            !long.contains("README") && !long.contains("--ablate"),
            "{long}"
        );
    }

    #[test]
    fn all_counters_needs_stats_or_monitor() {
        assert!(parse_ok(&["--stats", "1", "--all-counters"]).all_counters);
        assert!(parse_ok(&["--monitor", "1", "--all-counters"]).all_counters);
        assert_eq!(parse_ok(&["-v", "--stats", "1"]).verbose, 1);
        assert!(!parse_ok(&["-v", "--stats", "1"]).all_counters);
        parse_err(&["--all-counters"]);
        parse_err(&["--monitor", "1", "--json", "--all-counters"]);
    }

    #[test]
    fn set_takes_save() {
        match parse_ok(&["set", "slice-us=3000", "--save"]).command {
            Some(Command::Set { changes, save }) => {
                assert_eq!(changes, ["slice-us=3000"]);
                assert!(save);
            }
            other => panic!("{other:?}"),
        }
        parse_err(&["set", "--save"]);
    }

    #[test]
    fn out_of_range_values_are_refused() {
        for args in [
            &["--idle-hold-us", "1001"][..],
            &["--slice-us", "99"],
            &["--idle-resume-us", "-1"],
            &["--wakeup-gran-us", "100001"],
            &["--hog-run-us", "0"],
            &["--hog-run-us", "100001"],
            &["--stats", "-1"],
            &["--stats", "x"],
            &["--json"],
            &["--tui"],
            &["--monitor", "1", "--tui", "--json"],
        ] {
            parse_err(args);
        }
    }

    #[test]
    fn bad_numbers_name_the_range() {
        let err = parse_err;
        let e = err(&["--slice-us", "-1"]);
        assert_eq!(
            e,
            "error: invalid value '-1' for '--slice-us <US>': not in 100..=100000"
        );
        let e = err(&["--wakeup-gran-us", "18446744073709551616"]);
        assert!(e.ends_with("not in 0..=100000"), "{e}");
        let e = err(&["--idle-resume-us", "abc"]);
        assert!(e.ends_with("not a whole number (0..=1000000)"), "{e}");
        let e = err(&["--exit-dump-len", "2147483648"]);
        assert!(e.ends_with("not in 0..=2147483647"), "{e}");
        let e = err(&["--stats", "-0.5"]);
        assert!(e.ends_with("'--stats <SECS>': not in 0..=3600"), "{e}");
        let e = err(&["--monitor", "NaN"]);
        assert!(e.ends_with("not in 0..=3600"), "{e}");
        let e = err(&["--json"]);
        assert_eq!(
            e,
            "error: the following required arguments were not provided: <--stats <SECS>|--monitor <SECS>>"
        );
        let e = err(&["--jsn"]);
        assert!(e.ends_with("(did you mean '--json'?)"), "{e}");
        let e = err(&["--completions", "bsh"]);
        assert!(e.contains("[possible values: bash,"), "{e}");
        assert!(e.ends_with("(did you mean 'bash'?)"), "{e}");
    }

    #[test]
    fn whole_numbers_take_a_sign_and_leading_zeros() {
        let o = parse_ok(&["--slice-us", "+0200", "--idle-resume-us=-0"]);
        assert_eq!(o.tun.num(tunables::Id::SliceUs), 200);
        assert_eq!(o.tun.opt(tunables::Id::IdleResumeUs), Some(0));
        let o = parse_ok(&["--exit-dump-len", "2147483647"]);
        assert_eq!(o.exit_dump_len, 2_147_483_647);
    }

    #[test]
    fn readme_shows_short_help() {
        let block = crate::readme::block("<!-- usage: scx_fastpath -h -->\n```\n", "```");
        let help = command().render_help().to_string();
        assert_eq!(
            block.trim_end(),
            help.trim_end(),
            "README's usage block is stale"
        );
    }

    #[test]
    fn kconfig_must_be_readable() {
        let o = parse_ok(&["--kconfig", "/nonexistent/kconfig"]);
        let e = check_libbpf(&o.libbpf).unwrap_err();
        assert!(
            e.starts_with("--kconfig \"/nonexistent/kconfig\": cannot read it"),
            "{e}"
        );
        let o = parse_ok(&["--kconfig", "/dev/null"]);
        assert_eq!(check_libbpf(&o.libbpf), Ok(()));
        assert!(o.libbpf.into_bpf_open_opts().is_some());
    }

    #[test]
    fn seconds_take_fractions() {
        let o = parse_ok(&["--stats", "0.5"]);
        assert_eq!(o.stats, 0.5);
        let o = parse_ok(&["--monitor", "2", "--json"]);
        assert_eq!(o.monitor, Some(2.0));
        assert!(o.json);
        let o = parse_ok(&["--monitor", "1", "--tui"]);
        assert!(o.tui && !o.json);
        let o = parse_ok(&["--stats", "1", "--json"]);
        assert!(o.stats == 1.0 && o.json);
    }
}
