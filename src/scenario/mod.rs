//! Scenarios: each reproduces one seed experiment as a composition of roles (prober,
//! writers) with named parameters. One file per scenario; [`all`] is the registry that
//! `fsynclab list`, `run` and `suite` read.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;

use crate::measure::{Recorder, RunClock};
use crate::observe::Observer;
use crate::params::{ParamSpec, Params};
use crate::result::{RunResult, Table};
use crate::role::stop::Stop;
use crate::role::writer::BackgroundReport;
use crate::units::format_latency_ns;

pub mod background;
pub mod datasync;
pub mod fsync_tps;
pub mod load;
pub mod overwrite_fsync;
pub mod probe;
pub mod random_writeback;
pub mod rndwr;
pub mod small_files;

/// What a scenario gets to run with.
pub struct Context<'a> {
    /// The private work directory: every file of the run goes here.
    pub dir: &'a Path,
    pub clock: RunClock,
    pub stop: &'a Stop,
    pub observer: &'a mut dyn Observer,
}

/// What a scenario measured.
#[derive(Default)]
pub struct Outcome {
    pub recorder: Recorder,
    pub background: Option<BackgroundReport>,
    pub tables: Vec<Table>,
    pub findings: Vec<String>,
}

pub trait Scenario: Sync {
    fn name(&self) -> &'static str;
    /// One line: what the experiment shows.
    fn purpose(&self) -> &'static str;
    /// The seed it reproduces: `000 (Ts'o, ext3 latency fixes, 2009)`.
    fn seed(&self) -> &'static str;
    fn params(&self) -> Vec<ParamSpec>;
    /// Checks combinations of parameters that no single parameter's type can.
    fn validate(&self, _params: &Params) -> Result<()> {
        Ok(())
    }
    /// Bytes of files the run will create, for the free-space preflight.
    fn space_needed(&self, params: &Params) -> u64;
    /// Which parameter to lower when space runs short, for the preflight's message.
    fn space_hint(&self) -> &'static str {
        "lower the file sizes with --set"
    }
    fn run(&self, ctx: &mut Context<'_>, params: &Params) -> Result<Outcome>;
    /// How long the measured part of a run lasts, when the parameters decide it (the
    /// suite's `--full` plan); `None` when it depends on the machine.
    fn expected_duration(&self, params: &Params) -> Option<Duration> {
        params.find_duration("duration").filter(|d| !d.is_zero())
    }
    /// One line with the run's headline figure, for the suite's summary.
    fn headline(&self, result: &RunResult) -> String {
        default_headline(result)
    }
}

/// The worst and p99 latency of the main sync call (the sync kind called most often, else
/// the most frequent call), and the background writer's rate when there was one.
pub fn default_headline(r: &RunResult) -> String {
    let is_sync = |op: &str| !op.starts_with("write") && !matches!(op, "create" | "close");
    let main = r
        .ops
        .iter()
        .filter(|(op, s)| is_sync(op) && s.count > 0)
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
    if let Some(b) = &r.background {
        line.push_str(&format!("; background {} {:.1} MiB/s", b.kind, b.mb_per_s));
    }
    line
}

/// Every scenario, in the order `list` and `suite` show them.
pub fn all() -> Vec<&'static dyn Scenario> {
    vec![
        &overwrite_fsync::OverwriteFsync,
        &random_writeback::RandomWriteback,
        &small_files::SmallFiles,
        &fsync_tps::FsyncTps,
        &datasync::Datasync,
        &rndwr::Rndwr,
    ]
}

pub fn find(name: &str) -> Option<&'static dyn Scenario> {
    all().into_iter().find(|s| s.name() == name)
}

pub fn names() -> String {
    all().iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}
