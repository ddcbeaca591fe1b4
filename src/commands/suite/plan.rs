//! A suite's plan: every scenario's parameters resolved (scaled down, or the seeds' sizes
//! with `--full`) before anything runs, and with `--full` the time and space it takes.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, Result};

use super::{SUITE_DURATION_CAP, SUITE_SETS};
use crate::error::Usage;
use crate::params::split_assignment;
use crate::run::engine::Planned;
use crate::scenario::{self, Scenario};
use crate::testbed::workdir;
use crate::units::{format_duration, human_size};

pub(super) fn plan(sets: &[String], full: bool) -> Result<Vec<Planned>> {
    let scenarios = scenario::suite();
    let mut user: Vec<(Option<String>, String)> = Vec::new();
    for arg in sets {
        let (key, value) = split_assignment(arg)?;
        match key.split_once('.') {
            Some((name, k)) => {
                if !scenarios.iter().any(|s| s.name() == name) {
                    let names: Vec<&str> = scenarios.iter().map(|s| s.name()).collect();
                    let why = match scenario::find(name) {
                        Some(_) => format!("{name} is not part of the suite (run it with `fsynclab run {name}`)"),
                        None => format!("unknown scenario '{name}'"),
                    };
                    return Err(Usage(format!("--set {arg}: {why}; valid: {}", names.join(", "))).into());
                }
                user.push((Some(name.to_string()), format!("{k}={value}")));
            }
            None => {
                if !scenarios.iter().any(|s| s.params().iter().any(|p| p.name == key)) {
                    return Err(Usage(format!(
                        "--set {arg}: no scenario has a parameter '{key}'; use SCENARIO.KEY=VALUE (see fsynclab list)"
                    ))
                    .into());
                }
                user.push((None, format!("{key}={value}")));
            }
        }
    }
    let mut planned = Vec::new();
    for s in scenarios {
        let specs = s.params();
        let declares = |assignment: &str| {
            let key = assignment.split('=').next().unwrap_or("");
            specs.iter().any(|p| p.name == key)
        };
        let mut assignments: Vec<String> = if full {
            specs
                .iter()
                .filter_map(|p| p.seed.map(|v| format!("{}={v}", p.name)))
                .collect()
        } else {
            scaled_sets(s)
        };
        for (only, a) in &user {
            let mine = match only {
                Some(name) => name == s.name(),
                None => declares(a),
            };
            if mine {
                assignments.push(a.clone());
            }
        }
        planned.push(Planned::new(s, &assignments).with_context(|| format!("suite: scenario {}", s.name()))?);
    }
    Ok(planned)
}

/// The suite's scaled settings for `s`: its entry in [`SUITE_SETS`] and a `duration` no
/// longer than [`SUITE_DURATION_CAP`], each only where the scenario declares the key.
fn scaled_sets(s: &Scenario) -> Vec<String> {
    let specs = s.params();
    let mut out = Vec::new();
    if let Some(d) = specs.iter().find(|p| p.name == "duration") {
        let longer = crate::units::parse_duration(d.default).is_ok_and(|v| v.is_zero() || v > SUITE_DURATION_CAP);
        if longer {
            out.push(format!("duration={}", format_duration(SUITE_DURATION_CAP)));
        }
    }
    for (name, sets) in SUITE_SETS {
        if *name == s.name() {
            for a in *sets {
                let key = a.split('=').next().unwrap_or("");
                if specs.iter().any(|p| p.name == key) {
                    out.push(a.to_string());
                }
            }
        }
    }
    out
}

/// With `--full`: says how long and how much space it takes, and refuses if it does not fit.
pub(super) fn full_preflight(dir: &Path, planned: &[Planned]) -> Result<()> {
    let mut known = Duration::ZERO;
    let mut unknown = Vec::new();
    for p in planned {
        match p.plan.expected_duration() {
            Some(d) => known += d,
            None => unknown.push(p.scenario.name()),
        }
    }
    // Scenarios run one at a time and each removes its files: the largest one must fit.
    let (largest, space) = planned
        .iter()
        .map(|p| (p.scenario.name(), p.plan.space_needed()))
        .max_by_key(|(_, s)| *s)
        .unwrap_or(("-", 0));
    let time = if unknown.is_empty() {
        format!("about {}", format_duration(round_to_seconds(known)))
    } else {
        format!(
            "at least {} of measurement, plus {} as long as the device takes",
            format_duration(round_to_seconds(known)),
            unknown.join(", ")
        )
    };
    note!(
        "fsynclab suite --full: the seeds' original sizes and durations: {time}, plus writing each scenario's files; needs up to {} of free space in {} at once ({largest})",
        human_size(space),
        dir.display()
    );
    workdir::preflight(
        dir,
        space,
        &format!("{largest} is the largest: run without --full, or lower its sizes with --set {largest}.KEY=VALUE,"),
    )?;
    note!("fsynclab suite --full: the space fits; starting (Ctrl-C stops and keeps what ran)");
    Ok(())
}

fn round_to_seconds(d: Duration) -> Duration {
    Duration::from_secs(d.as_secs() + u64::from(d.subsec_nanos() > 0))
}
