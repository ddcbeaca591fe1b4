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

use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::{Context, Outcome, Plan, Scenario};
use crate::environment::check_fits_in_memory;
use crate::error::Usage;
use crate::measure::Recorder;
use crate::observe::{Event, Unit};
use crate::params::{scenario_params, Choice, Params, ScenarioParams};
use crate::sync::SyncMethod;
use crate::sys::AlignedBuf;
use crate::units::{format_size, Bytes};

mod cells;
mod details;

pub(crate) use details::Details;

use cells::{Cell, Files};

scenario_params! {
    /// The scenario's parameters, as read.
    struct DatasyncParams {
        /// sync methods compared (see `sync` of other scenarios for each one)
        methods: Vec<SyncMethod> = choices("fsync,fdatasync,sync_file_range,odsync").seed("fdatasync"),
        /// overwrite (allocated blocks), append (file grows), mtime (same bytes: timestamps only)
        cases: Vec<Case> = choices("overwrite,append,mtime").seed("overwrite"),
        /// bytes per write
        write_size: Bytes = size("8k").seed("8k"),
        /// size of the preallocated file for overwrite; an append file is emptied when it reaches it
        file_size: Bytes = size("8M").seed("8G"),
        /// interleaved rounds: each (case, method) gets one slot per round
        rounds: u64 = count("3").seed("1"),
        /// length of one slot (0 = no limit: writes decides)
        duration: Duration = duration("500ms").seed("0s"),
        /// write+sync operations per slot (0 = no limit: duration decides)
        writes: u64 = count("0").seed("1048576"),
    }
}

/// What each operation writes where.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Case {
    /// New bytes walking an allocated, synced file (Hifumi's test).
    Overwrite,
    /// Bytes at the end: the size and new blocks must be synced.
    Append,
    /// The same bytes at offset 0: only the timestamps change.
    Mtime,
}

impl Choice for Case {
    const NAMES: &'static [&'static str] = &["overwrite", "append", "mtime"];
    const ALL: &'static [Case] = &[Case::Overwrite, Case::Append, Case::Mtime];
}

/// Hifumi's total-time line, with the slot it covers.
pub(crate) fn seed_line(case: Case, method: SyncMethod, writes: u64, write_size: u64, secs: f64) -> String {
    format!(
        "{} {}: {writes} writes of {} in {secs:.3} sec",
        case.name(),
        method.name(),
        format_size(Bytes(write_size))
    )
}

pub(crate) static DATASYNC: Scenario = Scenario {
    name: "datasync",
    purpose: "fsync vs fdatasync vs sync_file_range vs O_DSYNC on overwrite, append and timestamp-only writes",
    seed: "004 (Hifumi et al., fdatasync should skip metadata, 2007-2008)",
    params: DatasyncParams::specs,
    plan: |p| Ok(Box::new(Config::from_params(p)?)),
};

/// The validated parameters.
#[derive(Clone, Debug)]
struct Config {
    methods: Vec<SyncMethod>,
    cases: Vec<Case>,
    write_size: u64,
    file_size: u64,
    rounds: u64,
    duration: Duration,
    writes: u64,
}

impl Config {
    fn from_params(p: &Params) -> Result<Config> {
        let p = DatasyncParams::from_params(p)?;
        check_fits_in_memory(DatasyncParams::write_size.name(), p.write_size.get())?;
        let c = Config {
            methods: p.methods,
            cases: p.cases,
            write_size: p.write_size.get(),
            file_size: p.file_size.get(),
            rounds: p.rounds,
            duration: p.duration,
            writes: p.writes,
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

impl Plan for Config {
    fn space_needed(&self) -> u64 {
        let allocated = [Case::Overwrite, Case::Append]
            .iter()
            .filter(|c| self.cases.contains(c))
            .count();
        self.write_size + allocated as u64 * self.file_size
    }

    fn space_hint(&self) -> &'static str {
        "lower --set file_size"
    }

    fn expected_duration(&self) -> Option<Duration> {
        (!self.duration.is_zero()).then(|| self.duration * (self.rounds * self.cells() as u64) as u32)
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let files = Files::prepare(ctx, self)?;
        let mut recorder = Recorder::new();
        let mut cells: Vec<Cell> = self
            .cases
            .iter()
            .flat_map(|case| self.methods.iter().map(move |m| Cell::new(*case, *m)))
            .collect();
        ctx.observer.event(Event::Phase {
            name: "datasync",
            total: Some(self.rounds * cells.len() as u64),
            unit: Unit::Items,
        });
        let bufs = [
            AlignedBuf::filled(self.write_size as usize, b'a'),
            AlignedBuf::filled(self.write_size as usize, b'b'),
        ];
        let mut slots = Vec::new();
        'rounds: for round in 0..self.rounds {
            // Rotate the order each round, so no method always follows the same neighbour.
            let n = cells.len();
            for k in 0..n {
                if ctx.stop.is_set() {
                    break 'rounds;
                }
                let cell = &mut cells[(k + round as usize) % n];
                let slot = cells::run_slot(ctx, self, &files, cell, &bufs, &mut recorder)?;
                ctx.observer.event(Event::SeedLine(&slot.seed_line(self.write_size)));
                slots.push(slot);
                ctx.observer.event(Event::Progress {
                    done: slots.len() as u64,
                });
            }
        }
        let details = Details {
            write_size: self.write_size,
            rounds: self.rounds,
            cells: cells.iter().map(Cell::row).collect(),
            slots,
        };
        Ok(Outcome {
            recorder,
            background: None,
            details: super::Details::Datasync(details),
        })
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        crate::params::assert_declared_and_read::<DatasyncParams>(&DATASYNC.params());
    }
}
