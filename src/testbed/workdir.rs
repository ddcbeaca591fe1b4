//! The private work directory of a run: `DIR/fsynclab-<pid>-<n>`, created at the start,
//! removed when dropped (normal end, error, Ctrl-C: every path unwinds through `Drop`),
//! kept only with `--keep`.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;

use crate::error::Usage;
use crate::sys;
use crate::units::human_size;

#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    keep: bool,
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
        let stamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = parent.join(format!("fsynclab-{}-{:08x}", std::process::id(), stamp));
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
        Ok(WorkDir { path, keep })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn keep(&self) -> bool {
        self.keep
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn check_parent(parent: &Path) -> Result<()> {
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
