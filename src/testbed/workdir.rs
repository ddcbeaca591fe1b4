//! The private work directory of a run: `DIR/fsynclab-<pid>-<n>`, created at the start,
//! removed when dropped (normal end, error, signal: every path unwinds through `Drop`),
//! kept only with `--keep`.
//!
//! It is recorded in a state file before it is made ([`super::state`]: `/run/fsynclab` for
//! root, `$XDG_RUNTIME_DIR/fsynclab` for others), so that `fsynclab cleanup` removes it if
//! the run is killed (SIGKILL, the OOM killer). A work directory inside the run's own
//! scratch filesystem needs no record: it goes with the scratch directory. Where no state
//! file can be written, the next run in the same DIR names the directories of dead runs.

use std::io;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::names;
use super::state::{self, Step, Undo};
use crate::error::Usage;
use crate::sys;
use crate::units::human_size;

#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    keep: bool,
    /// Removes the directory when dropped, and its record with it; None when kept, or when
    /// the scratch directory around it goes anyway.
    undo: Option<Undo>,
}

/// Space kept free beyond what a run's files need: the larger of 64 MiB and 2% of the
/// filesystem, so a run never fills a disk to the last block.
pub fn margin(total: u64) -> u64 {
    (64 << 20u64).max(total / 50)
}

impl WorkDir {
    /// Checks that `parent` is a writable directory and creates the work directory in it.
    pub fn create(parent: &Path, keep: bool) -> Result<WorkDir> {
        check_parent(parent)?;
        remind_of_killed_runs(parent);
        let name = names::work_dir_name();
        let path = parent.join(&name);
        let undo = if keep || names::is_own_scratch_mount(parent) {
            None
        } else {
            Some(record(&std::fs::canonicalize(parent)?.join(&name)))
        };
        std::fs::create_dir(&path).map_err(|e| match e.kind() {
            io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
                anyhow::anyhow!(Usage(format!(
                    "--dir {}: cannot create a directory there ({e})",
                    parent.display()
                )))
            }
            _ => anyhow::Error::new(e).context(format!("cannot create {}", path.display())),
        })?;
        // Commit the new directory before anything is measured: otherwise the first fsync of
        // a run also pays for the journal commit of our own mkdir (seen as a 2x slower first
        // pass in small-files). Best effort: a filesystem that cannot sync a directory is
        // still usable.
        for dir in [&path, &parent.to_path_buf()] {
            if let Ok(d) = std::fs::File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(WorkDir { path, keep, undo })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// An undo stack holding the work directory `path` (absolute), recorded in this user's
/// state directory when there is one that can be written.
fn record(path: &Path) -> Undo {
    let step = Step::Directory {
        path: path.to_path_buf(),
    };
    let mut undo = match state::user_state_dir() {
        Some(dir) => Undo::in_dir(&dir),
        None => Undo::unrecorded(),
    };
    if undo.record(step.clone()).is_err() {
        undo.forget_file();
        let _ = undo.record(step);
    }
    undo
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        match self.undo.take() {
            // Its drop removes the directory and the record, and reports a failure.
            Some(undo) => drop(undo),
            None if !self.keep => {
                let _ = std::fs::remove_dir_all(&self.path);
            }
            None => {}
        }
    }
}

/// Says, once per process, which work directories in `parent` belong to runs that are no
/// longer running (killed before they could remove them), and how to remove them.
fn remind_of_killed_runs(parent: &Path) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let dead = dead_work_dirs(parent);
        if dead.is_empty() {
            return;
        }
        let recorded = state::user_state_dir()
            .map(|d| state::recorded_directories(&d))
            .unwrap_or_default();
        let (by_cleanup, by_hand): (Vec<PathBuf>, Vec<PathBuf>) = dead.into_iter().partition(|d| recorded.contains(d));
        let list = |dirs: &[PathBuf]| {
            dirs.iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        };
        let mut how = Vec::new();
        if !by_cleanup.is_empty() {
            how.push(format!("`fsynclab cleanup` removes {}", list(&by_cleanup)));
        }
        if !by_hand.is_empty() {
            how.push(format!("remove with `rm -r {}`", list(&by_hand)));
        }
        note!(
            "fsynclab: work directories of runs killed earlier are left in {}: {}",
            parent.display(),
            how.join("; ")
        );
    });
}

/// The work directories in `parent` (absolute paths) whose run is no longer running. A pid
/// reused since by another process hides its directory: a reminder missed, never a live
/// run's directory named.
fn dead_work_dirs(parent: &Path) -> Vec<PathBuf> {
    let Ok(parent) = std::fs::canonicalize(parent) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&parent) else {
        return Vec::new();
    };
    let mut dead: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| {
            let pid = names::work_dir_pid(e.file_name().to_str()?)?;
            let running = pid == std::process::id() || Path::new(&format!("/proc/{pid}")).exists();
            (!running).then(|| e.path())
        })
        .collect();
    dead.sort();
    dead
}

pub(crate) fn check_parent(parent: &Path) -> Result<()> {
    let shown = parent.display();
    match std::fs::metadata(parent) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Usage(format!(
            "--dir {shown}: no such directory; create it or choose an existing one"
        ))
        .into()),
        Err(e) => Err(Usage(format!("--dir {shown}: cannot use it ({e})")).into()),
        Ok(m) if !m.is_dir() => Err(Usage(format!("--dir {shown}: not a directory")).into()),
        Ok(_) if !sys::writable(parent) => Err(Usage(format!(
            "--dir {shown}: cannot write there ({}); choose a directory you can write to",
            sys::why_not_writable(parent)
        ))
        .into()),
        Ok(_) => Ok(()),
    }
}

/// Refuses, with the numbers, a run whose files would not fit in `dir` with the margin.
pub fn preflight(dir: &Path, needed: u64, what_to_lower: &str) -> Result<()> {
    let space = sys::fs_space(dir).map_err(|e| anyhow::anyhow!("cannot read free space of {}: {e}", dir.display()))?;
    let margin = margin(space.total);
    if needed.saturating_add(margin) > space.available {
        return Err(Usage(format!(
            "not enough space in {}: this run needs {} plus a {} margin, {} is free; {what_to_lower} or choose another --dir",
            dir.display(),
            human_size(needed),
            human_size(margin),
            human_size(space.available),
        ))
        .into());
    }
    Ok(())
}

/// Makes the work directory `path` again on a fresh filesystem mounted where the last one
/// was (a power cut's next cycle), and makes it durable before anything is written in it.
pub(crate) fn recreate(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))?;
    for dir in [Some(path), path.parent()].into_iter().flatten() {
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removed_on_drop_unless_kept() {
        let parent = tempfile::tempdir().unwrap();
        let w = WorkDir::create(parent.path(), false).unwrap();
        let p = w.path().to_path_buf();
        std::fs::write(p.join("f"), b"x").unwrap();
        drop(w);
        assert!(!p.exists());
        let k = WorkDir::create(parent.path(), true).unwrap();
        let p = k.path().to_path_buf();
        drop(k);
        assert!(p.exists());
    }

    #[test]
    /// Issue 8.
    fn work_directories_of_dead_runs_are_found() {
        let parent = tempfile::tempdir().unwrap();
        // No process has pid 4000000001 (pid_max is at most 2^22).
        let dead = parent.path().join("fsynclab-4000000001-0000abcd");
        let alive = parent.path().join(format!("fsynclab-{}-0000abcd", std::process::id()));
        let unrelated = parent.path().join("fsynclab-results-20260101T000000Z");
        for d in [&dead, &alive, &unrelated] {
            std::fs::create_dir(d).unwrap();
        }
        let canonical = std::fs::canonicalize(&dead).unwrap();
        assert_eq!(dead_work_dirs(parent.path()), [canonical]);
    }

    #[test]
    fn missing_parent_is_a_usage_error() {
        let err = WorkDir::create(Path::new("/nonexistent/fsynclab-test"), false).unwrap_err();
        assert!(err.to_string().contains("no such directory"), "{err}");
        assert_eq!(crate::error::exit_status(&err), 2);
    }

    #[test]
    fn preflight_refuses_with_numbers() {
        let parent = tempfile::tempdir().unwrap();
        let err = preflight(parent.path(), u64::MAX / 2, "lower --set file_size").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("not enough space in"), "{text}");
        assert!(text.contains("is free; lower --set file_size"), "{text}");
        assert!(preflight(parent.path(), 4096, "x").is_ok());
    }
}
