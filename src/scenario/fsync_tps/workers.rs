//! The moving parts of an fsync-tps run: the transaction files, the calibration that
//! measures the average flush, and one step of the sweep — `threads` workers committing
//! transactions with one coordination strategy until the step's deadline.

use std::fs::File;
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::details::Row;
use super::{Config, Coordination};
use crate::measure::{OpKind, Recorder, RunClock};
use crate::observe::{Event, Unit};
use crate::params::Choice;
use crate::role::fill::Filler;
use crate::role::group_commit::GroupCommit;
use crate::role::pool::run_workers;
use crate::scenario::Context;
use crate::stop::Stop;
use crate::sys::{self, AlignedBuf};

/// Transactions timed before the sweep to measure the average flush time.
pub(crate) const CALIBRATION_COMMITS: u64 = 10;

/// The files of a run: one per worker, and the shared log.
pub(crate) struct Files {
    workers: Vec<File>,
    log: Option<File>,
}

impl Files {
    const LOG: &'static str = "tps-wal.log";

    fn worker_name(i: u64) -> String {
        format!("tps-worker-{i}.dat")
    }

    /// Creates the files. With `overwrite` they are written out in full and fsynced first, so
    /// that transactions overwrite allocated blocks; with `append` they start empty.
    pub(crate) fn prepare(ctx: &mut Context<'_>, cfg: &Config) -> Result<Files> {
        let mut paths: Vec<PathBuf> = (0..cfg.max_threads())
            .map(|i| ctx.dir.join(Self::worker_name(i)))
            .collect();
        if cfg.uses_wal() {
            paths.push(ctx.dir.join(Self::LOG));
        }
        let mut files = Vec::new();
        for p in &paths {
            files.push(open(cfg, p).with_context(|| format!("cannot create {}", p.display()))?);
        }
        if !cfg.append {
            let buf = AlignedBuf::filled(cfg.record_size as usize, b'p');
            let total = paths.len() as u64 * cfg.lap();
            let mut filler = Filler::new("writing out the transaction files", total, ctx.stop, ctx.observer);
            for (f, p) in files.iter().zip(&paths) {
                if !filler.fill(f, p, buf.as_slice(), cfg.lap(), true)? {
                    break;
                }
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

fn open(cfg: &Config, path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(if cfg.directio { libc::O_DIRECT } else { 0 })
        .open(path)
}

/// The kind under which a transaction's write is recorded.
fn write_op(cfg: &Config) -> OpKind {
    if cfg.directio {
        OpKind::WriteDirect
    } else {
        OpKind::Write
    }
}

/// The kind of the durable call a strategy issues.
fn sync_op(cfg: &Config, c: Coordination) -> OpKind {
    match c {
        Coordination::Syncfs => OpKind::Syncfs,
        _ => cfg.sync.sync_op().unwrap_or(OpKind::Fdatasync),
    }
}

/// fsync or fdatasync of `file`, as `--set sync` says.
fn sync_file(cfg: &Config, file: &File) -> io::Result<()> {
    cfg.sync.sync(file, 0, 0).unwrap_or(Ok(()))
}

/// Times a few single-thread transactions on worker 0's file: the average flush time that
/// decides whether coordination can pay, and the start of `avg-flush`'s running average.
pub(crate) fn calibrate(cfg: &Config, files: &Files, clock: RunClock, rec: &mut Recorder) -> Result<u64> {
    let f = &files.workers[0];
    let buf = AlignedBuf::filled(cfg.record_size as usize, b'c');
    let mut sum = 0u64;
    for i in 0..CALIBRATION_COMMITS {
        let offset = (i * cfg.record_size) % cfg.lap();
        sys::pwrite_all(f, buf.as_slice(), offset, false).context("calibration write")?;
        let (r, t, ns) = clock.time(|| sync_file(cfg, f));
        rec.record(OpKind::FlushCalibration, t, ns, 0, &r);
        r.with_context(|| format!("calibration {}", cfg.sync.name()))?;
        sum += ns;
    }
    files.reset(cfg)?;
    Ok(sum / CALIBRATION_COMMITS)
}

/// Runs `threads` workers with one strategy for `duration` and sums up their recorders.
pub(crate) fn run_step(
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
    let finished = run_workers(&name, threads as usize, started, ctx.observer, |i| step.worker(i))?;
    // The step lasts until its last worker finished, not until the progress poll noticed.
    let ended = finished.iter().map(|(_, t)| *t).max().unwrap_or(started);
    let elapsed_ns = ended.duration_since(started).as_nanos() as u64;
    let mut rec = Recorder::new();
    for (r, _) in finished {
        rec.merge(r);
    }
    let row = Row::of(coordination, threads, elapsed_ns, &rec, sync_op(cfg, coordination));
    Ok((row, rec))
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
            let (file, offset) = match (self.coordination, &self.files.log) {
                (Coordination::Wal, Some(log)) => {
                    let n = self.log_offset.fetch_add(cfg.record_size, Ordering::Relaxed);
                    (log, n % cfg.lap())
                }
                _ => {
                    let offset = next % cfg.lap();
                    if cfg.append && offset == 0 && next > 0 {
                        // A full lap: start the file over so writes keep allocating.
                        if let Err(e) = own.set_len(0) {
                            rec.record(OpKind::Truncate, self.clock.now_ns(), 0, 0, &Err(e));
                            break;
                        }
                    }
                    next += cfg.record_size;
                    (own, offset)
                }
            };
            let (written, t0, write_ns) = self.clock.time(|| sys::pwrite_all(file, buf.as_slice(), offset, false));
            rec.record(write_op(cfg), t0, write_ns, cfg.record_size, &written);
            let durable = match written {
                Err(e) => Err(e),
                Ok(()) => self.make_durable(own, &mut rec),
            };
            let commit_ns = self.clock.now_ns().saturating_sub(t0);
            let failed = durable.is_err();
            rec.record(OpKind::Commit, t0, commit_ns, cfg.record_size, &durable);
            if failed {
                break;
            }
        }
        (rec, Instant::now())
    }

    fn make_durable(&self, own: &File, rec: &mut Recorder) -> io::Result<()> {
        let cfg = self.cfg;
        let clock = self.clock;
        let op = sync_op(cfg, self.coordination);
        let mut timed = |file: &File, call: &dyn Fn(&File) -> io::Result<()>| {
            let (r, t, ns) = clock.time(|| call(file));
            rec.record(op, t, ns, 0, &r);
            (r, ns)
        };
        match (self.coordination, &self.files.log) {
            (Coordination::Syncfs, _) => self.group.commit(cfg.delay, self.stop, || timed(own, &sys::syncfs)),
            (Coordination::Wal, Some(log)) => self
                .group
                .commit(cfg.delay, self.stop, || timed(log, &|f| sync_file(cfg, f))),
            _ => timed(own, &|f| sync_file(cfg, f)).0,
        }
    }
}
