//! `powercut`: what an fsync buys. Every speed trick of the seeds trades durability for
//! latency (`barrier=0`, `data=writeback`, fdatasync skipping metadata, `sync_file_range`,
//! replace-via-rename without fsync); this experiment shows what the price bought.
//!
//! A cycle, repeated `cuts` times on a fresh filesystem each time:
//! 1. an application pattern writes records and acknowledges each once the chosen sync
//!    method says it is durable ([`pattern`]); the acknowledgements are kept in memory,
//!    never on the disk under test;
//! 2. the emulated disk loses power at a moment drawn from the seed: its volatile cache is
//!    lost (or part of it survives, as `keep` says) and every later request fails;
//! 3. the testbed is torn down without writing, the media attached again as the drive left
//!    it, and the filesystem mounted: it replays its journal by itself
//!    ([`crate::testbed::power`]);
//! 4. every acknowledged record is judged intact, lost or torn ([`verdict`]), and the
//!    filesystem's own checker runs read-only.
//!
//! The run's latency figures are those of the calls that acknowledged the records; its
//! result carries the losses beside them, and a run that lost an acknowledged record says
//! so and exits 1.

use std::time::Duration;

use anyhow::Result;

use super::{Context, Outcome, Plan, Scenario};
use crate::error::Usage;
use crate::measure::Recorder;
use crate::observe::{Event, Unit};
use crate::params::{scenario_params, Params, ScenarioParams};
use crate::rng::SplitMix64;
use crate::sync::SyncMethod;
use crate::testbed::device::{CutPlan, CutTrigger, Keep};
use crate::units::{format_size, Bytes};

mod details;
pub(crate) mod pattern;
pub(crate) mod record;
pub(crate) mod verdict;

pub(crate) use details::{Cycle, Details};

use pattern::{Ended, Pattern, Workload};

scenario_params! {
    /// The scenario's parameters, as read.
    struct PowercutParams {
        /// append (a log), overwrite (versioned records in place), rename (write a new file, rename it over the
        /// old), create (a new file a record)
        pattern: Pattern = choice("append"),
        sync: SyncMethod = sync("fsync"),
        /// rename and create: 1 fsyncs the directory after the rename or the create
        dir_sync: bool = flag("1"),
        /// bytes per record
        record_size: Bytes = size("4k"),
        /// overwrite: records in the file, overwritten in turn
        slots: u64 = count("64"),
        /// power cuts, each on a fresh filesystem
        cuts: u64 = count("1"),
        /// the earliest moment of a cut, from the start of the writes
        cut_after: Duration = duration("1s"),
        /// each cut comes at a moment drawn from seed within this long after cut_after (0: exactly at
        /// cut_after)
        cut_within: Duration = duration("1s"),
        /// what survives of the drive's volatile cache: none, prefix (the first writes in drain order), any (a
        /// random subset), torn (a prefix and one write in part)
        keep: String = word(KEEPS, "none"),
        /// the most the pattern writes before it waits for the cut (a pattern without sync writes at memory
        /// speed)
        max_size: Bytes = size("256M"),
        /// seed of the cut moments and of what survives
        seed: u64 = count("1"),
    }
}

/// What survives of the drive's cache at a cut, as the `keep` parameter names it.
const KEEPS: &[&str] = &["none", "prefix", "any", "torn"];

pub(crate) static POWERCUT: Scenario = Scenario {
    name: "powercut",
    purpose: "what an fsync buys: acknowledged writes checked after a power cut on the emulated disk and the filesystem's own recovery",
    seed: "the seeds' speed tricks (barrier=0 in 002, data=writeback and rename in 000, fdatasync in 004, sync_file_range in 003) and what they cost in durability",
    params: PowercutParams::specs,
    plan: |p| Ok(Box::new(Config::from_params(p)?)),
};

/// The validated parameters.
#[derive(Clone, Debug)]
struct Config {
    workload: Workload,
    cuts: u64,
    cut_after: Duration,
    cut_within: Duration,
    keep: Keep,
    max_size: u64,
    seed: u64,
}

impl Config {
    fn from_params(p: &Params) -> Result<Config> {
        let p = PowercutParams::from_params(p)?;
        let record_size = p.record_size.get();
        let pattern = p.pattern;
        let sync = p.sync;
        let usage = |m: String| -> Result<Config> { Err(Usage(m).into()) };
        if !(record::MIN_SIZE as u64..=Bytes::MIB).contains(&record_size) {
            return usage(format!(
                "--set record_size={}: a record takes {} to 1M",
                format_size(Bytes(record_size)),
                record::MIN_SIZE
            ));
        }
        if sync.needs_alignment() && record_size % crate::sys::AlignedBuf::ALIGN as u64 != 0 {
            return usage(format!(
                "--set record_size={}: sync=direct (O_DIRECT) needs a multiple of 4k",
                format_size(Bytes(record_size))
            ));
        }
        let keep = Keep::from_name(&p.keep).unwrap_or_default();
        let c = Config {
            workload: Workload {
                pattern,
                sync,
                dir_sync: p.dir_sync,
                record_size: record_size as usize,
                slots: p.slots.clamp(1, u64::from(u32::MAX)) as u32,
            },
            cuts: p.cuts,
            cut_after: p.cut_after,
            cut_within: p.cut_within,
            keep,
            max_size: p.max_size.get(),
            seed: p.seed,
        };
        if c.cuts == 0 {
            return usage("--set cuts=0: at least one cut, e.g. cuts=50".into());
        }
        if c.cut_after.is_zero() && c.cut_within.is_zero() {
            return usage(
                "--set cut_after=0 and cut_within=0: the pattern needs time to write before the cut, e.g. cut_after=1s"
                    .into(),
            );
        }
        Ok(c)
    }

    /// When cycle `i`'s cut comes, from the start of its writes.
    fn moment(&self, i: u64) -> Duration {
        if self.cut_within.is_zero() {
            return self.cut_after;
        }
        let mut rng = SplitMix64::new(self.seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let frac = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        self.cut_after + self.cut_within.mul_f64(frac)
    }
}

impl Plan for Config {
    fn space_needed(&self) -> u64 {
        self.max_size
    }

    fn space_hint(&self) -> &'static str {
        "lower --set max_size"
    }

    fn expected_duration(&self) -> Option<Duration> {
        // Each cut's writes, then the recovery (a few seconds, as the filesystem decides).
        None
    }

    fn needs_power_switch(&self) -> bool {
        true
    }

    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome> {
        let testbed = ctx.testbed;
        let mut recorder = Recorder::new();
        let mut cycles: Vec<Cycle> = Vec::new();
        ctx.observer.event(Event::Phase {
            name: "power cuts",
            total: Some(self.cuts),
            unit: Unit::Items,
        });
        for i in 0..self.cuts {
            if ctx.stop.is_set() {
                break;
            }
            let fresh_ms = if i > 0 {
                let made = match testbed.fresh_filesystem() {
                    Ok(made) => made,
                    // A signal stopped the next filesystem's mkfs: the run ends with the
                    // cycles made, as a signal between cycles ends it.
                    Err(_) if ctx.stop.is_set() => break,
                    Err(e) => return Err(e),
                };
                crate::testbed::workdir::recreate(ctx.dir)?;
                Some(made.as_secs_f64() * 1e3)
            } else {
                None
            };
            let control = testbed
                .device_control()
                .ok_or_else(|| Usage("powercut needs an emulated disk: --scratch FS --device PROFILE".into()))?;
            let moment = self.moment(i);
            let plan = CutPlan {
                trigger: CutTrigger::After(moment),
                keep: self.keep,
                seed: self.seed.wrapping_add(i),
            };
            // Writes until the cut (or a signal): a watcher stops the pattern when the
            // drive reports the cut, for a pattern whose calls never reach it (no sync).
            let stop = ctx.stop.child();
            let mut run = pattern::Run::start(self.workload, ctx.dir, ctx.clock)?.limited_to(self.max_size);
            let armed_at_s = control.clock_s();
            control.arm_cut(plan);
            let ended = std::thread::scope(|s| {
                let watcher = s.spawn(|| {
                    let cut = control.wait_for_cut(moment + Duration::from_secs(60));
                    stop.set();
                    cut
                });
                let ended = run.until(&stop);
                stop.set();
                // The cut has come (or a signal ended the cycle): the watcher returns.
                control.cut_power(self.keep, self.seed.wrapping_add(i));
                let cut = watcher.join().ok().flatten();
                (ended, cut)
            });
            let (ended, cut) = ended;
            let cut_at_ns = ctx.clock.now_ns();
            let (cycle_recorder, ledger) = run.finish();
            let recovery = testbed.recover()?;
            let verdict = if recovery.mounted {
                verdict::judge(ctx.dir, &self.workload, &ledger, cut_at_ns)
            } else {
                verdict::all_lost(&self.workload, &ledger, cut_at_ns)
            };
            let check = testbed.check()?;
            ctx.observer.event(Event::Progress { done: i + 1 });
            // When the cut came, on the drive's clock: a signal makes it early.
            let made_s = cut
                .as_ref()
                .zip(armed_at_s)
                .map(|(cut, armed)| (cut.at_s - armed).max(0.0));
            cycles.push(Cycle {
                moment_s: moment.as_secs_f64(),
                made_s,
                ended: match ended {
                    Ended::Stopped => None,
                    Ended::Failed { op, error } => Some(format!("{op} {error}")),
                },
                cut,
                issued: ledger.issued,
                fresh_ms,
                recovery,
                check,
                verdict,
            });
            recorder.merge(cycle_recorder);
        }
        Ok(Outcome {
            recorder,
            background: None,
            details: super::Details::Powercut(Details::new(self.workload, self.keep, cycles)),
        })
    }
}

#[cfg(test)]
mod params_tests {
    use super::*;

    #[test]
    fn every_parameter_declared_is_read_and_every_one_read_is_declared() {
        crate::params::assert_declared_and_read::<PowercutParams>(&POWERCUT.params());
    }
}
