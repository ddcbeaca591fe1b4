//! `fsynclab reproduce [SEED...] [--quick|--full] [--format text|markdown|json]`: does each
//! seed's finding still hold on this kernel, and why or why not?
//!
//! Each seed is one file ([`seed000`] ... [`seed004`]): the claim, the published figures
//! with their source (seed file and line), the configuration of its era as groups of runs,
//! and the rules that judge what was measured ([`verdict`]). The command, in phases:
//!
//! 1. plan: the seeds asked for, every group's runs checked as a matrix checks its cells;
//!    `--full` says how long and how much memory first;
//! 2. runs: each configuration on its own freshly made testbed through the one run path
//!    ([`Session`]), traced where the kernel allows (the explanation is the *why*),
//!    recorded as soon as it ends in a matrix of the results store named
//!    `reproduceN-SEED[-GROUP]` (so `fsynclab runs --grep reproduceN` lists them, `report
//!    --matrix` draws them, `compare` and `explain` read them);
//! 3. rows: each seed's findings judged on its runs ([`experiment::Experiment::rows`]);
//! 4. the table ([`render`]; side by side on several kernels, [`sidebyside`], with what
//!    changed between them: [`kernels`]).
//!
//! A signal stops the run under way (the session undoes its testbed), skips the rest, and
//! still prints the rows of what was measured; the exit status is then 128 + the signal.

mod causes;
mod confidence;
mod disturbances;
mod experiment;
mod groups;
mod kernels;
mod render;
mod seed000;
mod seed001;
mod seed002;
mod seed003;
mod seed004;
mod sidebyside;
mod stored;
mod verdict;

pub use render::ReproduceFormat;

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use serde::Serialize;

use crate::error::Usage;
use crate::explain::attribution::Threshold;
use crate::explain::run::{ExplainOptions, TraceWish};
use crate::explain::timeline::DEFAULT_INTERVAL;
use crate::explain::tracer::TracerKind;
use crate::recording::{self, Recording};
use crate::run::cell::{Failure, Made, Recorded};
use crate::run::Progress;
use crate::store::MatrixRecord;
pub(crate) use experiment::Size;
use experiment::{CellRuns, Experiment, Measured, Row, Run};
use groups::{label_of, plan_groups, run_one, say_full_plan, Choice};

/// The prefix of a reproduction's id (`reproduce3`) and of its matrices (`reproduce3-000`).
use crate::matrix::REPRODUCTION_ID_PREFIX as ID_PREFIX;

/// What `--smoke` sets over each scenario's quick configuration: seconds a run, small
/// files.
pub(crate) const SMOKE_SETS: &[(&str, &[&str])] = &[
    ("overwrite-fsync", &["duration=2s", "file_size=64M"]),
    ("random-writeback", &["duration=2s", "random_file_size=32M"]),
    ("small-files", &["runs=1"]),
    ("fsync-tps", &["duration=200ms"]),
    ("datasync", &["rounds=1", "duration=200ms"]),
    ("rndwr", &["duration=1s", "total_size=32M", "threads=4"]),
];

/// Every seed's experiment, in seed order.
fn all() -> Vec<&'static dyn Experiment> {
    vec![
        &seed000::Seed000,
        &seed001::Seed001,
        &seed002::Seed002,
        &seed003::Seed003,
        &seed004::Seed004,
    ]
}

/// The experiments `seeds` name (all when none), in seed order; an unknown seed is a
/// one-line usage error. `SEED:GROUP` names the seed (its group: [`groups_named`]).
fn select(seeds: &[String]) -> Result<Vec<&'static dyn Experiment>, Usage> {
    let every = all();
    if seeds.is_empty() {
        return Ok(every);
    }
    let valid = || every.iter().map(|e| e.seed()).collect::<Vec<_>>().join(", ");
    let mut chosen: Vec<&'static dyn Experiment> = Vec::new();
    for text in seeds {
        let text = text.split_once(':').map_or(text.as_str(), |(seed, _)| seed);
        let number = text.trim().trim_start_matches("seed").parse::<u32>().ok();
        let found = number.and_then(|n| every.iter().find(|e| e.seed() == format!("{n:03}")));
        match found {
            Some(e) if !chosen.iter().any(|c| c.seed() == e.seed()) => chosen.push(*e),
            Some(_) => {}
            None => return Err(Usage(format!("reproduce: unknown seed '{text}'; valid: {}", valid()))),
        }
    }
    chosen.sort_by_key(|e| e.seed());
    Ok(chosen)
}

/// The groups `SEED:GROUP` arguments name, `(seed, group)`, each checked against its seed's
/// groups (by name, or by scenario for a seed's main group); a seed also named alone runs
/// all of its groups.
fn groups_named(seeds: &[String], size: Size) -> Result<Vec<(&'static str, String)>, Usage> {
    let plain: Vec<String> = seeds.iter().filter(|t| !t.contains(':')).cloned().collect();
    let whole: Vec<&'static str> = match plain.is_empty() {
        true => Vec::new(),
        false => select(&plain)?.iter().map(|e| e.seed()).collect(),
    };
    let mut out = Vec::new();
    for text in seeds {
        let Some((seed, group)) = text.split_once(':') else {
            continue;
        };
        let Some(e) = select(&[seed.to_string()])?.first().copied() else {
            continue;
        };
        let groups = e.groups(size);
        if !groups.iter().any(|g| g.name == group || g.scenario == group) {
            let names: Vec<&str> = groups
                .iter()
                .map(|g| if g.name.is_empty() { g.scenario } else { g.name })
                .collect();
            return Err(Usage(format!(
                "reproduce {text}: seed {} has no group '{group}'; its groups: {}",
                e.seed(),
                names.join(", ")
            )));
        }
        if !whole.contains(&e.seed()) {
            out.push((e.seed(), group.to_string()));
        }
    }
    Ok(out)
}

/// A seed's outcome, as the table shows it.
#[derive(Serialize)]
pub(crate) struct SeedReport {
    pub(crate) seed: &'static str,
    pub(crate) title: &'static str,
    pub(crate) era: String,
    /// The store's matrices holding its runs.
    pub(crate) matrices: Vec<String>,
    /// Its findings (on the one kernel given, if any; empty with several kernels).
    pub(crate) rows: Vec<Row>,
    /// With several kernels: its findings judged on each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) by_kernel: Vec<kernels::KernelRows>,
    /// With several kernels: what changed for each finding, from the first to each other.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) changes: Vec<kernels::Change>,
}

/// The whole reproduction.
#[derive(Serialize)]
pub(crate) struct Reproduction {
    pub(crate) id: String,
    pub(crate) size: Size,
    pub(crate) machine: String,
    pub(crate) store: String,
    pub(crate) started_at: String,
    /// The wall time of the command that made the runs (absent when shown again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) duration_s: Option<f64>,
    pub(crate) runs: usize,
    /// Shown again from the store: the fewest and most runs a configuration has there (what
    /// `--quick` makes has changed over versions; the heading says what this one made).
    #[serde(skip)]
    pub(crate) stored_runs_a_configuration: Option<(usize, usize)>,
    pub(crate) interrupted: bool,
    /// `--kernel`'s kernels, the first the reference (none: this one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) kernels: Vec<String>,
    pub(crate) seeds: Vec<SeedReport>,
}

/// What a reproduction is asked for: `fsynclab reproduce`'s arguments, read by the command.
pub(crate) struct Request<'a> {
    /// SEED or SEED:GROUP, as typed (all seeds when empty).
    pub(crate) seeds: &'a [String],
    pub(crate) size: Size,
    /// Runs of every configuration instead of the size's own.
    pub(crate) runs: Option<u32>,
    pub(crate) format: ReproduceFormat,
    pub(crate) backing: Option<&'a PathBuf>,
    /// `--kernel K1,K2`, and the guests' time limit.
    pub(crate) kernel: Option<&'a str>,
    pub(crate) kernel_timeout: Option<&'a str>,
    /// The results store asked for (the default store when none).
    pub(crate) store: Option<&'a Path>,
    pub(crate) quiet: bool,
}

/// Prints stored reproduction `id` again in `format`, judged on its stored runs of the
/// seeds `seeds` names; the exit status.
pub(crate) fn show_again(id: &str, seeds: &[String], store: Option<&Path>, format: ReproduceFormat) -> Result<i32> {
    stored::show(id, &select(seeds)?, store, format)
}

/// Runs the reproduction `request` asks for, each run recorded as it ends, and prints the
/// table; the exit status (128 + the signal that stopped it, 1 if a run failed).
pub(crate) fn reproduce(request: &Request<'_>) -> Result<i32> {
    // Plan: bad input is refused before anything is made.
    let experiments = select(request.seeds)?;
    let size = request.size;
    let choice = Choice {
        only: groups_named(request.seeds, size)?,
        runs: request.runs,
    };
    let kernels = kernels::check(request.kernel, request.kernel_timeout, &experiments, size)?;
    if !crate::sys::is_root() {
        return Err(Usage(
            "fsynclab reproduce: its runs make scratch filesystems on emulated disks and set vm sysctls, which needs root: run it as root".into(),
        )
        .into());
    }
    let path = recording::store_path(request.store, false)?.ok_or_else(|| {
        Usage(format!(
            "fsynclab reproduce stores every run, and {}={} turns the results store off: give --store PATH",
            crate::store::STORE_ENV,
            recording::STORE_OFF
        ))
    })?;
    if let Some(backing) = request.backing {
        if !backing.is_dir() {
            return Err(Usage(format!(
                "--backing {}: no such directory; create it or choose another",
                backing.display()
            ))
            .into());
        }
    }
    let (explain, explain_note) = ExplainOptions::decide(
        TraceWish::Default,
        Threshold::default(),
        DEFAULT_INTERVAL,
        TracerKind::Tracefs,
    )?;
    let mut store = recording::open_for_writing(&path)?;
    let id = store.next_prefixed_id(ID_PREFIX)?;
    let mut groups = plan_groups(&experiments, size, &id, request.backing, &choice)?;
    kernels::apply(groups.iter_mut().map(|g| &mut g.plan), &kernels, request.kernel_timeout);
    let total: usize = groups.iter().map(|g| g.plan.order().len()).sum();
    if size == Size::Full {
        say_full_plan(&groups, total)?;
    }
    if !request.quiet {
        note!(
            "fsynclab reproduce {id}: seeds {}, {} ({} a configuration): {total} runs, recorded in {} (`fsynclab runs --grep {id}` lists them)",
            experiments.iter().map(|e| e.seed()).collect::<Vec<_>>().join(" "),
            match size {
                Size::Quick => "quick",
                Size::Full => "full",
                Size::Smoke => "smoke (seconds a run: the tests' configuration)",
            },
            match (choice.runs, size) {
                (Some(n), _) => format!("{n} run{} (--runs)", if n == 1 { "" } else { "s" }),
                (None, Size::Full) => format!("{} runs", size.repeat()),
                (None, Size::Quick) => "2 to 4 runs".to_string(),
                (None, Size::Smoke) => "1 run".to_string(),
            },
            recording::shown_store(&path)
        );
        if let Some(n) = explain_note {
            note!("{n}");
        }
        if !kernels.is_empty() {
            note!("fsynclab reproduce {id}: every run on kernel {}, in turn cell by cell; a guest is booted for each run of a kernel other than host (under TCG about a minute each), and ended after {}", kernels.join(", then "), request.kernel_timeout.unwrap_or(crate::matrix::plan::DERIVED_LIMIT_TEXT));
        }
    }
    for g in &groups {
        store.create_matrix(&MatrixRecord {
            id: g.matrix_id.clone(),
            scenario: g.plan.scenario.clone(),
            created_at: crate::result::now_rfc3339(),
            plan: serde_json::to_value(&g.plan)?,
        })?;
    }
    let machine = crate::environment::fingerprint(&request.backing.cloned().unwrap_or_else(|| PathBuf::from(".")));
    let mut recording = Recording::into(store, path.clone());

    // Runs, seed by seed; a signal skips the rest.
    let stop = crate::signals::watch()?;
    let started_at = crate::result::now_rfc3339();
    let clock = Instant::now();
    let mut measured: Vec<(&'static dyn Experiment, Measured)> =
        experiments.iter().map(|e| (*e, Measured::default())).collect();
    let mut progress = Progress::counted(total, request.quiet);
    let mut ended_by = None;
    let mut failed = 0;
    'groups: for g in &groups {
        let Some((_, m)) = measured.iter_mut().find(|(e, _)| e.seed() == g.experiment.seed()) else {
            continue;
        };
        let cells = g.plan.cells();
        for (rep, c) in g.plan.order() {
            if let Some(sig) = stop.signal() {
                ended_by = Some(sig);
                break 'groups;
            }
            let cell = &cells[c];
            let label = label_of(g, cell, rep);
            match run_one(g, cell, rep, &label, explain.clone(), &mut recording)? {
                Made::Run(made) => {
                    progress.finished(made.line(&label, ""));
                    if let Some(sig) = made.late_signal {
                        ended_by = Some(sig);
                        break 'groups;
                    }
                    let Recorded { id, finished, .. } = *made;
                    let mut result = finished.result;
                    // The samples are in the store; the rows need the figures and the
                    // explanation only.
                    result.samples = Vec::new();
                    let run = Run {
                        id: id.map(|i| i.0),
                        result,
                    };
                    match m.cells.iter_mut().find(|x| x.group == g.name && x.axes == *cell) {
                        Some(x) => x.runs.push(run),
                        None => m.cells.push(CellRuns {
                            group: g.name,
                            axes: cell.clone(),
                            runs: vec![run],
                        }),
                    }
                }
                Made::Failed(failure) => {
                    let why = match failure {
                        Failure::Prepare(e) => format!("{label}: cannot prepare the testbed ({e:#})"),
                        Failure::Measure(e) => format!("{label}: {e:#}"),
                    };
                    progress.finished(why.clone());
                    failed += 1;
                    m.failures.push(why);
                }
                // Reproductions claim no places: nothing is left to another process.
                Made::LeftToOther(why) => progress.say(&why),
                Made::Interrupted(sig) => {
                    ended_by = Some(sig);
                    break 'groups;
                }
            }
        }
    }

    // Rows and the table.
    let reproduction = Reproduction {
        // `--runs N`: the heading says what was made, not the size's usual counts.
        stored_runs_a_configuration: choice.runs.map(|n| (n as usize, n as usize)),
        id: id.clone(),
        size,
        machine: kernels::machine_line(&kernels, machine.machine_line()),
        store: recording::shown_store(&path),
        started_at,
        duration_s: Some(clock.elapsed().as_secs_f64()),
        runs: progress.made().0,
        interrupted: ended_by.is_some(),
        seeds: measured
            .iter()
            .map(|(e, m)| {
                let matrices = groups.iter().filter(|g| g.experiment.seed() == e.seed());
                kernels::seed_report(*e, size, m, matrices.map(|g| g.matrix_id.clone()).collect(), &kernels)
            })
            .collect(),
        kernels,
    };
    crate::report::print(&sidebyside::render(&reproduction, request.format)?)?;
    if !request.quiet {
        // A matrix this reproduction made (the first seed's), not one it may not have.
        let first = groups
            .first()
            .map_or_else(|| format!("{id}-000"), |g| g.matrix_id.clone());
        note!(
            "fsynclab reproduce {id}: `fsynclab runs --grep {id}` lists its runs; `fsynclab report --matrix {first} -o {id}.html` draws a seed's; `fsynclab explain RUN` shows where a stall's time went"
        );
    }
    Ok(match (ended_by, failed) {
        (Some(sig), _) => {
            note!(
                "fsynclab reproduce {id}: interrupted by signal {sig}; the rows above cover the runs made until then"
            );
            128 + sig
        }
        (None, 0) => 0,
        (None, _) => 1,
    })
}

#[cfg(test)]
mod tests;
