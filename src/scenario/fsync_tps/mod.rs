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
//! The run: write the files out, time a few single-thread transactions (the average flush
//! time that decides Wong's question), then each strategy at each thread count of `threads`
//! for `duration` ([`workers`]). The table has one row per strategy and thread count (tps,
//! commit latency percentiles, commits per sync), and the findings put the measured average
//! flush time beside them ([`details`]).

use std::time::Duration;

use anyhow::Result;

use super::{Context, Outcome, Plan, Scenario};
use crate::environment::check_fits_in_memory;
use crate::error::Usage;
use crate::measure::Recorder;
use crate::observe::Event;
use crate::params::{scenario_params, Choice, Params, ScenarioParams};
use crate::role::group_commit::{check_delay, parse_delay, Delay};
use crate::role::prober::Placement;
use crate::sync::SyncMethod;
use crate::sys::AlignedBuf;
use crate::units::Bytes;

mod details;
mod findings;
mod workers;

pub(crate) use details::Details;

scenario_params! {
    /// The scenario's parameters, as read.
    struct FsyncTpsParams {
        /// worker threads; a list is a sweep, each count run for `duration` (the seed's counts are not known)
        threads: Vec<u64> = count_list("1,2,4,8"),
        /// how transactions become durable: none (each worker syncs its file), syncfs (a leader's syncfs covers
        /// all waiting), wal (shared log, a leader syncs the batch)
        coordination: Vec<Coordination> = choices("none,syncfs,wal"),
        /// syncfs/wal: how long a leader waits for others before it syncs: 0, microseconds (500, 500us, 2ms),
        /// or avg-flush (the seed's 'use avg sync time')
        delay: String = text(check_delay, "0"),
        /// bytes each transaction writes
        record_size: Bytes = size("4k"),
        /// size of each worker's file and of the shared log; writes wrap around at this size
        file_size: Bytes = size("16M"),
        /// overwrite blocks written out beforehand, or append to files that start empty (each worker's file
        /// restarts when full; the wal log is circular)
        placement: Placement = choice("overwrite"),
        /// 1: open the files with O_DIRECT (the seed's directio=1)
        directio: bool = flag("0"),
        /// the durable call of none and wal (syncfs uses syncfs)
        sync: SyncMethod = choice_among(&["fsync", "fdatasync"], "fdatasync").seed("fsync"),
        /// how long each thread count of each strategy runs
        duration: Duration = duration("2s"),
    }
}

/// How the durable step of a transaction is shared between workers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Coordination {
    None,
    Syncfs,
    Wal,
}

impl Choice for Coordination {
    const NAMES: &'static [&'static str] = &["none", "syncfs", "wal"];
    const ALL: &'static [Coordination] = &[Coordination::None, Coordination::Syncfs, Coordination::Wal];
}

pub(crate) static FSYNC_TPS: Scenario = Scenario {
    name: "fsync-tps",
    purpose: "transactions/s of many committing threads, each flushing alone or sharing flushes (group commit)",
    seed: "002 (Wong, fsync/flush coordination, 2010)",
    params: FsyncTpsParams::specs,
    plan: |p| Ok(Box::new(Config::from_params(p)?)),
};

/// The validated parameters of one run.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    pub(crate) threads: Vec<u64>,
    pub(crate) coordination: Vec<Coordination>,
    pub(crate) delay: Delay,
    pub(crate) record_size: u64,
    pub(crate) file_size: u64,
    pub(crate) append: bool,
    pub(crate) directio: bool,
    /// fsync or fdatasync.
    pub(crate) sync: SyncMethod,
    pub(crate) duration: Duration,
}

impl Config {
    pub(crate) fn from_params(p: &Params) -> Result<Config> {
        let usage = |m: String| -> Result<Config> { Err(Usage(m).into()) };
        let p = FsyncTpsParams::from_params(p)?;
        let threads = p.threads;
        if threads.contains(&0) {
            let list: Vec<String> = threads.iter().map(u64::to_string).collect();
            return usage(format!(
                "--set threads={}: every thread count must be at least 1",
                list.join(",")
            ));
        }
        if threads.iter().any(|&n| n > 1024) {
            return usage("--set threads: at most 1024 workers per run".into());
        }
        let record_size = p.record_size.get();
        let file_size = p.file_size.get();
        if record_size == 0 {
            return usage("--set record_size=0: a transaction must write at least one byte".into());
        }
        check_fits_in_memory(FsyncTpsParams::record_size.name(), record_size)?;
        if record_size > file_size {
            return usage(format!(
                "--set record_size={}: larger than file_size={}; lower record_size or raise file_size",
                p.record_size, p.file_size
            ));
        }
        let directio = p.directio;
        if directio && record_size % AlignedBuf::ALIGN as u64 != 0 {
            return usage(format!(
                "--set record_size={}: directio=1 (O_DIRECT) needs a multiple of 4k",
                p.record_size
            ));
        }
        let duration = p.duration;
        if duration.is_zero() {
            return usage("--set duration=0: each thread count needs a time to run, like 2s".into());
        }
        let config = Config {
            threads,
            coordination: p.coordination,
            delay: parse_delay(&p.delay).map_err(|e| Usage(format!("--set delay: expected {e}")))?,
            record_size,
            file_size,
            append: p.placement == Placement::Append,
            directio,
            sync: p.sync,
            duration,
        };
        // Every worker holds a record buffer at once, and so does the calibration.
        crate::environment::check_buffers_fit(
            FsyncTpsParams::record_size.name(),
            record_size,
            config.max_threads() + 1,
        )?;
        Ok(config)
    }

    fn max_threads(&self) -> u64 {
        self.threads.iter().copied().max().unwrap_or(1)
    }

    fn uses_wal(&self) -> bool {
        self.coordination.contains(&Coordination::Wal)
    }

    /// Records fit in a file a whole number of times; offsets wrap at this length.
    fn lap(&self) -> u64 {
        self.file_size / self.record_size * self.record_size
    }
}

impl Plan for Config {
    /// The per-worker files, plus the shared log when `wal` runs.
    fn space_needed(&self) -> u64 {
        let files = self.max_threads() + u64::from(self.uses_wal());
        files * self.file_size
    }

    fn space_hint(&self) -> &'static str {
        "lower --set file_size or the largest thread count"
    }

    fn expected_duration(&self) -> Option<Duration> {
        Some(self.duration * (self.threads.len() * self.coordination.len()) as u32)
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let mut recorder = Recorder::new();
        let files = workers::Files::prepare(ctx, self)?;
        let avg_flush_ns = workers::calibrate(self, &files, ctx.clock, &mut recorder)?;
        ctx.observer
            .event(Event::SeedLine(&details::calibration_line(self.sync, avg_flush_ns)));
        let mut rows = Vec::new();
        'sweep: for &coordination in &self.coordination {
            for &threads in &self.threads {
                if ctx.stop.is_set() {
                    break 'sweep;
                }
                let (row, rec) = workers::run_step(ctx, self, &files, coordination, threads, avg_flush_ns)?;
                ctx.observer.event(Event::SeedLine(&details::seed_line(&row)));
                recorder.merge(rec);
                rows.push(row);
            }
        }
        Ok(Outcome {
            recorder,
            background: None,
            details: super::Details::FsyncTps(Details::new(self, avg_flush_ns, rows)),
        })
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        crate::params::assert_declared_and_read::<FsyncTpsParams>(&FSYNC_TPS.params());
    }
}
