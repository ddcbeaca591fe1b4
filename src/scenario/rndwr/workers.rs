//! The moving parts of an rndwr run: sysbench's prepare step, and one worker taking
//! requests from the shared generator until the run ends.

use std::fs::File;
use std::io;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::sysbench::{self, Generator, Request};
use super::Config;
use crate::measure::{OpKind, Recorder, RunClock};
use crate::observe::Event;
use crate::role::fill::Filler;
use crate::scenario::Context;
use crate::stop::Stop;
use crate::sync::SyncMethod;
use crate::sys;

/// sysbench's prepare: each file written sequentially in `block_size` writes, then fsynced,
/// "to prevent cache flush from affecting test results".
pub(super) fn prepare(ctx: &mut Context<'_>, cfg: &Config) -> Result<Vec<File>> {
    for line in sysbench::prepare_lines(cfg.files, cfg.file_size) {
        ctx.observer.event(Event::SeedLine(&line));
    }
    let buf = vec![0u8; cfg.block_size as usize];
    let mut filler = Filler::new(
        "creating files for the test",
        cfg.space_needed(),
        ctx.stop,
        ctx.observer,
    );
    let mut files = Vec::new();
    for i in 0..cfg.files {
        let path: PathBuf = ctx.dir.join(format!("test_file.{i}"));
        let f = SyncMethod::None
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let complete = filler.fill(&f, &path, &buf, cfg.file_size, true)?;
        files.push(f);
        if !complete {
            break;
        }
    }
    Ok(files)
}

/// What one worker did.
pub(super) struct WorkerOutcome {
    pub(super) recorder: Recorder,
    pub(super) writes: u64,
    pub(super) ended: Instant,
}

pub(super) fn worker(
    files: &[File],
    cfg: &Config,
    generator: &Mutex<Generator>,
    clock: RunClock,
    stop: &Stop,
    deadline: Option<Instant>,
) -> WorkerOutcome {
    let mut recorder = Recorder::new();
    let buf = vec![0u8; cfg.block_size as usize];
    let sync_op = cfg.sync.sync_op().unwrap_or(OpKind::Fdatasync);
    let mut writes = 0;
    loop {
        if stop.is_set() || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let request = generator.lock().unwrap_or_else(PoisonError::into_inner).next_request();
        let outcome: io::Result<()> = match request {
            Request::Done => break,
            // A stop during prepare leaves fewer files than the generator knows.
            Request::Write { file, .. } | Request::Sync { file } if file as usize >= files.len() => break,
            Request::Write { file, offset } => {
                let f = &files[file as usize];
                let (r, t, ns) = clock.time(|| sys::pwrite_all(f, &buf, offset, false));
                recorder.record(OpKind::Write, t, ns, cfg.block_size, &r);
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
    WorkerOutcome {
        recorder,
        writes,
        ended: Instant::now(),
    }
}
