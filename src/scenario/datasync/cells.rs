//! The cells of a datasync run: one (case, method) pair each, measured in slots of
//! write+sync operations; the files the cases write into; the table rows and the findings
//! that compare every method's rate with fsync's.

use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::{seed_line, Case, Config};
use crate::measure::stats::per_second;
use crate::measure::{LatencyHistogram, LatencySummary, Recorder};
use crate::observe::Event;
use crate::params::Choice;
use crate::role::fill::Filler;
use crate::scenario::table as result;
use crate::scenario::Context;
use crate::sync::SyncMethod;
use crate::sys::{self, AlignedBuf};
use crate::units::{rounded, secs, us};

/// The files the cases start from.
pub(crate) struct Files {
    overwrite: PathBuf,
    append: PathBuf,
    mtime: PathBuf,
}

impl Files {
    /// Writes out, synced, what the cases start from, as Hifumi's test does before timing:
    /// the overwrite file in full, the mtime file as one record of the bytes it rewrites.
    pub(crate) fn prepare(ctx: &mut Context<'_>, c: &Config) -> Result<Files> {
        let files = Files {
            overwrite: ctx.dir.join("datasync-overwrite.dat"),
            append: ctx.dir.join("datasync-append.dat"),
            mtime: ctx.dir.join("datasync-mtime.dat"),
        };
        let buf = vec![b'a'; c.write_size as usize];
        let mut wanted: Vec<(&Path, u64)> = Vec::new();
        if c.cases.contains(&Case::Overwrite) {
            wanted.push((&files.overwrite, c.file_size));
        }
        if c.cases.contains(&Case::Mtime) {
            wanted.push((&files.mtime, c.write_size));
        }
        let total = wanted.iter().map(|(_, n)| n).sum();
        let mut filler = Filler::new("preallocating", total, ctx.stop, ctx.observer);
        for (path, len) in wanted {
            let f = SyncMethod::None
                .open(path)
                .with_context(|| format!("cannot create {}", path.display()))?;
            if !filler.fill(&f, path, &buf, len, true)? {
                break;
            }
        }
        Ok(files)
    }

    fn of(&self, case: Case) -> &Path {
        match case {
            Case::Overwrite => &self.overwrite,
            Case::Append => &self.append,
            Case::Mtime => &self.mtime,
        }
    }
}

/// One (case, method) pair and what its slots measured so far.
pub(crate) struct Cell {
    case: Case,
    method: SyncMethod,
    ops: u64,
    errors: u64,
    elapsed_ns: u64,
    latency: LatencyHistogram,
}

impl Cell {
    pub(crate) fn new(case: Case, method: SyncMethod) -> Cell {
        Cell {
            case,
            method,
            ops: 0,
            errors: 0,
            elapsed_ns: 0,
            latency: LatencyHistogram::new(),
        }
    }

    pub(crate) fn row(&self) -> CellRow {
        CellRow {
            case: self.case,
            method: self.method,
            ops: self.ops,
            errors: self.errors,
            elapsed_ns: self.elapsed_ns,
            latency_ns: self.latency.summary(),
        }
    }
}

/// One slot as it ran: Hifumi's total-time line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Slot {
    pub(crate) case: Case,
    pub(crate) method: SyncMethod,
    pub(crate) writes: u64,
    pub(crate) elapsed_ns: u64,
}

impl Slot {
    pub(crate) fn seed_line(&self, write_size: u64) -> String {
        seed_line(self.case, self.method, self.writes, write_size, secs(self.elapsed_ns))
    }
}

/// A cell's figures over all its slots.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct CellRow {
    pub(crate) case: Case,
    pub(crate) method: SyncMethod,
    pub(crate) ops: u64,
    pub(crate) errors: u64,
    pub(crate) elapsed_ns: u64,
    /// Write plus sync, per operation.
    pub(crate) latency_ns: LatencySummary,
}

impl CellRow {
    fn ops_per_s(&self) -> f64 {
        per_second(self.ops as f64, self.elapsed_ns.max(1))
    }
}

/// A table row: the cell with its rate as a multiple of fsync's on the same case.
pub(crate) struct RatioRow<'a> {
    cell: &'a CellRow,
    vs_fsync: Option<f64>,
}

/// The rows of the table, each with its rate against fsync's on its case.
pub(crate) fn with_ratios(cells: &[CellRow]) -> Vec<RatioRow<'_>> {
    cells
        .iter()
        .map(|cell| RatioRow {
            cell,
            vs_fsync: reference_rate(cells, cell.case, SyncMethod::Fsync)
                .filter(|r| *r > 0.0)
                .map(|r| cell.ops_per_s() / r),
        })
        .collect()
}

impl crate::scenario::table::Row for RatioRow<'_> {
    const COLUMNS: &'static [&'static str] = &[
        "case", "method", "ops", "errors", "ops/s", "p50", "p90", "p99", "max", "vs fsync",
    ];

    fn cells(&self) -> Vec<result::Cell> {
        let c = self.cell;
        let l = &c.latency_ns;
        let us1 = |ns: u64| result::Cell::from(rounded(us(ns), 1));
        vec![
            c.case.name().into(),
            c.method.name().into(),
            c.ops.into(),
            c.errors.into(),
            rounded(c.ops_per_s(), 1).into(),
            us1(l.p50),
            us1(l.p90),
            us1(l.p99),
            us1(l.max),
            self.vs_fsync.map_or("-".into(), |r| format!("{r:.2}x").into()),
        ]
    }
}

fn reference_rate(cells: &[CellRow], case: Case, method: SyncMethod) -> Option<f64> {
    cells
        .iter()
        .find(|c| c.case == case && c.method == method && c.ops > 0)
        .map(CellRow::ops_per_s)
}

/// One line per (case, method other than the reference): its rate as a multiple of the
/// reference's, fsync's when it ran, else the first method's. fdatasync first: it is the
/// question of the seed.
pub(crate) fn findings(cells: &[CellRow]) -> Vec<String> {
    let reference = cells
        .iter()
        .map(|c| c.method)
        .find(|m| *m == SyncMethod::Fsync)
        .or_else(|| cells.first().map(|c| c.method));
    let Some(reference) = reference else {
        return Vec::new();
    };
    let mut order: Vec<&CellRow> = cells.iter().filter(|c| c.method != reference).collect();
    order.sort_by_key(|c| c.method != SyncMethod::Fdatasync);
    let mut out = Vec::new();
    for cell in order {
        let Some(base) = reference_rate(cells, cell.case, reference) else {
            continue;
        };
        if cell.ops == 0 {
            continue;
        }
        let ratio = cell.ops_per_s() / base;
        let caveat = match cell.method {
            SyncMethod::SyncFileRange => " (no journal commit, no cache flush: not durable)",
            SyncMethod::None => " (no sync at all)",
            _ => "",
        };
        out.push(format!(
            "{} on {}: {ratio:.1}x {}'s rate ({:.0} vs {:.0} ops/s){caveat}",
            cell.method.name(),
            cell.case.name(),
            reference.name(),
            cell.ops_per_s(),
            base
        ));
    }
    out
}

/// Runs one slot of `cell`: write+sync operations until `duration` or `writes`.
pub(crate) fn run_slot(
    ctx: &mut Context<'_>,
    c: &Config,
    files: &Files,
    cell: &mut Cell,
    bufs: &[AlignedBuf; 2],
    recorder: &mut Recorder,
) -> Result<Slot> {
    let path = files.of(cell.case);
    let m = cell.method;
    let file = m.open_in(path, ctx.dir, "method direct")?;
    if cell.case == Case::Append {
        restart_append(&file, path)?;
    }
    let clock = ctx.clock;
    let start = clock.now_ns();
    let mut n = 0u64;
    let mut offset = 0u64;
    loop {
        if ctx.stop.is_set()
            || (c.writes > 0 && n >= c.writes)
            || (!c.duration.is_zero() && clock.now_ns() - start >= c.duration.as_nanos() as u64)
        {
            break;
        }
        // What the case writes where: new bytes walking the file, bytes at the end, or
        // the same bytes at offset 0.
        let buf = match cell.case {
            Case::Mtime => &bufs[0],
            _ => &bufs[(n % 2) as usize],
        };
        if offset + c.write_size > c.file_size {
            if cell.case == Case::Append {
                // Untimed: empty the file and sync that, so the next write appends again.
                restart_append(&file, path)?;
            }
            offset = 0;
        }
        let (written, t_w, lat_w) = clock.time(|| m.write(&file, buf.as_slice(), offset));
        let mut failed = written.is_err();
        recorder.record(m.write_op(), t_w, lat_w, c.write_size, &written);
        let mut lat = lat_w;
        if let Some(op) = m.sync_op() {
            let (synced, t_s, lat_s) = clock.time(|| m.sync(&file, offset, c.write_size));
            if let Some(synced) = synced {
                failed |= synced.is_err();
                ctx.observer
                    .event(Event::Sample(&recorder.record(op, t_s, lat_s, 0, &synced)));
                lat += lat_s;
            }
        }
        cell.latency.record(lat);
        cell.errors += u64::from(failed);
        n += 1;
        if cell.case != Case::Mtime {
            offset += c.write_size;
        }
    }
    let elapsed_ns = clock.now_ns() - start;
    cell.ops += n;
    cell.elapsed_ns += elapsed_ns;
    Ok(Slot {
        case: cell.case,
        method: m,
        writes: n,
        elapsed_ns,
    })
}

fn restart_append(file: &File, path: &Path) -> Result<()> {
    file.set_len(0)
        .and_then(|()| sys::fsync(file))
        .with_context(|| format!("cannot empty {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(case: Case, method: SyncMethod, ops: u64, secs: u64) -> CellRow {
        CellRow {
            case,
            method,
            ops,
            errors: 0,
            elapsed_ns: secs * 1_000_000_000,
            latency_ns: LatencySummary::default(),
        }
    }

    #[test]
    fn findings_are_computed_from_the_rates() {
        let cells = [
            cell(Case::Overwrite, SyncMethod::Fsync, 100, 1),
            cell(Case::Overwrite, SyncMethod::SyncFileRange, 500, 1),
            cell(Case::Overwrite, SyncMethod::Fdatasync, 210, 1),
        ];
        let f = findings(&cells);
        assert_eq!(f[0], "fdatasync on overwrite: 2.1x fsync's rate (210 vs 100 ops/s)");
        assert!(
            f[1].starts_with("sync_file_range on overwrite: 5.0x fsync's rate"),
            "{}",
            f[1]
        );
    }

    #[test]
    fn seed_line_shape() {
        assert_eq!(
            seed_line(Case::Overwrite, SyncMethod::Fdatasync, 1024, 8192, 2.3011),
            "overwrite fdatasync: 1024 writes of 8k in 2.301 sec"
        );
    }
}
