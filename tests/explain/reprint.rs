//! Every run records a timeline of the machine's writeback state, and `fsynclab explain`
//! prints a saved result's explanation (or its timeline alone) again.

use serde_json::Value;

use crate::common::{self, fsynclab, one_at_a_time, PrivateState};
use crate::runner::{run_to_end, temp, Run};
use crate::tracefs::assert_no_instance_of;

/// Issue 10: every run records a timeline and explain reprints a saved result.
pub fn every_run_records_a_timeline_and_explain_reprints_a_saved_result() {
    let _one = one_at_a_time();
    let dir = temp();
    let file = dir.path().join("result.json");
    let out = fsynclab()
        .args(["run", "overwrite-fsync", "--quiet", "--no-explain", "--format", "json"])
        .args(["--timeline-interval", "50ms", "--output"])
        .arg(&file)
        .arg("--dir")
        .arg(dir.path())
        .args([
            "--set",
            "background=none",
            "--set",
            "iterations=4",
            "--set",
            "sleep=100ms",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_matches_schema(&result);
    assert!(result.get("explain").is_none(), "--no-explain traced");
    let timeline = &result["timeline"];
    assert_eq!(timeline["interval_ns"], 50_000_000);
    let points = timeline["points"].as_array().unwrap();
    // Four iterations with 100 ms sleeps: at least 300 ms, so six points or more, in order.
    assert!(points.len() >= 6, "{timeline}");
    assert!(points.windows(2).all(|w| w[0]["t_ns"].as_u64() < w[1]["t_ns"].as_u64()));
    assert!(points.iter().all(|p| p["dirty_bytes"].is_u64()), "{timeline}");
    let said = fsynclab().arg("explain").arg(&file).output().unwrap();
    assert!(said.status.success());
    let said = String::from_utf8(said.stdout).unwrap();
    assert!(
        said.contains("no calls explained") && said.contains("timeline: "),
        "{said}"
    );
    let text = fsynclab().arg("show").arg(&file).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("timeline: ") && !text.contains("slowest calls"), "{text}");
}

/// Issue 10: explain prints every part of a traced run.
pub fn explain_prints_every_part_of_a_traced_run() {
    let _one = one_at_a_time();
    let dir = temp();
    let file = dir.path().join("result.json");
    let state = PrivateState::new();
    let args: Vec<std::ffi::OsString> = [
        "run",
        "overwrite-fsync",
        "--quiet",
        "--explain",
        "--output",
        file.to_str().unwrap(),
        "--dir",
        dir.path().to_str().unwrap(),
    ]
    .into_iter()
    .chain(["--set", "background=none", "--set", "iterations=5", "--set", "sleep=0"])
    .map(Into::into)
    .collect();
    let Run { pid, out } = run_to_end(&state, &args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("slowest calls"), "{text}");
    let said = fsynclab().arg("explain").arg(&file).output().unwrap();
    let said = String::from_utf8(said.stdout).unwrap();
    // The slowest fsync and the slowest write at least, each with its parts and their sum.
    assert!(said.contains("fsync at ") && said.contains("write at "), "{said}");
    assert!(said.contains("parts add up to"), "{said}");
    assert_no_instance_of(&[pid]);
}
