//! The documentation's generated blocks, checked against what generates
//! them: each sits between an opening marker line and a closing one, and a
//! test beside the generator fails when the copy is stale (the README's
//! usage block in cli.rs, docs/design.md's counters in stats.rs). The
//! README's benchmark block is checked by `scripts/bench --check-readme`,
//! not here: `cargo test` reads nothing a benchmark wrote.

const README: &str = include_str!("../README.md");
const DESIGN: &str = include_str!("../docs/design.md");

/// The text of document `doc` (named `name`) between the line `open` and
/// the next `close`.
fn block_in(name: &str, doc: &'static str, open: &str, close: &str) -> &'static str {
    let start = doc
        .find(open)
        .unwrap_or_else(|| panic!("{name} has no {open:?} block"))
        + open.len();
    let len = doc[start..]
        .find(close)
        .unwrap_or_else(|| panic!("{name}'s {open:?} block is not closed by {close:?}"));
    &doc[start..start + len]
}

/// The README's text between the line `open` and the next `close`.
pub fn block(open: &str, close: &str) -> &'static str {
    block_in("README.md", README, open, close)
}

/// docs/design.md's text between the line `open` and the next `close`.
pub fn design_block(open: &str, close: &str) -> &'static str {
    block_in("docs/design.md", DESIGN, open, close)
}
