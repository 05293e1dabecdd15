//! The README's benchmark block is the output of `scripts/bench
//! --readme-snippet` for the committed run (docs/bench/latest.json), never
//! typed by hand: this fails when the two differ.

use std::path::Path;
use std::process::Command;

const START: &str = "<!-- bench-snippet: output of scripts/bench --readme-snippet -->\n";
const END: &str = "<!-- /bench-snippet -->";

#[test]
fn readme_shows_bench_snippet() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("read README.md");
    let start = readme
        .find(START)
        .expect("README has the bench-snippet start marker")
        + START.len();
    let end = readme[start..]
        .find(END)
        .expect("README has the bench-snippet end marker")
        + start;
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
        &readme[start..end],
        snippet,
        "README's bench block differs from scripts/bench --readme-snippet: paste its output between the markers"
    );
}
