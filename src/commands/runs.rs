//! `fsynclab runs`: the stored runs a filter selects, oldest first, one line each — id,
//! start, scenario, measured time, calls, the run's main figure, the testbed, the host when
//! the runs listed come from more than one, and its place in a matrix — or as JSON.

use anyhow::Result;
use serde_json::{json, Value};

use crate::cli::{ListFormat, RunsArgs};
use crate::environment::Fingerprint;
use crate::error::Usage;
use crate::params::{parse_value, split_assignment};
use crate::recording;
use crate::store::{RunFilter, RunSummary};

pub(crate) fn runs(args: &RunsArgs) -> Result<i32> {
    let mut params = Vec::new();
    for p in &args.param {
        let (k, v) = split_assignment(p).map_err(|_| Usage(format!("--param {p}: expected KEY=VALUE")))?;
        check_param_value(&k, &v)?;
        params.push((k, v));
    }
    let since = args.since.as_deref().map(parse_since).transpose()?;
    // Parameters are matched by value, after the query: the store keeps them as text.
    let filter = RunFilter {
        scenario: args.scenario.clone(),
        since,
        matrix_id: args.matrix.clone(),
        host: args.host.clone(),
        contains: args.grep.clone(),
        limit: if params.is_empty() { args.last } else { None },
        ..Default::default()
    };
    let (store, path) = recording::open_for_reading(args.store.store.as_deref())?;
    let mut runs = store.runs(&filter)?;
    if !params.is_empty() {
        runs.retain(|r| params.iter().all(|(k, v)| has_param(r, k, v)));
        if let Some(n) = args.last {
            runs.drain(..runs.len().saturating_sub(n));
        }
    }
    let out = match args.format {
        ListFormat::Json => serde_json::to_string_pretty(&runs.iter().map(as_json).collect::<Vec<_>>())? + "\n",
        ListFormat::Text if runs.is_empty() => format!("no runs in {} match\n", recording::shown_store(&path)),
        ListFormat::Text => table(&runs),
    };
    crate::report::print(&out)
}

/// `--since` as the store's own form of time (RFC 3339 UTC to the second): a date is its
/// first second, UTC; a time must say its zone. Anything else is refused (issue 19: `--since
/// garbage` was taken as text and matched nothing).
pub(crate) fn parse_since(text: &str) -> Result<String, Usage> {
    let t = text.trim();
    if let Ok(date) = t.parse::<jiff::civil::Date>() {
        if t.len() == "2026-11-22".len() {
            return Ok(format!("{date}T00:00:00Z"));
        }
    }
    if let Ok(ts) = t.parse::<jiff::Timestamp>() {
        // Stored times are whole seconds: a fraction of a second starts at the next one.
        let whole = ts.as_second() + i64::from(ts.subsec_nanosecond() > 0);
        if let Ok(ts) = jiff::Timestamp::from_second(whole) {
            return Ok(ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
    }
    Err(Usage(format!(
        "--since {text}: expected a date (2026-11-22) or a time with its zone (2026-11-22T08:00:00Z, 2026-11-22T09:00:00+01:00)"
    )))
}

/// The parameter `name` as the scenarios that have it declare it.
fn specs_named(name: &str) -> Vec<crate::params::ParamSpec> {
    crate::scenario::all()
        .into_iter()
        .flat_map(|s| s.params())
        .filter(|p| p.name == name)
        .collect()
}

/// Refuses a value that no scenario having the parameter could take: `--param sleep=abc`
/// would match nothing, silently.
fn check_param_value(name: &str, value: &str) -> Result<(), Usage> {
    let specs = specs_named(name);
    match specs.first() {
        Some(spec) if specs.iter().all(|s| parse_value(&s.kind, value).is_err()) => Err(Usage(format!(
            "--param {name}={value}: expected {}",
            spec.kind.expected()
        ))),
        _ => Ok(()),
    }
}

/// Whether run `r` has parameter `name` equal to `value` by the parameter's type, so that
/// `sleep=0` finds runs stored as `0s` and `file_size=1G` those stored as `1024M` (issue
/// 19); a parameter its scenario does not declare is compared as text.
fn has_param(r: &RunSummary, name: &str, value: &str) -> bool {
    let Some(stored) = r.params.get(name) else {
        return false;
    };
    let spec = crate::scenario::find(&r.scenario).and_then(|s| s.params().into_iter().find(|p| p.name == name));
    match spec.map(|s| (parse_value(&s.kind, stored), parse_value(&s.kind, value))) {
        Some((Ok(a), Ok(b))) => a == b,
        _ => stored.trim() == value.trim(),
    }
}

/// `ext4 hdd-7200`, `ext4 at /work` for a --dir run; `?` when the run's environment is not
/// known.
pub(crate) fn testbed(env: Option<&Fingerprint>) -> String {
    env.map_or_else(|| "?".into(), Fingerprint::testbed)
}

/// The kernel a run was made on: its release, and for a `--kernel` run the VM's
/// accelerator (`6.1.0-56-amd64 vm/tcg`), with `+guest-disk` when the guest emulated its
/// disk itself ([`crate::environment::VmInfo::disk_in_guest`]); `?` when the run's
/// environment is not known.
pub(crate) fn kernel(env: Option<&Fingerprint>) -> String {
    match env {
        None => "?".into(),
        Some(env) => match &env.vm {
            Some(vm) => format!(
                "{} vm/{}{}",
                vm.release,
                vm.accelerator,
                if vm.disk_in_guest { GUEST_DISK } else { "" }
            ),
            None => env.kernel.clone(),
        },
    }
}

/// What [`kernel`] adds for a run whose disk the guest emulated.
pub(crate) const GUEST_DISK: &str = "+guest-disk";

/// The run's main figure as `fsync.p99 4.60 ms`.
fn main_figure(r: &RunSummary) -> String {
    let Ok(figures) = r.figures() else {
        return "-".into();
    };
    match (figures.main_figure(), figures.main_figure_text()) {
        (None, _) => "no calls".into(),
        (Some(_), Some(text)) => text,
        (Some(_), None) => "-".into(),
    }
}

/// The run's calls: its samples, or for a run kept without them (a watch, whose calls are
/// counted in the kernel), the calls its operation statistics count.
fn calls(r: &RunSummary) -> u64 {
    match (r.sample_count, &r.head) {
        (0, Ok(head)) => head.ops.values().map(|o| o.count).sum(),
        (n, _) => n,
    }
}

fn table(runs: &[RunSummary]) -> String {
    // The host column only when it tells the runs apart: a farm's store, not a laptop's.
    let mut hosts: Vec<Option<&str>> = runs.iter().map(|r| r.host.as_deref()).collect();
    hosts.sort_unstable();
    hosts.dedup();
    let with_host = hosts.len() > 1;
    // The kernel column once a run of another kernel (`--kernel`) is among them.
    let with_kernel = runs
        .iter()
        .any(|r| r.head.as_ref().is_ok_and(|h| h.environment.vm.is_some()));
    let mut header: Vec<String> = [
        "id",
        "started",
        "scenario",
        "measured",
        "calls",
        "main figure",
        "testbed",
    ]
    .map(String::from)
    .to_vec();
    if with_kernel {
        header.push("kernel".into());
    }
    if with_host {
        header.push("host".into());
    }
    header.push("matrix".into());
    let mut rows: Vec<Vec<String>> = vec![header];
    for r in runs {
        let matrix = r.matrix.as_ref().map_or(String::new(), |m| {
            format!("{} {} #{}", m.matrix_id, m.cell_label(), m.repetition + 1)
        });
        let mut row = vec![
            r.id.to_string(),
            r.started_at.replace('T', " ").trim_end_matches('Z').to_string(),
            format!("{}{}", r.scenario, if r.interrupted { " (interrupted)" } else { "" }),
            format!("{:.1} s", r.duration_s),
            calls(r).to_string(),
            main_figure(r),
            testbed(r.head.as_ref().ok().map(|h| &h.environment)),
        ];
        if with_kernel {
            row.push(kernel(r.head.as_ref().ok().map(|h| &h.environment)));
        }
        if with_host {
            row.push(r.host.clone().unwrap_or_else(|| "?".into()));
        }
        row.push(matrix);
        rows.push(row);
    }
    let mut widths = vec![0usize; rows[0].len()];
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, (c, w)) in row.iter().zip(&widths).enumerate() {
            // Numbers right-aligned; text left-aligned.
            let w = *w;
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
        "host": r.host,
        "kernel": kernel(r.head.as_ref().ok().map(|h| &h.environment)),
        "vm": r.head.as_ref().ok().and_then(|h| h.environment.vm.as_ref()),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 26: a run whose disk the guest emulated is told apart by its kernel's label,
    /// which `compare` reads to warn that its disk was timed by the guest's CPU.
    #[test]
    fn the_kernel_label_says_a_vm_its_accelerator_and_a_disk_emulated_inside() {
        let mut env = Fingerprint {
            kernel: "6.18.0".into(),
            ..Fingerprint::default()
        };
        assert_eq!(kernel(Some(&env)), "6.18.0");
        let vm = crate::environment::VmInfo {
            release: "6.1.0-56-amd64".into(),
            accelerator: "tcg".into(),
            ..Default::default()
        };
        env.vm = Some(vm.clone());
        assert_eq!(kernel(Some(&env)), "6.1.0-56-amd64 vm/tcg");
        env.vm = Some(crate::environment::VmInfo {
            disk_in_guest: true,
            ..vm
        });
        assert_eq!(kernel(Some(&env)), "6.1.0-56-amd64 vm/tcg+guest-disk");
        assert_eq!(kernel(None), "?");
    }

    /// Issue 19, item 14: `--since` is a date or a time with its zone, nothing else.
    #[test]
    /// Issue 19.
    fn since_is_parsed_strictly() {
        assert_eq!(parse_since("2026-11-22").unwrap(), "2026-11-22T00:00:00Z");
        assert_eq!(parse_since("2026-11-22T08:00:00Z").unwrap(), "2026-11-22T08:00:00Z");
        assert_eq!(
            parse_since("2026-11-22T09:00:00+01:00").unwrap(),
            "2026-11-22T08:00:00Z"
        );
        assert_eq!(parse_since("2026-11-22T08:00:00.5Z").unwrap(), "2026-11-22T08:00:01Z");
        for bad in [
            "garbage",
            "2026-13-01",
            "2026-02-30",
            "2026-11-22T08:00:00",
            "2026",
            "",
            "yesterday",
        ] {
            let e = parse_since(bad).unwrap_err().to_string();
            assert!(e.contains("expected a date (2026-11-22)"), "{bad}: {e}");
        }
    }
}
