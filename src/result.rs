//! The result of one run: what `--format json` prints and `--output` writes. Its shape is
//! versioned (`schema_version`) and described by `schema/result-v1.schema.json`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::environment::Fingerprint;
use crate::measure::{OpStats, Sample};
use crate::role::writer::BackgroundReport;

pub const SCHEMA_VERSION: u32 = 1;

/// A table a scenario adds to its result (iozone-style KB/s rows, per-thread-count rows...).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Table {
    pub title: String,
    pub columns: Vec<String>,
    /// Cells are numbers or strings, one row per line of the table.
    pub rows: Vec<Vec<serde_json::Value>>,
}

impl Table {
    /// The cells of column `name`, one per row (null where a row is short).
    pub fn column(&self, name: &str) -> Vec<&serde_json::Value> {
        match self.columns.iter().position(|c| c == name) {
            Some(i) => self
                .rows
                .iter()
                .map(|r| r.get(i).unwrap_or(&serde_json::Value::Null))
                .collect(),
            None => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub schema_version: u32,
    /// The scenario, or `load-random`, `load-stream`, `probe`.
    pub scenario: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// Length of the measured part of the run.
    pub duration_s: f64,
    /// True when Ctrl-C or SIGTERM ended the run early.
    pub interrupted: bool,
    /// Every parameter with its effective value, as `--set` takes it.
    pub params: BTreeMap<String, String>,
    pub environment: Fingerprint,
    /// Statistics per foreground operation kind (`write`, `fsync`, ...).
    pub ops: BTreeMap<String, OpStats>,
    /// Every foreground call, in order.
    pub samples: Vec<Sample>,
    /// The background writer, when there was one.
    pub background: Option<BackgroundReport>,
    /// Scenario-specific tables.
    #[serde(default)]
    pub tables: Vec<Table>,
    /// Conclusions computed from this run's figures.
    #[serde(default)]
    pub findings: Vec<String>,
}

impl RunResult {
    /// Failed foreground calls in all.
    pub fn errors(&self) -> u64 {
        self.ops.values().map(|o| o.errors).sum()
    }

    /// The worst latency of `op`, if any call of it ran.
    pub fn max_ns(&self, op: &str) -> Option<u64> {
        self.ops.get(op).filter(|o| o.count > 0).map(|o| o.latency_ns.max)
    }
}

/// Writes `value` as JSON to `path` atomically: a temporary file beside it, fsync, rename,
/// then fsync of the directory, so a reader sees the old file or the whole new one.
pub fn write_json_atomically<T: Serialize>(value: &T, path: &Path) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("--output {}: not a file name", path.display()))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let write = || -> Result<()> {
        let mut f = std::fs::File::create(&tmp)?;
        serde_json::to_writer_pretty(&mut f, value)?;
        f.write_all(b"\n")?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(&dir)?.sync_all()?;
        Ok(())
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        e.context(format!("cannot write {}", path.display()))
    })
}

/// Now as RFC 3339 UTC (`2026-11-22T03:45:55Z`), without a date library: days since the
/// epoch to a civil date by Howard Hinnant's `civil_from_days` algorithm.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_238_742_063), "2009-04-03T07:01:03Z");
        assert_eq!(rfc3339(1_951_098_355), "2031-10-30T03:45:55Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn atomic_write_leaves_no_temp_file() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        write_json_atomically(&serde_json::json!({"a": 1}), &p).unwrap();
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v["a"], 1);
    }
}
