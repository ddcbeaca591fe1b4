//! The result of one run: what `--format json` prints, `--output` writes and `fsynclab show`
//! reads back. Its shape is versioned (`schema_version`) and described by
//! `schema/result-v1.schema.json`.
//!
//! A result carries the scenario's typed [`Details`] (the rows, counts and figures its tables,
//! findings, headline and seed lines are computed from) beside their rendered forms
//! (`tables`, `findings`), so that a saved result can be printed again in any format.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::environment::Fingerprint;
use crate::measure::{OpKind, OpStats, Sample};
use crate::role::writer::BackgroundSummary;
pub(crate) use crate::scenario::table::Table;
use crate::scenario::{Details, Measured};

/// Optional keys may be added within a version (`details` was); a key's meaning never
/// changes without a new version. Results without `details` (written by older versions)
/// still load, but cannot be printed again in the seed format.
pub(crate) const SCHEMA_VERSION: u32 = 1;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunResult {
    pub(crate) schema_version: u32,
    /// The scenario, or `load-random`, `load-stream`, `probe`.
    pub(crate) scenario: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub(crate) started_at: String,
    /// Length of the measured part of the run.
    pub(crate) duration_s: f64,
    /// True when a signal ended the run early.
    pub(crate) interrupted: bool,
    /// Every parameter with its effective value, as `--set` takes it.
    pub(crate) params: BTreeMap<String, String>,
    pub(crate) environment: Fingerprint,
    /// Statistics per foreground operation kind (`write`, `fsync`, ...).
    pub(crate) ops: BTreeMap<OpKind, OpStats>,
    /// Every foreground call, in order. A file may leave them out (a suite's results
    /// directory, when they are kept in the results store: see `stored`).
    #[serde(default)]
    pub(crate) samples: Vec<Sample>,
    /// The background writer, when there was one.
    pub(crate) background: Option<BackgroundSummary>,
    /// Scenario-specific tables, rendered from `details`.
    #[serde(default)]
    pub(crate) tables: Vec<Table>,
    /// Conclusions computed from this run's figures, rendered from `details` and the device.
    #[serde(default)]
    pub(crate) findings: Vec<String>,
    /// The scenario's typed figures (absent in results of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) details: Option<Details>,
    /// Figures of the run as a whole that its ops cannot give, by the name `fsynclab
    /// compare` shows (`commit.tps`: fsync-tps's best transactions per second), rendered
    /// from `details`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) figures: BTreeMap<String, f64>,
    /// The machine's writeback state sampled during the run (absent in older results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) timeline: Option<crate::explain::TimelineRecord>,
    /// The slow calls split into causes (`run --explain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) explain: Option<crate::explain::run::Explanation>,
    /// Where the run is kept in the results store, when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) stored: Option<StoredAt>,
}

/// A run's place in a results store, as a result file names it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct StoredAt {
    /// The run id `fsynclab runs` lists.
    pub(crate) run: i64,
    /// The run's unique id, which tells it from a run of the same number in another store.
    pub(crate) uid: String,
    /// The store file.
    pub(crate) store: String,
}

impl RunResult {
    /// Failed foreground calls in all.
    pub(crate) fn errors(&self) -> u64 {
        self.ops.values().map(|o| o.errors).sum()
    }

    /// Failed calls of the foreground and the background writer.
    pub(crate) fn all_errors(&self) -> u64 {
        self.errors() + self.background.as_ref().map_or(0, |b| b.errors)
    }

    /// Foreground calls that make data durable ([`OpKind::is_sync`]).
    pub(crate) fn sync_calls(&self) -> u64 {
        self.ops
            .iter()
            .filter(|(op, _)| op.is_sync())
            .map(|(_, s)| s.count)
            .sum()
    }

    /// Renders `tables` and `findings` from the details and the environment.
    pub(crate) fn render_views(&mut self) {
        let Some(details) = &self.details else { return };
        let views = details.views();
        self.tables = views.tables();
        self.findings = views.findings();
        self.figures = views.figures();
        self.findings
            .extend(self.environment.device_findings(self.sync_calls()));
    }

    /// What the run measured, as a scenario's views read it.
    pub(crate) fn measured(&self) -> Measured<'_> {
        Measured {
            environment: &self.environment,
            ops: &self.ops,
            samples: &self.samples,
            background: self.background.as_ref(),
        }
    }

    /// The one line the suite's summary shows for this run.
    pub(crate) fn headline(&self) -> String {
        match &self.details {
            Some(d) => d.views().headline(&self.measured()),
            None => crate::scenario::default_headline(&self.measured()),
        }
    }

    /// Reads a result file written by `--output` or a suite.
    pub(crate) fn load(path: &Path) -> Result<RunResult> {
        let file = std::fs::File::open(path)
            .map_err(|e| crate::error::Usage(format!("{}: cannot open it ({e})", path.display())))?;
        serde_json::from_reader(std::io::BufReader::new(file))
            .map_err(|e| crate::error::Usage(format!("{}: not an fsynclab result ({e})", path.display())).into())
    }
}

/// Writes `value` as pretty JSON to `path` atomically (see [`write_atomically`]).
pub(crate) fn write_json_atomically<T: Serialize>(value: &T, path: &Path) -> Result<()> {
    write_atomically(path, |out| {
        serde_json::to_writer_pretty(&mut *out, value)?;
        Ok(out.write_all(b"\n")?)
    })
}

/// Writes `value` as compact JSON (one line) to `path` atomically: a third of the pretty
/// form's bytes for a result's samples.
pub(crate) fn write_compact_json_atomically<T: Serialize>(value: &T, path: &Path) -> Result<()> {
    write_atomically(path, |out| {
        serde_json::to_writer(&mut *out, value)?;
        Ok(out.write_all(b"\n")?)
    })
}

/// Writes a file atomically: `write` fills a temporary file beside `path`, which is then
/// fsynced and renamed over it, and the directory fsynced, so that a reader sees the old
/// file or the whole new one. The writer is buffered: serde issues one small write per
/// token, and a 7 MB result once took 3 million write(2) calls (issue 8).
pub(crate) fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut std::io::BufWriter<std::fs::File>) -> Result<()>,
) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    let name = path
        .file_name()
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let tmp = dir.join(format!(".{}.tmp-{}", name.to_string_lossy(), std::process::id()));
    let run = || -> Result<()> {
        let file = std::fs::File::create(&tmp)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
        write(&mut out)?;
        let file = out.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(&dir)?.sync_all()?;
        Ok(())
    };
    run().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        e.context(format!("cannot write {}", path.display()))
    })
}

/// Now as RFC 3339 UTC to the second (`2026-11-22T03:45:55Z`).
pub(crate) fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_to_the_second() {
        let now = now_rfc3339();
        assert_eq!(now.len(), "2026-11-22T03:45:55Z".len(), "{now}");
        assert!(now.ends_with('Z') && now.as_bytes()[10] == b'T', "{now}");
    }

    /// Write system calls this thread made so far (`syscw` of /proc/thread-self/io,
    /// Documentation/filesystems/proc.rst, section 3.3).
    fn write_calls() -> u64 {
        std::fs::read_to_string("/proc/thread-self/io")
            .unwrap()
            .lines()
            .find_map(|l| l.strip_prefix("syscw: "))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// Issue 8, item 6: a 7 MB result took 3,016,351 write(2) calls, and 12.9 s to exit
    /// after SIGTERM. Buffered, a result of 100,000 samples takes a handful.
    #[test]
    fn issue8_results_are_written_through_a_buffer() {
        let samples: Vec<crate::measure::Sample> = (0..100_000)
            .map(|i| crate::measure::Sample {
                t_ns: i * 1000,
                op: OpKind::Fsync,
                latency_ns: 123_456,
                bytes: 4096,
                error: None,
            })
            .collect();
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("r.json");
        let before = write_calls();
        write_json_atomically(&samples, &path).unwrap();
        let calls = write_calls() - before;
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(size > 5_000_000, "{size}");
        // About one call per MiB of buffer.
        assert!(calls < 50, "{calls} write calls for {size} bytes");
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
