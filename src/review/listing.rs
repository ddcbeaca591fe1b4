//! `fsynclab runs`: the stored runs a filter selects, oldest first, one line each — id,
//! start, scenario, measured time, calls, the run's main figure, the testbed, and its place
//! in a matrix — or as JSON.

use anyhow::Result;
use serde_json::{json, Value};

use crate::cli::{ListFormat, RunsArgs};
use crate::environment::Fingerprint;
use crate::error::Usage;
use crate::params::split_assignment;
use crate::record;
use crate::store::{RunFilter, RunSummary};

pub(crate) fn runs(args: &RunsArgs) -> Result<i32> {
    let mut params = Vec::new();
    for p in &args.param {
        let (k, v) = split_assignment(p).map_err(|_| Usage(format!("--param {p}: expected KEY=VALUE")))?;
        params.push((k, v));
    }
    let filter = RunFilter {
        scenario: args.scenario.clone(),
        since: args.since.clone(),
        matrix_id: args.matrix.clone(),
        params,
        contains: args.grep.clone(),
        limit: args.last,
        ..Default::default()
    };
    let (store, path) = record::open_for_reading(args.store.store.as_deref())?;
    let runs = store.runs(&filter)?;
    let out = match args.format {
        ListFormat::Json => serde_json::to_string_pretty(&runs.iter().map(as_json).collect::<Vec<_>>())? + "\n",
        ListFormat::Text if runs.is_empty() => format!("no runs in {} match\n", record::shown(&path)),
        ListFormat::Text => table(&runs),
    };
    super::print(&out)
}

/// `ext4 hdd-7200`, `ext4 at /work` for a --dir run; `?` when the run's environment is not
/// known.
pub(crate) fn testbed(env: Option<&Fingerprint>) -> String {
    let Some(env) = env else { return "?".into() };
    match &env.scratch {
        Some(s) => {
            let fs = match s.mount_options.as_str() {
                "" => s.fstype.clone(),
                opts => format!("{}:{opts}", s.fstype),
            };
            let device = env.device_profile.as_ref().map(|d| d.name.as_str()).unwrap_or("");
            let scheduler = s.scheduler.as_deref().unwrap_or("");
            [fs.as_str(), device, scheduler]
                .into_iter()
                .filter(|x| !x.is_empty())
                .collect::<Vec<_>>()
                .join(" ")
        }
        None => match &env.filesystem {
            Some(f) => format!("{} at {}", f.fstype, f.mount_point),
            None => "?".into(),
        },
    }
}

/// The run's main figure as `fsync.p99 4.60 ms`.
fn main_figure(r: &RunSummary) -> String {
    let Ok(figures) = r.figures() else {
        return "-".into();
    };
    match figures.main_figure() {
        Some(f) => match figures.values.get(&f) {
            Some(v) => format!("{f} {} {}", f.format(*v), f.unit()),
            None => "-".into(),
        },
        None => "no calls".into(),
    }
}

fn table(runs: &[RunSummary]) -> String {
    let mut rows: Vec<[String; 8]> = vec![[
        "id".into(),
        "started".into(),
        "scenario".into(),
        "measured".into(),
        "calls".into(),
        "main figure".into(),
        "testbed".into(),
        "matrix".into(),
    ]];
    for r in runs {
        let matrix = r.matrix.as_ref().map_or(String::new(), |m| {
            format!("{} {} #{}", m.matrix_id, m.cell_label(), m.repetition + 1)
        });
        rows.push([
            r.id.to_string(),
            r.started_at.replace('T', " ").trim_end_matches('Z').to_string(),
            format!("{}{}", r.scenario, if r.interrupted { " (interrupted)" } else { "" }),
            format!("{:.1} s", r.duration_s),
            r.sample_count.to_string(),
            main_figure(r),
            testbed(r.head.as_ref().ok().map(|h| &h.environment)),
            matrix,
        ]);
    }
    let mut widths = [0usize; 8];
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(widths).enumerate() {
            // Numbers right-aligned; text left-aligned.
            if matches!(i, 0 | 3 | 4) {
                line.push_str(&format!("{c:>w$}  "));
            } else {
                line.push_str(&format!("{c:<w$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn as_json(r: &RunSummary) -> Value {
    json!({
        "id": r.id.0,
        "uid": r.uid,
        "scenario": r.scenario,
        "started_at": r.started_at,
        "recorded_at": r.recorded_at,
        "duration_s": r.duration_s,
        "interrupted": r.interrupted,
        "calls": r.sample_count,
        "params": r.params,
        "testbed": testbed(r.head.as_ref().ok().map(|h| &h.environment)),
        "figures": r.figures().ok().map(|f| {
            f.values.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()
        }),
        "matrix": r.matrix.as_ref().map(|m| json!({
            "id": m.matrix_id,
            "cell": m.axes.iter().map(|(k, v)| json!([k, v])).collect::<Vec<_>>(),
            "repetition": m.repetition + 1,
        })),
    })
}
