//! External commands (`losetup`, `mkfs.*`, `mount`): run them, check the exit status and
//! turn a failure into one line with the command and its stderr.
//!
//! A tool runs in a process group of its own, under a stated limit, and dies with fsynclab
//! (PR_SET_PDEATHSIG) ([`crate::child`]): a `mount` or `losetup` left running after a SIGKILL
//! could otherwise finish after `fsynclab cleanup` has looked, and leave a mount or a loop
//! device nothing records.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Result;

use crate::child::{Bounded, OnSignal, Outcome};

/// Directories searched for system tools besides `PATH` (root's tools live in sbin).
const SBIN: [&str; 4] = ["/usr/sbin", "/sbin", "/usr/bin", "/bin"];

/// The full path of tool `name`, if it is installed.
pub fn find_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(SBIN.iter().map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs `tool args...` and returns its stdout, or an error with its stderr on one line.
pub fn run(tool: &str, args: &[&str]) -> Result<String> {
    let out = output(tool, args)?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let line = stderr.split_whitespace().collect::<Vec<_>>().join(" ");
        anyhow::bail!("`{tool} {}` failed ({}): {line}", args.join(" "), out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// How long a tool may run, and what a signal does to it. mkfs can take minutes on a slow
/// emulated disk, and a signal ends it (nothing is measured yet: the undo starts at once).
/// The checkers read a recovered filesystem after a power cut: a cycle under way finishes
/// its recovery and its check, so they finish too, within ten minutes. `mount`, `umount`
/// and `losetup` take seconds and are steps of the undo, which a signal must not cut short.
fn rules_for(tool: &str) -> Bounded {
    let slow = tool.starts_with("mkfs") || CHECKERS.contains(&tool);
    Bounded {
        limit: Duration::from_secs(if slow { 600 } else { 120 }),
        on_signal: if tool.starts_with("mkfs") {
            OnSignal::Stop
        } else {
            OnSignal::Finish
        },
        say_after: None,
    }
}

/// The filesystems' checkers (run after a power cut).
const CHECKERS: [&str; 3] = ["e2fsck", "xfs_repair", "btrfs"];

/// Runs `tool args...` to its end, whatever its exit status says (a checker's verdict), and
/// returns what it printed; an error when it could not be run, ran past its limit
/// ([`rules_for`]) or was ended by a signal.
pub fn output(tool: &str, args: &[&str]) -> Result<std::process::Output> {
    let path = find_tool(tool).ok_or_else(|| anyhow::anyhow!("{tool} not found"))?;
    let mut command = Command::new(&path);
    command
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let rules = rules_for(tool);
    let done = rules
        .run_then(&mut command, || super::pause::point(&format!("run:{tool}")))
        .map_err(|e| anyhow::anyhow!("cannot run {tool}: {e}"))?;
    match done.outcome {
        Outcome::Exited(status) => Ok(std::process::Output {
            status,
            stdout: done.stdout,
            stderr: done.stderr,
        }),
        Outcome::TimedOut => anyhow::bail!(
            "`{tool} {}` did not end within {}; it was stopped",
            args.join(" "),
            crate::units::format_duration(rules.limit)
        ),
        Outcome::Interrupted(sig) => anyhow::bail!("`{tool}` stopped by signal {sig}"),
    }
}
