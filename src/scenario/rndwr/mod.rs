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

use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::{Context, Outcome, Plan, Scenario};
use crate::environment::check_fits_in_memory;
use crate::error::Usage;
use crate::measure::{OpKind, Recorder};
use crate::observe::{Event, Unit};
use crate::params::{scenario_params, Params, ScenarioParams};
use crate::role::pool::run_workers;
use crate::sync::SyncMethod;
use crate::units::{format_size, Bytes};

mod details;
mod sysbench;
mod workers;

pub(crate) use details::Details;
use sysbench::{Generator, Summary};

scenario_params! {
    /// The scenario's parameters, as read.
    struct RndwrParams {
        /// number of files (sysbench --file-num)
        files: u64 = count("128").seed("128"),
        /// size of all files together (sysbench --file-total-size)
        total_size: Bytes = size("256M").seed("128G"),
        /// worker threads (sysbench --num-threads)
        threads: u64 = count("16").seed("128"),
        /// bytes per request, offsets aligned to it (sysbench --file-block-size)
        block_size: Bytes = size("16k").seed("16k"),
        /// a sync sweep over all files after this many requests, 0 = never (sysbench --file-fsync-freq)
        fsync_freq: u64 = count("100").seed("100"),
        /// the sync call of the sweeps (sysbench --file-fsync-mode)
        fsync_mode: SyncMethod = choice_among(&["fsync", "fdatasync"], "fdatasync").seed("fdatasync"),
        /// one more sync per file at the end (sysbench --file-fsync-end)
        fsync_end: bool = flag("1"),
        /// stop after this many writes, 0 = no limit (sysbench --max-requests)
        max_requests: u64 = count("0").seed("50000"),
        /// stop after this long, 0 = no limit (sysbench --max-time)
        duration: Duration = duration("10s").seed("0"),
        /// seed of the offset generator (fixed, so runs are repeatable)
        seed: u64 = count("1"),
    }
}

pub(crate) static RNDWR: Scenario = Scenario {
    name: "rndwr",
    purpose: "sysbench fileio rndwr: random 16 KiB overwrites with periodic fdatasync sweeps over many files",
    seed: "004 (Hifumi et al., fdatasync skipping metadata, 2008)",
    params: RndwrParams::specs,
    plan: |p| Ok(Box::new(Config::from_params(p)?)),
};

/// The validated parameters.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) files: u64,
    pub(crate) file_size: u64,
    pub(crate) block_size: u64,
    pub(crate) threads: u64,
    pub(crate) fsync_freq: u64,
    pub(crate) fsync_end: bool,
    pub(crate) sync: SyncMethod,
    pub(crate) max_requests: u64,
    pub(crate) duration: Duration,
    pub(crate) seed: u64,
}

impl Config {
    pub(crate) fn from_params(p: &Params) -> Result<Config> {
        let p = RndwrParams::from_params(p)?;
        let files = p.files;
        let threads = p.threads;
        let block_size = p.block_size.get();
        check_fits_in_memory(RndwrParams::block_size.name(), block_size)?;
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
        crate::environment::check_buffers_fit(RndwrParams::block_size.name(), block_size, threads)?;
        // sysbench: file_size = total_size / num_files.
        let file_size = p.total_size.get() / files;
        if file_size < block_size {
            bail!(Usage(format!(
                "--set total_size={}: {} files of {} each are smaller than block_size={}; raise total_size or lower files",
                p.total_size,
                files,
                format_size(Bytes(file_size)),
                p.block_size
            )));
        }
        let max_requests = p.max_requests;
        let duration = p.duration;
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
            fsync_freq: p.fsync_freq,
            fsync_end: p.fsync_end,
            sync: p.fsync_mode,
            max_requests,
            duration,
            seed: p.seed,
        })
    }

    /// Blocks per file: requests never cross the end of a file.
    fn blocks_per_file(&self) -> u64 {
        self.file_size / self.block_size
    }

    fn space_needed(&self) -> u64 {
        self.files * self.file_size
    }
}

impl Plan for Config {
    fn space_needed(&self) -> u64 {
        Config::space_needed(self)
    }

    fn space_hint(&self) -> &'static str {
        "lower --set total_size"
    }

    fn expected_duration(&self) -> Option<Duration> {
        Some(self.duration).filter(|d| !d.is_zero())
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let files = workers::prepare(ctx, self)?;
        let sync_op = self.sync.sync_op().unwrap_or(OpKind::Fdatasync);

        // Measurement: the workers until max_requests or duration, then the final syncs.
        ctx.observer.event(Event::SeedLine(sysbench::TEST_LINE));
        ctx.observer.event(Event::Phase {
            name: "random writes",
            total: (!self.duration.is_zero()).then_some(self.duration.as_millis() as u64),
            unit: Unit::Millis,
        });
        let generator = Mutex::new(Generator::new(self));
        let stop = ctx.stop.child();
        let started = Instant::now();
        let deadline = (!self.duration.is_zero()).then(|| started + self.duration);
        let clock = ctx.clock;
        let reports = run_workers("rndwr", self.threads as usize, started, ctx.observer, |_| {
            workers::worker(&files, self, &generator, clock, &stop, deadline)
        })?;
        // The run lasts until its last worker finished, not until the progress poll noticed.
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
        if self.fsync_end && !stop.is_set() {
            let end_started = Instant::now();
            for f in &files {
                let (r, t, ns) = clock.time(|| self.sync.sync(f, 0, 0).unwrap_or(Ok(())));
                recorder.record(sync_op, t, ns, 0, &r);
            }
            elapsed += end_started.elapsed();
        }

        let summary = Summary::of(&recorder, sync_op, elapsed.as_nanos() as u64, &per_thread);
        for line in sysbench::seed_lines(&summary) {
            ctx.observer.event(Event::SeedLine(&line));
        }
        let details = Details {
            files: self.files,
            file_size: self.file_size,
            sync: sync_op,
            syncs: recorder.op(sync_op).unwrap_or_default(),
            summary,
        };
        Ok(Outcome {
            recorder,
            background: None,
            details: super::Details::Rndwr(details),
        })
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        crate::params::assert_declared_and_read::<RndwrParams>(&RNDWR.params());
    }
}
