//! The service's flags file: contrib/scx_fastpath.service starts
//! scx_fastpath with `$SCX_FASTPATH_FLAGS` from /etc/default/scx_fastpath.
//! `scx_fastpath set ... --save` writes the flags of the tunables in force
//! there, in place of the tunables' flags it had; its other flags, lines and
//! comments stay.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};

use crate::cli;
use crate::tunables::{Kind, Settings, ABLATE, TABLE};

/// The file, as the unit's EnvironmentFile= names it (a test checks).
pub const PATH: &str = "/etc/default/scx_fastpath";

/// The variable the unit's ExecStart= expands (a test checks).
pub const VAR: &str = "SCX_FASTPATH_FLAGS";

/// Write the flags that give `tun` into the file at `path` (created if
/// missing), atomically; returns the variable's new line.
pub fn save(path: &Path, tun: &Settings) -> Result<String> {
    let text = match fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let (text, line) = rewrite(&text, tun).with_context(|| format!("{}", path.display()))?;
    write_atomic(path, &text)?;
    Ok(line)
}

/// The words of a VAR= line's value: quoted whole in "" or '', or not at
/// all, with no quote, escape or expansion inside (a value that has them is
/// left to be edited by hand rather than rewritten wrongly).
fn value_words(value: &str) -> Result<Vec<String>> {
    let v = value.trim();
    let inner = ['"', '\'']
        .iter()
        .find_map(|q| v.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)))
        .unwrap_or(v);
    if inner.contains(['"', '\'', '\\', '$', '`']) {
        bail!("its {VAR} value has quotes, escapes or a $ inside: edit it by hand");
    }
    Ok(inner.split_whitespace().map(str::to_string).collect())
}

/// `words` less the tunables' flags and their values.
fn without_tunables(words: &[String]) -> Vec<String> {
    let value_flag = |name: &str| {
        name == ABLATE
            || TABLE.iter().any(|t| {
                t.name == name && matches!(t.kind, Kind::Micros { .. } | Kind::OptMicros { .. })
            })
    };
    let shorts: Vec<char> = TABLE.iter().filter_map(|t| t.short).collect();
    let mut kept = Vec::new();
    let mut words = words.iter();
    while let Some(w) = words.next() {
        if let Some(long) = w.strip_prefix("--") {
            match long.split_once('=') {
                Some((name, _)) if value_flag(name) => continue,
                None if value_flag(long) => {
                    words.next();
                    continue;
                }
                _ => {}
            }
        } else if let Some(short) = w.strip_prefix('-').and_then(|s| s.chars().next()) {
            if shorts.contains(&short) {
                if w.len() == 2 {
                    words.next();
                }
                continue;
            }
        }
        kept.push(w.clone());
    }
    kept
}

/// `text` with VAR's line giving `tun`'s flags (appended when it has
/// none); the new text and the line.
fn rewrite(text: &str, tun: &Settings) -> Result<(String, String)> {
    let prefix = format!("{VAR}=");
    let at: Vec<usize> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with(&prefix))
        .map(|(i, _)| i)
        .collect();
    if at.len() > 1 {
        bail!("{VAR} is set on {} lines: edit it by hand", at.len());
    }
    let old = match at.first() {
        Some(&i) => {
            let l = text.lines().nth(i).unwrap_or_default();
            value_words(&l.trim_start()[prefix.len()..])?
        }
        None => Vec::new(),
    };
    let mut flags = without_tunables(&old);
    flags.extend(tun.flags());
    // What the service will start with must parse, to these tunables.
    let parsed =
        cli::try_parse_from(std::iter::once("scx_fastpath".to_string()).chain(flags.clone()))
            .map_err(|e| {
                anyhow!(
                    "the new {VAR} would not parse ({}): edit it by hand",
                    cli::one_line(&e).trim_start_matches("error: ")
                )
            })?;
    if parsed.tun.flags() != tun.flags() || parsed.command.is_some() {
        bail!("its {VAR} cannot be rewritten to these tunables: edit it by hand");
    }
    let line = format!("{VAR}=\"{}\"", flags.join(" "));
    let mut out: Vec<&str> = text.lines().collect();
    match at.first() {
        Some(&i) => out[i] = &line,
        None => out.push(&line),
    }
    let mut out = out.join("\n");
    out.push('\n');
    Ok((out, line))
}

/// Replace `path` with `text`: a new file beside it, synced, renamed over
/// it, so that a reader sees the old file or the new one, whole. Keeps the
/// old file's mode (0644 for a new one); writes through a symlink.
fn write_atomic(path: &Path, text: &str) -> Result<()> {
    let target: PathBuf = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let fail = || format!("cannot write {}", target.display());
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let name = target
        .file_name()
        .ok_or_else(|| anyhow!("{} names no file", target.display()))?;
    let tmp = dir.join(format!(
        ".{}.{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let mode = fs::metadata(&target).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    let res = (|| -> std::io::Result<()> {
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&tmp)?;
        f.set_permissions(fs::Permissions::from_mode(mode))?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &target)?;
        // The rename itself, on disk.
        fs::File::open(dir)?.sync_all()
    })();
    if res.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    res.with_context(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tun(args: &[&str]) -> Settings {
        let mut argv = vec!["scx_fastpath"];
        argv.extend_from_slice(args);
        cli::try_parse_from(argv).unwrap().tun
    }

    /// A fresh directory under the system's temporary one.
    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("fp-flags-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn unit_reads_this_file_and_variable() {
        let unit = include_str!("../contrib/scx_fastpath.service");
        assert!(
            unit.lines()
                .any(|l| l == format!("EnvironmentFile=-{PATH}")),
            "{unit}"
        );
        let exec = unit
            .lines()
            .find_map(|l| l.strip_prefix("ExecStart="))
            .expect("ExecStart= in the unit");
        assert!(exec.ends_with(&format!(" ${VAR}")), "{exec}");
        let default = include_str!("../contrib/scx_fastpath.default");
        let (_, line) = rewrite(default, &Settings::default()).unwrap();
        assert_eq!(line, format!("{VAR}=\"\""));
    }

    #[test]
    fn keeps_other_lines_and_flags() {
        let text = "# comment\nOTHER=1\nSCX_FASTPATH_FLAGS=\"--stats 1 --slice-us 3000 -v --ablate=head-lag --exit-dump-len 4096 -s 200\"\n# end\n";
        let (out, line) = rewrite(
            text,
            &tun(&["--slice-us", "2000", "--ablate", "fast-yield"]),
        )
        .unwrap();
        assert_eq!(
            line,
            "SCX_FASTPATH_FLAGS=\"--stats 1 -v --exit-dump-len 4096 --slice-us 2000 --ablate fast-yield\""
        );
        assert_eq!(out, format!("# comment\nOTHER=1\n{line}\n# end\n"));
        let (out, line) = rewrite("# only a comment", &tun(&["--idle-hold-us", "5"])).unwrap();
        assert_eq!(line, "SCX_FASTPATH_FLAGS=\"--idle-hold-us 5\"");
        assert_eq!(out, format!("# only a comment\n{line}\n"));
        let (_, line) = rewrite("SCX_FASTPATH_FLAGS=--slice-us=300", &tun(&[])).unwrap();
        assert_eq!(line, "SCX_FASTPATH_FLAGS=\"\"");
    }

    #[test]
    fn refuses_what_it_cannot_rewrite() {
        for text in [
            "SCX_FASTPATH_FLAGS=\"--slice-us $X\"\n",
            "SCX_FASTPATH_FLAGS=\"a\\ b\"\n",
            "SCX_FASTPATH_FLAGS=1\nSCX_FASTPATH_FLAGS=2\n",
            "SCX_FASTPATH_FLAGS=\"--bogus\"\n",
            "SCX_FASTPATH_FLAGS=\"-vs 300\"\n",
        ] {
            let e = rewrite(text, &tun(&["--slice-us", "2000"])).unwrap_err();
            let e = format!("{e:#}");
            assert!(
                e.contains("edit it by hand") && !e.contains('\n'),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn saves_atomically_with_the_old_mode() {
        let d = scratch("save");
        let f = d.join("scx_fastpath");
        fs::write(&f, "# keep\nSCX_FASTPATH_FLAGS=\"\"\n").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
        let line = save(&f, &tun(&["--slice-us", "3000"])).unwrap();
        assert_eq!(line, "SCX_FASTPATH_FLAGS=\"--slice-us 3000\"");
        assert_eq!(fs::read_to_string(&f).unwrap(), format!("# keep\n{line}\n"));
        assert_eq!(
            fs::metadata(&f).unwrap().permissions().mode() & 0o7777,
            0o600
        );
        assert_eq!(
            fs::read_dir(&d).unwrap().count(),
            1,
            "a temporary file was left"
        );
        let new = d.join("new");
        save(&new, &tun(&[])).unwrap();
        assert_eq!(
            fs::read_to_string(&new).unwrap(),
            "SCX_FASTPATH_FLAGS=\"\"\n"
        );
        let e = save(&d.join("no/such/dir"), &tun(&[])).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.starts_with("cannot write ") && !e.contains('\n'), "{e}");
        fs::remove_dir_all(&d).unwrap();
    }
}
