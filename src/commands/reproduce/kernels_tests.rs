//! Tests of `reproduce --kernel A,B` without a VM: the kernels checked, the runs split by
//! kernel, what changed between them and its rendering, on a small experiment of the
//! tests' own (issue 26, item 4).

use super::super::experiment::{worst_s, Group};
use super::super::verdict::Judgement;
use super::super::{sidebyside, Reproduction};
use super::*;
use crate::cli::ReproduceFormat;
use crate::measure::{OpKind, OpStats};
use crate::result::tests_support::empty_result;

/// One finding: the worst fsync is a stall of a second or more.
struct Stall {
    scratch: bool,
}

impl Experiment for Stall {
    fn seed(&self) -> &'static str {
        "009"
    }
    fn title(&self) -> &'static str {
        "a stall"
    }
    fn era(&self, _: Size) -> String {
        "hdd".into()
    }
    fn groups(&self, _: Size) -> Vec<Group> {
        let g = Group::new("overwrite-fsync").axis("sleep", &["1s"]).figure("fsync.max");
        vec![if self.scratch { g.on(Key::Scratch, "ext4") } else { g }]
    }
    fn rows(&self, m: &Measured) -> Vec<Row> {
        let row = Row::new("009", "fsync stalls for seconds").published("6.2 s", &[]);
        match m.median("", &[("sleep", "1s")], |r| worst_s(r, OpKind::Fsync)) {
            None => vec![row],
            Some((s, ids)) => {
                let verdict = if s >= 1.0 {
                    Verdict::Reproduced
                } else {
                    Verdict::NotReproduced
                };
                vec![row
                    .measured(format!("worst fsync {s:.2} s"), ids)
                    .judged(Judgement::new(verdict, "against 1 s"))]
            }
        }
    }
}

static STALL: Stall = Stall { scratch: true };
static NO_SCRATCH: Stall = Stall { scratch: false };

fn run(id: i64, fsync_max_ms: u64) -> Run {
    let mut result = empty_result();
    result.duration_s = 1.0;
    let mut stats = OpStats {
        count: 3,
        ..Default::default()
    };
    stats.latency_ns.max = fsync_max_ms * 1_000_000;
    result.ops.insert(OpKind::Fsync, stats);
    Run { id: Some(id), result }
}

/// Runs of the one cell on `host` (ids from 1) and on `6.1` (ids from 100).
fn measured(host_ms: &[u64], guest_ms: &[u64]) -> Measured {
    let cell = |k: &str, runs: Vec<Run>| CellRuns {
        group: "",
        axes: vec![("sleep".into(), "1s".into()), (KERNEL_AXIS.into(), k.into())],
        runs,
    };
    let ids = |from: i64, ms: &[u64]| ms.iter().zip(from..).map(|(v, id)| run(id, *v)).collect();
    Measured {
        cells: vec![cell("host", ids(1, host_ms)), cell("6.1", ids(100, guest_ms))],
        failures: vec!["reproduce1-009 sleep=1s kernel=6.1 #2: the guest brought no result back".into()],
    }
}

fn kernels() -> Vec<String> {
    vec!["host".into(), "6.1".into()]
}

fn reproduction(m: &Measured) -> Reproduction {
    Reproduction {
        id: "reproduce1".into(),
        size: Size::Quick,
        machine: "Linux 6.18, 2 CPUs".into(),
        store: "s.sqlite".into(),
        started_at: "2026-11-27T00:00:00Z".into(),
        duration_s: Some(60.0),
        runs: 4,
        stored_runs_a_configuration: None,
        interrupted: false,
        kernels: kernels(),
        seeds: vec![seed_report(
            &STALL,
            Size::Quick,
            m,
            vec!["reproduce1-009".into()],
            &kernels(),
        )],
    }
}

#[test]
fn runs_are_split_by_kernel_with_the_kernel_pair_dropped() {
    let m = measured(&[2000, 2100, 1900], &[300]);
    let host = split(&m, "host", &kernels());
    assert_eq!(host.cells.len(), 1);
    assert_eq!(host.cells[0].axes, [("sleep".to_string(), "1s".to_string())]);
    assert_eq!(host.cells[0].runs.len(), 3);
    assert!(host.failures.is_empty(), "{:?}", host.failures);
    let guest = split(&m, "6.1", &kernels());
    assert_eq!(guest.cells[0].runs[0].id, Some(100));
    assert_eq!(guest.failures.len(), 1);
}

#[test]
fn each_kernels_findings_are_judged_on_its_own_runs_and_the_change_said() {
    let m = measured(&[2000, 2100, 1900], &[300, 320, 310]);
    let s = seed_report(&STALL, Size::Quick, &m, Vec::new(), &kernels());
    assert!(s.rows.is_empty());
    let verdicts: Vec<(String, Verdict)> = s
        .by_kernel
        .iter()
        .map(|k| (k.kernel.clone(), k.rows[0].judgement.verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("host".into(), Verdict::Reproduced),
            ("6.1".into(), Verdict::NotReproduced)
        ]
    );
    assert_eq!(s.by_kernel[1].rows[0].runs, [100, 101, 102]);
    let c = &s.changes[0];
    assert!(!c.same_verdict);
    assert_eq!(c.verdicts, "reproduced on host, not reproduced on 6.1");
    assert_eq!(c.figure.as_deref(), Some("fsync.max (sleep=1s)"));
    assert_eq!((c.median_reference, c.median_kernel), (Some(2000.0), Some(310.0)));
    assert!((c.ratio.unwrap() - 0.155).abs() < 1e-9, "{:?}", c.ratio);
    // Three runs a side cannot reach p < 0.05 however far apart: said, not claimed.
    assert!(!c.significant);
    assert!(
        c.confidence
            .starts_with("3 runs against 3 cannot reach p < 0.05 (the smallest p possible is 0.100)"),
        "{}",
        c.confidence
    );

    let m = measured(&[2000, 2100, 1900, 2050], &[300, 320, 310, 305]);
    let c = &seed_report(&STALL, Size::Quick, &m, Vec::new(), &kernels()).changes[0];
    assert!(c.significant, "{c:?}");
    assert!(
        c.confidence.starts_with("a significant change (Mann-Whitney p = 0.029"),
        "{}",
        c.confidence
    );

    let m = measured(&[2000], &[2100]);
    let c = &seed_report(&STALL, Size::Quick, &m, Vec::new(), &kernels()).changes[0];
    assert!(c.same_verdict);
    assert_eq!(c.verdicts, "the same: reproduced");
    assert_eq!(c.confidence, "one run a side: cannot tell a change from noise");
    assert!(c.p_value.is_none());
}

#[test]
fn one_kernel_alone_gives_the_plain_rows_of_its_runs() {
    let m = measured(&[2000], &[300]);
    let s = seed_report(&STALL, Size::Quick, &m, Vec::new(), &["6.1".to_string()]);
    assert!(s.by_kernel.is_empty() && s.changes.is_empty());
    assert_eq!(s.rows[0].judgement.verdict, Verdict::NotReproduced);
    assert_eq!(s.rows[0].runs, [100]);
}

#[test]
fn the_findings_are_shown_side_by_side_with_what_changed() {
    let r = reproduction(&measured(&[2000, 2100, 1900], &[300, 320, 310]));
    let t = sidebyside::render(&r, ReproduceFormat::Text).unwrap();
    assert!(
        t.contains("\nkernels: host, 6.1 (the first is the reference A)\n"),
        "{t}"
    );
    assert!(
        t.contains("\n  host       REPRODUCED: worst fsync 2.00 s; against 1 s\n"),
        "{t}"
    );
    assert!(
        t.contains("\n  6.1        NOT REPRODUCED: worst fsync 0.31 s; against 1 s\n"),
        "{t}"
    );
    assert!(
        t.contains("\n  changed    reproduced on host, not reproduced on 6.1; fsync.max (sleep=1s) 2000 -> 310 ms, B/A 0.15 [0.14, 0.17]: 3 runs against 3 cannot reach p < 0.05"),
        "{t}"
    );
    assert!(
        t.ends_with("verdicts: host: 1 reproduced, 0 partly, 0 not reproduced, 0 reversed, 0 inconclusive; 6.1: 0 reproduced, 0 partly, 1 not reproduced, 0 reversed, 0 inconclusive; judged differently: 1 of 1 findings; a significant change of the main figure: 0\n"),
        "{t}"
    );

    let md = sidebyside::render(&r, ReproduceFormat::Markdown).unwrap();
    assert!(
        md.contains("| seed | claim | published | host | 6.1 | what changed |\n|---|---|---|---|---|---|\n"),
        "{md}"
    );
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| 009 |")).collect();
    assert_eq!(rows.len(), 1, "{md}");
    assert!(rows[0].contains("| **reproduced**: worst fsync 2.00 s | **not reproduced**: worst fsync 0.31 s | reproduced on host, not reproduced on 6.1; fsync.max"), "{md}");
    assert_eq!(rows[0].matches('|').count(), 7, "six columns: {}", rows[0]);

    let json: serde_json::Value =
        serde_json::from_str(&sidebyside::render(&r, ReproduceFormat::Json).unwrap()).unwrap();
    assert_eq!(json["kernels"], serde_json::json!(["host", "6.1"]));
    let seed = &json["seeds"][0];
    assert_eq!(seed["by_kernel"][1]["kernel"], "6.1");
    assert_eq!(seed["by_kernel"][1]["rows"][0]["verdict"], "not-reproduced");
    assert_eq!(seed["changes"][0]["same_verdict"], false);
    assert_eq!(seed["changes"][0]["runs_kernel"], 3);
    assert_eq!(seed["changes"][0]["significant"], false);
}

#[test]
fn kernels_are_checked_before_anything_runs() {
    let check = |spec: &str, e: &'static dyn Experiment| check(Some(spec), Some("30m"), &[e], Size::Quick);
    assert_eq!(
        check("host", &STALL).unwrap(),
        Vec::<String>::new(),
        "host alone is no kernel axis"
    );
    let e = check("host,0.0.0-none", &STALL).unwrap_err().0;
    assert!(
        e.starts_with("reproduce --kernel 0.0.0-none: no /boot/vmlinuz-0.0.0-none"),
        "{e}"
    );
    let e = check("host,host", &STALL).unwrap_err().0;
    assert_eq!(e, "reproduce --kernel host,host: host is given twice");
    let e = check("host,6.1.0-56-amd64", &NO_SCRATCH).unwrap_err().0;
    assert!(e.contains("not made on a scratch filesystem"), "{e}");
    let e = check("6.1,", &STALL).unwrap_err().0;
    assert!(e.contains("an empty value"), "{e}");
}

#[test]
fn a_guest_run_of_a_reproduction_is_explained_at_the_groups_threshold() {
    let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    let mut explain = ExplainOptions::default();
    let inside = args(&["run", "datasync", "--quiet", "--no-explain", "--set", "rounds=1"]);
    assert_eq!(
        guest_args(inside.clone(), &explain),
        inside,
        "no tracing on the host: none inside"
    );
    explain.trace = true;
    explain.threshold.over_ns = 5_000_000;
    assert_eq!(
        guest_args(inside, &explain),
        args(&[
            "run",
            "datasync",
            "--quiet",
            "--explain-over",
            "5000us",
            "--set",
            "rounds=1"
        ])
    );
}

/// One finding with a figure of its own: the worst fsync, as a rate (1 / seconds).
struct OwnFigure;

impl Experiment for OwnFigure {
    fn seed(&self) -> &'static str {
        "010"
    }
    fn title(&self) -> &'static str {
        "a rate"
    }
    fn era(&self, _: Size) -> String {
        "hdd".into()
    }
    fn groups(&self, _: Size) -> Vec<Group> {
        vec![Group::new("overwrite-fsync")
            .on(Key::Scratch, "ext4")
            .axis("sleep", &["1s"])
            .figure("fsync.max")]
    }
    fn rows(&self, m: &Measured) -> Vec<Row> {
        let worst = |r: &crate::result::RunResult| worst_s(r, OpKind::Fsync);
        let row = Row::new("010", "fsyncs are fast").published("fast", &[]);
        match m.median("", &[("sleep", "1s")], worst) {
            None => vec![row],
            Some((s, ids)) => vec![row
                .measured(format!("worst fsync {s:.2} s"), ids)
                .judged(Judgement::new(Verdict::Reproduced, "fast"))
                .figure(
                    "worst fsyncs/s",
                    "1/s",
                    m.values("", &[("sleep", "1s")], worst)
                        .into_iter()
                        .map(|s| 1.0 / s)
                        .collect(),
                )],
        }
    }
}

static OWN_FIGURE: OwnFigure = OwnFigure;

#[test]
/// Issue 60: a finding's own figure is what the kernels are compared on, with the ratio's
/// interval and p; a change is called at p < 0.05 with the interval clear of 1, and five
/// runs a side reach p < 0.01.
fn a_findings_own_figure_is_compared_with_its_interval_and_p() {
    // 1 s against 4 s worst fsyncs: 1.0 against 0.25 a second, B/A 0.25.
    let m = measured(&[1000, 1010, 990, 1005, 995], &[4000, 4040, 3960, 4020, 3980]);
    let s = seed_report(&OWN_FIGURE, Size::Quick, &m, Vec::new(), &kernels());
    let c = &s.changes[0];
    assert_eq!(c.figure.as_deref(), Some("worst fsyncs/s"));
    assert_eq!(c.unit, "1/s");
    assert_eq!((c.runs_reference, c.runs_kernel), (5, 5));
    assert!((c.ratio.unwrap() - 0.25).abs() < 0.01, "{:?}", c.ratio);
    let [low, high] = c.interval.unwrap();
    assert!(low <= 0.25 && (0.25..1.0).contains(&high), "{low} {high}");
    assert!(c.p_value.unwrap() < 0.01, "{:?}", c.p_value);
    assert!(c.significant);
    assert!(
        c.confidence
            .starts_with("a significant change (Mann-Whitney p = 0.008, 5 runs against 5)"),
        "{}",
        c.confidence
    );
    let line = sidebyside::figure_text(c);
    assert!(line.starts_with("worst fsyncs/s "), "{line}");
    assert!(line.contains(" 1/s, B/A 0.25 ["), "{line}");

    // The same kernel's runs on both sides, interleaved: no change called.
    let m = measured(&[1000, 1040, 990, 1020, 980], &[1010, 1030, 985, 1005, 995]);
    let c = &seed_report(&OWN_FIGURE, Size::Quick, &m, Vec::new(), &kernels()).changes[0];
    assert!(!c.significant, "{c:?}");
    assert!(
        c.confidence.starts_with("not significant (Mann-Whitney p = "),
        "{}",
        c.confidence
    );
    let [low, high] = c.interval.unwrap();
    assert!(low < 1.0 && 1.0 < high, "{low} {high}");
}
