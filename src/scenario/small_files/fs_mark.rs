//! fs_mark mode: `fs_mark -S 1 -D 100 -N 1000 -d DIR -s 65536 -t 1 -w 4096` — create
//! `files` files of `file_size` in `record`-sized writes, fsync each before close,
//! `files_per_dir` per subdirectory across `dirs` subdirectories; files/s, the fsync
//! distribution, and fs_mark's App Overhead (time spent outside the four calls).

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::Config;
use crate::measure::stats::per_second;
use crate::measure::{LatencyHistogram, LatencySummary, OpKind, Recorder};
use crate::observe::{Event, Observer, Unit};
use crate::scenario::table::Cell;
use crate::scenario::Context;
use crate::sys;
use crate::units::{format_latency_ns, format_size, ms, rounded, Bytes};

/// The header of fs_mark's result lines.
pub(crate) const HEADER: &str = "FSUse%        Count         Size    Files/sec     App Overhead";

/// One line of fs_mark's output: filesystem use %, files, file size, files/s, App Overhead (us).
pub(crate) fn line(fs_use_pct: u64, count: u64, size: u64, files_per_s: f64, overhead_us: u64) -> String {
    format!("{fs_use_pct:>6} {count:>12} {size:>12} {files_per_s:>12.1} {overhead_us:>16}")
}

/// What an fs_mark run measured.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct FsMarkRun {
    pub(crate) files: u64,
    pub(crate) file_size: u64,
    pub(crate) record: u64,
    pub(crate) elapsed_ns: u64,
    /// Time inside create, write, fsync and close.
    pub(crate) syscall_ns: u64,
    pub(crate) fsync_ns: LatencySummary,
    pub(crate) fs_use_pct: u64,
}

impl FsMarkRun {
    pub(crate) fn files_per_s(&self) -> f64 {
        per_second(self.files as f64, self.elapsed_ns.max(1))
    }

    fn overhead_us(&self) -> u64 {
        self.elapsed_ns.saturating_sub(self.syscall_ns) / 1000
    }

    pub(crate) fn seed_lines(&self) -> [String; 2] {
        [
            HEADER.to_string(),
            line(
                self.fs_use_pct,
                self.files,
                self.file_size,
                self.files_per_s(),
                self.overhead_us(),
            ),
        ]
    }

    pub(crate) fn title(&self, scheduler: &str) -> String {
        format!(
            "fs_mark -S 1: {} files of {} in {} writes, fsync before close (latency in ms); scheduler {scheduler}",
            self.files,
            format_size(Bytes(self.file_size)),
            format_size(Bytes(self.record))
        )
    }

    pub(crate) fn finding(&self, scheduler: &str) -> String {
        format!(
            "fs_mark under scheduler {scheduler}: {:.1} files/s, fsync p50 {} p99 {} max {}",
            self.files_per_s(),
            format_latency_ns(self.fsync_ns.p50),
            format_latency_ns(self.fsync_ns.p99),
            format_latency_ns(self.fsync_ns.max),
        )
    }
}

impl crate::scenario::table::Row for FsMarkRun {
    const COLUMNS: &'static [&'static str] = &[
        "files",
        "files/s",
        "fsync p50",
        "fsync p90",
        "fsync p99",
        "fsync max",
        "app overhead us",
    ];

    fn cells(&self) -> Vec<Cell> {
        let s = &self.fsync_ns;
        let ms2 = |ns: u64| Cell::from(rounded(ms(ns), 2));
        vec![
            self.files.into(),
            rounded(self.files_per_s(), 1).into(),
            ms2(s.p50),
            ms2(s.p90),
            ms2(s.p99),
            ms2(s.max),
            self.overhead_us().into(),
        ]
    }
}

fn create(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .open(path)
}

/// Records one timed call of the loop and returns its latency, for App Overhead; fsyncs are
/// shown live.
fn record(
    recorder: &mut Recorder,
    obs: &mut dyn Observer,
    op: OpKind,
    t: u64,
    lat: u64,
    bytes: u64,
    r: &io::Result<()>,
) -> u64 {
    let s = recorder.record(op, t, lat, bytes, r);
    if op == OpKind::Fsync {
        obs.event(Event::Sample(&s));
    }
    lat
}

/// Create, write in records, fsync, close — one file after another.
pub(crate) fn run(ctx: &mut Context<'_>, c: &Config, recorder: &mut Recorder) -> Result<FsMarkRun> {
    let buf = vec![b'f'; c.record as usize];
    let root = ctx.dir.join("fs_mark");
    for d in 0..c.dirs {
        let sub = root.join(format!("{d:02}"));
        std::fs::create_dir_all(&sub).with_context(|| format!("cannot create {}", sub.display()))?;
    }
    ctx.observer.event(Event::Phase {
        name: "fs_mark",
        total: Some(c.files),
        unit: Unit::Items,
    });
    let clock = ctx.clock;
    let start = clock.now_ns();
    let (mut files, mut syscall_ns, mut fsync) = (0, 0, LatencyHistogram::new());
    for i in 0..c.files {
        if ctx.stop.is_set() {
            break;
        }
        let dir = root.join(format!("{:02}", (i / c.files_per_dir) % c.dirs));
        let path = dir.join(format!("{i:08x}.fsm"));
        let (file, t, lat) = clock.time(|| create(&path));
        let created = file.as_ref().map(|_| ()).map_err(|e| sys::Errno::of(e).to_io_error());
        syscall_ns += record(recorder, ctx.observer, OpKind::Create, t, lat, 0, &created);
        let file = file.with_context(|| format!("cannot create {}", path.display()))?;
        let mut offset = 0;
        while offset < c.file_size {
            let len = c.record.min(c.file_size - offset);
            let (w, t, lat) = clock.time(|| sys::pwrite_all(&file, &buf[..len as usize], offset, false));
            syscall_ns += record(recorder, ctx.observer, OpKind::Write, t, lat, len, &w);
            offset += len;
        }
        let (synced, t, lat) = clock.time(|| sys::fsync(&file));
        syscall_ns += record(recorder, ctx.observer, OpKind::Fsync, t, lat, 0, &synced);
        fsync.record(lat);
        let (closed, t, lat) = clock.time(|| sys::close(file));
        syscall_ns += record(recorder, ctx.observer, OpKind::Close, t, lat, 0, &closed);
        files += 1;
        ctx.observer.event(Event::Progress { done: files });
    }
    let run = FsMarkRun {
        files,
        file_size: c.file_size,
        record: c.record,
        elapsed_ns: clock.now_ns() - start,
        syscall_ns,
        fsync_ns: fsync.summary(),
        fs_use_pct: sys::fs_space(ctx.dir)
            .map(|s| (s.total - s.available) * 100 / s.total.max(1))
            .unwrap_or(0),
    };
    for l in run.seed_lines() {
        ctx.observer.event(Event::SeedLine(&l));
    }
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_has_fs_marks_shape() {
        assert_eq!(
            line(14, 1000, 65536, 85.1, 23519),
            "    14         1000        65536         85.1            23519"
        );
    }
}
