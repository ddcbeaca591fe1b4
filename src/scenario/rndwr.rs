//! Seed 004 (Hifumi et al., "fdatasync should skip metadata", 2007–2008), test 2:
//! `sysbench --num-threads=128 --max-requests=50000 --test=fileio --file-total-size=128G
//! --file-test-mode=rndwr --file-fsync-mode=fdatasync run`, which went from 775 to 1051
//! requests/s once fdatasync stopped committing the journal for mtime-only changes.
//!
//! sysbench 0.4's fileio semantics, rebuilt: `files` preallocated files totalling
//! `total_size` (the prepare step: sequential writes, then fsync each file); `threads` workers
//! draw requests from one shared generator. A request is a `block_size` pwrite at a uniformly
//! random, block-aligned offset of the whole set; after every `fsync_freq` writes the
//! generator hands out one sync request per file (a sweep, executed by whichever workers take
//! them, concurrently with other workers' writes). The run stops at `max_requests` writes or
//! after `duration`, then each file gets one more sync (`fsync_end`).
//!
//! sysbench counts the syncs as "Other" operations, not requests, so its per-request
//! latency covers writes only; fsynclab times every sync call too and reports their
//! distribution beside sysbench's figures.
//!
//! Seed format: sysbench 0.4's summary, e.g.
//! ```text
//! Operations performed:  0 Read, 50080 Write, 59600 Other = 109680 Total
//! Read 0b  Written 782.5Mb  Total transferred 782.5Mb  (12.116Mb/sec)
//!   775.45 Requests/sec executed
//! ```
//! followed by the test execution summary (total time, per-request min/avg/max/approx. 95
//! percentile) and thread fairness.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use serde_json::json;

use super::{Context, Outcome, Scenario};
use crate::error::Usage;
use crate::measure::{Recorder, RunClock};
use crate::observe::{Event, Observer, Unit};
use crate::params::{Kind, ParamSpec, Params};
use crate::result::{RunResult, Table};
use crate::role::stop::Stop;
use crate::role::writer::SplitMix64;
use crate::sync::SyncMethod;
use crate::sys;
use crate::units::{format_size, Bytes};

pub struct Rndwr;

/// The validated parameters.
#[derive(Clone, Debug)]
pub struct Config {
    pub files: u64,
    pub file_size: u64,
    pub block_size: u64,
    pub threads: u64,
    pub fsync_freq: u64,
    pub fsync_end: bool,
    pub sync: SyncMethod,
    pub max_requests: u64,
    pub duration: Duration,
    pub seed: u64,
}

impl Config {
    pub fn from_params(p: &Params) -> Result<Config> {
        let files = p.count("files");
        let threads = p.count("threads");
        let block_size = p.size("block_size").get();
        if files == 0 {
            bail!(Usage("--set files=0: sysbench needs at least one file".into()));
        }
        if threads == 0 {
            bail!(Usage("--set threads=0: at least one worker thread is needed".into()));
        }
        if threads > 4096 {
            bail!(Usage(format!("--set threads={threads}: at most 4096 worker threads")));
        }
        if block_size == 0 {
            bail!(Usage(
                "--set block_size=0: a request must write at least one byte".into()
            ));
        }
        // sysbench: file_size = total_size / num_files.
        let file_size = p.size("total_size").get() / files;
        if file_size < block_size {
            bail!(Usage(format!(
                "--set total_size={}: {} files of {} each are smaller than block_size={}; raise total_size or lower files",
                p.size("total_size"),
                files,
                format_size(Bytes(file_size)),
                p.size("block_size")
            )));
        }
        let max_requests = p.count("max_requests");
        let duration = p.duration("duration");
        if max_requests == 0 && duration.is_zero() {
            bail!(Usage(
                "--set max_requests=0 with duration=0 would never stop; set one of them".into()
            ));
        }
        Ok(Config {
            files,
            file_size,
            block_size,
            threads,
            fsync_freq: p.count("fsync_freq"),
            fsync_end: p.flag("fsync_end"),
            sync: SyncMethod::from_name(p.text("fsync_mode")).expect("validated choice"),
            max_requests,
            duration,
            seed: p.count("seed"),
        })
    }

    /// Blocks per file: requests never cross the end of a file.
    fn blocks_per_file(&self) -> u64 {
        self.file_size / self.block_size
    }

    pub fn space_needed(&self) -> u64 {
        self.files * self.file_size
    }
}

/// One request, as sysbench's generator hands them out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request {
    Write { file: u64, offset: u64 },
    Sync { file: u64 },
    Done,
}

/// sysbench's random request generator: a write at a random block of the whole file set,
/// except that once `fsync_freq` writes have been issued since the last sweep, the next
/// `files` requests are one sync per file. Shared by all workers behind a mutex, as in
/// sysbench, so a sweep is global, not per thread.
#[derive(Debug)]
pub struct Generator {
    rng: SplitMix64,
    files: u64,
    blocks_per_file: u64,
    block_size: u64,
    fsync_freq: u64,
    max_requests: u64,
    /// Writes handed out.
    pub writes: u64,
    /// Writes since the last sweep finished.
    dirty: bool,
    next_sync: u64,
}

impl Generator {
    pub fn new(cfg: &Config) -> Generator {
        Generator {
            rng: SplitMix64::new(cfg.seed),
            files: cfg.files,
            blocks_per_file: cfg.blocks_per_file(),
            block_size: cfg.block_size,
            fsync_freq: cfg.fsync_freq,
            max_requests: cfg.max_requests,
            writes: 0,
            dirty: false,
            next_sync: 0,
        }
    }

    pub fn next_request(&mut self) -> Request {
        if self.fsync_freq != 0 && self.dirty && self.writes % self.fsync_freq == 0 {
            let file = self.next_sync;
            self.next_sync += 1;
            if self.next_sync == self.files {
                self.next_sync = 0;
                self.dirty = false;
            }
            return Request::Sync { file };
        }
        if self.max_requests != 0 && self.writes >= self.max_requests {
            return Request::Done;
        }
        let block = self.rng.next_u64() % (self.files * self.blocks_per_file);
        self.writes += 1;
        self.dirty = true;
        Request::Write {
            file: block / self.blocks_per_file,
            offset: block % self.blocks_per_file * self.block_size,
        }
    }
}

fn file_path(dir: &Path, i: u64) -> PathBuf {
    dir.join(format!("test_file.{i}"))
}

/// sysbench's prepare: each file written sequentially in `block_size` writes, then fsynced,
/// "to prevent cache flush from affecting test results".
fn prepare(dir: &Path, cfg: &Config, stop: &Stop, observer: &mut dyn Observer) -> Result<Vec<File>> {
    observer.event(Event::SeedLine(&format!(
        "{} files, {}Kb each, {}Mb total",
        cfg.files,
        cfg.file_size / 1024,
        cfg.space_needed() / Bytes::MIB
    )));
    observer.event(Event::SeedLine("Creating files for the test..."));
    observer.event(Event::Phase {
        name: "creating files for the test",
        total: Some(cfg.space_needed()),
        unit: Unit::Bytes,
    });
    // Written in `block_size` writes as sysbench does, not in bigger chunks: the write size
    // decides the size of the page-cache folios, and a 16 KiB overwrite of a 1 MiB folio
    // makes the next fdatasync write back the whole folio (measured here: 0.6x the
    // requests/s of sysbench on the same directory with 1 MiB prepare writes).
    let chunk = cfg.block_size;
    let buf = vec![0u8; chunk as usize];
    let mut files = Vec::new();
    let mut done = 0;
    for i in 0..cfg.files {
        let path = file_path(dir, i);
        let f = SyncMethod::None
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut offset = 0;
        while offset < cfg.file_size && !stop.is_set() {
            let len = chunk.min(cfg.file_size - offset);
            sys::pwrite_all(&f, &buf[..len as usize], offset, false)
                .with_context(|| format!("writing out {}", path.display()))?;
            offset += len;
            done += len;
            if done % Bytes::MIB < len {
                observer.event(Event::Progress { done });
            }
        }
        sys::fsync(&f).with_context(|| format!("fsync of {}", path.display()))?;
        files.push(f);
    }
    Ok(files)
}

/// What one worker did.
struct WorkerReport {
    recorder: Recorder,
    writes: u64,
    ended: Instant,
}

fn worker(
    files: &[File],
    cfg: &Config,
    generator: &Mutex<Generator>,
    clock: RunClock,
    stop: &Stop,
    deadline: Option<Instant>,
) -> WorkerReport {
    let mut recorder = Recorder::new();
    let buf = vec![0u8; cfg.block_size as usize];
    let sync_op = cfg.sync.sync_op().unwrap_or("fdatasync");
    let mut writes = 0;
    loop {
        if stop.is_set() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let request = generator.lock().unwrap_or_else(PoisonError::into_inner).next_request();
        let outcome: io::Result<()> = match request {
            Request::Done => break,
            Request::Write { file, offset } => {
                let f = &files[file as usize];
                let (r, t, ns) = clock.time(|| sys::pwrite_all(f, &buf, offset, false));
                recorder.record("write", t, ns, cfg.block_size, &r);
                writes += u64::from(r.is_ok());
                r
            }
            Request::Sync { file } => {
                let f = &files[file as usize];
                let (r, t, ns) = clock.time(|| cfg.sync.sync(f, 0, 0).unwrap_or(Ok(())));
                recorder.record(sync_op, t, ns, 0, &r);
                r
            }
        };
        if outcome.is_err() {
            // sysbench aborts the run at the first failed call; so do all workers here.
            stop.set();
            break;
        }
    }
    WorkerReport {
        recorder,
        writes,
        ended: Instant::now(),
    }
}

/// sysbench 0.4's figures, computed from the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub writes: u64,
    pub other: u64,
    pub total_s: f64,
    pub written_bytes: u64,
    pub requests_per_s: f64,
    pub mib_per_s: f64,
    pub min_s: f64,
    pub avg_s: f64,
    pub max_s: f64,
    pub p95_s: f64,
    pub events_sum_s: f64,
    pub fairness_avg: f64,
    pub fairness_stddev: f64,
}

/// The nearest-rank percentile `q` of `values` (sorted in place).
fn percentile(values: &mut [u64], q: f64) -> u64 {
    if values.is_empty() {
        return 0;
    }
    values.sort_unstable();
    let rank = ((q * values.len() as f64).ceil() as usize).clamp(1, values.len());
    values[rank - 1]
}

pub fn summarize(rec: &Recorder, sync_op: &str, total_s: f64, per_thread_writes: &[u64]) -> Summary {
    let mut write_ns: Vec<u64> = rec
        .samples()
        .iter()
        .filter(|s| s.op == "write" && s.error.is_none())
        .map(|s| s.latency_ns)
        .collect();
    let writes = write_ns.len() as u64;
    let write_stats = rec.op("write").unwrap_or_default();
    let other = rec.op(sync_op).map(|o| o.count).unwrap_or(0);
    let sum_ns: u64 = write_ns.iter().sum();
    let n = per_thread_writes.len().max(1) as f64;
    let fairness_avg = per_thread_writes.iter().sum::<u64>() as f64 / n;
    let var = per_thread_writes
        .iter()
        .map(|&w| (w as f64 - fairness_avg).powi(2))
        .sum::<f64>()
        / n;
    let secs = |ns: u64| ns as f64 / 1e9;
    Summary {
        writes,
        other,
        total_s,
        written_bytes: write_stats.bytes,
        requests_per_s: if total_s > 0.0 { writes as f64 / total_s } else { 0.0 },
        mib_per_s: if total_s > 0.0 {
            write_stats.bytes as f64 / Bytes::MIB as f64 / total_s
        } else {
            0.0
        },
        min_s: secs(write_stats.latency_ns.min),
        avg_s: if writes > 0 { secs(sum_ns) / writes as f64 } else { 0.0 },
        max_s: secs(write_stats.latency_ns.max),
        p95_s: secs(percentile(&mut write_ns, 0.95)),
        events_sum_s: secs(sum_ns),
        fairness_avg,
        fairness_stddev: var.sqrt(),
    }
}

/// A size in sysbench 0.4's style: `782.5Mb`, `0b`, `16Kb`.
pub fn sysbench_size(bytes: u64) -> String {
    let (value, unit) = match bytes {
        b if b >= Bytes::GIB => (b as f64 / Bytes::GIB as f64, "Gb"),
        b if b >= Bytes::MIB => (b as f64 / Bytes::MIB as f64, "Mb"),
        b if b >= Bytes::KIB => (b as f64 / Bytes::KIB as f64, "Kb"),
        b => (b as f64, "b"),
    };
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{unit}")
}

/// The seed's output lines, in sysbench 0.4's layout.
pub fn seed_lines(s: &Summary) -> Vec<String> {
    let rate = if s.total_s > 0.0 {
        sysbench_size((s.written_bytes as f64 / s.total_s) as u64)
    } else {
        "0b".into()
    };
    vec![
        format!(
            "Operations performed:  0 Read, {} Write, {} Other = {} Total",
            s.writes,
            s.other,
            s.writes + s.other
        ),
        format!(
            "Read 0b  Written {w}  Total transferred {w}  ({rate}/sec)",
            w = sysbench_size(s.written_bytes)
        ),
        format!("{:>9.2} Requests/sec executed", s.requests_per_s),
        String::new(),
        "Test execution summary:".into(),
        format!("    total time:                          {:.4}s", s.total_s),
        format!("    total number of events:              {}", s.writes),
        format!("    total time taken by event execution: {:.4}", s.events_sum_s),
        "    per-request statistics:".into(),
        format!("         min:                            {:.4}s", s.min_s),
        format!("         avg:                            {:.4}s", s.avg_s),
        format!("         max:                            {:.4}s", s.max_s),
        format!("         approx.  95 percentile:         {:.4}s", s.p95_s),
        String::new(),
        "Threads fairness:".into(),
        format!(
            "    events (avg/stddev):           {:.4}/{:.2}",
            s.fairness_avg, s.fairness_stddev
        ),
    ]
}

fn table(s: &Summary) -> Table {
    Table {
        title: "sysbench fileio rndwr figures (requests are writes; syncs are 'Other')".into(),
        columns: [
            "requests/s",
            "MiB/s",
            "writes",
            "other (syncs)",
            "total s",
            "req min us",
            "req avg us",
            "req max us",
            "req p95 us",
        ]
        .map(String::from)
        .to_vec(),
        rows: vec![vec![
            json!(s.requests_per_s),
            json!(s.mib_per_s),
            json!(s.writes),
            json!(s.other),
            json!(s.total_s),
            json!(s.min_s * 1e6),
            json!(s.avg_s * 1e6),
            json!(s.max_s * 1e6),
            json!(s.p95_s * 1e6),
        ]],
    }
}

fn sync_findings(rec: &Recorder, sync_op: &str, s: &Summary) -> Vec<String> {
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut out = Vec::new();
    if let Some(o) = rec.op(sync_op).filter(|o| o.count > 0) {
        let l = o.latency_ns;
        out.push(format!(
            "{sync_op} calls (sysbench's 'Other', whose latency it does not show): {} calls, p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, max {:.3} ms, mean {:.3} ms",
            o.count,
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.max),
            ms(l.mean)
        ));
        let sync_total_s = o.count as f64 * l.mean as f64 / 1e9;
        out.push(format!(
            "time in {sync_op}: {:.2} s against {:.2} s in writes (summed over threads)",
            sync_total_s, s.events_sum_s
        ));
    }
    out
}

/// The suite's line: what sysbench reported (requests/s, MiB/s) and what it cannot show,
/// the sync calls' own p99 and worst latency.
pub fn headline(r: &RunResult) -> String {
    let num = |name: &str| {
        r.tables
            .first()
            .and_then(|t| t.column(name).first().and_then(|v| v.as_f64()))
    };
    let mut line = match (num("requests/s"), num("MiB/s")) {
        (Some(rps), Some(mib)) => format!("{rps:.0} requests/s ({mib:.1} MiB/s)"),
        _ => return super::default_headline(r),
    };
    let sync = r.params.get("fsync_mode").map(String::as_str).unwrap_or("fdatasync");
    if let Some(s) = r.ops.get(sync).filter(|s| s.count > 0) {
        line.push_str(&format!(
            "; {sync} p99 {}, worst {}",
            crate::units::format_latency_ns(s.latency_ns.p99),
            crate::units::format_latency_ns(s.latency_ns.max)
        ));
    }
    line
}

impl Scenario for Rndwr {
    fn headline(&self, r: &RunResult) -> String {
        headline(r)
    }

    fn name(&self) -> &'static str {
        "rndwr"
    }

    fn purpose(&self) -> &'static str {
        "sysbench fileio rndwr: random 16 KiB overwrites with periodic fdatasync sweeps over many files"
    }

    fn seed(&self) -> &'static str {
        "004 (Hifumi et al., fdatasync skipping metadata, 2008)"
    }

    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::new("files", Kind::Count, "128", "number of files (sysbench --file-num)").seed("128"),
            ParamSpec::new(
                "total_size",
                Kind::Size,
                "256M",
                "size of all files together (sysbench --file-total-size)",
            )
            .seed("128G"),
            ParamSpec::new("threads", Kind::Count, "16", "worker threads (sysbench --num-threads)").seed("128"),
            ParamSpec::new(
                "block_size",
                Kind::Size,
                "16k",
                "bytes per request, offsets aligned to it (sysbench --file-block-size)",
            )
            .seed("16k"),
            ParamSpec::new(
                "fsync_freq",
                Kind::Count,
                "100",
                "a sync sweep over all files after this many requests, 0 = never (sysbench --file-fsync-freq)",
            )
            .seed("100"),
            ParamSpec::new(
                "fsync_mode",
                Kind::Choice(&["fsync", "fdatasync"]),
                "fdatasync",
                "the sync call of the sweeps (sysbench --file-fsync-mode)",
            )
            .seed("fdatasync"),
            ParamSpec::new(
                "fsync_end",
                Kind::Flag,
                "1",
                "one more sync per file at the end (sysbench --file-fsync-end)",
            ),
            ParamSpec::new(
                "max_requests",
                Kind::Count,
                "0",
                "stop after this many writes, 0 = no limit (sysbench --max-requests)",
            )
            .seed("50000"),
            ParamSpec::new(
                "duration",
                Kind::Duration,
                "10s",
                "stop after this long, 0 = no limit (sysbench --max-time)",
            )
            .seed("0"),
            ParamSpec::new(
                "seed",
                Kind::Count,
                "1",
                "seed of the offset generator (fixed, so runs are repeatable)",
            ),
        ]
    }

    fn validate(&self, params: &Params) -> Result<()> {
        crate::environment::check_fits_in_memory("block_size", params.size("block_size").get())?;
        Config::from_params(params).map(|_| ())
    }

    fn space_needed(&self, params: &Params) -> u64 {
        Config::from_params(params).map(|c| c.space_needed()).unwrap_or(0)
    }

    fn space_hint(&self) -> &'static str {
        "lower --set total_size"
    }

    fn run(&self, ctx: &mut Context<'_>, params: &Params) -> Result<Outcome> {
        let cfg = Config::from_params(params)?;
        let files = prepare(ctx.dir, &cfg, ctx.stop, ctx.observer)?;
        let sync_op = cfg.sync.sync_op().unwrap_or("fdatasync");

        // Measurement: the workers until max_requests or duration, then the final syncs.
        ctx.observer.event(Event::SeedLine("Doing random write test"));
        ctx.observer.event(Event::Phase {
            name: "random writes",
            total: if cfg.duration.is_zero() {
                None
            } else {
                Some(cfg.duration.as_millis() as u64)
            },
            unit: Unit::Millis,
        });
        let generator = Mutex::new(Generator::new(&cfg));
        let stop = ctx.stop.child();
        let started = Instant::now();
        let deadline = (!cfg.duration.is_zero()).then(|| started + cfg.duration);
        let clock = ctx.clock;
        let observer = &mut *ctx.observer;
        let reports: Vec<WorkerReport> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..cfg.threads)
                .map(|_| {
                    let (files, cfg, generator, stop) = (&files, &cfg, &generator, &stop);
                    s.spawn(move || worker(files, cfg, generator, clock, stop, deadline))
                })
                .collect();
            while handles.iter().any(|h| !h.is_finished()) {
                std::thread::sleep(Duration::from_millis(50));
                observer.event(Event::Progress {
                    done: started.elapsed().as_millis() as u64,
                });
            }
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        if reports.len() != cfg.threads as usize {
            bail!("an rndwr worker panicked");
        }
        // The run lasts until its last worker finished, not until the progress loop noticed.
        let ended = reports.iter().map(|r| r.ended).max().unwrap_or(started);
        let mut elapsed = ended.duration_since(started);
        let mut recorder = Recorder::new();
        let mut per_thread = Vec::new();
        for r in reports {
            per_thread.push(r.writes);
            recorder.merge(r.recorder);
        }
        // Like sysbench, the final syncs count toward the total time; merging the workers'
        // samples does not.
        if cfg.fsync_end && !stop.is_set() {
            let end_started = Instant::now();
            for f in &files {
                let (r, t, ns) = clock.time(|| cfg.sync.sync(f, 0, 0).unwrap_or(Ok(())));
                recorder.record(sync_op, t, ns, 0, &r);
            }
            elapsed += end_started.elapsed();
        }
        let total_s = elapsed.as_secs_f64();

        let summary = summarize(&recorder, sync_op, total_s, &per_thread);
        for line in seed_lines(&summary) {
            ctx.observer.event(Event::SeedLine(&line));
        }
        let findings = sync_findings(&recorder, sync_op, &summary);
        Ok(Outcome {
            recorder,
            tables: vec![table(&summary)],
            findings,
            ..Outcome::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(sets: &[&str]) -> Config {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let p = Params::resolve("rndwr", &Rndwr.params(), &sets).unwrap();
        Config::from_params(&p).unwrap()
    }

    #[test]
    fn generator_sweeps_every_file_after_fsync_freq_writes() {
        let cfg = config(&["files=4", "total_size=1M", "fsync_freq=10", "max_requests=25"]);
        let mut g = Generator::new(&cfg);
        let mut seq = Vec::new();
        loop {
            match g.next_request() {
                Request::Done => break,
                r => seq.push(r),
            }
        }
        // 10 writes, 4 syncs, 10 writes, 4 syncs, 5 writes, then Done.
        let kinds: String = seq
            .iter()
            .map(|r| if matches!(r, Request::Write { .. }) { 'w' } else { 's' })
            .collect();
        assert_eq!(
            kinds,
            format!("{}ssss{}ssss{}", "w".repeat(10), "w".repeat(10), "w".repeat(5))
        );
        let syncs: Vec<u64> = seq
            .iter()
            .filter_map(|r| match r {
                Request::Sync { file } => Some(*file),
                _ => None,
            })
            .collect();
        assert_eq!(syncs, vec![0, 1, 2, 3, 0, 1, 2, 3]);
        for r in &seq {
            if let Request::Write { file, offset } = r {
                assert!(*file < 4);
                assert_eq!(offset % 16384, 0);
                assert!(offset + 16384 <= cfg.file_size);
            }
        }
    }

    #[test]
    fn sizes_print_like_sysbench_0_4() {
        assert_eq!(sysbench_size(820_510_720), "782.5Mb");
        assert_eq!(sysbench_size(0), "0b");
        assert_eq!(sysbench_size(12_704_547), "12.116Mb");
    }

    #[test]
    fn seed_lines_have_the_sysbench_shape() {
        let s = Summary {
            writes: 50080,
            other: 59600,
            total_s: 64.5814,
            written_bytes: 50080 * 16384,
            requests_per_s: 775.45,
            mib_per_s: 12.116,
            min_s: 0.0,
            avg_s: 0.0742,
            max_s: 0.9375,
            p95_s: 0.2901,
            events_sum_s: 3700.0,
            fairness_avg: 391.25,
            fairness_stddev: 23.26,
        };
        let lines = seed_lines(&s);
        assert_eq!(
            lines[0],
            "Operations performed:  0 Read, 50080 Write, 59600 Other = 109680 Total"
        );
        assert!(lines[1].starts_with("Read 0b  Written 782.5Mb  Total transferred 782.5Mb  ("));
        assert_eq!(lines[2], "   775.45 Requests/sec executed");
        assert!(lines
            .iter()
            .any(|l| l.ends_with("approx.  95 percentile:         0.2901s")));
    }
}
