//! What runs killed with SIGKILL (or the OOM killer) left: the pids for a hint, other
//! runs' sysctl changes, the directories they recorded, and `fsynclab cleanup`, which undoes
//! their steps the way their own teardown would have — only those with fsynclab's shape —
//! and, as root, the scratch testbeds of dead runs whose state file is gone ([`super::orphans`]).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use super::super::machine_lock::MachineLock;
use super::super::sysctl;
use super::file::{alive, find_states, write_state_for, Found};
use super::orphans::{orphans, Orphan};
use super::undo::undo_steps;
use super::Step;
use crate::kernel::process;

/// The pids of dead processes whose leftovers are recorded in `dir` (for a hint to run
/// `fsynclab cleanup`).
pub fn dead_leftovers(dir: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = find_states(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| f.state.ok())
        .filter(|s| s.pid != std::process::id() && !s.steps.is_empty() && !alive(s))
        .map(|s| s.pid)
        .collect();
    pids.dedup();
    pids
}

/// Another process's changed sysctls recorded in `dir`: its pid, whether it is still
/// running, and the changes (`vm.dirty_ratio=5 (was 20)`).
pub struct SysctlChanges {
    pub pid: u32,
    pub running: bool,
    pub changes: Vec<String>,
}

/// The sysctl changes other processes recorded in `dir` and have not undone.
pub fn sysctl_changes(dir: &Path) -> Vec<SysctlChanges> {
    find_states(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| f.state.ok())
        .filter(|s| s.pid != std::process::id())
        .filter_map(|s| {
            let changes: Vec<String> = s
                .steps
                .iter()
                .filter_map(|step| match step {
                    Step::Sysctl { name, previous } => {
                        let now = sysctl::read(name).map_or("?".into(), |v| v.to_string());
                        Some(format!("vm.{name}={now} (was {previous})"))
                    }
                    _ => None,
                })
                .collect();
            (!changes.is_empty()).then(|| SysctlChanges {
                pid: s.pid,
                running: alive(&s),
                changes,
            })
        })
        .collect()
}

/// The directories recorded in the state files of `dir` (for the reminder about work
/// directories of killed runs).
pub fn recorded_directories(dir: &Path) -> Vec<PathBuf> {
    find_states(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| f.state.ok())
        .flat_map(|s| s.steps)
        .filter_map(|step| match step {
            Step::Directory { path } => Some(path),
            _ => None,
        })
        .collect()
}

/// What `fsynclab cleanup` did, one line per step, each prefixed with the run's pid.
#[derive(Debug, Default)]
pub struct CleanupOutcome {
    /// Steps undone and checked.
    pub undone: Vec<String>,
    /// Steps that could not be undone, or that cleanup refused, with why.
    pub failed: Vec<String>,
    /// Steps not tried because a failed one still needs them.
    pub kept: Vec<String>,
    /// State files kept because something they record is left.
    pub kept_files: Vec<PathBuf>,
    /// Runs still going, left alone.
    pub running: Vec<u32>,
}

/// Which of its process's undo stacks a state file records: `<pid>.json` is 0,
/// `<pid>-<n>.json` is n (see [`super::Undo::in_dir`]).
fn stack_number(file: &Path) -> u64 {
    file.file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.split_once('-'))
        .and_then(|(_, n)| n.parse().ok())
        .unwrap_or(0)
}

/// The machine-wide lock a cleanup holds from reading the state files to its last undo.
const CLEANUP_LOCK: &str = "cleanup";

/// How long `cleanup` waits for a tool a killed run had started (a `mount`, an `mkfs`) to
/// end: it dies with the run, but may finish its system call first.
const STRAGGLER_WAIT: Duration = Duration::from_secs(10);

/// Processes other than this one whose command line names a path inside one of `dirs`.
fn stragglers(dirs: &[PathBuf]) -> Vec<String> {
    let me = std::process::id();
    process::pids()
        .into_iter()
        .filter(|pid| *pid != me)
        .filter_map(|pid| {
            let args = process::cmdline(pid)?;
            args.iter()
                .any(|a| dirs.iter().any(|d| Path::new(a).starts_with(d)))
                .then(|| format!("pid {pid} ({})", args.join(" ").trim()))
        })
        .collect()
}

/// Undoes the leftovers of every fsynclab process that died without cleaning up (SIGKILL,
/// the OOM killer): the state files in `dir` whose process is gone. Only steps with
/// fsynclab's shape are undone; every undo is checked; a state file stays while anything
/// it records is left. Sysctls are restored only while no running fsynclab holds the
/// sysctl lock. Two cleanups take turns (one would otherwise rewrite a state file the other
/// has just removed, issue 19): the second reads the state files once the first is done.
pub fn cleanup_leftovers(dir: &Path) -> Result<CleanupOutcome> {
    let _turn = match MachineLock::take(CLEANUP_LOCK) {
        Ok(lock) => Some(lock),
        // A user who cannot make the lock file has only work directories to remove.
        Err(_) if !crate::sys::is_root() => None,
        Err(e) => return Err(e),
    };
    let mut report = CleanupOutcome::default();
    let mut found = find_states(dir)?;
    // A process's later stacks first, as its own teardown would: a stack made later may
    // live inside a directory an earlier one recorded (the scratch filesystems a scenario
    // makes in its run's work directory).
    found.sort_by_key(|f| (f.pid, std::cmp::Reverse(stack_number(&f.file))));
    if found.is_empty() {
        undo_orphans(dir, &mut report);
        return Ok(report);
    }
    let sysctl_lock = sysctl::try_lock().ok().flatten();
    for Found { file, pid, state } in found {
        let mut state = match state {
            Ok(s) if s.pid == pid => s,
            Ok(s) => {
                report.failed.push(format!(
                    "{}: records pid {}, not the {pid} its name says; left alone",
                    file.display(),
                    s.pid
                ));
                continue;
            }
            Err(e) => {
                report.failed.push(format!("{e}; left alone"));
                continue;
            }
        };
        if state.pid == std::process::id() || alive(&state) {
            report.running.push(state.pid);
            continue;
        }
        let tmp = file.with_extension("json.tmp");
        if state.steps.is_empty() {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&file);
            continue;
        }

        // Tools the run had started must be gone before their work is undone.
        let dirs: Vec<PathBuf> = state
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Directory { path } if s.refusal(pid).is_none() => Some(path.clone()),
                _ => None,
            })
            .collect();
        let deadline = Instant::now() + STRAGGLER_WAIT;
        let mut busy = stragglers(&dirs);
        while !busy.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            busy = stragglers(&dirs);
        }
        if !busy.is_empty() {
            report.failed.push(format!(
                "pid {pid}: {} still at work in its directory; run `fsynclab cleanup` again when it has ended",
                busy.join(", ")
            ));
            report.kept_files.push(file);
            continue;
        }

        // Steps cleanup must not undo stay, with the reason, and so do the containers below.
        let refuse = |step: &Step| {
            step.refusal(pid).map(|why| format!("{why}; left alone")).or_else(|| {
                (matches!(step, Step::Sysctl { .. }) && sysctl_lock.is_none()).then(|| {
                    "a running fsynclab is changing sysctls now; run `fsynclab cleanup` again after it ends".into()
                })
            })
        };
        let start = state.start_time;
        let outcome = undo_steps(&mut state.steps, refuse, |left| {
            let _ = write_state_for(&file, pid, start, left);
        });
        let prefix = |lines: Vec<String>| lines.into_iter().map(move |l| format!("pid {pid}: {l}"));
        report.undone.extend(prefix(outcome.undone));
        report.failed.extend(prefix(outcome.failed));
        report.kept.extend(prefix(outcome.kept));
        if state.steps.is_empty() {
            std::fs::remove_file(&file)
                .or_else(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Ok(()),
                    _ => Err(e),
                })
                .with_context(|| format!("cannot remove {}", file.display()))?;
            let _ = std::fs::remove_file(&tmp);
        } else {
            write_state_for(&file, pid, state.start_time, &state.steps)?;
            report.kept_files.push(file);
        }
    }
    undo_orphans(dir, &mut report);
    Ok(report)
}

/// Undoes the scratch testbeds of dead runs that no state file records any more
/// ([`orphans`]): their mounts and loop devices, found by their shape, then their
/// directories. Only root can have made them, and only root can undo them.
fn undo_orphans(dir: &Path, report: &mut CleanupOutcome) {
    if !crate::sys::is_root() {
        return;
    }
    for Orphan { pid, mut steps } in orphans(&recorded_directories(dir)) {
        let dirs: Vec<PathBuf> = steps
            .iter()
            .filter_map(|s| match s {
                Step::Directory { path } => Some(path.clone()),
                _ => None,
            })
            .collect();
        let busy = stragglers(&dirs);
        if !busy.is_empty() {
            report.failed.push(format!(
                "pid {pid} (no state file): {} still at work in its directory; run `fsynclab cleanup` again when it has ended",
                busy.join(", ")
            ));
            continue;
        }
        let outcome = undo_steps(
            &mut steps,
            |step| step.refusal(pid).map(|why| format!("{why}; left alone")),
            |_| {},
        );
        let prefix = |lines: Vec<String>| {
            lines
                .into_iter()
                .map(move |l| format!("pid {pid} (no state file): {l}"))
        };
        report.undone.extend(prefix(outcome.undone));
        report.failed.extend(prefix(outcome.failed));
        report.kept.extend(prefix(outcome.kept));
    }
}
