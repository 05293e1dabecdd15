//! The README's generated blocks, checked against what generates them: each
//! sits between an opening marker line and a closing one, and a test here
//! or beside the generator fails when the README's copy is stale.

use std::path::Path;
use std::process::Command;

const README: &str = include_str!("../README.md");

/// The README's text between the line `open` and the next `close`.
pub fn block(open: &str, close: &str) -> &'static str {
    let start = README
        .find(open)
        .unwrap_or_else(|| panic!("README has no {open:?} block"))
        + open.len();
    let len = README[start..]
        .find(close)
        .unwrap_or_else(|| panic!("README's {open:?} block is not closed by {close:?}"));
    &README[start..start + len]
}

/// The benchmark block is `scripts/bench --readme-snippet` for the
/// committed run (docs/bench/latest.json), never typed by hand.
#[test]
fn readme_shows_bench_snippet() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Relative paths, as scripts/bench passes them: the snippet names its file.
    let out = Command::new("python3")
        .current_dir(root)
        .args([
            "scripts/bench.d/report.py",
            "--snippet",
            "docs/bench/latest.json",
        ])
        .output()
        .expect("run python3 scripts/bench.d/report.py --snippet (python3 is needed)");
    assert!(
        out.status.success(),
        "report.py --snippet failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snippet = String::from_utf8(out.stdout).expect("snippet is UTF-8");
    assert_eq!(
        block(
            "<!-- bench-snippet: output of scripts/bench --readme-snippet -->\n",
            "<!-- /bench-snippet -->"
        ),
        snippet,
        "README's bench block differs from scripts/bench --readme-snippet: paste its output between the markers"
    );
}
