//! Scenarios: each reproduces one seed experiment as a composition of roles (prober,
//! writers, worker pools) with named parameters.
//!
//! A scenario is a [`Plan`] factory: [`Scenario::plan`] reads the `--set` parameters once
//! into the experiment's typed configuration and checks every combination; the plan then
//! says how much space and time it needs and runs. What it measured comes back as samples
//! plus typed [`Details`], from which tables, findings, the suite's headline and the seed's
//! own output lines are computed ([`Views`]) — during the run or from a saved result.
//!
//! [`all`] is the registry that `fsynclab list`, `run` and `suite` read.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::measure::{OpKind, OpStats, Recorder, RunClock, Sample};
use crate::observe::Observer;
use crate::params::{ParamSpec, Params};
use crate::role::writer::BackgroundSummary;
use crate::stop::Stop;
pub use crate::testbed::vm::GuestDisk;
use crate::units::format_latency_ns;

pub(crate) mod background;
pub(crate) mod datasync;
pub(crate) mod fsync_errors;
pub(crate) mod fsync_tester;
pub(crate) mod fsync_tps;
pub(crate) mod load;
pub(crate) mod overwrite_fsync;
pub(crate) mod planned;
pub(crate) mod powercut;
pub(crate) mod probe;
pub(crate) mod process_calls;
pub(crate) mod random_writeback;
pub(crate) mod rndwr;
pub(crate) mod small_files;
pub(crate) mod table;
pub(crate) mod traced_command;
pub(crate) mod watched;

pub(crate) use table::Table;

/// What a scenario gets to run with.
pub(crate) struct Context<'a> {
    /// The private work directory: every file of the run goes here.
    pub(crate) dir: &'a Path,
    pub(crate) clock: RunClock,
    pub(crate) stop: &'a Stop,
    pub(crate) observer: &'a mut dyn Observer,
    /// The testbed the run is on: what a power cut cycles ([`powercut`]).
    pub(crate) testbed: &'a crate::testbed::Prepared,
}

/// What a scenario measured.
pub(crate) struct Outcome {
    pub(crate) recorder: Recorder,
    pub(crate) background: Option<BackgroundSummary>,
    pub(crate) details: Details,
}

/// What a run measured and where, as a scenario's [`Views`] read it beside the details:
/// the statistics per operation kind, every foreground call, the background writer, the
/// environment.
#[derive(Clone, Copy)]
pub(crate) struct Measured<'a> {
    pub(crate) environment: &'a crate::environment::Fingerprint,
    pub(crate) ops: &'a std::collections::BTreeMap<OpKind, OpStats>,
    pub(crate) samples: &'a [Sample],
    pub(crate) background: Option<&'a BackgroundSummary>,
}

/// An experiment as `fsynclab list` shows it, and the factory of its plans: data, one
/// static in each scenario's module (`rndwr::RNDWR`), listed by [`all`].
pub(crate) struct Scenario {
    name: &'static str,
    /// One line: what the experiment shows.
    purpose: &'static str,
    /// The seed it reproduces: `000 (Ts'o, ext3 latency fixes, 2009)`.
    seed: &'static str,
    /// The parameters `--set` takes, with their defaults and the seed's values.
    params: fn() -> Vec<ParamSpec>,
    /// Reads the parameters once into the experiment's typed plan, refusing (as a usage
    /// error) any combination that cannot run.
    plan: fn(&Params) -> Result<Box<dyn Plan>>,
}

impl Scenario {
    pub(crate) fn name(&self) -> &'static str {
        self.name
    }

    pub(crate) fn purpose(&self) -> &'static str {
        self.purpose
    }

    pub(crate) fn seed(&self) -> &'static str {
        self.seed
    }

    pub(crate) fn params(&self) -> Vec<ParamSpec> {
        (self.params)()
    }

    pub(crate) fn plan(&self, params: &Params) -> Result<Box<dyn Plan>> {
        (self.plan)(params)
    }
}

/// One experiment with every parameter decided.
pub(crate) trait Plan: Send + Sync {
    /// Bytes of files the run will create, for the free-space preflight.
    fn space_needed(&self) -> u64;
    /// Which parameter to lower when space runs short, for the preflight's message.
    fn space_hint(&self) -> &'static str {
        "lower the file sizes with --set"
    }
    /// How long the measured part lasts when the parameters decide it (the suite's `--full`
    /// plan); `None` when it depends on the machine.
    fn expected_duration(&self) -> Option<Duration>;
    /// Why `--explain` cannot follow the measured calls, if it cannot: it traces the thread
    /// that calls [`Plan::run`] and the workers of [`crate::role::pool`].
    fn untraceable_calls(&self) -> Option<&'static str> {
        None
    }
    /// Whether the run cuts the disk's power, which needs an emulated disk (`--device`).
    fn needs_power_switch(&self) -> bool {
        false
    }
    /// Under `--kernel`, where the run's disk is emulated and who drives it: served by the
    /// host, and driven from inside through the control port when the run cuts its power;
    /// emulated inside the guest for a run that makes disks of its own.
    fn guest_disk(&self) -> GuestDisk {
        match self.needs_power_switch() {
            true => GuestDisk::Driven,
            false => GuestDisk::Served,
        }
    }
    fn run(&self, ctx: &mut Context<'_>) -> Result<Outcome>;
}

/// What a scenario's typed details give the exporters. Each is computed from the details
/// (and the run's samples), never read back from rendered text.
pub(crate) trait Views {
    fn tables(&self) -> Vec<Table> {
        Vec::new()
    }
    fn findings(&self) -> Vec<String>;
    /// Figures of the whole run that comparisons should see beside the ops' (named as
    /// `fsynclab compare` shows them, e.g. `commit.tps`).
    fn figures(&self) -> std::collections::BTreeMap<String, f64> {
        Default::default()
    }
    /// One line with the run's headline figure, for the suite's summary.
    fn headline(&self, run: &Measured<'_>) -> String {
        default_headline(run)
    }
    /// The lines the seed's original program printed, in order (`--format seed`).
    fn seed_lines(&self, run: &Measured<'_>) -> Vec<String>;
    /// Why the run failed by the scenario's own measure (a power cut lost an acknowledged
    /// write), if it did: the run then exits 1.
    fn failure(&self) -> Option<String> {
        None
    }
    /// Calls that failed because the experiment made them fail (the call under way when a
    /// power cut came): they are recorded, but do not make the run fail.
    fn expected_errors(&self) -> u64 {
        0
    }
}

/// Each scenario's typed figures, as results store them (`"details": {"fsync-tps": ...}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum Details {
    OverwriteFsync(overwrite_fsync::Details),
    RandomWriteback(random_writeback::Details),
    SmallFiles(small_files::Details),
    FsyncTps(fsync_tps::Details),
    Datasync(datasync::Details),
    Rndwr(rndwr::Details),
    Probe(probe::Details),
    Load(load::Details),
    Powercut(powercut::Details),
    /// A command traced by `exec --explain`.
    Exec(traced_command::Details),
    FsyncErrors(fsync_errors::Details),
    /// The calls `fsynclab watch` followed.
    Watch(watched::Details),
}

impl Details {
    pub(crate) fn views(&self) -> &dyn Views {
        match self {
            Details::OverwriteFsync(d) => d,
            Details::RandomWriteback(d) => d,
            Details::SmallFiles(d) => d,
            Details::FsyncTps(d) => d,
            Details::Datasync(d) => d,
            Details::Rndwr(d) => d,
            Details::Probe(d) => d,
            Details::Load(d) => d,
            Details::Powercut(d) => d,
            Details::Exec(d) => d,
            Details::FsyncErrors(d) => d,
            Details::Watch(d) => d,
        }
    }
}

/// The worst and p99 latency of the main sync call (the sync kind called most often, else
/// the most frequent call), and the background writer's rate when there was one.
pub(crate) fn default_headline(r: &Measured<'_>) -> String {
    let main = r
        .ops
        .iter()
        .filter(|(op, s)| op.is_sync() && s.count > 0)
        .max_by_key(|(_, s)| s.count)
        .or_else(|| r.ops.iter().max_by_key(|(_, s)| s.count));
    let mut line = match main {
        Some((op, s)) => format!(
            "{op} worst {}, p99 {} ({} calls{})",
            format_latency_ns(s.latency_ns.max),
            format_latency_ns(s.latency_ns.p99),
            s.count,
            if s.errors > 0 {
                format!(", {} failed", s.errors)
            } else {
                String::new()
            }
        ),
        None => "no calls measured".to_string(),
    };
    if let Some(b) = r.background {
        line.push_str(&format!("; background {} {:.1} MiB/s", b.kind, b.mb_per_s));
    }
    line
}

/// The scenarios the suite runs, in the order it runs them: the seeds' experiments.
pub(crate) fn suite() -> Vec<&'static Scenario> {
    vec![
        &overwrite_fsync::OVERWRITE_FSYNC,
        &random_writeback::RANDOM_WRITEBACK,
        &small_files::SMALL_FILES,
        &fsync_tps::FSYNC_TPS,
        &datasync::DATASYNC,
        &rndwr::RNDWR,
    ]
}

/// Every scenario, in the order `list` shows them: the suite's, then `powercut`, which
/// needs an emulated disk whose power it cuts, and `fsync-errors`, which makes its own
/// scratch filesystems on emulated disks that fail.
pub(crate) fn all() -> Vec<&'static Scenario> {
    let mut all = suite();
    all.push(&powercut::POWERCUT);
    all.push(&fsync_errors::FSYNC_ERRORS);
    all
}

/// Whether `fsynclab suite` runs `s`.
pub(crate) fn in_suite(s: &Scenario) -> bool {
    suite().iter().any(|x| x.name() == s.name())
}

pub(crate) fn find(name: &str) -> Option<&'static Scenario> {
    all().into_iter().find(|s| s.name() == name)
}

pub(crate) fn names() -> String {
    all().iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    /// Every parameter says what it is for: a `scenario_params!` row without its doc comment
    /// would declare an empty help, and the lines of one are joined by single spaces.
    #[test]
    fn every_parameter_of_every_scenario_has_its_help() {
        let loads = [&super::load::RANDOM, &super::load::STREAM, &super::probe::PROBE];
        for s in super::all().into_iter().chain(loads) {
            for p in s.params() {
                assert!(!p.help.is_empty(), "{}: {} has no help", s.name(), p.name);
                assert!(
                    p.help.trim() == p.help && !p.help.contains("  "),
                    "{}: {}'s help is joined badly: {:?}",
                    s.name(),
                    p.name,
                    p.help
                );
            }
        }
    }
}
