//! `fsynclab probe`: the floor every other figure is compared with — what a bare flush
//! costs on this filesystem and device, with nothing else going on:
//! - a 4 KiB O_DIRECT overwrite of an allocated, synced block, then fdatasync (no data in
//!   the page cache, no metadata to commit: close to one device write plus one cache flush);
//! - fsync of a file with nothing dirty (the cost of the call itself).
//!
//! Reached through its own subcommand, not listed among the scenarios.

use std::time::Duration;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::{Context, Outcome, Plan, Scenario, Views};
use crate::error::Usage;
use crate::measure::{OpKind, Recorder};
use crate::observe::{Event, Unit};
use crate::params::{scenario_params, Params, ScenarioParams};
use crate::scenario::Measured;
use crate::sync::SyncMethod;
use crate::sys::{self, AlignedBuf};
use crate::units::format_latency_ns;

const BLOCK: u64 = 4096;

pub(crate) static PROBE: Scenario = Scenario {
    name: "probe",
    purpose: "the cost of a bare flush on this filesystem: the floor of every other figure",
    seed: "none (a calibration)",
    params: ProbeParams::specs,
    plan,
};

fn plan(params: &Params) -> Result<Box<dyn Plan>> {
    let ProbeParams { iterations } = ProbeParams::from_params(params)?;
    if iterations == 0 {
        return Err(Usage("--set iterations=0: the probe needs at least one iteration".into()).into());
    }
    Ok(Box::new(Config { iterations }))
}

struct Config {
    iterations: u64,
}

scenario_params! {
    /// The probe's parameters, as read.
    struct ProbeParams {
        /// how many times each measurement is repeated
        iterations: u64 = count("100"),
    }
}

impl Plan for Config {
    fn space_needed(&self) -> u64 {
        2 * BLOCK
    }

    fn expected_duration(&self) -> Option<Duration> {
        None
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let mut recorder = Recorder::new();

        // A block that is allocated and on disk before the first measurement.
        let path = ctx.dir.join("probe-block");
        let buffered = SyncMethod::None
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let buf = AlignedBuf::filled(BLOCK as usize, b'p');
        sys::pwrite_all(&buffered, buf.as_slice(), 0, false).context("cannot preallocate the probe block")?;
        sys::fsync(&buffered).context("cannot sync the probe block")?;

        // 1. O_DIRECT overwrite + fdatasync; buffered if the filesystem has no O_DIRECT.
        let (file, method) = match SyncMethod::Direct.open(&path) {
            Ok(f) => (f, SyncMethod::Direct),
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => (buffered.try_clone()?, SyncMethod::Fdatasync),
            Err(e) => return Err(e).context("cannot open the probe block with O_DIRECT"),
        };
        ctx.observer.event(Event::Phase {
            name: "4 KiB overwrite + fdatasync",
            total: Some(self.iterations),
            unit: Unit::Items,
        });
        for i in 0..self.iterations {
            if ctx.stop.is_set() {
                break;
            }
            let (w, t, lat) = ctx.clock.time(|| method.write(&file, buf.as_slice(), 0));
            recorder.record(method.write_op(), t, lat, BLOCK, &w);
            let (s, t, lat) = ctx.clock.time(|| sys::fdatasync(&file));
            ctx.observer
                .event(Event::Sample(&recorder.record(OpKind::Fdatasync, t, lat, 0, &s)));
            ctx.observer.event(Event::Progress { done: i + 1 });
        }

        // 2. fsync of a file with nothing to write.
        ctx.observer.event(Event::Phase {
            name: "fsync of an unchanged file",
            total: Some(self.iterations),
            unit: Unit::Items,
        });
        for i in 0..self.iterations {
            if ctx.stop.is_set() {
                break;
            }
            let (s, t, lat) = ctx.clock.time(|| sys::fsync(&buffered));
            ctx.observer
                .event(Event::Sample(&recorder.record(OpKind::FsyncUnchanged, t, lat, 0, &s)));
            ctx.observer.event(Event::Progress { done: i + 1 });
        }

        let p50 = |op: OpKind| recorder.op(op).map(|o| o.latency_ns.p50).unwrap_or(0);
        let details = Details {
            direct: method == SyncMethod::Direct,
            write_p50_ns: p50(method.write_op()),
            fdatasync_p50_ns: p50(OpKind::Fdatasync),
            unchanged_p50_ns: p50(OpKind::FsyncUnchanged),
        };
        Ok(Outcome {
            recorder,
            background: None,
            details: super::Details::Probe(details),
        })
    }
}

/// The floor, at the median.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Details {
    /// Whether the overwrite used O_DIRECT (false: the filesystem refused it).
    pub(crate) direct: bool,
    pub(crate) write_p50_ns: u64,
    pub(crate) fdatasync_p50_ns: u64,
    pub(crate) unchanged_p50_ns: u64,
}

impl Views for Details {
    fn findings(&self) -> Vec<String> {
        let write_op = if self.direct {
            OpKind::WriteDirect
        } else {
            OpKind::Write
        };
        let mut out = Vec::new();
        if !self.direct {
            out.push("this filesystem does not support O_DIRECT: the overwrite is buffered".to_string());
        }
        out.push(format!(
            "floor: a durable 4 KiB overwrite costs {} at the median ({write_op} {} + fdatasync {}); fsync with nothing to write costs {}",
            format_latency_ns(self.write_p50_ns + self.fdatasync_p50_ns),
            format_latency_ns(self.write_p50_ns),
            format_latency_ns(self.fdatasync_p50_ns),
            format_latency_ns(self.unchanged_p50_ns),
        ));
        out
    }

    fn seed_lines(&self, _: &Measured<'_>) -> Vec<String> {
        Vec::new()
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        crate::params::assert_declared_and_read::<ProbeParams>(&PROBE.params());
    }
}
