//! `fsynclab suite`: every scenario of [`scenario::suite`], one after another in one
//! directory, with defaults scaled to finish in under three minutes (or, with `--full`, the
//! seeds' original sizes), then a one-screen summary.
//!
//! Phases: plan (resolve every scenario's parameters, so bad input stops us before anything
//! runs; with `--full`, the time and space it takes; open the results store) → runs (each
//! recorded in the store with its samples, and its result written to the results directory,
//! as soon as it exists, so a later failure loses nothing) → summary (`summary.json` and the
//! screen).
//!
//! The results directory holds each scenario's result as compact JSON; when the run is in
//! the results store, the file leaves out the per-call samples and names the stored run
//! instead (`stored`), where `fsynclab show`, `export` and `report` find them. Pretty JSON of
//! every call made a default suite write 159 MB and spend about half its time doing it. Ctrl-C ends the current scenario early, skips the rest,
//! and still writes the summary of what ran.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use crate::cli::SuiteArgs;
use crate::compare::expect::{Expectation, NamedRun};
use crate::environment::{self, Fingerprint};
use crate::error::Usage;
use crate::params::split_assignment;
use crate::recording::{self, Recording};
use crate::report::{self, Format};
use crate::result::{now_rfc3339, write_compact_json_atomically, write_json_atomically};
use crate::run::cell::{self, Say};
use crate::run::engine::Planned;
use crate::run::on_kernel::{Judge, Needs, Writes};
use crate::run::session::{Opened, Session};
use crate::scenario::{self, Scenario};
use crate::testbed::vm::GuestDisk;
use crate::testbed::workdir;
use crate::units::{format_duration, human_size};

pub(crate) mod verdict;

/// The longest a suite run lets any scenario's `duration` be, so that six scenarios fit in
/// three minutes on a small VM with room for their setup phases.
pub(crate) const SUITE_DURATION_CAP: Duration = Duration::from_secs(10);

/// Per-scenario settings the suite uses over the scenario's own defaults (scaled runs only).
/// Keys a scenario does not declare are skipped, so the table may name scenarios of other
/// branches before they land.
const SUITE_SETS: &[(&str, &[&str])] = &[
    ("random-writeback", &["iterations=10"]),
    ("datasync", &["rounds=2", "duration=400ms"]),
];

pub(crate) const SUMMARY_FILE: &str = "summary.json";

/// `summary.json`: what ran, where its result is, and its headline.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub(crate) started_at: String,
    pub(crate) duration_s: f64,
    pub(crate) full: bool,
    pub(crate) interrupted: bool,
    pub(crate) environment: Fingerprint,
    /// The results store the runs were recorded in, when they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) store: Option<String>,
    pub(crate) scenarios: Vec<Entry>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Entry {
    pub(crate) scenario: String,
    /// `ok`, `errors` (some calls failed), `interrupted`, `failed` (no result), `skipped`.
    pub(crate) status: String,
    /// The result file, relative to the results directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<String>,
    /// The run's id in the results store, when it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) run: Option<i64>,
    pub(crate) duration_s: f64,
    pub(crate) headline: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<String>,
    pub(crate) params: BTreeMap<String, String>,
}

/// `suite`: its line read ([`super::measuring`]), then every scenario in turn ([`run`]).
pub(crate) fn command(args: &SuiteArgs) -> Result<i32> {
    super::measuring(&args.target, || verdict::expectations(args), |expect| run(args, expect))
}

pub(crate) fn run(args: &SuiteArgs, expect: &[Expectation]) -> Result<i32> {
    // On another kernel (`--kernel`), the whole suite runs in a guest.
    let needs = Needs {
        space_needed: space_needed(args)?,
        guest_disk: GuestDisk::Served,
        expected: expected_duration(args)?,
        writes: args.results.as_deref().map(Writes::Directory),
        command: &[],
        expect,
        judge: Judge::All(verdict::judged_in_guest),
    };
    if let Some(code) = super::kernel::on_kernel(&args.target, Some(&args.record), needs)? {
        return Ok(code);
    }
    // Plan: parameters of every scenario, checked before anything runs.
    let planned = plan(&args.sets, args.full)?;
    let results = results_dir(args.results.as_deref())?;
    // A scratch image big enough for the largest scenario.
    let needed = planned.iter().map(|p| p.plan.space_needed()).max().unwrap_or(0);
    let request = args.target.request()?;
    let session = match Session::open(&request, needed, "nothing was measured")? {
        Opened::Ready(s) => s,
        Opened::Interrupted(sig) => return Ok(128 + sig),
    };
    let stop = session.stop().clone();
    let target = session.testbed();
    let mut recording = Recording::open(args.record.store.as_deref(), args.record.no_store)?;
    let dir = target.dir();
    workdir::WorkDir::create(dir, false)?; // checks --dir is usable; removed at once
    if args.full {
        full_preflight(dir, &planned)?;
    }
    let started_at = now_rfc3339();
    let clock = Instant::now();
    let mut environment = environment::fingerprint(dir);
    target.annotate_environment(&mut environment);

    // Runs, one after another, each result on disk as soon as it exists.
    let mut entries = Vec::new();
    // Each scenario's figures, for --expect.
    let mut judged: Vec<NamedRun> = Vec::new();
    let n = planned.len();
    for (i, p) in planned.iter().enumerate() {
        let name = p.scenario.name();
        if stop.is_set() {
            entries.push(entry(p, "skipped", None, 0.0, String::new(), None));
            judged.push(verdict::named(name, Err("it was skipped".into())));
            continue;
        }
        if !args.quiet {
            note!("[{}/{n}] {name}: {}", i + 1, p.scenario.purpose());
        }
        let t0 = Instant::now();
        let mut exporter = report::exporter(Format::Text, true);
        let outcome = session
            .measure_shown(p, false, exporter.as_mut(), args.quiet, false)
            .finished;
        let secs = t0.elapsed().as_secs_f64();
        let e = match outcome {
            Ok(mut finished) => {
                if !expect.is_empty() {
                    judged.push(verdict::named(name, Ok(&finished.result)));
                }
                let file = format!("{name}.json");
                let run = keep(&mut recording, &mut finished.result, &results.join(&file))?;
                let headline = finished.result.headline();
                let mut e = entry(p, finished.status.word(), Some(file), secs, headline, None);
                e.run = run;
                e
            }
            Err(err) => {
                judged.push(verdict::named(name, Err("it failed, with no result".into())));
                entry(p, "failed", None, secs, String::new(), Some(format!("{err:#}")))
            }
        };
        if !args.quiet {
            note!(
                "[{}/{n}] {name} {} in {secs:.1} s{}: {}",
                i + 1,
                e.status,
                e.run.map_or(String::new(), |id| format!(", stored as run {id}")),
                e.error.as_ref().unwrap_or(&e.headline)
            );
        }
        entries.push(e);
    }

    // Summary: the file, then the screen.
    let summary = Summary {
        started_at,
        duration_s: clock.elapsed().as_secs_f64(),
        full: args.full,
        interrupted: stop.signal().is_some(),
        environment,
        store: recording.path().map(|p| p.to_string()),
        scenarios: entries,
    };
    write_json_atomically(&summary, &results.join(SUMMARY_FILE))?;
    print!("{}", render(&summary, &results));
    if let Some(sig) = session.close() {
        note!("fsynclab: interrupted by signal {sig}; the summary covers what ran until then");
        return Ok(128 + sig);
    }
    let bad: Vec<&str> = summary
        .scenarios
        .iter()
        .filter(|e| e.status != "ok")
        .map(|e| e.scenario.as_str())
        .collect();
    if !expect.is_empty() {
        let trouble = (!bad.is_empty()).then(|| format!("{} did not end clean", bad.join(", ")));
        return Ok(verdict::judge(expect, &judged, trouble));
    }
    Ok(if bad.is_empty() { 0 } else { 1 })
}

fn entry(
    p: &Planned,
    status: &str,
    result: Option<String>,
    secs: f64,
    headline: String,
    error: Option<String>,
) -> Entry {
    Entry {
        scenario: p.scenario.name().to_string(),
        status: status.to_string(),
        result,
        run: None,
        duration_s: secs,
        headline,
        error,
        params: p.params.to_text_map(),
    }
}

/// Each scenario's parameters: its defaults, then the suite's scaled settings (or, with
/// `full`, every seed value), then the user's `--set SCENARIO.KEY=VALUE` (or `KEY=VALUE`
/// for every scenario that has KEY).
/// The room the suite's largest scenario needs: the scratch image's default size.
pub(crate) fn space_needed(args: &SuiteArgs) -> Result<u64> {
    Ok(plan(&args.sets, args.full)?
        .iter()
        .map(|p| p.plan.space_needed())
        .max()
        .unwrap_or(0))
}

/// How long the suite's scenarios measure, one after another; `None` if one of them takes
/// as long as the device does.
pub(crate) fn expected_duration(args: &SuiteArgs) -> Result<Option<Duration>> {
    Ok(plan(&args.sets, args.full)?
        .iter()
        .map(|p| p.plan.expected_duration())
        .sum())
}

fn plan(sets: &[String], full: bool) -> Result<Vec<Planned>> {
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
fn scaled_sets(s: &dyn Scenario) -> Vec<String> {
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
fn full_preflight(dir: &Path, planned: &[Planned]) -> Result<()> {
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

/// The results directory: `--results DIR` (created if needed), or a new timestamped one in
/// the current directory.
fn results_dir(arg: Option<&Path>) -> Result<PathBuf> {
    let path = match arg {
        Some(p) => p.to_path_buf(),
        None => {
            let stamp: String = now_rfc3339().chars().filter(|c| c.is_ascii_alphanumeric()).collect();
            PathBuf::from(format!("fsynclab-results-{stamp}"))
        }
    };
    std::fs::create_dir_all(&path)
        .map_err(|e| Usage(format!("--results {}: cannot create it ({e})", path.display())))?;
    if !crate::sys::writable(&path) {
        return Err(Usage(format!(
            "--results {}: cannot write there ({}); choose another directory",
            path.display(),
            crate::sys::why_not_writable(&path)
        ))
        .into());
    }
    Ok(path)
}

/// The one-screen summary.
pub(crate) fn render(s: &Summary, results: &Path) -> String {
    let mut out = String::new();
    let e = &s.environment;
    let fs = e
        .filesystem
        .as_ref()
        .map_or("?".to_string(), |f| format!("{} at {}", f.fstype, f.mount_point));
    let dev = e.device.as_ref().map_or(String::new(), |d| {
        format!(
            " on {} [{}, {}]",
            d.name,
            d.scheduler.as_deref().unwrap_or("?"),
            d.write_cache.as_deref().unwrap_or("?")
        )
    });
    out.push_str(&format!(
        "fsynclab suite{}: {} scenarios in {:.0} s{}\n",
        if s.full { " --full" } else { "" },
        s.scenarios.iter().filter(|x| x.status != "skipped").count(),
        s.duration_s,
        if s.interrupted { " (interrupted)" } else { "" }
    ));
    out.push_str(&format!(
        "  env  Linux {}, {} CPUs, {:.1} GiB; {fs}{dev}; dirty_ratio={}\n\n",
        e.kernel,
        e.cpus,
        e.memory_bytes as f64 / (1u64 << 30) as f64,
        e.sysctls.get("dirty_ratio").map_or("?".to_string(), u64::to_string)
    ));
    let w = s.scenarios.iter().map(|x| x.scenario.len()).max().unwrap_or(0);
    for x in &s.scenarios {
        let what = match (x.status.as_str(), &x.error) {
            (_, Some(err)) => format!("FAILED: {err}"),
            ("skipped", _) => "skipped (interrupted)".to_string(),
            ("ok", _) => x.headline.clone(),
            (status, _) => format!("{} ({status})", x.headline),
        };
        out.push_str(&format!("  {:<w$}  {what}\n", x.scenario));
    }
    out.push_str(&format!("\nresults: {}\n", results.display()));
    let ids: Vec<i64> = s.scenarios.iter().filter_map(|x| x.run).collect();
    if let (Some(store), Some(first), Some(last)) = (&s.store, ids.first(), ids.last()) {
        let runs = if first == last {
            format!("run {first}")
        } else {
            format!("runs {first}-{last}")
        };
        out.push_str(&format!("stored: {runs} in {}\n", recording::shown(Path::new(store))));
    }
    out
}

/// Records a scenario's result in the store (when there is one) and writes its file: compact
/// JSON without the samples when they are in the store, with them when they are not.
fn keep(recording: &mut Recording, result: &mut crate::result::RunResult, file: &Path) -> Result<Option<i64>> {
    let id = cell::record(recording, result, None, Say::Nothing)?;
    match id {
        Some(id) => {
            let value = recording::value_without_samples(result)?;
            write_compact_json_atomically(&value, file)?;
            Ok(Some(id.0))
        }
        None => {
            write_compact_json_atomically(result, file)?;
            Ok(None)
        }
    }
}
