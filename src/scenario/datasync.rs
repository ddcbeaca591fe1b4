//! Seed 004 (Hifumi et al., "ext3,4: fdatasync should skip metadata writeout", 2007–2008):
//! fdatasync need not commit the journal when an overwrite of allocated blocks changed only
//! the timestamps; a size change or a block allocation must still go. Hifumi's test wrote an
//! 8 GiB file in 8 KiB writes, fsynced it, then overwrote it with 8 KiB write + fdatasync per
//! write and printed the total time (`264 sec` before the patch, `253 sec` after).
//!
//! Here every sync method of a list meets three cases, one table:
//! - `overwrite`: 8 KiB writes of new bytes over an allocated, synced file (Hifumi's test);
//! - `append`: the file grows, so the size and the new blocks must be synced;
//! - `mtime`: the same 8 KiB rewritten with the same bytes at offset 0: only the timestamps
//!   change (the page is still dirtied and written).
//!
//! Methods and cases are interleaved in `rounds` (each (case, method) cell gets a slot per
//! round), so a slow minute of the machine falls on every method alike. An operation is the
//! write plus its sync call; both calls are also recorded on their own (`write`, `fdatasync`,
//! `write_odsync`...). The findings compare each method's rate with fsync's, as measured.
//!
//! `--format seed` prints, per slot, Hifumi's total-time line with what it covered:
//! `overwrite fdatasync: 1024 writes of 8k in 2.301 sec`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde_json::json;

use super::{Context, Outcome, Scenario};
use crate::error::Usage;
use crate::measure::{LatencyHistogram, Recorder};
use crate::observe::{Event, Unit};
use crate::params::{Kind, ParamSpec, Params};
use crate::result::{RunResult, Table};
use crate::sync::SyncMethod;
use crate::sys::{self, AlignedBuf};
use crate::units::{format_size, Bytes};

pub struct Datasync;

pub const CASES: &[&str] = &["overwrite", "append", "mtime"];

/// Hifumi's total-time line, with the slot it covers.
pub fn seed_line(case: &str, method: &str, writes: u64, write_size: u64, secs: f64) -> String {
    format!(
        "{case} {method}: {writes} writes of {} in {secs:.3} sec",
        format_size(Bytes(write_size))
    )
}

impl Scenario for Datasync {
    fn name(&self) -> &'static str {
        "datasync"
    }

    fn purpose(&self) -> &'static str {
        "fsync vs fdatasync vs sync_file_range vs O_DSYNC on overwrite, append and timestamp-only writes"
    }

    fn seed(&self) -> &'static str {
        "004 (Hifumi et al., fdatasync should skip metadata, 2007-2008)"
    }

    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::new(
                "methods",
                Kind::ChoiceList(SyncMethod::NAMES),
                "fsync,fdatasync,sync_file_range,odsync",
                "sync methods compared (see `sync` of other scenarios for each one)",
            )
            .seed("fdatasync"),
            ParamSpec::new(
                "cases",
                Kind::ChoiceList(CASES),
                "overwrite,append,mtime",
                "overwrite (allocated blocks), append (file grows), mtime (same bytes: timestamps only)",
            )
            .seed("overwrite"),
            ParamSpec::new("write_size", Kind::Size, "8k", "bytes per write").seed("8k"),
            ParamSpec::new(
                "file_size",
                Kind::Size,
                "8M",
                "size of the preallocated file for overwrite; an append file is emptied when it reaches it",
            )
            .seed("8G"),
            ParamSpec::new(
                "rounds",
                Kind::Count,
                "3",
                "interleaved rounds: each (case, method) gets one slot per round",
            )
            .seed("1"),
            ParamSpec::new(
                "duration",
                Kind::Duration,
                "500ms",
                "length of one slot (0 = no limit: writes decides)",
            )
            .seed("0s"),
            ParamSpec::new(
                "writes",
                Kind::Count,
                "0",
                "write+sync operations per slot (0 = no limit: duration decides)",
            )
            .seed("1048576"),
        ]
    }

    fn validate(&self, p: &Params) -> Result<()> {
        crate::environment::check_fits_in_memory("write_size", p.size("write_size").get())?;
        Config::from_params(p).map(|_| ())
    }

    fn space_needed(&self, p: &Params) -> u64 {
        let Ok(c) = Config::from_params(p) else { return 0 };
        let per_case = |case: &str| c.cases.contains(&case);
        let mut need = c.write_size;
        if per_case("overwrite") {
            need += c.file_size;
        }
        if per_case("append") {
            need += c.file_size;
        }
        need
    }

    fn space_hint(&self) -> &'static str {
        "lower --set file_size"
    }

    fn expected_duration(&self, p: &Params) -> Option<Duration> {
        let c = Config::from_params(p).ok()?;
        if c.duration.is_zero() {
            return None;
        }
        Some(c.duration * (c.rounds * c.cells() as u64) as u32)
    }

    fn headline(&self, r: &RunResult) -> String {
        match r.findings.first() {
            Some(f) => f.clone(),
            None => super::default_headline(r),
        }
    }

    fn run(&self, ctx: &mut Context<'_>, params: &Params) -> Result<Outcome> {
        let c = Config::from_params(params)?;
        let files = prepare_files(ctx, &c)?;
        let mut recorder = Recorder::new();
        let mut cells: Vec<Cell> = c
            .cases
            .iter()
            .flat_map(|case| c.methods.iter().map(move |m| Cell::new(case, *m)))
            .collect();
        ctx.observer.event(Event::Phase {
            name: "datasync",
            total: Some(c.rounds * cells.len() as u64),
            unit: Unit::Items,
        });
        let bufs = [
            AlignedBuf::filled(c.write_size as usize, b'a'),
            AlignedBuf::filled(c.write_size as usize, b'b'),
        ];
        let mut done = 0;
        'rounds: for round in 0..c.rounds {
            // Rotate the order each round, so no method always follows the same neighbour.
            let n = cells.len();
            for k in 0..n {
                if ctx.stop.is_set() {
                    break 'rounds;
                }
                let cell = &mut cells[(k + round as usize) % n];
                let slot = run_slot(ctx, &c, &files, cell, &bufs, &mut recorder)?;
                ctx.observer.event(Event::SeedLine(&seed_line(
                    cell.case,
                    cell.method.name(),
                    slot.0,
                    c.write_size,
                    slot.1 as f64 / 1e9,
                )));
                done += 1;
                ctx.observer.event(Event::Progress { done });
            }
        }
        Ok(Outcome {
            recorder,
            background: None,
            findings: findings(&cells),
            tables: vec![table(&c, &cells)],
        })
    }
}

/// The validated parameters.
#[derive(Clone, Debug)]
struct Config {
    methods: Vec<SyncMethod>,
    cases: Vec<&'static str>,
    write_size: u64,
    file_size: u64,
    rounds: u64,
    duration: Duration,
    writes: u64,
}

impl Config {
    fn from_params(p: &Params) -> Result<Config> {
        let mut methods = Vec::new();
        for name in p.choice_list("methods") {
            let m = SyncMethod::from_name(name).expect("validated choice");
            if !methods.contains(&m) {
                methods.push(m);
            }
        }
        let mut cases = Vec::new();
        for name in p.choice_list("cases") {
            let case = CASES.iter().copied().find(|c| c == name).expect("validated choice");
            if !cases.contains(&case) {
                cases.push(case);
            }
        }
        let c = Config {
            methods,
            cases,
            write_size: p.size("write_size").get(),
            file_size: p.size("file_size").get(),
            rounds: p.count("rounds"),
            duration: p.duration("duration"),
            writes: p.count("writes"),
        };
        let usage = |m: &str| -> Result<Config> { Err(Usage(m.to_string()).into()) };
        if c.write_size == 0 {
            return usage("--set write_size=0: each write must be at least one byte, e.g. write_size=8k");
        }
        if c.file_size < c.write_size {
            return usage(&format!(
                "--set write_size={}: larger than file_size={}; lower write_size or raise file_size",
                format_size(Bytes(c.write_size)),
                format_size(Bytes(c.file_size))
            ));
        }
        if c.rounds == 0 {
            return usage("--set rounds=0: at least one round is needed, e.g. rounds=3");
        }
        if c.duration.is_zero() && c.writes == 0 {
            return usage("--set duration=0 and writes=0: one of them must limit each slot, e.g. duration=500ms");
        }
        if c.methods.contains(&SyncMethod::Direct) && c.write_size % AlignedBuf::ALIGN as u64 != 0 {
            return usage(&format!(
                "--set write_size={}: method direct (O_DIRECT) needs a multiple of 4k",
                format_size(Bytes(c.write_size))
            ));
        }
        Ok(c)
    }

    fn cells(&self) -> usize {
        self.methods.len() * self.cases.len()
    }
}

struct Files {
    overwrite: PathBuf,
    append: PathBuf,
    mtime: PathBuf,
}

/// Writes out the files the cases start from, synced, as Hifumi's test does before timing:
/// the overwrite file in full, the mtime file as one record of the bytes it will rewrite.
fn prepare_files(ctx: &mut Context<'_>, c: &Config) -> Result<Files> {
    let files = Files {
        overwrite: ctx.dir.join("datasync-overwrite.dat"),
        append: ctx.dir.join("datasync-append.dat"),
        mtime: ctx.dir.join("datasync-mtime.dat"),
    };
    if c.cases.contains(&"overwrite") {
        ctx.observer.event(Event::Phase {
            name: "preallocating",
            total: Some(c.file_size),
            unit: Unit::Bytes,
        });
        fill(ctx, &files.overwrite, c.file_size, c.write_size)?;
    }
    if c.cases.contains(&"mtime") && !ctx.stop.is_set() {
        fill(ctx, &files.mtime, c.write_size, c.write_size)?;
    }
    Ok(files)
}

/// Writes `size` bytes of `a` into `path` in `record`-sized writes, then fsyncs it. Stops
/// early (leaving the run to end at once) when the stop is set: an 8 GiB seed-sized file
/// takes a while.
fn fill(ctx: &mut Context<'_>, path: &Path, size: u64, record: u64) -> Result<()> {
    let f = SyncMethod::None
        .open(path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    let buf = vec![b'a'; record as usize];
    let mut offset = 0;
    while offset < size {
        if ctx.stop.is_set() {
            return Ok(());
        }
        let len = record.min(size - offset);
        sys::pwrite_all(&f, &buf[..len as usize], offset, false)
            .with_context(|| format!("cannot write {}", path.display()))?;
        offset += len;
        if offset % (64 << 20) < record {
            ctx.observer.event(Event::Progress { done: offset });
        }
    }
    sys::fsync(&f).with_context(|| format!("fsync of {} failed", path.display()))
}

/// One (case, method) pair and what its slots measured.
struct Cell {
    case: &'static str,
    method: SyncMethod,
    ops: u64,
    errors: u64,
    elapsed_ns: u64,
    latency: LatencyHistogram,
}

impl Cell {
    fn new(case: &'static str, method: SyncMethod) -> Cell {
        Cell {
            case,
            method,
            ops: 0,
            errors: 0,
            elapsed_ns: 0,
            latency: LatencyHistogram::new(),
        }
    }

    fn ops_per_s(&self) -> f64 {
        self.ops as f64 / (self.elapsed_ns.max(1) as f64 / 1e9)
    }
}

/// Runs one slot of `cell`: write+sync operations until `duration` or `writes`. Returns the
/// operations done and the slot's length in ns.
fn run_slot(
    ctx: &mut Context<'_>,
    c: &Config,
    files: &Files,
    cell: &mut Cell,
    bufs: &[AlignedBuf; 2],
    recorder: &mut Recorder,
) -> Result<(u64, u64)> {
    let path = match cell.case {
        "overwrite" => &files.overwrite,
        "append" => &files.append,
        _ => &files.mtime,
    };
    let m = cell.method;
    let file = m.open(path).map_err(|e| {
        if m == SyncMethod::Direct && e.raw_os_error() == Some(libc::EINVAL) {
            anyhow::anyhow!(Usage(format!(
                "method direct: the filesystem of {} does not support O_DIRECT; drop it from --set methods",
                ctx.dir.display()
            )))
        } else {
            anyhow::Error::new(e).context(format!("cannot open {}", path.display()))
        }
    })?;
    if cell.case == "append" {
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
            "mtime" => &bufs[0],
            _ => &bufs[(n % 2) as usize],
        };
        if cell.case == "overwrite" && offset + c.write_size > c.file_size {
            offset = 0;
        }
        if cell.case == "append" && offset + c.write_size > c.file_size {
            // Untimed: empty the file and sync that, so the next write appends again.
            restart_append(&file, path)?;
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
                let s = recorder.record(op, t_s, lat_s, 0, &synced);
                ctx.observer.event(Event::Sample(s));
                lat += lat_s;
            }
        }
        cell.latency.record(lat);
        cell.errors += u64::from(failed);
        n += 1;
        if cell.case != "mtime" {
            offset += c.write_size;
        }
    }
    let elapsed = clock.now_ns() - start;
    cell.ops += n;
    cell.elapsed_ns += elapsed;
    Ok((n, elapsed))
}

fn restart_append(file: &File, path: &Path) -> Result<()> {
    file.set_len(0)
        .and_then(|()| sys::fsync(file))
        .with_context(|| format!("cannot empty {}", path.display()))
}

fn table(c: &Config, cells: &[Cell]) -> Table {
    let us = |ns: u64| json!((ns as f64 / 100.0).round() / 10.0);
    Table {
        title: format!(
            "datasync: {} write + sync per operation, {} interleaved round(s); latency in us",
            format_size(Bytes(c.write_size)),
            c.rounds
        ),
        columns: [
            "case", "method", "ops", "errors", "ops/s", "p50", "p90", "p99", "max", "vs fsync",
        ]
        .map(String::from)
        .to_vec(),
        rows: cells
            .iter()
            .map(|cell| {
                let s = cell.latency.summary();
                let vs = fsync_rate(cells, cell.case)
                    .filter(|r| *r > 0.0)
                    .map(|r| json!(format!("{:.2}x", cell.ops_per_s() / r)))
                    .unwrap_or(json!("-"));
                vec![
                    json!(cell.case),
                    json!(cell.method.name()),
                    json!(cell.ops),
                    json!(cell.errors),
                    json!((cell.ops_per_s() * 10.0).round() / 10.0),
                    us(s.p50),
                    us(s.p90),
                    us(s.p99),
                    us(s.max),
                    vs,
                ]
            })
            .collect(),
    }
}

fn fsync_rate(cells: &[Cell], case: &str) -> Option<f64> {
    cells
        .iter()
        .find(|c| c.case == case && c.method == SyncMethod::Fsync && c.ops > 0)
        .map(Cell::ops_per_s)
}

/// One line per (case, method other than fsync): its rate as a multiple of fsync's, from
/// this run's figures. Without fsync in the list, the first method is the reference.
fn findings(cells: &[Cell]) -> Vec<String> {
    let mut out = Vec::new();
    let reference = cells
        .iter()
        .map(|c| c.method)
        .find(|m| *m == SyncMethod::Fsync)
        .or_else(|| cells.first().map(|c| c.method));
    let Some(reference) = reference else { return out };
    // fdatasync first: it is the question of the seed.
    let mut order: Vec<&Cell> = cells.iter().filter(|c| c.method != reference).collect();
    order.sort_by_key(|c| c.method != SyncMethod::Fdatasync);
    for cell in order {
        let Some(base) = cells
            .iter()
            .find(|c| c.case == cell.case && c.method == reference && c.ops > 0)
        else {
            continue;
        };
        if cell.ops == 0 {
            continue;
        }
        let ratio = cell.ops_per_s() / base.ops_per_s();
        let caveat = match cell.method {
            SyncMethod::SyncFileRange => " (no journal commit, no cache flush: not durable)",
            SyncMethod::None => " (no sync at all)",
            _ => "",
        };
        out.push(format!(
            "{} on {}: {ratio:.1}x {}'s rate ({:.0} vs {:.0} ops/s){caveat}",
            cell.method.name(),
            cell.case,
            reference.name(),
            cell.ops_per_s(),
            base.ops_per_s()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(case: &'static str, method: SyncMethod, ops: u64, secs: u64) -> Cell {
        Cell {
            ops,
            elapsed_ns: secs * 1_000_000_000,
            ..Cell::new(case, method)
        }
    }

    #[test]
    fn findings_are_computed_from_the_rates() {
        let cells = [
            cell("overwrite", SyncMethod::Fsync, 100, 1),
            cell("overwrite", SyncMethod::SyncFileRange, 500, 1),
            cell("overwrite", SyncMethod::Fdatasync, 210, 1),
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
            seed_line("overwrite", "fdatasync", 1024, 8192, 2.3011),
            "overwrite fdatasync: 1024 writes of 8k in 2.301 sec"
        );
    }
}
