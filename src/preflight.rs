//! Checks run before anything is loaded, each failing with one clear line.

use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

const SCHED_EXT_DIR: &str = "/sys/kernel/sched_ext";

fn kernel_release() -> String {
    fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// The running kernel must have sched_ext.
pub fn check_sched_ext() -> Result<()> {
    if !Path::new(SCHED_EXT_DIR).is_dir() {
        bail!(
            "kernel {} has no sched_ext: {SCHED_EXT_DIR} is missing \
             (boot a kernel built with CONFIG_SCHED_CLASS_EXT=y, Linux 6.12 or later)",
            kernel_release()
        );
    }
    Ok(())
}

/// Loading a BPF scheduler needs root (CAP_SYS_ADMIN and CAP_BPF).
pub fn check_root() -> Result<()> {
    // SAFETY: geteuid() has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid != 0 {
        bail!("must run as root (effective uid is {euid}): loading a BPF scheduler needs CAP_SYS_ADMIN");
    }
    Ok(())
}

/// What /sys/kernel/sched_ext/state says: "enabled", "disabled", ...
pub fn sched_ext_state() -> Result<String> {
    let path = format!("{SCHED_EXT_DIR}/state");
    let state = fs::read_to_string(&path).with_context(|| format!("failed to read {path}"))?;
    Ok(state.trim().to_string())
}

/// The name of the sched_ext scheduler now loaded, if any.
pub fn loaded_scheduler() -> Result<Option<String>> {
    let state = sched_ext_state()?;
    if state == "disabled" {
        return Ok(None);
    }
    let path = format!("{SCHED_EXT_DIR}/root/ops");
    let ops = fs::read_to_string(&path)
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| format!("unknown (state {state})"));
    Ok(Some(ops))
}

/// Another sched_ext scheduler holds the kernel. Its own error type, so
/// that main() can exit with its own status (EXIT_BUSY), which the systemd
/// unit does not restart on: retrying cannot help until that one stops.
#[derive(Debug)]
pub struct OtherScheduler(pub String);

impl std::fmt::Display for OtherScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "another sched_ext scheduler is already running: {} (stop it first)",
            self.0
        )
    }
}

impl std::error::Error for OtherScheduler {}

/// Only one sched_ext scheduler can be loaded at a time.
pub fn check_no_other_scheduler() -> Result<()> {
    if let Some(ops) = loaded_scheduler()? {
        return Err(OtherScheduler(ops).into());
    }
    Ok(())
}

/// All of the above, in the order that gives the most useful message.
pub fn check_all() -> Result<()> {
    check_sched_ext()?;
    check_root()?;
    check_no_other_scheduler()
}

/// Whether libbpf can read the kernel version from release string
/// `release`: it parses "MAJOR.MINOR.PATCH" at the start (sscanf
/// "%u.%u.%u"), except on Ubuntu, where it reads /proc/version_signature.
fn release_has_version(release: &str) -> bool {
    let mut parts = release.splitn(3, '.');
    let num =
        |p: Option<&str>| p.is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let (major, minor) = (parts.next(), parts.next());
    let patch_starts_with_digit = parts
        .next()
        .is_some_and(|p| p.bytes().next().is_some_and(|b| b.is_ascii_digit()));
    num(major) && num(minor) && patch_starts_with_digit
}

/// Why a load that failed may have failed, where it can be told from
/// outside: libbpf refuses to load a program that reads
/// LINUX_KERNEL_VERSION (the scx compat checks do) when it cannot read the
/// kernel's version, with only an EINVAL to show for it. Debian's
/// pre-release kernels have releases like "7.3-amd64".
pub fn load_failure_hint() -> Option<String> {
    let release = kernel_release();
    if release_has_version(&release) || Path::new("/proc/version_signature").exists() {
        return None;
    }
    Some(format!(
        "kernel release '{release}' is not MAJOR.MINOR.PATCH, so libbpf cannot fill in \
         LINUX_KERNEL_VERSION, which the BPF program's compat checks read"
    ))
}

/// The highest possible CPU id + 1, from a cpulist like "0-3,8-11" (which
/// gives 12, not 8: CPU ids index the per-CPU arrays).
pub fn parse_cpulist_end(list: &str) -> Result<usize> {
    let mut end = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        for id in part.split('-') {
            let id: usize = id
                .parse()
                .with_context(|| format!("bad CPU list {list:?}: {part:?}"))?;
            end = end.max(id + 1);
        }
    }
    if end == 0 {
        bail!("empty CPU list {list:?}");
    }
    Ok(end)
}

/// The highest possible CPU id + 1 on this machine.
pub fn nr_cpu_ids() -> Result<usize> {
    let path = "/sys/devices/system/cpu/possible";
    let list = fs::read_to_string(path).with_context(|| format!("failed to read {path}"))?;
    parse_cpulist_end(&list)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_version_as_libbpf_reads_it() {
        assert!(release_has_version("7.3.4+deb13-amd64"));
        assert!(release_has_version("6.12.0-rc1"));
        assert!(release_has_version("7.2.13+deb14-amd64"));
        assert!(!release_has_version("7.3-amd64"));
        assert!(!release_has_version("7.3"));
        assert!(!release_has_version("unknown"));
        assert!(!release_has_version("7.x.1"));
    }

    #[test]
    fn cpu_ids_count_the_holes() {
        assert_eq!(parse_cpulist_end("0-3,8-11\n").unwrap(), 12);
        assert_eq!(parse_cpulist_end("0").unwrap(), 1);
        assert_eq!(parse_cpulist_end("0-1").unwrap(), 2);
        assert_eq!(parse_cpulist_end("0,2,5").unwrap(), 6);
        assert!(parse_cpulist_end("").is_err());
        assert!(parse_cpulist_end("x-3").is_err());
    }
}
