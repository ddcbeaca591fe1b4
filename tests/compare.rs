//! Issue 11: comparing configurations through the library, the way `fsynclab compare` and
//! `fsynclab matrix` will: runs recorded in the store with their matrix cell, listed back,
//! turned into run-level figures, compared, and laid out as seed 002's table.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use fsynclab::compare::table::{self, TableSpec};
use fsynclab::compare::{compare_sets, render_comparison, Figure, Metric, Settings, Verdict};
use fsynclab::store::{MatrixPlace, MatrixRecord, RunFilter, RunSummary, Store};
use serde_json::{json, Value};

common::tests! {
    doubled_flush_time_is_slower_with_a_ratio_near_2,
    two_sets_of_the_same_configuration_show_no_difference,
    a_stored_matrix_becomes_seed_002s_table,
}

/// A result of an fsync-bound run whose flush takes `flush_ms`: ops/s, p50, p99 and max
/// follow from it, with a run-to-run spread of about ±2% (`noise` in -1..1).
fn result(flush_ms: f64, noise: f64, started_at: &str) -> Value {
    let f = 1.0 + 0.02 * noise;
    let p50 = flush_ms * 1e6 * f;
    let count = (30.0 * 1000.0 / (flush_ms * f)) as u64;
    json!({
        "schema_version": 1, "scenario": "fsync-tps", "started_at": started_at,
        "duration_s": 30.0, "interrupted": false,
        "params": {"threads": "1"},
        "environment": {"fsynclab_version": "0.1.0", "kernel": "6.1.0", "cpus": 2, "memory_bytes": 8u64 << 30,
                        "target": "/work", "filesystem": null, "device": null, "sysctls": {},
                        "device_profile": {"name": format!("flush={flush_ms}ms")}},
        "ops": {"fsync": {"count": count, "errors": 0, "bytes": 0, "latency_ns": {
            "min": (p50 * 0.9) as u64, "p50": p50 as u64, "p90": (p50 * 1.1) as u64,
            "p99": (p50 * 1.3) as u64, "p999": (p50 * 1.5) as u64, "max": (p50 * 2.0) as u64,
            "mean": p50 as u64}}},
        "background": null
    })
}

/// Deterministic noise in -1..1.
fn noise(i: u64) -> f64 {
    let x = (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 11) as f64 / (1u64 << 53) as f64;
    2.0 * x - 1.0
}

/// The runs of the matrix [`record_matrix`] stores, read back from a store in memory.
fn the_matrix_runs() -> Vec<RunSummary> {
    let mut store = Store::open_in_memory().unwrap();
    record_matrix(&mut store);
    store
        .runs(&RunFilter {
            matrix_id: Some("m-flush".into()),
            ..Default::default()
        })
        .unwrap()
}

/// Stores matrix `m-flush`: fsync-tps on two emulated flush times, five runs each.
fn record_matrix(store: &mut Store) {
    store
        .create_matrix(&MatrixRecord {
            id: "m-flush".into(),
            scenario: "fsync-tps".into(),
            created_at: "2026-11-22T09:00:00Z".into(),
            plan: json!({"axes": {"device": ["flush=5ms", "flush=10ms"], "threads": ["1"]}, "repeat": 5}),
        })
        .unwrap();
    // Round-robin, as a matrix runs its cells: each repetition visits every cell.
    let mut i = 0;
    for repetition in 0..5u32 {
        for flush in [5.0, 10.0] {
            i += 1;
            let r = result(flush, noise(i), &format!("2026-11-22T09:{:02}:00Z", i));
            let place = MatrixPlace {
                matrix_id: "m-flush".into(),
                axes: vec![
                    ("threads".into(), "1".into()),
                    ("device".into(), format!("flush={flush}ms")),
                ],
                repetition,
            };
            store
                .record_run(&r, &[] as &[(u64, &str, u64, u64, Option<&str>)], Some(&place))
                .unwrap();
        }
    }
}

/// Issue 11: doubled flush time is slower with a ratio near 2.
fn doubled_flush_time_is_slower_with_a_ratio_near_2() {
    let runs = the_matrix_runs();
    assert_eq!(runs.len(), 10);
    let side = |device: &str| -> Vec<_> {
        runs.iter()
            .filter(|r| r.matrix.as_ref().unwrap().axes[1].1 == device)
            .map(|r| r.figures().unwrap())
            .collect()
    };
    let (a, b) = (side("flush=5ms"), side("flush=10ms"));
    let c = compare_sets(&a, &b, &Settings::default());
    let p50 = c
        .iter()
        .find(|c| c.figure == Figure::new("fsync", Metric::P50))
        .unwrap();
    assert_eq!(p50.verdict, Verdict::Slower);
    let ratio = p50.ratio.unwrap();
    assert!((1.9..2.1).contains(&ratio.ratio), "{ratio:?}");
    assert!(ratio.low > 1.8 && ratio.high < 2.2, "{ratio:?}");
    assert!(p50.p_adjusted.unwrap() < 0.01, "{p50:?}");
    let ops = c.iter().find(|c| c.figure.metric == Metric::OpsPerSec).unwrap();
    assert_eq!(ops.verdict, Verdict::Slower, "half the ops/s is slower too");
    let text = render_comparison("flush=5ms", "flush=10ms", &c);
    assert!(
        text.lines()
            .any(|l| l.starts_with("fsync.p50") && l.ends_with("slower")),
        "{text}"
    );
}

/// Issue 11: two sets of the same configuration show no difference.
fn two_sets_of_the_same_configuration_show_no_difference() {
    let mut store = Store::open_in_memory().unwrap();
    for i in 0..10u64 {
        let r = result(5.0, noise(100 + i), &format!("2026-11-22T10:{i:02}:00Z"));
        store
            .record_run(&r, &[] as &[(u64, &str, u64, u64, Option<&str>)], None)
            .unwrap();
    }
    let runs = store.runs(&RunFilter::default()).unwrap();
    let figures: Vec<_> = runs.iter().map(|r| r.figures().unwrap()).collect();
    let (a, b) = figures.split_at(5);
    let c = compare_sets(a, b, &Settings::default());
    assert_eq!(c.len(), 4, "ops/s, p50, p99, max");
    for x in &c {
        assert_eq!(x.verdict, Verdict::NoDifference, "{}: {x:?}", x.figure);
    }
}

/// Issue 11: a stored matrix becomes seed 002's table.
fn a_stored_matrix_becomes_seed_002s_table() {
    let runs = the_matrix_runs();
    let cells = table::group_cells(
        runs.iter()
            .map(|r| (r.matrix.clone().unwrap().axes, r.figures().unwrap())),
    );
    assert_eq!(cells.len(), 2);
    let t = table::build(
        &cells,
        &TableSpec {
            column_axis: "device".into(),
            figure: Figure::new("fsync", Metric::OpsPerSec),
            reference: None,
            settings: Settings::default(),
        },
    )
    .unwrap();
    let md = table::render_markdown(&t);
    let row = md.lines().nth(2).unwrap();
    assert!(row.starts_with("| 1 | **"), "the faster flush is best: {md}");
    assert!(row.ends_with("\\* |"), "and the slower one is marked significant: {md}");
}
