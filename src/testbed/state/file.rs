//! The state file on disk (`<pid>.json`, written atomically), and which process wrote it:
//! a pid with its start time, so that a later process reusing the pid is told apart.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::Step;

#[derive(Debug, Default, Serialize, Deserialize)]
pub(super) struct StateFile {
    pub(super) pid: u32,
    /// The process's start time (clock ticks after boot, /proc/PID/stat field 22): with the
    /// pid, it tells the process apart from a later one that reuses the pid.
    #[serde(default)]
    pub(super) start_time: Option<u64>,
    pub(super) steps: Vec<Step>,
}

/// Writes `steps` to the state file `file` atomically (temporary file, then rename; a kill
/// in between leaves the temporary file, which `cleanup` reads as the newer state).
pub(super) fn write_state(file: &Path, steps: &[Step]) -> Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    write_state_for(file, std::process::id(), start_time(std::process::id()), steps)
}

/// Writes the state file of process `pid` (this one's, or a dead run's with the steps left).
pub(super) fn write_state_for(file: &Path, pid: u32, start_time: Option<u64>, steps: &[Step]) -> Result<()> {
    let state = StateFile {
        pid,
        start_time,
        steps: steps.to_vec(),
    };
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&state)?)
        .and_then(|()| std::fs::rename(&tmp, file))
        .with_context(|| format!("cannot write the state file {}", file.display()))
}

pub(crate) use crate::kernel::process::start_time;

/// Whether the process that wrote `state` is still running.
pub(super) fn alive(state: &StateFile) -> bool {
    match (start_time(state.pid), state.start_time) {
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// A state file found in a state directory: `<pid>.json` or `<pid>-<n>.json`, with the
/// temporary file a kill may have left beside it.
pub(super) struct Found {
    /// `dir/<pid>[-<n>].json`
    pub(super) file: PathBuf,
    /// The pid its name gives.
    pub(super) pid: u32,
    /// The newest state it holds: the temporary file's if complete, else the file's.
    pub(super) state: Result<StateFile, String>,
}

/// The state files in `dir`, in name order. A name that is not a state file's is skipped.
pub(super) fn find_states(dir: &Path) -> Result<Vec<Found>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", dir.display())),
    };
    let mut stems: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter_map(|name| {
            let stem = name.strip_suffix(".json.tmp").or_else(|| name.strip_suffix(".json"))?;
            let pid = stem.split_once('-').map_or(stem, |(pid, _)| pid);
            pid.parse::<u32>().ok().map(|_| stem.to_string())
        })
        .collect();
    stems.sort();
    stems.dedup();
    let read = |path: &Path| -> Option<Result<StateFile, String>> {
        let text = std::fs::read_to_string(path).ok()?;
        Some(serde_json::from_str(&text).map_err(|e| format!("{}: not an fsynclab state file ({e})", path.display())))
    };
    Ok(stems
        .into_iter()
        .filter_map(|stem| {
            let file = dir.join(format!("{stem}.json"));
            let pid = stem
                .split_once('-')
                .map_or(stem.as_str(), |(pid, _)| pid)
                .parse()
                .ok()?;
            let state = match (read(&file.with_extension("json.tmp")), read(&file)) {
                (Some(Ok(newer)), _) => Ok(newer),
                (_, Some(state)) => state,
                (Some(Err(_)), None) => Ok(StateFile {
                    pid,
                    start_time: None,
                    steps: Vec::new(),
                }),
                // Removed since: its run has just ended.
                (None, None) => return None,
            };
            Some(Found { file, pid, state })
        })
        .collect())
}
