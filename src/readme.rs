//! The README's generated blocks, checked against what generates them: each
//! sits between an opening marker line and a closing one, and a test beside
//! the generator fails when the README's copy is stale (the usage block in
//! cli.rs, the counters in stats.rs). The benchmark block is checked by
//! `scripts/bench --check-readme`, not here: `cargo test` reads nothing a
//! benchmark wrote.

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
