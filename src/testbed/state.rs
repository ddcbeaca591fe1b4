//! What a run has put in place, as an undo stack: every step of provisioning (image file,
//! loop device, mount, scheduler, sysctl...) is pushed once done, and [`Undo`] undoes them
//! in reverse order when dropped — normal end, error, Ctrl-C, SIGTERM or panic.
//!
//! The stack is mirrored in a state file, `/run/fsynclab/<pid>.json`, rewritten after each
//! step and removed once everything is undone. A run killed with SIGKILL leaves its file
//! behind; `fsynclab cleanup` ([`cleanup_leftovers`]) finds the files of dead processes and
//! undoes their steps the same way.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::{loopdev, mount, sysctl};

/// Where state files live: one per running (or killed) fsynclab that provisioned something.
pub const STATE_DIR: &str = "/run/fsynclab";

/// One thing done, with what is needed to undo it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A directory we created (removed with everything in it).
    Directory { path: PathBuf },
    /// A tmpfs we mounted for the `ram` device profile.
    Tmpfs { mount_point: PathBuf },
    /// The FUSE file system serving the image (the emulated device).
    Fuse { mount_point: PathBuf },
    /// A loop device attached to the image (the file, so that a device reused since by
    /// someone else is left alone).
    Loop {
        device: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<PathBuf>,
    },
    /// The scratch filesystem, mounted.
    Mount { mount_point: PathBuf },
    /// The I/O scheduler of a block device, and the one it had before.
    Scheduler { device: String, previous: String },
    /// Whether a block device is marked rotational, and what it was before.
    Rotational { device: String, previous: bool },
    /// A `vm.` sysctl and the value it had before.
    Sysctl { name: String, previous: u64 },
    /// A tracefs instance (`instances/NAME`) for `--explain`, recorded before it is made so
    /// that no moment leaves one unrecorded; undoing a step whose instance was never made
    /// does nothing.
    TraceInstance { name: String },
    /// tracefs, mounted by fsynclab because it was not; unmounted only if no instance of
    /// anyone remains in it.
    Tracefs { mount_point: PathBuf },
}

impl Step {
    /// Undoes this step; an error says what could not be undone.
    pub fn undo(&self) -> Result<()> {
        match self {
            Step::Directory { path } => match std::fs::remove_dir_all(mount::nothing_mounted_under(path)?) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(anyhow::anyhow!("cannot remove {}: {e}", path.display()))
                }
                _ => Ok(()),
            },
            Step::Tmpfs { mount_point } | Step::Fuse { mount_point } | Step::Mount { mount_point } => {
                mount::unmount(mount_point)
            }
            Step::Loop { device, image } => loopdev::detach(device, image.as_deref()),
            Step::Scheduler { device, previous } => loopdev::set_scheduler(device, previous),
            Step::Rotational { device, previous } => match loopdev::set_rotational(device, *previous) {
                // A detached loop device may refuse; the next attach sets it afresh.
                Err(_) if !Path::new(&format!("/sys/block/{}/loop", device.trim_start_matches("/dev/"))).exists() => {
                    Ok(())
                }
                r => r,
            },
            Step::Sysctl { name, previous } => sysctl::write(name, *previous),
            Step::TraceInstance { name } => crate::explain::tracefs::remove_instance(name),
            Step::Tracefs { mount_point } => crate::explain::tracefs::unmount_if_unused(mount_point),
        }
    }

    /// One line for messages: `mount /tmp/x/mnt`.
    pub fn describe(&self) -> String {
        match self {
            Step::Directory { path } => format!("directory {}", path.display()),
            Step::Tmpfs { mount_point } => format!("tmpfs at {}", mount_point.display()),
            Step::Fuse { mount_point } => format!("emulated device (FUSE) at {}", mount_point.display()),
            Step::Loop { device, .. } => format!("loop device {device}"),
            Step::Mount { mount_point } => format!("mount {}", mount_point.display()),
            Step::Scheduler { device, previous } => format!("scheduler of {device} (back to {previous})"),
            Step::Rotational { device, previous } => format!("rotational flag of {device} (back to {previous})"),
            Step::Sysctl { name, previous } => format!("vm.{name} (back to {previous})"),
            Step::TraceInstance { name } => format!("trace instance {name}"),
            Step::Tracefs { mount_point } => format!("tracefs at {}", mount_point.display()),
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StateFile {
    pid: u32,
    /// The process's start time (clock ticks after boot, /proc/PID/stat field 22): with the
    /// pid, it tells the process apart from a later one that reuses the pid.
    #[serde(default)]
    start_time: Option<u64>,
    steps: Vec<Step>,
}

/// The undo stack of this process, mirrored in its state file.
#[derive(Debug)]
pub struct Undo {
    steps: Vec<Step>,
    file: Option<PathBuf>,
}

impl Undo {
    /// An empty stack whose state file is `STATE_DIR/<pid>.json`.
    pub fn new() -> Undo {
        Undo::in_dir(Path::new(STATE_DIR))
    }

    /// An empty stack whose state file is `dir/<pid>.json`; further stacks of the same
    /// process (a library user preparing several targets at once) get `<pid>-<n>.json`.
    pub fn in_dir(dir: &Path) -> Undo {
        static INSTANCES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = INSTANCES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pid = std::process::id();
        let name = if n == 0 {
            format!("{pid}.json")
        } else {
            format!("{pid}-{n}.json")
        };
        Undo {
            steps: Vec::new(),
            file: Some(dir.join(name)),
        }
    }

    /// Records a step that has just been done.
    pub fn push(&mut self, step: Step) -> Result<()> {
        self.steps.push(step);
        self.save()
    }

    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    fn save(&self) -> Result<()> {
        let Some(file) = &self.file else { return Ok(()) };
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        }
        let state = StateFile {
            pid: std::process::id(),
            start_time: start_time(std::process::id()),
            steps: self.steps.clone(),
        };
        let tmp = file.with_extension("json.tmp");
        std::fs::write(&tmp, serde_json::to_vec_pretty(&state)?)
            .and_then(|()| std::fs::rename(&tmp, file))
            .with_context(|| format!("cannot write the state file {}", file.display()))
    }

    /// Undoes every step in reverse order; returns what could not be undone.
    pub fn undo_all(&mut self) -> Vec<String> {
        let failures = undo_steps(&mut self.steps);
        if let Some(file) = &self.file {
            if failures.is_empty() {
                let _ = std::fs::remove_file(file);
            } else {
                let _ = self.save();
            }
        }
        failures
    }
}

impl Default for Undo {
    fn default() -> Self {
        Undo::new()
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        for failure in self.undo_all() {
            eprintln!("fsynclab: cleanup: {failure}; run `fsynclab cleanup` to retry");
        }
    }
}

/// Undoes `steps` from the last to the first, keeping in `steps` those that failed.
fn undo_steps(steps: &mut Vec<Step>) -> Vec<String> {
    let mut failures = Vec::new();
    let mut kept = Vec::new();
    while let Some(step) = steps.pop() {
        if let Err(e) = step.undo() {
            failures.push(format!("{}: {e:#}", step.describe()));
            kept.push(step);
        }
    }
    kept.reverse();
    *steps = kept;
    failures
}

/// The start time of process `pid`, field 22 of `/proc/PID/stat` (Documentation/
/// filesystems/proc.rst, table 1-4); the fields are counted after the `)` that ends the
/// command name, which may itself contain spaces.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards: starttime is field 22.
    after_name.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Whether the process that wrote `state` is still running.
fn alive(state: &StateFile) -> bool {
    match (start_time(state.pid), state.start_time) {
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// The pids of dead processes whose leftovers are recorded in `dir` (for a hint to run
/// `fsynclab cleanup`).
pub fn dead_leftovers(dir: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .filter_map(|e| serde_json::from_slice::<StateFile>(&std::fs::read(e.path()).ok()?).ok())
        .filter(|s| s.pid != std::process::id() && !alive(s))
        .map(|s| s.pid)
        .collect()
}

/// What `fsynclab cleanup` did: one line per step undone or left, per state file.
#[derive(Debug, Default)]
pub struct CleanupReport {
    pub undone: Vec<String>,
    pub failed: Vec<String>,
    pub running: Vec<u32>,
}

/// Undoes the leftovers of every fsynclab process that died without cleaning up
/// (SIGKILL, power cut of the process): the state files in `dir` whose pid is gone.
pub fn cleanup_leftovers(dir: &Path) -> Result<CleanupReport> {
    let mut report = CleanupReport::default();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(report),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", dir.display())),
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            // Its run has just ended and removed it.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", path.display())),
        };
        let mut state: StateFile =
            serde_json::from_str(&text).with_context(|| format!("{}: not an fsynclab state file", path.display()))?;
        if state.pid == std::process::id() || alive(&state) {
            report.running.push(state.pid);
            continue;
        }
        let before: Vec<String> = state.steps.iter().rev().map(Step::describe).collect();
        let failures = undo_steps(&mut state.steps);
        let failed_now: Vec<String> = state.steps.iter().map(Step::describe).collect();
        report.undone.extend(
            before
                .into_iter()
                .filter(|d| !failed_now.contains(d))
                .map(|d| format!("pid {}: {d}", state.pid)),
        );
        if failures.is_empty() {
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        } else {
            report
                .failed
                .extend(failures.into_iter().map(|f| format!("pid {}: {f}", state.pid)));
            std::fs::write(&path, serde_json::to_vec_pretty(&state)?)?;
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undoes_in_reverse_and_removes_state_file() {
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let outer = work.path().join("fsynclab-outer");
        let inner = outer.join("inner");
        let mut undo = Undo::in_dir(state.path());
        let file = undo.file.clone().unwrap();
        {
            std::fs::create_dir(&outer).unwrap();
            undo.push(Step::Directory { path: outer.clone() }).unwrap();
            std::fs::create_dir(&inner).unwrap();
            undo.push(Step::Directory { path: inner.clone() }).unwrap();
            let saved: StateFile = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            assert_eq!(saved.steps.len(), 2);
        }
        drop(undo);
        assert!(!outer.exists());
        assert!(!file.exists());
    }

    #[test]
    fn cleanup_undoes_dead_processes_only() {
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let dead = work.path().join("fsynclab-dead");
        std::fs::create_dir(&dead).unwrap();
        // No process has pid u32::MAX - 1 (pid_max is at most 2^22).
        let pid = u32::MAX - 1;
        let file = state.path().join(format!("{pid}.json"));
        let steps = vec![Step::Directory { path: dead.clone() }];
        let dead_state = StateFile {
            pid,
            start_time: Some(1),
            steps,
        };
        std::fs::write(&file, serde_json::to_vec(&dead_state).unwrap()).unwrap();
        let mine = state.path().join(format!("{}.json", std::process::id()));
        std::fs::write(
            &mine,
            serde_json::to_vec(&StateFile {
                pid: std::process::id(),
                start_time: start_time(std::process::id()),
                steps: vec![],
            })
            .unwrap(),
        )
        .unwrap();
        let report = cleanup_leftovers(state.path()).unwrap();
        assert!(!dead.exists());
        assert!(!file.exists());
        assert!(mine.exists(), "a running process's state is left alone");
        assert_eq!(report.undone.len(), 1, "{report:?}");
        assert_eq!(report.running, [std::process::id()]);
    }

    #[test]
    fn start_time_tells_processes_apart() {
        let mine = start_time(std::process::id()).expect("own start time");
        assert!(start_time(1).is_some_and(|init| init <= mine));
        assert_eq!(start_time(u32::MAX - 1), None);
    }
}
