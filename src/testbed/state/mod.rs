//! What a run has put in place, as an undo stack: every step (scratch directory, tmpfs,
//! emulated device, loop device, scheduler, mount, sysctl, work directory) is recorded
//! *before* it is done, and [`Undo`] undoes the steps in reverse order when dropped —
//! normal end, error, signal or panic. Undoing a step that was recorded but never done is
//! harmless, so a run killed between the two leaves nothing unrecorded.
//!
//! The stack is mirrored in a state file, `/run/fsynclab/<pid>.json` (for a non-root run's
//! work directory, `$XDG_RUNTIME_DIR/fsynclab/`), rewritten after each step and removed
//! once everything is undone. A run killed with SIGKILL leaves its file behind;
//! `fsynclab cleanup` ([`cleanup_leftovers`]) undoes the steps of dead processes the same
//! way, but only those whose paths have fsynclab's own shape ([`super::names`]).
//!
//! Every undo is checked (the mount is gone, the device detached, the sysctl reads back):
//! a step that could not be undone stays in the state file, and so does every step it
//! depends on (a loop device under a busy mount, the directory around them), and the run
//! ends with a non-zero status ([`teardown_failed`]).
//!
//! The parts: `step` (what one step is, how it is undone and checked, and which paths are
//! fsynclab's to touch), `undo` (the stack of a running process, its teardown, and what a
//! second signal leaves), `file` (the state file on disk, and which process wrote it),
//! `leftovers` (what killed runs left: the hint, the sysctl check, `cleanup`), `orphans`
//! (scratch testbeds of dead runs whose state file is gone, found by their shape).

use std::path::PathBuf;

mod file;
mod leftovers;
mod orphans;
mod step;
mod undo;

pub(crate) use file::start_time;
pub use leftovers::{
    cleanup_leftovers, dead_leftovers, recorded_directories, sysctl_changes, CleanupOutcome, SysctlChanges,
};
pub use step::Step;
pub use undo::{teardown_failed, Undo, UndoOutcome};

/// Where the state files of root's runs live: one per running (or killed) fsynclab that
/// provisioned something.
pub const STATE_DIR: &str = "/run/fsynclab";

/// Names another state directory for everything: runs, their sysctl lock and `cleanup`.
/// The test suite sets it so that its runs and cleanups never meet a user's (nor a
/// user's leftovers make a test fail).
pub const STATE_DIR_ENV: &str = "FSYNCLAB_STATE_DIR";

/// Root's state directory: [`STATE_DIR_ENV`] when set, else [`STATE_DIR`].
pub fn root_state_dir() -> PathBuf {
    match std::env::var_os(STATE_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(STATE_DIR),
    }
}

/// Where this user's runs record their steps: [`STATE_DIR_ENV`] when set; [`STATE_DIR`]
/// for root; for anyone else `$XDG_RUNTIME_DIR/fsynclab` when that is a directory of
/// theirs (a non-root run has only a work directory to record); None otherwise.
pub fn user_state_dir() -> Option<PathBuf> {
    if crate::sys::is_root() || std::env::var_os(STATE_DIR_ENV).is_some_and(|d| !d.is_empty()) {
        return Some(root_state_dir());
    }
    let runtime = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?);
    let meta = std::fs::metadata(&runtime).ok()?;
    use std::os::unix::fs::MetadataExt as _;
    let me = nix::unistd::geteuid().as_raw();
    (runtime.is_absolute() && meta.is_dir() && meta.uid() == me).then(|| runtime.join("fsynclab"))
}

#[cfg(test)]
mod tests;
