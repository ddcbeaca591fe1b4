//! Seed 002 (Wong, "Performance testing of various barrier reduction patches", September
//! 2010): many threads each commit small transactions with fsync, and every fsync ends in a
//! device cache flush. "Coordination" lets one flush serve several threads: the first thread
//! in waits a little (`fsync_delay_us`: 1, 500, or "use avg sync time") so that others can
//! join. Wong measured transactions per second per host and found that coordination hurt when
//! a flush took less than about 8 ms and helped above that.
//!
//! The post does not give the transaction shape or thread counts (ffsb profiles were used), so
//! both are parameters here. A transaction is: write `record_size` bytes, then make them
//! durable, in one of three ways done in user space (the kernel patches are long gone):
//!
//! - `none`: every worker fsyncs (or fdatasyncs) its own file — upstream behaviour;
//! - `syncfs`: group commit over `syncfs(2)`: one leader's syncfs covers every worker whose
//!   write had completed when it started; the others wait for it;
//! - `wal`: every worker appends to one shared log and a leader fdatasyncs it once for the
//!   whole batch, as databases do group commit.
//!
//! Each thread count of `threads` runs for `duration`; the table has one row per strategy and
//! thread count (tps, commit latency percentiles, commits per sync), and the findings put the
//! measured average flush time beside them, because that is what decided Wong's results.
//!
//! Seed format: one line per row, like a row of the seed's spreadsheet:
//! `none threads 4: 145.84 tps`.

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
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
use crate::sys::{self, AlignedBuf};
use crate::units::{format_size, parse_duration, Bytes};

pub struct FsyncTps;

/// The flush time above which Wong found coordination to pay (the post's "about 8ms").
pub const SEED_THRESHOLD_NS: u64 = 8_000_000;

/// Transactions timed before the sweep to measure the average flush time.
const CALIBRATION_COMMITS: u64 = 10;

/// How the durable step of a transaction is shared between workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coordination {
    None,
    Syncfs,
    Wal,
}

impl Coordination {
    pub const NAMES: &'static [&'static str] = &["none", "syncfs", "wal"];

    pub fn from_name(name: &str) -> Option<Coordination> {
        match name {
            "none" => Some(Coordination::None),
            "syncfs" => Some(Coordination::Syncfs),
            "wal" => Some(Coordination::Wal),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Coordination::None => "none",
            Coordination::Syncfs => "syncfs",
            Coordination::Wal => "wal",
        }
    }
}

/// How long a leader waits for other transactions before it syncs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delay {
    Fixed(Duration),
    /// The running average of the leader's own sync calls (the seed's "use avg sync time").
    AvgFlush,
}

const DELAY_EXPECTED: &str = "0, microseconds like 500 (or 500us, 2ms), or avg-flush";

/// `0`, `500` (microseconds, the seed's unit), `500us`, `2ms`, or `avg-flush`.
pub fn parse_delay(text: &str) -> Result<Delay, String> {
    let t = text.trim();
    if t == "avg-flush" {
        return Ok(Delay::AvgFlush);
    }
    if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        return t
            .parse::<u64>()
            .map(|us| Delay::Fixed(Duration::from_micros(us)))
            .map_err(|_| DELAY_EXPECTED.to_string());
    }
    match parse_duration(t) {
        Ok(d) if !t.is_empty() => Ok(Delay::Fixed(d)),
        _ => Err(DELAY_EXPECTED.to_string()),
    }
}

fn check_delay(text: &str) -> Result<(), String> {
    parse_delay(text).map(|_| ())
}

/// The durable call of `none` and `wal`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileSync {
    Fsync,
    Fdatasync,
}

impl FileSync {
    fn name(self) -> &'static str {
        match self {
            FileSync::Fsync => "fsync",
            FileSync::Fdatasync => "fdatasync",
        }
    }

    fn call(self, file: &File) -> io::Result<()> {
        match self {
            FileSync::Fsync => sys::fsync(file),
            FileSync::Fdatasync => sys::fdatasync(file),
        }
    }
}

/// The validated parameters of one run.
#[derive(Clone, Debug)]
pub struct Config {
    pub threads: Vec<u64>,
    pub coordination: Vec<Coordination>,
    pub delay: Delay,
    pub record_size: u64,
    pub file_size: u64,
    pub append: bool,
    pub directio: bool,
    pub sync: FileSync,
    pub duration: Duration,
}

impl Config {
    pub fn from_params(p: &Params) -> Result<Config> {
        let threads = p.count_list("threads").to_vec();
        if threads.contains(&0) {
            bail!(Usage(format!(
                "--set threads={}: every thread count must be at least 1",
                p.count_list("threads")
                    .iter()
                    .map(u64::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            )));
        }
        if threads.iter().any(|&n| n > 1024) {
            bail!(Usage("--set threads: at most 1024 workers per run".into()));
        }
        let record_size = p.size("record_size").get();
        let file_size = p.size("file_size").get();
        if record_size == 0 {
            bail!(Usage(
                "--set record_size=0: a transaction must write at least one byte".into()
            ));
        }
        if record_size > file_size {
            bail!(Usage(format!(
                "--set record_size={}: larger than file_size={}; lower record_size or raise file_size",
                p.size("record_size"),
                p.size("file_size")
            )));
        }
        let directio = p.flag("directio");
        if directio && record_size % AlignedBuf::ALIGN as u64 != 0 {
            bail!(Usage(format!(
                "--set record_size={}: directio=1 (O_DIRECT) needs a multiple of 4k",
                p.size("record_size")
            )));
        }
        let mut coordination = Vec::new();
        for name in p.choice_list("coordination") {
            let c = Coordination::from_name(name).expect("validated choice");
            if !coordination.contains(&c) {
                coordination.push(c);
            }
        }
        let duration = p.duration("duration");
        if duration.is_zero() {
            bail!(Usage(
                "--set duration=0: each thread count needs a time to run, like 2s".into()
            ));
        }
        Ok(Config {
            threads,
            coordination,
            delay: parse_delay(p.text("delay")).map_err(|e| Usage(format!("--set delay: expected {e}")))?,
            record_size,
            file_size,
            append: p.text("placement") == "append",
            directio,
            sync: if p.text("sync") == "fsync" {
                FileSync::Fsync
            } else {
                FileSync::Fdatasync
            },
            duration,
        })
    }

    fn max_threads(&self) -> u64 {
        self.threads.iter().copied().max().unwrap_or(1)
    }

    fn uses_wal(&self) -> bool {
        self.coordination.contains(&Coordination::Wal)
    }

    /// The per-worker files, plus the shared log when `wal` runs.
    pub fn space_needed(&self) -> u64 {
        let files = self.max_threads() + u64::from(self.uses_wal());
        files * self.file_size
    }

    /// Records fit in a file a whole number of times; offsets wrap at this length.
    fn lap(&self) -> u64 {
        self.file_size / self.record_size * self.record_size
    }

    fn write_op(&self) -> &'static str {
        if self.directio {
            "write_direct"
        } else {
            "write"
        }
    }

    fn open(&self, path: &Path) -> io::Result<File> {
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .custom_flags(if self.directio { libc::O_DIRECT } else { 0 })
            .open(path)
    }
}

/// A leader/follower group commit: workers register a transaction whose write has completed,
/// one of them (the leader) syncs for everyone registered when its sync starts, the others
/// wait. A transaction is acknowledged only by a sync that started after its write completed:
/// the leader reads the highest registered ticket, under the lock, before it issues the sync,
/// and registration happens only after a write returns.
#[derive(Default)]
pub struct GroupCommit {
    state: Mutex<GroupState>,
    done: Condvar,
    /// Sum and count of the leaders' sync latencies, for `delay=avg-flush`.
    flush_sum_ns: AtomicU64,
    flush_count: AtomicU64,
}

#[derive(Default)]
struct GroupState {
    /// The last ticket handed out.
    registered: u64,
    /// Every ticket up to this one is covered by a finished sync.
    durable: u64,
    /// A leader is waiting or syncing.
    leader: bool,
    /// Ticket ranges whose sync failed, with the error.
    failures: Vec<(u64, u64, String)>,
}

impl GroupCommit {
    /// A group whose average flush starts at `seed_ns` (the calibration's measurement).
    pub fn new(seed_ns: u64) -> GroupCommit {
        let g = GroupCommit::default();
        if seed_ns > 0 {
            g.flush_sum_ns.store(seed_ns, Ordering::Relaxed);
            g.flush_count.store(1, Ordering::Relaxed);
        }
        g
    }

    fn lock(&self) -> MutexGuard<'_, GroupState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn avg_flush(&self) -> Duration {
        let n = self.flush_count.load(Ordering::Relaxed);
        match n {
            0 => Duration::ZERO,
            n => Duration::from_nanos(self.flush_sum_ns.load(Ordering::Relaxed) / n),
        }
    }

    /// Called once the transaction's write has completed; returns when a sync covers it.
    /// `sync` issues (and records) the sync call and returns its result and latency.
    pub fn commit(&self, delay: Delay, stop: &Stop, mut sync: impl FnMut() -> (io::Result<()>, u64)) -> io::Result<()> {
        let mut st = self.lock();
        st.registered += 1;
        let ticket = st.registered;
        loop {
            if st.durable >= ticket {
                return match st.failures.iter().find(|(lo, hi, _)| (*lo..=*hi).contains(&ticket)) {
                    Some((_, _, e)) => Err(io::Error::other(e.clone())),
                    None => Ok(()),
                };
            }
            if st.leader {
                st = self.done.wait(st).unwrap_or_else(PoisonError::into_inner);
                continue;
            }
            // Leader: let others join, then sync for everyone registered at that moment.
            st.leader = true;
            drop(st);
            let wait = match delay {
                Delay::Fixed(d) => d,
                Delay::AvgFlush => self.avg_flush(),
            };
            if !wait.is_zero() {
                // Stopping cuts the wait short, never the sync: followers depend on it.
                stop.sleep(wait);
            }
            let covered = self.lock().registered;
            let (result, latency_ns) = sync();
            self.flush_sum_ns.fetch_add(latency_ns, Ordering::Relaxed);
            self.flush_count.fetch_add(1, Ordering::Relaxed);
            st = self.lock();
            if let Err(e) = &result {
                let from = st.durable + 1;
                st.failures.push((from, covered, sys::error_name(e)));
            }
            st.durable = covered;
            st.leader = false;
            self.done.notify_all();
        }
    }
}

/// The files of a run: one per worker, and the shared log.
struct Files {
    workers: Vec<File>,
    log: Option<File>,
}

impl Files {
    fn worker_name(i: u64) -> String {
        format!("tps-worker-{i}.dat")
    }

    const LOG: &'static str = "tps-wal.log";

    /// Creates the files. With `overwrite` they are written out in full and fsynced first, so
    /// that transactions overwrite allocated blocks; with `append` they start empty.
    fn prepare(dir: &Path, cfg: &Config, stop: &Stop, observer: &mut dyn Observer) -> Result<Files> {
        let mut paths: Vec<std::path::PathBuf> =
            (0..cfg.max_threads()).map(|i| dir.join(Self::worker_name(i))).collect();
        if cfg.uses_wal() {
            paths.push(dir.join(Self::LOG));
        }
        let mut files = Vec::new();
        for p in &paths {
            files.push(cfg.open(p).with_context(|| format!("cannot create {}", p.display()))?);
        }
        if !cfg.append {
            let total = paths.len() as u64 * cfg.file_size;
            observer.event(Event::Phase {
                name: "writing out the transaction files",
                total: Some(total),
                unit: Unit::Bytes,
            });
            // Written in records, as fio lays out its files: the write size decides the size
            // of the page-cache folios, and an overwrite of a record inside a large folio
            // makes the sync write back the whole folio.
            let chunk = cfg.record_size;
            let buf = AlignedBuf::filled(chunk as usize, b'p');
            let mut done = 0;
            for (f, p) in files.iter().zip(&paths) {
                let mut offset = 0;
                while offset < cfg.lap() {
                    if stop.is_set() {
                        break;
                    }
                    let len = chunk.min(cfg.lap() - offset);
                    sys::pwrite_all(f, &buf.as_slice()[..len as usize], offset, false)
                        .with_context(|| format!("writing out {}", p.display()))?;
                    offset += len;
                    done += len;
                    if done % Bytes::MIB < len {
                        observer.event(Event::Progress { done });
                    }
                }
                sys::fsync(f).with_context(|| format!("fsync of {}", p.display()))?;
            }
        }
        let log = if cfg.uses_wal() { files.pop() } else { None };
        Ok(Files { workers: files, log })
    }

    /// With `append`, every step starts from empty files.
    fn reset(&self, cfg: &Config) -> Result<()> {
        if cfg.append {
            for f in self.workers.iter().chain(self.log.as_ref()) {
                f.set_len(0).context("cannot truncate a transaction file")?;
            }
        }
        Ok(())
    }
}

/// What the workers of one step share.
struct Step<'a> {
    cfg: &'a Config,
    coordination: Coordination,
    files: &'a Files,
    group: &'a GroupCommit,
    /// Next offset in the shared log (wal).
    log_offset: AtomicU64,
    clock: RunClock,
    stop: &'a Stop,
    deadline: Instant,
}

impl Step<'_> {
    /// One worker: transactions until the deadline, each recorded as `commit` (write start to
    /// acknowledgement), with its write and every sync call it issued recorded as well.
    /// Returns the worker's recorder and when it finished its last transaction.
    fn worker(&self, index: usize) -> (Recorder, Instant) {
        let mut rec = Recorder::new();
        let cfg = self.cfg;
        let own = &self.files.workers[index];
        let buf = AlignedBuf::filled(cfg.record_size as usize, b'a' + (index % 26) as u8);
        let mut next = 0u64;
        while Instant::now() < self.deadline && !self.stop.is_set() {
            let (file, offset) = match self.coordination {
                Coordination::Wal => {
                    let n = self.log_offset.fetch_add(cfg.record_size, Ordering::Relaxed);
                    (self.files.log.as_ref().expect("wal has a log"), n % cfg.lap())
                }
                _ => {
                    let offset = next % cfg.lap();
                    if cfg.append && offset == 0 && next > 0 {
                        // A full lap: start the file over so writes keep allocating.
                        if let Err(e) = own.set_len(0) {
                            rec.record("truncate", self.clock.now_ns(), 0, 0, &Err(e));
                            break;
                        }
                    }
                    next += cfg.record_size;
                    (own, offset)
                }
            };
            let (written, t0, write_ns) = self.clock.time(|| sys::pwrite_all(file, buf.as_slice(), offset, false));
            rec.record(cfg.write_op(), t0, write_ns, cfg.record_size, &written);
            let durable = match written {
                Err(e) => Err(e),
                Ok(()) => self.make_durable(own, &mut rec),
            };
            let commit_ns = self.clock.now_ns().saturating_sub(t0);
            let failed = durable.is_err();
            rec.record("commit", t0, commit_ns, cfg.record_size, &durable);
            if failed {
                break;
            }
        }
        (rec, Instant::now())
    }

    fn make_durable(&self, own: &File, rec: &mut Recorder) -> io::Result<()> {
        let cfg = self.cfg;
        let clock = self.clock;
        match self.coordination {
            Coordination::None => {
                let (r, t, ns) = clock.time(|| cfg.sync.call(own));
                rec.record(cfg.sync.name(), t, ns, 0, &r);
                r
            }
            Coordination::Syncfs => self.group.commit(cfg.delay, self.stop, || {
                let (r, t, ns) = clock.time(|| sys::syncfs(own));
                rec.record("syncfs", t, ns, 0, &r);
                (r, ns)
            }),
            Coordination::Wal => {
                let log = self.files.log.as_ref().expect("wal has a log");
                self.group.commit(cfg.delay, self.stop, || {
                    let (r, t, ns) = clock.time(|| cfg.sync.call(log));
                    rec.record(cfg.sync.name(), t, ns, 0, &r);
                    (r, ns)
                })
            }
        }
    }
}

/// One row of the results: a strategy at one thread count.
#[derive(Clone, Debug)]
pub struct Row {
    pub coordination: Coordination,
    pub threads: u64,
    pub tps: f64,
    pub commits: u64,
    pub syncs: u64,
    pub commit_p50_ns: u64,
    pub commit_p99_ns: u64,
    pub commit_max_ns: u64,
    pub sync_mean_ns: u64,
    pub errors: u64,
}

/// `none threads 4: 145.84 tps` — one cell of the seed's spreadsheet.
pub fn seed_line(row: &Row) -> String {
    format!(
        "{} threads {}: {:.2} tps",
        row.coordination.name(),
        row.threads,
        row.tps
    )
}

fn sync_op(cfg: &Config, c: Coordination) -> &'static str {
    match c {
        Coordination::Syncfs => "syncfs",
        _ => cfg.sync.name(),
    }
}

/// Times a few single-thread transactions on worker 0's file: the average flush time that
/// decides whether coordination can pay, and the start of `avg-flush`'s running average.
fn calibrate(cfg: &Config, files: &Files, clock: RunClock, rec: &mut Recorder) -> Result<u64> {
    let f = &files.workers[0];
    let buf = AlignedBuf::filled(cfg.record_size as usize, b'c');
    let mut sum = 0u64;
    for i in 0..CALIBRATION_COMMITS {
        let offset = (i * cfg.record_size) % cfg.lap();
        sys::pwrite_all(f, buf.as_slice(), offset, false).context("calibration write")?;
        let (r, t, ns) = clock.time(|| cfg.sync.call(f));
        rec.record("flush_calibration", t, ns, 0, &r);
        r.with_context(|| format!("calibration {}", cfg.sync.name()))?;
        sum += ns;
    }
    files.reset(cfg)?;
    Ok(sum / CALIBRATION_COMMITS)
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

fn table(rows: &[Row], cfg: &Config) -> Table {
    Table {
        title: format!(
            "transactions: {} {} + durable, {} s per row, delay {}",
            format_size(Bytes(cfg.record_size)),
            if cfg.append { "append" } else { "overwrite" },
            cfg.duration.as_secs_f64(),
            match cfg.delay {
                Delay::AvgFlush => "avg-flush".to_string(),
                Delay::Fixed(d) => format!("{} us", d.as_micros()),
            }
        ),
        columns: [
            "coordination",
            "threads",
            "tps",
            "commits",
            "syncs",
            "commits/sync",
            "commit p50 us",
            "commit p99 us",
            "commit max us",
            "sync mean us",
            "errors",
        ]
        .map(String::from)
        .to_vec(),
        rows: rows
            .iter()
            .map(|r| {
                vec![
                    json!(r.coordination.name()),
                    json!(r.threads),
                    json!(r.tps),
                    json!(r.commits),
                    json!(r.syncs),
                    json!(if r.syncs > 0 {
                        r.commits as f64 / r.syncs as f64
                    } else {
                        0.0
                    }),
                    json!(us(r.commit_p50_ns)),
                    json!(us(r.commit_p99_ns)),
                    json!(us(r.commit_max_ns)),
                    json!(us(r.sync_mean_ns)),
                    json!(r.errors),
                ]
            })
            .collect(),
    }
}

/// What the run says about the seed's question: was the flush slow enough for coordination
/// to pay, and did it?
pub fn findings(rows: &[Row], avg_flush_ns: u64, cfg: &Config) -> Vec<String> {
    let mut out = vec![format!(
        "average flush: {:.3} ms ({} of a {} {}, {} calls before the sweep) — {} the ~8 ms above which the seed found coordination pays",
        ms(avg_flush_ns),
        cfg.sync.name(),
        format_size(Bytes(cfg.record_size)),
        if cfg.append { "append" } else { "overwrite" },
        CALIBRATION_COMMITS,
        if avg_flush_ns >= SEED_THRESHOLD_NS { "at or above" } else { "below" }
    )];
    let (mut compared, mut helped) = (0, 0);
    for &n in &cfg.threads {
        let at: Vec<&Row> = rows.iter().filter(|r| r.threads == n).collect();
        let Some(base) = at.iter().find(|r| r.coordination == Coordination::None) else {
            continue;
        };
        let Some(best) = at
            .iter()
            .filter(|r| r.coordination != Coordination::None)
            .max_by(|a, b| a.tps.total_cmp(&b.tps))
        else {
            continue;
        };
        compared += 1;
        let ratio = if base.tps > 0.0 { best.tps / base.tps } else { 0.0 };
        if ratio > 1.0 {
            helped += 1;
        }
        out.push(format!(
            "{n} threads: best coordination {} {:.2} tps = {:.2}x none ({:.2} tps), {:.1} commits per sync",
            best.coordination.name(),
            best.tps,
            ratio,
            base.tps,
            if best.syncs > 0 {
                best.commits as f64 / best.syncs as f64
            } else {
                0.0
            },
        ));
    }
    if compared > 0 {
        out.push(format!(
            "coordination beat none at {helped} of {compared} thread counts"
        ));
    }
    let mean_sync = |c: Coordination| {
        let at: Vec<&Row> = rows.iter().filter(|r| r.coordination == c && r.syncs > 0).collect();
        let syncs: u64 = at.iter().map(|r| r.syncs).sum();
        let total: f64 = at.iter().map(|r| r.sync_mean_ns as f64 * r.syncs as f64).sum();
        (syncs > 0).then(|| total / syncs as f64)
    };
    if let (Some(fs), Some(own)) = (mean_sync(Coordination::Syncfs), mean_sync(Coordination::None)) {
        out.push(format!(
            "syncfs took {:.3} ms on average against {:.3} ms for {}: it writes back every dirty file of the filesystem, not only the workers'",
            fs / 1e6,
            own / 1e6,
            cfg.sync.name()
        ));
    }
    out
}

/// The suite's line: the best transactions/s of the sweep with its strategy and thread
/// count, the single-thread `none` rate it compares with, and the average flush time.
pub fn headline(r: &RunResult) -> String {
    let Some(t) = r.tables.first() else {
        return super::default_headline(r);
    };
    let rows: Vec<(String, u64, f64)> = t
        .column("coordination")
        .iter()
        .zip(t.column("threads"))
        .zip(t.column("tps"))
        .filter_map(|((c, n), tps)| Some((c.as_str()?.to_string(), n.as_u64()?, tps.as_f64()?)))
        .collect();
    let Some(best) = rows.iter().max_by(|a, b| a.2.total_cmp(&b.2)) else {
        return super::default_headline(r);
    };
    let mut line = format!("best {:.0} tps ({}, {} threads)", best.2, best.0, best.1);
    if let Some(base) = rows.iter().find(|(c, n, _)| c == "none" && *n == 1) {
        line.push_str(&format!(", none x1 {:.0} tps", base.2));
    }
    if let Some(flush) = r.findings.iter().find_map(|f| f.strip_prefix("average flush: ")) {
        line.push_str(&format!(
            "; avg flush {}",
            flush.split(' ').take(2).collect::<Vec<_>>().join(" ")
        ));
    }
    line
}

impl Scenario for FsyncTps {
    fn headline(&self, r: &RunResult) -> String {
        headline(r)
    }

    fn name(&self) -> &'static str {
        "fsync-tps"
    }

    fn purpose(&self) -> &'static str {
        "transactions/s of many committing threads, each flushing alone or sharing flushes (group commit)"
    }

    fn seed(&self) -> &'static str {
        "002 (Wong, fsync/flush coordination, 2010)"
    }

    fn params(&self) -> Vec<ParamSpec> {
        vec![
            ParamSpec::new(
                "threads",
                Kind::CountList,
                "1,2,4,8",
                "worker threads; a list is a sweep, each count run for `duration` (the seed's counts are not known)",
            ),
            ParamSpec::new(
                "coordination",
                Kind::ChoiceList(Coordination::NAMES),
                "none,syncfs,wal",
                "how transactions become durable: none (each worker syncs its file), syncfs (a leader's syncfs covers all waiting), wal (shared log, a leader syncs the batch)",
            ),
            ParamSpec::new(
                "delay",
                Kind::Custom(check_delay),
                "0",
                "syncfs/wal: how long a leader waits for others before it syncs: 0, microseconds (500, 500us, 2ms), or avg-flush (the seed's 'use avg sync time')",
            ),
            ParamSpec::new("record_size", Kind::Size, "4k", "bytes each transaction writes"),
            ParamSpec::new(
                "file_size",
                Kind::Size,
                "16M",
                "size of each worker's file and of the shared log; writes wrap around at this size",
            ),
            ParamSpec::new(
                "placement",
                Kind::Choice(&["overwrite", "append"]),
                "overwrite",
                "overwrite blocks written out beforehand, or append to files that start empty (each worker's file restarts when full; the wal log is circular)",
            ),
            ParamSpec::new("directio", Kind::Flag, "0", "1: open the files with O_DIRECT (the seed's directio=1)"),
            ParamSpec::new(
                "sync",
                Kind::Choice(&["fsync", "fdatasync"]),
                "fdatasync",
                "the durable call of none and wal (syncfs uses syncfs)",
            )
            .seed("fsync"),
            ParamSpec::new("duration", Kind::Duration, "2s", "how long each thread count of each strategy runs"),
        ]
    }

    fn validate(&self, params: &Params) -> Result<()> {
        crate::environment::check_fits_in_memory("record_size", params.size("record_size").get())?;
        Config::from_params(params).map(|_| ())
    }

    fn space_needed(&self, params: &Params) -> u64 {
        Config::from_params(params).map(|c| c.space_needed()).unwrap_or(0)
    }

    fn space_hint(&self) -> &'static str {
        "lower --set file_size or the largest thread count"
    }

    fn run(&self, ctx: &mut Context<'_>, params: &Params) -> Result<Outcome> {
        let cfg = Config::from_params(params)?;
        let mut recorder = Recorder::new();
        let files = Files::prepare(ctx.dir, &cfg, ctx.stop, ctx.observer)?;
        let avg_flush_ns = calibrate(&cfg, &files, ctx.clock, &mut recorder)?;
        ctx.observer.event(Event::SeedLine(&format!(
            "average {} time: {:.3} ms",
            cfg.sync.name(),
            ms(avg_flush_ns)
        )));
        let mut rows = Vec::new();
        'sweep: for &coordination in &cfg.coordination {
            for &threads in &cfg.threads {
                if ctx.stop.is_set() {
                    break 'sweep;
                }
                let (row, rec) = run_step(ctx, &cfg, &files, coordination, threads, avg_flush_ns)?;
                ctx.observer.event(Event::SeedLine(&seed_line(&row)));
                recorder.merge(rec);
                rows.push(row);
            }
        }
        Ok(Outcome {
            recorder,
            tables: vec![table(&rows, &cfg)],
            findings: findings(&rows, avg_flush_ns, &cfg),
            ..Outcome::default()
        })
    }
}

/// Runs `threads` workers with one strategy for `duration` and sums up their recorders.
fn run_step(
    ctx: &mut Context<'_>,
    cfg: &Config,
    files: &Files,
    coordination: Coordination,
    threads: u64,
    avg_flush_ns: u64,
) -> Result<(Row, Recorder)> {
    files.reset(cfg)?;
    let name = format!("{} threads {}", coordination.name(), threads);
    ctx.observer.event(Event::Phase {
        name: &name,
        total: Some(cfg.duration.as_millis() as u64),
        unit: Unit::Millis,
    });
    let group = GroupCommit::new(avg_flush_ns);
    let started = Instant::now();
    let step = Step {
        cfg,
        coordination,
        files,
        group: &group,
        log_offset: AtomicU64::new(0),
        clock: ctx.clock,
        stop: ctx.stop,
        deadline: started + cfg.duration,
    };
    let observer = &mut *ctx.observer;
    let finished: Vec<(Recorder, Instant)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as usize)
            .map(|i| {
                let step = &step;
                s.spawn(move || step.worker(i))
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
    if finished.len() != threads as usize {
        bail!("a {name} worker panicked");
    }
    // The step lasts until its last worker finished, not until the progress loop noticed.
    let ended = finished.iter().map(|(_, t)| *t).max().unwrap_or(started);
    let elapsed = ended.duration_since(started).as_secs_f64();
    let mut rec = Recorder::new();
    for (r, _) in finished {
        rec.merge(r);
    }
    let commit = rec.op("commit").unwrap_or_default();
    let sync = rec.op(sync_op(cfg, coordination)).unwrap_or_default();
    let commits = commit.count - commit.errors;
    let row = Row {
        coordination,
        threads,
        tps: if elapsed > 0.0 { commits as f64 / elapsed } else { 0.0 },
        commits,
        syncs: sync.count,
        commit_p50_ns: commit.latency_ns.p50,
        commit_p99_ns: commit.latency_ns.p99,
        commit_max_ns: commit.latency_ns.max,
        sync_mean_ns: sync.latency_ns.mean,
        errors: rec.errors(),
    };
    Ok((row, rec))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn delay_accepts_microseconds_durations_and_avg_flush() {
        assert_eq!(parse_delay("0"), Ok(Delay::Fixed(Duration::ZERO)));
        assert_eq!(parse_delay("500"), Ok(Delay::Fixed(Duration::from_micros(500))));
        assert_eq!(parse_delay("2ms"), Ok(Delay::Fixed(Duration::from_millis(2))));
        assert_eq!(parse_delay("avg-flush"), Ok(Delay::AvgFlush));
        assert_eq!(parse_delay("soon"), Err(DELAY_EXPECTED.to_string()));
        assert_eq!(parse_delay(""), Err(DELAY_EXPECTED.to_string()));
    }

    /// The group-commit rule: a transaction is acknowledged only by a sync that started after
    /// its write completed. Writes bump `written`; each sync snapshots it when it starts;
    /// every acknowledged transaction must be at or below the snapshot of the sync that
    /// acknowledged it.
    #[test]
    fn group_commit_acknowledges_only_after_a_later_sync() {
        let group = Arc::new(GroupCommit::new(0));
        let written = Arc::new(AtomicU64::new(0));
        let synced_upto = Arc::new(AtomicU64::new(0));
        let syncs = Arc::new(AtomicU64::new(0));
        let stop = Stop::new();
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (group, written, synced_upto, syncs, stop) = (
                    group.clone(),
                    written.clone(),
                    synced_upto.clone(),
                    syncs.clone(),
                    stop.clone(),
                );
                std::thread::spawn(move || {
                    for _ in 0..200 {
                        let mine = written.fetch_add(1, Ordering::SeqCst) + 1;
                        group
                            .commit(Delay::Fixed(Duration::ZERO), &stop, || {
                                let seen = written.load(Ordering::SeqCst);
                                std::thread::sleep(Duration::from_micros(200));
                                synced_upto.fetch_max(seen, Ordering::SeqCst);
                                syncs.fetch_add(1, Ordering::SeqCst);
                                (Ok(()), 200_000)
                            })
                            .unwrap();
                        assert!(synced_upto.load(Ordering::SeqCst) >= mine);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let n = syncs.load(Ordering::SeqCst);
        assert!((1..=1600).contains(&n), "{n} syncs for 1600 commits");
    }

    #[test]
    fn a_failed_sync_fails_the_transactions_it_covered() {
        let group = GroupCommit::new(0);
        let stop = Stop::new();
        let r = group.commit(Delay::Fixed(Duration::ZERO), &stop, || {
            (Err(io::Error::from_raw_os_error(libc::EIO)), 1)
        });
        assert_eq!(r.unwrap_err().to_string(), "EIO");
        let r = group.commit(Delay::Fixed(Duration::ZERO), &stop, || (Ok(()), 1));
        assert!(r.is_ok());
    }

    #[test]
    fn findings_compare_against_none_and_the_seed_threshold() {
        let row = |c, threads, tps, commits, syncs| Row {
            coordination: c,
            threads,
            tps,
            commits,
            syncs,
            commit_p50_ns: 0,
            commit_p99_ns: 0,
            commit_max_ns: 0,
            sync_mean_ns: 0,
            errors: 0,
        };
        let rows = vec![
            row(Coordination::None, 4, 100.0, 200, 200),
            row(Coordination::Wal, 4, 250.0, 500, 125),
        ];
        let p = Params::resolve("fsync-tps", &FsyncTps.params(), &["threads=4".into()]).unwrap();
        let cfg = Config::from_params(&p).unwrap();
        let f = findings(&rows, 9_000_000, &cfg);
        assert!(f[0].contains("9.000 ms") && f[0].contains("at or above"), "{}", f[0]);
        assert!(f[1].contains("wal 250.00 tps = 2.50x none"), "{}", f[1]);
        assert_eq!(f[2], "coordination beat none at 1 of 1 thread counts");
    }
}
