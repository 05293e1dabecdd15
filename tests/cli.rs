//! Property test of the command line (issue 11, "Bad input"): runs the built
//! binary, so it sees real exit statuses and stderr.
//!
//! The flags come from the binary's own `--help`. Every flag that takes a
//! value is fed negative, huge, fractional, non-numeric, padded, full-width,
//! empty and 10,000-character values; every flag without one is given a
//! value; unknown, repeated, conflicting and requiring combinations are
//! tried. A refusal must be exit status 2 and one line starting "error:";
//! nothing may panic. Valid values (each range's ends, read from the error
//! for a huge value, and the listed possible values) must be accepted.
//!
//! Probes that the parser should refuse end with `--help-stats`, which exits
//! 0 before anything is loaded, so a value wrongly accepted shows up as exit
//! 0 and never starts the scheduler. Only the run-through of accepted values
//! runs full command lines, and only where there is no sched_ext to attach to.

use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_scx_fastpath");

/// Ends a probe: exits 0 once the parser is done, loading nothing.
const DRY: &str = "--help-stats";

/// Flags whose values are free-form (a string checked later, not by the
/// parser), with a value that is valid for each: bad values may get past
/// the parser, so those must instead fail cleanly when run. A flag added
/// with one belongs here.
const FREE_FORM: &[(&str, &str)] = &[
    ("--pin-root-path", "/sys/fs/bpf"),
    ("--kconfig", "/dev/null"),
    ("--btf-custom-path", "/sys/kernel/btf/vmlinux"),
    ("--bpf-token-path", "/sys/fs/bpf"),
];

fn free_form_valid(flag: &str) -> Option<&'static str> {
    FREE_FORM.iter().find(|(f, _)| *f == flag).map(|(_, v)| *v)
}

#[derive(Debug)]
struct Run {
    args: Vec<String>,
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// Still running at the deadline (killed): e.g. --monitor waiting.
    timed_out: bool,
}

impl Run {
    fn show(&self) -> String {
        let args: Vec<String> = self
            .args
            .iter()
            .map(|a| {
                if a.chars().count() > 40 {
                    format!("<{} chars>", a.chars().count())
                } else {
                    format!("{a:?}")
                }
            })
            .collect();
        let stderr: String = self.stderr.chars().take(600).collect();
        format!(
            "scx_fastpath {}: exit {:?}{}, stderr:\n{stderr}",
            args.join(" "),
            self.code,
            if self.timed_out { " (killed)" } else { "" }
        )
    }

    fn lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }
}

/// Runs the binary with `args`, killing it after `deadline`.
fn run(args: &[String], deadline: Duration) -> Run {
    let mut child = Command::new(BIN)
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("failed to start the binary");
    // Read both pipes on threads: a child that fills one would block.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut s).unwrap();
        s
    });
    let err_t = thread::spawn(move || {
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut s).unwrap();
        s
    });
    let start = Instant::now();
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > deadline {
            timed_out = true;
            child.kill().unwrap();
            break child.wait().unwrap();
        }
        thread::sleep(Duration::from_millis(5));
    };
    Run {
        args: args.to_vec(),
        code: status.code(),
        stdout: String::from_utf8_lossy(&out_t.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&err_t.join().unwrap()).into_owned(),
        timed_out,
    }
}

/// Runs every argument list, a few at a time; the results in order.
fn run_all(lists: Vec<Vec<String>>, deadline: Duration) -> Vec<Run> {
    let threads = thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 8);
    let chunk = lists.len().div_ceil(threads).max(1);
    thread::scope(|s| {
        let handles: Vec<_> = lists
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(|a| run(a, deadline)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

const PARSE_DEADLINE: Duration = Duration::from_secs(10);

fn argv(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Nothing the binary does may panic, whatever the exit status.
fn no_panic(r: &Run) -> Result<(), String> {
    if r.code == Some(101)
        || r.stderr.contains("panicked")
        || r.stderr.contains("RUST_BACKTRACE")
        || r.stdout.contains("panicked")
    {
        return Err(format!("panicked: {}", r.show()));
    }
    Ok(())
}

/// A refusal by the parser: exit 2, one line "error: ...", nothing on stdout.
fn refused(r: &Run) -> Result<(), String> {
    no_panic(r)?;
    let lines = r.lines();
    if r.code != Some(2)
        || lines.len() != 1
        || !lines[0].starts_with("error: ")
        || lines[0].len() < "error: ".len() + 10
        || !r.stdout.is_empty()
    {
        return Err(format!("not a one-line refusal, exit 2: {}", r.show()));
    }
    Ok(())
}

/// Either refused (as above) or accepted by the parser (the probe's
/// `--help-stats` then exits 0).
fn refused_or_accepted(r: &Run) -> Result<(), String> {
    no_panic(r)?;
    if r.code == Some(0) && r.stderr.is_empty() {
        return Ok(());
    }
    refused(r)
}

/// A full run on a host without sched_ext: success, one clear failure line
/// (at most 3 lines, the first "error:" or "scx_fastpath: error:"), or still
/// running at the deadline (--monitor waits for an instance).
fn clean_outcome(r: &Run) -> Result<(), String> {
    no_panic(r)?;
    if r.timed_out || r.code == Some(0) {
        return Ok(());
    }
    let lines = r.lines();
    let first_ok = lines
        .first()
        .is_some_and(|l| l.starts_with("error:") || l.starts_with("scx_fastpath: error:"));
    if !(r.code == Some(1) || r.code == Some(2)) || lines.is_empty() || lines.len() > 3 || !first_ok
    {
        return Err(format!("not a clean failure: {}", r.show()));
    }
    Ok(())
}

/// Collects every failure before reporting them all.
fn check(runs: &[Run], f: fn(&Run) -> Result<(), String>) -> Vec<String> {
    runs.iter().filter_map(|r| f(r).err()).collect()
}

fn assert_none(what: &str, failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "{what}: {} failure(s):\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[derive(Debug, Clone)]
struct Flag {
    long: String,
    short: Option<String>,
    takes_value: bool,
    /// From "[possible values: a, b]" in the help.
    possible: Vec<String>,
}

/// Every flag in `--help`: lines like "  -s, --slice-us <US>",
/// "      --sync-wake", "  -v, --verbose...", followed by their text.
fn flags() -> Vec<Flag> {
    let r = run(&argv(&["--help"]), PARSE_DEADLINE);
    assert_eq!(r.code, Some(0), "{}", r.show());
    let mut flags: Vec<Flag> = Vec::new();
    for line in r.stdout.lines() {
        let t = line.trim_start();
        if t.starts_with('-') && line.starts_with("  ") && line.len() - t.len() <= 6 {
            let mut short = None;
            let mut rest = t;
            if let Some(s) = rest.strip_prefix('-').filter(|s| !s.starts_with('-')) {
                short = Some(format!("-{}", &s[..1]));
                rest = s[1..].trim_start_matches(',').trim_start();
            }
            let Some(long) = rest.strip_prefix("--") else {
                continue;
            };
            let name: String = long
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            flags.push(Flag {
                long: format!("--{name}"),
                short,
                takes_value: long.contains('<'),
                possible: Vec::new(),
            });
        } else if let Some(p) = t.strip_prefix("[possible values: ") {
            let last = flags.last_mut().expect("possible values before any flag");
            last.possible = p
                .trim_end_matches(']')
                .split(", ")
                .map(str::to_string)
                .collect();
        }
    }
    flags
}

fn value_flags() -> Vec<Flag> {
    let all = flags();
    let v: Vec<Flag> = all.iter().filter(|f| f.takes_value).cloned().collect();
    // The parse of --help must have found them: guard against a format change
    // that would make this test check nothing.
    for known in [
        "--slice-us",
        "--stats",
        "--monitor",
        "--exit-dump-len",
        "--completions",
    ] {
        assert!(
            v.iter().any(|f| f.long == known),
            "{known} not found in --help: {all:?}"
        );
    }
    v
}

fn bad_values() -> Vec<String> {
    let mut v = argv(&[
        "-1",
        "-0.5",
        "-0.0001",
        "-9223372036854775809",
        "18446744073709551616",
        "99999999999999999999999",
        "340282366920938463463374607431768211456",
        "abc",
        "",
        "1e99",
        "-1e99",
        "NaN",
        "nan",
        "inf",
        "-inf",
        "infinity",
        "0x10",
        " 5",
        "5 ",
        "5\n",
        "1,5",
        "1_000",
        "5us",
        "--",
        "-",
        "\u{ff15}", // full-width 5
        "\u{0665}", // Arabic-Indic 5
        "\u{1F600}",
    ]);
    v.push("9".repeat(10_000));
    v.push("x".repeat(10_000));
    v
}

/// The range a flag takes, from its refusal of a huge value ("not in A..=B").
fn range_of(flag: &str) -> Option<(i128, i128)> {
    let r = run(
        &argv(&[&format!("{flag}=99999999999999999999999"), DRY]),
        PARSE_DEADLINE,
    );
    let (_, tail) = r.stderr.split_once("not in ")?;
    let (lo, hi) = tail.trim().split_once("..=")?;
    Some((lo.parse().ok()?, hi.parse().ok()?))
}

#[test]
fn bad_values_are_refused_in_one_line() {
    let mut lists = Vec::new();
    for f in value_flags() {
        for v in bad_values() {
            lists.push(vec![f.long.clone(), v.clone(), DRY.into()]);
            lists.push(vec![format!("{}={v}", f.long), DRY.into()]);
            if let Some(s) = &f.short {
                lists.push(vec![s.clone(), v.clone(), DRY.into()]);
            }
        }
        // Out of range by one at each end, where there is a range.
        if let Some((lo, hi)) = range_of(&f.long) {
            lists.push(vec![format!("{}={}", f.long, hi + 1), DRY.into()]);
            lists.push(vec![format!("{}={}", f.long, lo - 1), DRY.into()]);
        }
        // No value at all.
        lists.push(vec![f.long.clone()]);
        lists.push(vec![DRY.into(), f.long.clone()]);
    }
    let runs = run_all(lists, PARSE_DEADLINE);
    let mut failures = Vec::new();
    for r in &runs {
        let free = FREE_FORM.iter().any(|(f, _)| r.args[0].starts_with(f));
        let res = if free {
            refused_or_accepted(r)
        } else {
            refused(r)
        };
        failures.extend(res.err());
    }
    assert_none("bad values", failures);
}

#[test]
fn valid_values_are_accepted() {
    let mut lists = Vec::new();
    for f in value_flags() {
        let mut vals: Vec<String> = f.possible.clone();
        if let Some((lo, hi)) = range_of(&f.long) {
            vals.extend([lo, hi, lo + (hi - lo) / 2].map(|v| v.to_string()));
            vals.push(format!("+{hi}"));
            vals.push(format!("0{lo}"));
        }
        vals.extend(free_form_valid(&f.long).map(String::from));
        assert!(
            !vals.is_empty(),
            "{}: no valid value known (no range in its error, no possible values)",
            f.long
        );
        for v in vals {
            lists.push(vec![f.long.clone(), v.clone(), DRY.into()]);
            lists.push(vec![format!("{}={v}", f.long), DRY.into()]);
        }
    }
    // Fractions and exponents for seconds.
    for secs in ["0.5", "0.001", "1e2", "3600.0", "0"] {
        lists.push(argv(&["--stats", secs, DRY]));
        lists.push(argv(&["--monitor", secs, DRY]));
    }
    // Combinations that are allowed.
    lists.push(argv(&["--monitor", "1", "--json", DRY]));
    lists.push(argv(&["--monitor", "1", "--tui", DRY]));
    lists.push(argv(&["-vv", DRY]));
    lists.push(argv(&["-v", "-v", "--verbose", DRY]));
    let runs = run_all(lists, PARSE_DEADLINE);
    let failures = runs
        .iter()
        .filter_map(|r| {
            no_panic(r).err().or_else(|| {
                (r.code != Some(0) || !r.stderr.is_empty())
                    .then(|| format!("valid value refused: {}", r.show()))
            })
        })
        .collect();
    assert_none("valid values", failures);
}

#[test]
fn switches_unknown_flags_and_combinations_are_refused() {
    let mut lists = Vec::new();
    for f in flags().iter().filter(|f| !f.takes_value) {
        for v in ["1", "", "true", "--json"] {
            lists.push(vec![format!("{}={v}", f.long), DRY.into()]);
        }
    }
    for unknown in [
        "--bogus",
        "--slice",
        "--SLICE-US",
        "--slice_us",
        "---slice-us",
        "-x",
        "-sx",
        "bogus",
        "-",
        "--",
        "5000",
        "--=1",
        "\u{ff0d}\u{ff0d}json",
    ] {
        lists.push(argv(&[unknown, DRY]));
    }
    // Requires and conflicts.
    for combo in [
        &["--json"][..],
        &["--tui"],
        &["--json", "--tui"],
        &["--monitor", "1", "--json", "--tui"],
        &["--tui", "--monitor", "1", "--json"],
    ] {
        let mut a = argv(combo);
        a.push(DRY.into());
        lists.push(a);
    }
    let runs = run_all(lists, PARSE_DEADLINE);
    assert_none(
        "switches, unknown flags, combinations",
        check(&runs, refused),
    );
}

#[test]
fn repeated_flags_are_refused_or_taken() {
    let mut lists = Vec::new();
    for f in flags() {
        if matches!(f.long.as_str(), "--help" | "--version") {
            continue;
        }
        let a = if f.takes_value {
            // A value it accepts, twice.
            let v = f
                .possible
                .first()
                .cloned()
                .or_else(|| range_of(&f.long).map(|(lo, _)| lo.to_string()))
                .or_else(|| free_form_valid(&f.long).map(String::from))
                .expect("no valid value known");
            vec![f.long.clone(), v.clone(), f.long.clone(), v]
        } else {
            vec![f.long.clone(), f.long.clone()]
        };
        let mut a = a;
        if f.long == "--json" || f.long == "--tui" {
            a.extend(argv(&["--monitor", "1"]));
        }
        if f.long != DRY {
            a.push(DRY.into());
        }
        lists.push(a);
    }
    let runs = run_all(lists, PARSE_DEADLINE);
    assert_none("repeated flags", check(&runs, refused_or_accepted));
}

/// Accepted values, run for real: the program must then succeed, fail with
/// one clear line, or keep running (--monitor waits for an instance). Only
/// where there is no sched_ext: there, a full command line could attach.
#[test]
fn accepted_values_fail_cleanly_when_run() {
    if Path::new("/sys/kernel/sched_ext").exists() {
        eprintln!(
            "note: /sys/kernel/sched_ext exists: skipping the run-through of accepted values \
             (a full command line could attach the scheduler)"
        );
        return;
    }
    let mut lists = Vec::new();
    for f in value_flags() {
        let mut vals: Vec<String> = f.possible.clone();
        if let Some((lo, hi)) = range_of(&f.long) {
            vals.extend([lo, hi].map(|v| v.to_string()));
        }
        if free_form_valid(&f.long).is_some() {
            vals.extend(bad_values());
        }
        for v in vals {
            lists.push(vec![f.long.clone(), v]);
        }
    }
    lists.push(argv(&["-vv"]));
    lists.push(argv(&["--monitor", "0.5", "--json"]));
    lists.push(argv(&["--monitor", "0", "--tui"]));
    for f in flags().iter().filter(|f| !f.takes_value) {
        if !matches!(f.long.as_str(), "--help" | "--version" | "--json" | "--tui") {
            lists.push(vec![f.long.clone()]);
        }
    }
    let runs = run_all(lists, Duration::from_millis(1500));
    assert_none("accepted values, run", check(&runs, clean_outcome));
}

/// Output that cannot be written (a full disk; a reader that has gone is
/// the same error path): one line and exit 1, never a panic. println!() and
/// clap_complete panic there (exit 101).
#[test]
fn unwritable_output_fails_in_one_line() {
    let mut failures = Vec::new();
    for args in [
        &["--help-stats"][..],
        &["--completions", "bash"],
        &["--man"],
    ] {
        let out = Command::new(BIN)
            .args(args)
            .stdout(std::fs::File::create("/dev/full").expect("open /dev/full"))
            .stderr(Stdio::piped())
            .output()
            .expect("run the binary");
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().collect();
        if out.status.code() != Some(1)
            || lines.len() != 1
            || !lines[0].starts_with("scx_fastpath: error: failed to write")
        {
            failures.push(format!("{args:?}: {:?}, stderr {err:?}", out.status));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The hidden flags: `--ablate NAME` (scripts/bench, the guest tests), its
/// one-line refusal of a name that is not a mechanism, and the lists that
/// scripts/bench and the README take from the binary.
#[test]
fn ablate_and_the_generated_lists() {
    let r = run(
        &argv(&["--ablate", "head-lag,fast-yield", DRY]),
        PARSE_DEADLINE,
    );
    assert!(r.code == Some(0) && r.stderr.is_empty(), "{}", r.show());
    let r = run(&argv(&["--ablate", "bogus", DRY]), PARSE_DEADLINE);
    refused(&r).unwrap();
    assert!(
        r.stderr
            .contains("not a mechanism; one of: deferred-preempt, "),
        "{}",
        r.show()
    );
    for gone in [
        "--no-head-lag",
        "--sync-wake",
        "--local-preempt",
        "--queued-wakeup",
    ] {
        refused(&run(&argv(&[gone, DRY]), PARSE_DEADLINE)).unwrap();
    }
    let r = run(&argv(&["--list-ablations"]), PARSE_DEADLINE);
    assert_eq!(r.code, Some(0), "{}", r.show());
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines.len() > 10, "{}", r.stdout);
    for l in &lines {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 4, "{l}");
        assert!(f[0].starts_with("fastpath-"), "{l}");
        // Each variant's switch is accepted by the binary itself.
        if !f[1].starts_with("--features ") {
            let mut a: Vec<String> = f[1].split(' ').map(String::from).collect();
            a.push(DRY.into());
            let r = run(&a, PARSE_DEADLINE);
            assert!(r.code == Some(0), "{l}: {}", r.show());
        }
    }
    let r = run(&argv(&["--readme-options"]), PARSE_DEADLINE);
    assert_eq!(r.code, Some(0), "{}", r.show());
    assert!(r.stdout.starts_with("| Option |"), "{}", r.stdout);
}

/// `set` checks its changes before it connects: a bad one is exit 2 and one
/// line; good ones with nothing running are exit 1 and one line.
#[test]
fn set_refuses_bad_changes_in_one_line() {
    for bad in [
        &["set", "slice-us=99"][..],
        &["set", "head-lag=off"],
        &["set", "ablate=bogus"],
        &["set", "idle-hold-us=10"],
        &["set", "slice-us"],
        &["set", "slice-us=200", "slice-us=300"],
    ] {
        let r = run(&argv(bad), PARSE_DEADLINE);
        no_panic(&r).unwrap();
        assert!(
            r.code == Some(2)
                && r.lines().len() == 1
                && r.stderr.starts_with("scx_fastpath: error: "),
            "{}",
            r.show()
        );
    }
    if Path::new("/var/run/scx/root/stats").exists() {
        eprintln!("note: a stats socket exists: not running `set` against it");
        return;
    }
    let r = run(
        &argv(&["set", "slice-us=3000", "ablate=none", "--save"]),
        PARSE_DEADLINE,
    );
    no_panic(&r).unwrap();
    assert!(r.code == Some(1) && r.lines().len() == 1, "{}", r.show());
}
