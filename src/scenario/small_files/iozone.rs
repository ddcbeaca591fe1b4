//! iozone mode: `iozone -s 64 -e -f FILE -i 0` — for each file size, a new file written in
//! `record`-sized writes and then rewritten, each pass timed *with* its fsync (`-e`) but not
//! its open or close (iozone's `-c` would add the close); KB/s per pass, averaged over runs.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::Config;
use crate::measure::stats::{mean, median, per_second};
use crate::measure::{OpKind, Recorder, RunClock};
use crate::observe::{Event, Unit};
use crate::scenario::table::Cell;
use crate::scenario::Context;
use crate::sys;
use crate::units::{format_size, Bytes};

/// The header of iozone's result table, as iozone aligns it.
pub(crate) const HEADER: &str = "              KB  reclen   write rewrite";

/// One row of iozone's table: file size in KB, record in KB, write and rewrite in KB/s.
pub(crate) fn line(size: u64, record: u64, write_kbs: f64, rewrite_kbs: f64) -> String {
    format!(
        "{:>16}{:>8}{:>8.0}{:>8.0}",
        size / 1024,
        record / 1024,
        write_kbs,
        rewrite_kbs
    )
}

/// One file size and the KB/s of each run's write and rewrite pass.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct SizeRow {
    pub(crate) size: u64,
    pub(crate) record: u64,
    pub(crate) write_kbs: Vec<f64>,
    pub(crate) rewrite_kbs: Vec<f64>,
}

impl crate::scenario::table::Row for SizeRow {
    const COLUMNS: &'static [&'static str] = &["kB", "reclen", "write", "rewrite", "write median", "rewrite median"];

    fn cells(&self) -> Vec<Cell> {
        vec![
            (self.size / 1024).into(),
            (self.record / 1024).into(),
            (mean(&self.write_kbs).round() as u64).into(),
            (mean(&self.rewrite_kbs).round() as u64).into(),
            (median(&self.write_kbs).round() as u64).into(),
            (median(&self.rewrite_kbs).round() as u64).into(),
        ]
    }
}

/// The lines iozone printed: the header, then one per run and size, in the order they ran.
pub(crate) fn seed_lines(rows: &[SizeRow]) -> Vec<String> {
    let mut out = vec![HEADER.to_string()];
    let runs = rows.iter().map(|r| r.write_kbs.len()).max().unwrap_or(0);
    for run in 0..runs {
        for r in rows {
            if let (Some(w), Some(rw)) = (r.write_kbs.get(run), r.rewrite_kbs.get(run)) {
                out.push(line(r.size, r.record, *w, *rw));
            }
        }
    }
    out
}

/// What the iozone rows say, under which scheduler.
pub(crate) fn findings(rows: &[SizeRow], runs: u64, scheduler: &str) -> Vec<String> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "iozone under scheduler {scheduler}: {} files write+fsync at {:.0} KB/s, {} files at {:.0} KB/s (mean of {runs} runs)",
        format_size(Bytes(first.size)),
        mean(&first.write_kbs),
        format_size(Bytes(last.size)),
        mean(&last.write_kbs),
    )];
    let (w, r) = (mean(&first.write_kbs), mean(&first.rewrite_kbs));
    if w > 0.0 && r > 0.0 {
        out.push(format!(
            "rewrite of {} files (blocks already allocated): {:.2}x the rate of the first write",
            format_size(Bytes(first.size)),
            r / w
        ));
    }
    out
}

/// KB/s of `size` bytes in `ns`, as iozone computes it (KB = 1024 bytes).
fn kb_per_s(size: u64, ns: u64) -> f64 {
    per_second(size as f64 / 1024.0, ns.max(1))
}

fn create(path: &Path, truncate: bool) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(truncate)
        .mode(0o644)
        .open(path)
}

/// Writes `size` bytes from offset 0 in `buf`-sized writes (the last one shorter), then
/// fsyncs, timing the whole pass as `iozone -e` does. The fsync is also recorded on its own.
/// Returns the pass's start, its length, and whether every call succeeded.
fn timed_pass(
    file: &File,
    buf: &[u8],
    size: u64,
    clock: &RunClock,
    recorder: &mut Recorder,
) -> (u64, u64, io::Result<()>) {
    let (outcome, t0, _) = clock.time(|| -> io::Result<()> {
        let mut offset = 0u64;
        while offset < size {
            let len = (buf.len() as u64).min(size - offset) as usize;
            sys::pwrite_all(file, &buf[..len], offset, false)?;
            offset += len as u64;
        }
        Ok(())
    });
    let (synced, t_sync, lat_sync) = clock.time(|| sys::fsync(file));
    recorder.record(OpKind::Fsync, t_sync, lat_sync, 0, &synced);
    (t0, t_sync + lat_sync - t0, outcome.and(synced))
}

/// An untimed pass before the first measured one, as hyperfine warms up: a file created,
/// written, fsynced and removed, then the directory synced, so the first timed pass does not
/// pay for the new work directory's first entry (measured: the first of nine 64 KiB passes
/// ran at 0.65x the others without it; iozone itself runs in an old directory).
fn warm_up(dir: &Path, path: &Path, buf: &[u8]) -> io::Result<()> {
    let file = create(path, true)?;
    sys::pwrite_all(&file, buf, 0, false)?;
    sys::fsync(&file)?;
    sys::close(file)?;
    std::fs::remove_file(path)?;
    sys::fsync(&File::open(dir)?)
}

/// For each run and each size, a new file written then rewritten.
pub(crate) fn run(ctx: &mut Context<'_>, c: &Config, recorder: &mut Recorder) -> Result<Vec<SizeRow>> {
    let buf = vec![b'z'; c.record as usize];
    let path = ctx.dir.join("iozone.tmp");
    let mut rows: Vec<SizeRow> = c
        .sizes
        .iter()
        .map(|&size| SizeRow {
            size,
            record: c.record,
            write_kbs: Vec::new(),
            rewrite_kbs: Vec::new(),
        })
        .collect();
    ctx.observer.event(Event::Phase {
        name: "iozone",
        total: Some(c.runs * c.sizes.len() as u64),
        unit: Unit::Items,
    });
    ctx.observer.event(Event::SeedLine(HEADER));
    warm_up(ctx.dir, &path, &buf).with_context(|| format!("warm-up pass in {} failed", ctx.dir.display()))?;
    let mut done = 0;
    'runs: for _ in 0..c.runs {
        for row in rows.iter_mut() {
            if ctx.stop.is_set() {
                break 'runs;
            }
            let size = row.size;
            // Write: a new file, as iozone removes the previous one between tests.
            let _ = std::fs::remove_file(&path);
            let file = create(&path, true).with_context(|| format!("cannot create {}", path.display()))?;
            let (t_w, write_ns, wrote) = timed_pass(&file, &buf, size, &ctx.clock, recorder);
            recorder.record(OpKind::IozoneWrite, t_w, write_ns, size, &wrote);
            sys::close(file).with_context(|| format!("close of {} failed", path.display()))?;
            // Rewrite: the same file again, its blocks now allocated.
            let file = create(&path, false).with_context(|| format!("cannot open {}", path.display()))?;
            let (t_r, rewrite_ns, rewrote) = timed_pass(&file, &buf, size, &ctx.clock, recorder);
            recorder.record(OpKind::IozoneRewrite, t_r, rewrite_ns, size, &rewrote);
            sys::close(file).with_context(|| format!("close of {} failed", path.display()))?;
            let (w, r) = (kb_per_s(size, write_ns), kb_per_s(size, rewrite_ns));
            row.write_kbs.push(w);
            row.rewrite_kbs.push(r);
            ctx.observer.event(Event::SeedLine(&line(size, c.record, w, r)));
            done += 1;
            ctx.observer.event(Event::Progress { done });
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_have_iozones_shape_and_order() {
        assert_eq!(
            line(65536, 4096, 1452.4, 1788.0),
            "              64       4    1452    1788"
        );
        let rows = vec![
            SizeRow {
                size: 4096,
                record: 4096,
                write_kbs: vec![1.0, 3.0],
                rewrite_kbs: vec![2.0, 4.0],
            },
            SizeRow {
                size: 65536,
                record: 4096,
                write_kbs: vec![5.0],
                rewrite_kbs: vec![6.0],
            },
        ];
        let lines = seed_lines(&rows);
        // Run-major, as the runs happened: run 1 of both sizes, then run 2 of the first.
        assert_eq!(lines.len(), 4);
        assert!(lines[1].ends_with("       1       2") && lines[2].ends_with("       5       6"));
        assert!(lines[3].ends_with("       3       4"));
        assert!((kb_per_s(64 * 1024, 1_000_000_000) - 64.0).abs() < 1e-9);
    }
}
