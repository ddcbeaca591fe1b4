//! Seed 001 (Moyer/Goyal, "ext3/4: enhance fsync performance when using cfq", April 2010):
//! small files written and fsynced, the workload where the I/O scheduler decides the rate.
//! Deadline beat CFQ by ~5x on 64 KB files and ~10% on 8 MB ones, because the fsyncing
//! process held its time slice while the journal thread waited to commit.
//!
//! Two modes, each the benchmark of the cover letters:
//! - `iozone`: `iozone -s 64 -e -f FILE -i 0` — for each file size, write a new file in
//!   `record`-sized writes and then rewrite it, each pass timed *with* its fsync (`-e`) but
//!   not its open or close (iozone's `-c` would add the close); KB/s averaged over `runs`.
//! - `fs_mark`: `fs_mark -S 1 -D 100 -N 1000 -d DIR -s 65536 -t 1 -w 4096` — create `files`
//!   files of `file_size` in `record`-sized writes, fsync each before close, `files_per_dir`
//!   per subdirectory across `dirs` subdirectories; files/s and the fsync distribution.
//!
//! `--format seed` prints the two programs' own shapes:
//! ```text
//!               KB  reclen   write rewrite
//!               64       4    1452    1788
//! FSUse%        Count         Size    Files/sec     App Overhead
//!     14         1000        65536         85.1            23519
//! ```
//! (iozone: one row per file size and run, KB/s; fs_mark: one row per run, App Overhead in
//! microseconds spent outside the create/write/fsync/close calls.)
//!
//! The figures belong to the device's I/O scheduler as much as to the filesystem, so the
//! report names the scheduler it ran under.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::IntoRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context as _, Result};
use serde_json::json;

use super::{Context, Outcome, Scenario};
use crate::error::Usage;
use crate::measure::{LatencyHistogram, Recorder, RunClock};
use crate::observe::{Event, Observer, Unit};
use crate::params::{Kind, ParamSpec, Params};
use crate::result::{RunResult, Table};
use crate::sys;
use crate::units::{format_latency_ns, format_size, Bytes};

pub struct SmallFiles;

const MODES: &[&str] = &["iozone", "fs_mark", "both"];

/// The header of iozone's result table, as iozone aligns it.
pub const IOZONE_HEADER: &str = "              KB  reclen   write rewrite";
/// The header of fs_mark's result lines.
pub const FS_MARK_HEADER: &str = "FSUse%        Count         Size    Files/sec     App Overhead";

/// One row of iozone's table: file size in KB, record in KB, write and rewrite in KB/s.
pub fn iozone_line(size: u64, record: u64, write_kbs: f64, rewrite_kbs: f64) -> String {
    format!(
        "{:>16}{:>8}{:>8.0}{:>8.0}",
        size / 1024,
        record / 1024,
        write_kbs,
        rewrite_kbs
    )
}

/// One line of fs_mark's output: filesystem use %, files, file size, files/s, App Overhead (us).
pub fn fs_mark_line(fs_use_pct: u64, count: u64, size: u64, files_per_s: f64, overhead_us: u64) -> String {
    format!("{fs_use_pct:>6} {count:>12} {size:>12} {files_per_s:>12.1} {overhead_us:>16}")
}

impl Scenario for SmallFiles {
    fn name(&self) -> &'static str {
        "small-files"
    }

    fn purpose(&self) -> &'static str {
        "write+fsync rate of small files (iozone -e -i 0, fs_mark -S 1), the figure an I/O scheduler changes"
    }

    fn seed(&self) -> &'static str {
        "001 (Moyer/Goyal, CFQ yield for fsync, 2010)"
    }

    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::new(
                "mode",
                Kind::Choice(MODES),
                "both",
                "iozone (write+rewrite KB/s per file size), fs_mark (files/s), or both",
            ),
            ParamSpec::new(
                "sizes",
                Kind::SizeList,
                "4k,64k,1M,8M,16M",
                "iozone: file sizes, each written then rewritten",
            )
            .seed("64k"),
            ParamSpec::new("runs", Kind::Count, "5", "iozone: passes per file size, averaged").seed("5"),
            ParamSpec::new(
                "record",
                Kind::Size,
                "4k",
                "bytes per write(2): iozone's -r, fs_mark's -w",
            )
            .seed("4k"),
            ParamSpec::new("files", Kind::Count, "300", "fs_mark: files created (-n)").seed("1000"),
            ParamSpec::new("file_size", Kind::Size, "64k", "fs_mark: size of each file (-s)").seed("64k"),
            ParamSpec::new("dirs", Kind::Count, "10", "fs_mark: subdirectories (-D)").seed("100"),
            ParamSpec::new(
                "files_per_dir",
                Kind::Count,
                "30",
                "fs_mark: files in a subdirectory before moving to the next (-N)",
            )
            .seed("1000"),
        ]
    }

    fn validate(&self, p: &Params) -> Result<()> {
        crate::environment::check_fits_in_memory("record", p.size("record").get())?;
        Config::from_params(p).map(|_| ())
    }

    fn space_needed(&self, p: &Params) -> u64 {
        let Ok(c) = Config::from_params(p) else { return 0 };
        let iozone = if c.iozone {
            c.sizes.iter().copied().max().unwrap_or(0)
        } else {
            0
        };
        // Blocks round each small file up; count a 4 KiB block per file on top.
        let fs_mark = if c.fs_mark {
            c.files.saturating_mul(c.file_size + 4096)
        } else {
            0
        };
        iozone.max(fs_mark)
    }

    fn space_hint(&self) -> &'static str {
        "lower --set sizes, files or file_size"
    }

    fn expected_duration(&self, _params: &Params) -> Option<std::time::Duration> {
        None
    }

    /// `64k files: write 1452 KB/s, rewrite 1788 KB/s; fs_mark 85.1 files/s, fsync p99 ...`
    /// (the 64k row, the seed's size, when it ran, else the first).
    fn headline(&self, r: &RunResult) -> String {
        let mut parts = Vec::new();
        for t in &r.tables {
            if t.title.starts_with("iozone") {
                let row = t.rows.iter().find(|row| row[0] == json!(64)).or(t.rows.first());
                if let Some(row) = row {
                    parts.push(format!(
                        "{}k files write {} KB/s, rewrite {} KB/s",
                        row[0], row[2], row[3]
                    ));
                }
            } else if t.title.starts_with("fs_mark") {
                if let Some(row) = t.rows.first() {
                    parts.push(format!("fs_mark {} files/s, fsync p99 {} ms", row[1], row[4]));
                }
            }
        }
        let scheduler = r.environment.device.as_ref().and_then(|d| d.scheduler.clone());
        format!(
            "{} [{}]",
            parts.join("; "),
            scheduler.as_deref().unwrap_or("scheduler ?")
        )
    }

    fn run(&self, ctx: &mut Context<'_>, params: &Params) -> Result<Outcome> {
        let c = Config::from_params(params)?;
        let scheduler = scheduler_of(ctx.dir);
        let mut outcome = Outcome::default();
        if c.iozone {
            let table = iozone(ctx, &c, &mut outcome.recorder)?;
            outcome.findings.extend(iozone_findings(&table, &c, &scheduler));
            outcome.tables.push(table.into_table(&c, &scheduler));
        }
        if c.fs_mark && !ctx.stop.is_set() {
            let run = fs_mark(ctx, &c, &mut outcome.recorder)?;
            outcome.findings.push(format!(
                "fs_mark under scheduler {scheduler}: {:.1} files/s, fsync p50 {} p99 {} max {}",
                run.files_per_s(),
                format_latency_ns(run.fsync.quantile(0.5)),
                format_latency_ns(run.fsync.quantile(0.99)),
                format_latency_ns(run.fsync.summary().max),
            ));
            outcome.tables.push(run.into_table(&c, &scheduler));
        }
        Ok(outcome)
    }
}

/// The scheduler of the device under `dir`, as the report names it (`mq-deadline on vda`).
fn scheduler_of(dir: &Path) -> String {
    match crate::environment::fingerprint(dir).device {
        Some(d) => format!("{} on {}", d.scheduler.as_deref().unwrap_or("unknown"), d.name),
        None => "unknown (no block device)".to_string(),
    }
}

/// The validated parameters.
#[derive(Clone, Debug)]
struct Config {
    iozone: bool,
    fs_mark: bool,
    sizes: Vec<u64>,
    runs: u64,
    record: u64,
    files: u64,
    file_size: u64,
    dirs: u64,
    files_per_dir: u64,
}

impl Config {
    fn from_params(p: &Params) -> Result<Config> {
        let mode = p.text("mode");
        let c = Config {
            iozone: mode != "fs_mark",
            fs_mark: mode != "iozone",
            sizes: p.size_list("sizes").iter().map(|b| b.get()).collect(),
            runs: p.count("runs"),
            record: p.size("record").get(),
            files: p.count("files"),
            file_size: p.size("file_size").get(),
            dirs: p.count("dirs"),
            files_per_dir: p.count("files_per_dir"),
        };
        let usage = |m: String| -> Result<Config> { Err(Usage(m).into()) };
        if c.record == 0 {
            return usage("--set record=0: each write must be at least one byte, e.g. record=4k".into());
        }
        if c.iozone {
            if c.runs == 0 {
                return usage("--set runs=0: iozone mode needs at least one run, e.g. runs=5".into());
            }
            if let Some(small) = c.sizes.iter().find(|s| **s < c.record) {
                return usage(format!(
                    "--set record={}: larger than the file size {}; lower record or drop that size from sizes",
                    format_size(Bytes(c.record)),
                    format_size(Bytes(*small))
                ));
            }
        }
        if c.fs_mark {
            if c.files == 0 {
                return usage("--set files=0: fs_mark mode needs at least one file, e.g. files=300".into());
            }
            if c.file_size == 0 {
                return usage("--set file_size=0: fs_mark files must hold at least one byte".into());
            }
            if c.record > c.file_size {
                return usage(format!(
                    "--set record={}: larger than file_size={}; lower record or raise file_size",
                    format_size(Bytes(c.record)),
                    format_size(Bytes(c.file_size))
                ));
            }
            if c.dirs == 0 || c.files_per_dir == 0 {
                return usage("--set dirs and files_per_dir must be at least 1".into());
            }
        }
        Ok(c)
    }
}

/// `close(2)`, checked: the last chance for a filesystem to report a write error.
fn close(file: File) -> io::Result<()> {
    let fd = file.into_raw_fd();
    // SAFETY: `fd` was just released from its owner and is closed exactly once.
    if unsafe { libc::close(fd) } < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
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
    recorder.record("fsync", t_sync, lat_sync, 0, &synced);
    let pass_ns = t_sync + lat_sync - t0;
    (t0, pass_ns, outcome.and(synced))
}

/// KB/s of `size` bytes in `ns`, as iozone computes it (KB = 1024 bytes).
fn kb_per_s(size: u64, ns: u64) -> f64 {
    (size as f64 / 1024.0) / (ns.max(1) as f64 / 1e9)
}

/// The iozone table: per file size, the KB/s of each run's write and rewrite pass.
struct IozoneTable {
    rows: Vec<(u64, Vec<f64>, Vec<f64>)>,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

impl IozoneTable {
    fn into_table(self, c: &Config, scheduler: &str) -> Table {
        Table {
            title: format!(
                "iozone -e -i 0: KB/s including fsync, mean (median) of {} runs; scheduler {scheduler}",
                c.runs
            ),
            columns: ["kB", "reclen", "write", "rewrite", "write median", "rewrite median"]
                .map(String::from)
                .to_vec(),
            rows: self
                .rows
                .iter()
                .map(|(size, w, r)| {
                    vec![
                        json!(size / 1024),
                        json!(c.record / 1024),
                        json!(mean(w).round() as u64),
                        json!(mean(r).round() as u64),
                        json!(median(w).round() as u64),
                        json!(median(r).round() as u64),
                    ]
                })
                .collect(),
        }
    }
}

fn iozone_findings(t: &IozoneTable, c: &Config, scheduler: &str) -> Vec<String> {
    let (Some(first), Some(last)) = (t.rows.first(), t.rows.last()) else {
        return Vec::new();
    };
    let mut out = vec![format!(
        "iozone under scheduler {scheduler}: {} files write+fsync at {:.0} KB/s, {} files at {:.0} KB/s (mean of {} runs)",
        format_size(Bytes(first.0)),
        mean(&first.1),
        format_size(Bytes(last.0)),
        mean(&last.1),
        c.runs
    )];
    let (w, r) = (mean(&first.1), mean(&first.2));
    if w > 0.0 && r > 0.0 {
        out.push(format!(
            "rewrite of {} files (blocks already allocated): {:.2}x the rate of the first write",
            format_size(Bytes(first.0)),
            r / w
        ));
    }
    out
}

/// An untimed pass before the first measured one, as hyperfine warms up: a file created,
/// written, fsynced and removed, then the directory synced, so the first timed pass does not
/// pay for the new work directory's first entry (measured: the first of nine 64 KiB passes
/// ran at 0.65x the others without it; iozone itself runs in an old directory).
fn warm_up(dir: &Path, path: &Path, buf: &[u8]) -> io::Result<()> {
    let file = create(path, true)?;
    sys::pwrite_all(&file, buf, 0, false)?;
    sys::fsync(&file)?;
    drop(file);
    std::fs::remove_file(path)?;
    sys::fsync(&File::open(dir)?)
}

/// iozone mode: for each run and each size, a new file written then rewritten.
fn iozone(ctx: &mut Context<'_>, c: &Config, recorder: &mut Recorder) -> Result<IozoneTable> {
    let buf = vec![b'z'; c.record as usize];
    let path = ctx.dir.join("iozone.tmp");
    let mut rows: Vec<(u64, Vec<f64>, Vec<f64>)> = c.sizes.iter().map(|s| (*s, Vec::new(), Vec::new())).collect();
    ctx.observer.event(Event::Phase {
        name: "iozone",
        total: Some(c.runs * c.sizes.len() as u64),
        unit: Unit::Items,
    });
    ctx.observer.event(Event::SeedLine(IOZONE_HEADER));
    warm_up(ctx.dir, &path, &buf).with_context(|| format!("warm-up pass in {} failed", ctx.dir.display()))?;
    let mut done = 0;
    'runs: for _ in 0..c.runs {
        for row in rows.iter_mut() {
            if ctx.stop.is_set() {
                break 'runs;
            }
            let size = row.0;
            // Write: a new file, as iozone removes the previous one between tests.
            let _ = std::fs::remove_file(&path);
            let file = create(&path, true).with_context(|| format!("cannot create {}", path.display()))?;
            let (t_w, write_ns, wrote) = timed_pass(&file, &buf, size, &ctx.clock, recorder);
            recorder.record("iozone_write", t_w, write_ns, size, &wrote);
            close(file).with_context(|| format!("close of {} failed", path.display()))?;
            // Rewrite: the same file again, its blocks now allocated.
            let file = create(&path, false).with_context(|| format!("cannot open {}", path.display()))?;
            let (t_r, rewrite_ns, rewrote) = timed_pass(&file, &buf, size, &ctx.clock, recorder);
            recorder.record("iozone_rewrite", t_r, rewrite_ns, size, &rewrote);
            close(file).with_context(|| format!("close of {} failed", path.display()))?;
            let (w, r) = (kb_per_s(size, write_ns), kb_per_s(size, rewrite_ns));
            row.1.push(w);
            row.2.push(r);
            ctx.observer.event(Event::SeedLine(&iozone_line(size, c.record, w, r)));
            done += 1;
            ctx.observer.event(Event::Progress { done });
        }
    }
    let _ = std::fs::remove_file(&path);
    Ok(IozoneTable { rows })
}

/// What an fs_mark run measured.
struct FsMarkRun {
    files: u64,
    elapsed_ns: u64,
    syscall_ns: u64,
    fsync: LatencyHistogram,
    fs_use_pct: u64,
}

impl FsMarkRun {
    fn files_per_s(&self) -> f64 {
        self.files as f64 / (self.elapsed_ns.max(1) as f64 / 1e9)
    }

    fn into_table(self, c: &Config, scheduler: &str) -> Table {
        let s = self.fsync.summary();
        let ms = |ns: u64| json!((ns as f64 / 1e4).round() / 100.0);
        Table {
            title: format!(
                "fs_mark -S 1: {} files of {} in {} writes, fsync before close (latency in ms); scheduler {scheduler}",
                c.files,
                format_size(Bytes(c.file_size)),
                format_size(Bytes(c.record))
            ),
            columns: [
                "files",
                "files/s",
                "fsync p50",
                "fsync p90",
                "fsync p99",
                "fsync max",
                "app overhead us",
            ]
            .map(String::from)
            .to_vec(),
            rows: vec![vec![
                json!(self.files),
                json!((self.files_per_s() * 10.0).round() / 10.0),
                ms(s.p50),
                ms(s.p90),
                ms(s.p99),
                ms(s.max),
                json!(self.elapsed_ns.saturating_sub(self.syscall_ns) / 1000),
            ]],
        }
    }
}

/// Records one timed call and returns its latency, so that App Overhead can be computed.
fn record(
    recorder: &mut Recorder,
    obs: &mut dyn Observer,
    op: &str,
    t: u64,
    lat: u64,
    bytes: u64,
    r: &io::Result<()>,
) -> u64 {
    let s = recorder.record(op, t, lat, bytes, r);
    if op == "fsync" {
        obs.event(Event::Sample(s));
    }
    lat
}

/// fs_mark mode: create, write in records, fsync, close — one file after another.
fn fs_mark(ctx: &mut Context<'_>, c: &Config, recorder: &mut Recorder) -> Result<FsMarkRun> {
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
    let mut run = FsMarkRun {
        files: 0,
        elapsed_ns: 0,
        syscall_ns: 0,
        fsync: LatencyHistogram::new(),
        fs_use_pct: 0,
    };
    for i in 0..c.files {
        if ctx.stop.is_set() {
            break;
        }
        let dir = root.join(format!("{:02}", (i / c.files_per_dir) % c.dirs));
        let path = dir.join(format!("{i:08x}.fsm"));
        let (file, t, lat) = clock.time(|| create(&path, true));
        let created = match &file {
            Ok(_) => Ok(()),
            Err(e) => Err(e
                .raw_os_error()
                .map_or_else(|| io::Error::new(e.kind(), e.to_string()), io::Error::from_raw_os_error)),
        };
        run.syscall_ns += record(recorder, ctx.observer, "create", t, lat, 0, &created);
        let file = file.with_context(|| format!("cannot create {}", path.display()))?;
        let mut offset = 0;
        while offset < c.file_size {
            let len = c.record.min(c.file_size - offset);
            let (w, t, lat) = clock.time(|| sys::pwrite_all(&file, &buf[..len as usize], offset, false));
            run.syscall_ns += record(recorder, ctx.observer, "write", t, lat, len, &w);
            offset += len;
        }
        let (synced, t, lat) = clock.time(|| sys::fsync(&file));
        run.syscall_ns += record(recorder, ctx.observer, "fsync", t, lat, 0, &synced);
        run.fsync.record(lat);
        let (closed, t, lat) = clock.time(|| close(file));
        run.syscall_ns += record(recorder, ctx.observer, "close", t, lat, 0, &closed);
        run.files += 1;
        ctx.observer.event(Event::Progress { done: run.files });
    }
    run.elapsed_ns = clock.now_ns() - start;
    run.fs_use_pct = sys::fs_space(ctx.dir)
        .map(|s| (s.total - s.available) * 100 / s.total.max(1))
        .unwrap_or(0);
    ctx.observer.event(Event::SeedLine(FS_MARK_HEADER));
    ctx.observer.event(Event::SeedLine(&fs_mark_line(
        run.fs_use_pct,
        run.files,
        c.file_size,
        run.files_per_s(),
        run.elapsed_ns.saturating_sub(run.syscall_ns) / 1000,
    )));
    Ok(run)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_lines_have_the_programs_shapes() {
        assert_eq!(
            iozone_line(65536, 4096, 1452.4, 1788.0),
            "              64       4    1452    1788"
        );
        assert_eq!(
            fs_mark_line(14, 1000, 65536, 85.1, 23519),
            "    14         1000        65536         85.1            23519"
        );
    }

    #[test]
    fn rates_and_statistics() {
        assert!((kb_per_s(64 * 1024, 1_000_000_000) - 64.0).abs() < 1e-9);
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(mean(&[1.0, 2.0]), 1.5);
    }
}
