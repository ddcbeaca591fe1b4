//! Scenarios: each reproduces one seed experiment as a composition of roles (prober,
//! writers) with named parameters. One file per scenario; [`all`] is the registry that
//! `fsynclab list`, `run` and `suite` read.

use std::path::Path;

use anyhow::Result;

use crate::measure::{Recorder, RunClock};
use crate::observe::Observer;
use crate::params::{ParamSpec, Params};
use crate::result::Table;
use crate::role::stop::Stop;
use crate::role::writer::BackgroundReport;

pub mod background;
pub mod fsync_tps;
pub mod load;
pub mod overwrite_fsync;
pub mod probe;
pub mod random_writeback;
pub mod rndwr;

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
}

/// Every scenario, in the order `list` and `suite` show them.
pub fn all() -> Vec<&'static dyn Scenario> {
    vec![
        &overwrite_fsync::OverwriteFsync,
        &random_writeback::RandomWriteback,
        &fsync_tps::FsyncTps,
        &rndwr::Rndwr,
    ]
}

pub fn find(name: &str) -> Option<&'static dyn Scenario> {
    all().into_iter().find(|s| s.name() == name)
}

pub fn names() -> String {
    all().iter().map(|s| s.name()).collect::<Vec<_>>().join(", ")
}
