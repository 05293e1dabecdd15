//! Standard output that fails with an error instead of a panic.
//!
//! println!() panics when the write fails, and it does when standard output
//! is a pipe whose reader has gone (`scx_fastpath --stats 1 | head -3`: Rust
//! ignores SIGPIPE, so the write returns EPIPE). With the scheduler attached
//! that would be a panic trace where one line belongs, and the exit report
//! would be lost; a stats reader that goes away is a reason to stop cleanly
//! (guest test `stats_reader_gone`).

use std::fmt::Display;
use std::io::Write;

use anyhow::{Context, Result};

fn write_to(out: &mut impl Write, text: impl Display) -> Result<()> {
    write!(out, "{text}")
        .and_then(|()| out.flush())
        .context("failed to write to standard output")
}

/// Write @text as it is.
pub fn text(text: impl Display) -> Result<()> {
    write_to(&mut std::io::stdout().lock(), text)
}

/// Write @line and a newline.
pub fn line(line: impl Display) -> Result<()> {
    text(format_args!("{line}\n"))
}

#[cfg(test)]
mod tests {
    use std::io::{self, Write};

    /// A pipe whose reader has gone.
    struct Closed;

    impl Write for Closed {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn closed_pipe_is_an_error() {
        let e = super::write_to(&mut Closed, "a line nobody reads\n").expect_err("closed pipe");
        assert_eq!(
            format!("{e:#}"),
            "failed to write to standard output: broken pipe"
        );
    }
}
