//! A scenario with its parameters decided: the `--set` assignments read over its defaults
//! into its typed plan, and whether to trace it. What the engine runs, and what a matrix
//! plans for each of its cells.

use anyhow::Result;

use super::{Plan, Scenario};
use crate::explain::run::ExplainOptions;
use crate::params::Params;

/// A scenario with its parameters decided.
pub(crate) struct Planned {
    pub(crate) scenario: &'static Scenario,
    pub(crate) params: Params,
    pub(crate) plan: Box<dyn Plan>,
    /// The timeline's interval and whether to trace (`run --explain`; the timeline only
    /// unless a command says otherwise).
    pub(crate) explain: ExplainOptions,
}

impl Planned {
    /// Applies `--set` assignments over the scenario's defaults and reads them into its plan.
    pub(crate) fn new(scenario: &'static Scenario, sets: &[String]) -> Result<Planned> {
        let params = Params::resolve(scenario.name(), &scenario.params(), sets)?;
        let plan = scenario.plan(&params)?;
        Ok(Planned {
            scenario,
            params,
            plan,
            explain: ExplainOptions::default(),
        })
    }
}

impl Planned {
    /// Refuses, before anything is made, a testbed the plan cannot run on: a power cut
    /// needs an emulated disk.
    pub(crate) fn check_testbed(&self, request: &crate::testbed::TestbedRequest) -> Result<(), crate::error::Usage> {
        let emulated = request.scratch().is_some_and(|s| s.device.is_emulated());
        if self.plan.needs_power_switch() && !emulated {
            return Err(crate::error::Usage(format!(
                "{} cuts the power of an emulated disk: add --scratch FS --device PROFILE (e.g. --scratch ext4 --device hdd-7200)",
                self.scenario.name()
            )));
        }
        Ok(())
    }
}
