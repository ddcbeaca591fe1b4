//! What the regression tests share: made-up results and stores of runs (no measuring), and
//! fsynclab run to its end or refused in one line.

use std::path::Path;

use fsynclab::store::Store;
use serde_json::{json, Value};

use crate::common::{self, fsynclab};

/// A result of an fsync-bound run of `scenario` with parameters `params`, whose fsync takes
/// about `fsync_ms` (no samples: the store keeps what a run's head holds).
pub fn result(scenario: &str, params: Value, fsync_ms: f64, started_at: &str) -> Value {
    let p50 = fsync_ms * 1e6;
    json!({
        "schema_version": 1, "scenario": scenario, "started_at": started_at,
        "duration_s": 3.0, "interrupted": false, "params": params,
        "environment": {"fsynclab_version": "0.1.0", "kernel": "6.1.0", "cpus": 2, "memory_bytes": 8u64 << 30,
                        "target": "/work", "filesystem": null, "device": null, "sysctls": {}},
        "ops": {"fsync": {"count": (3000.0 / fsync_ms) as u64, "errors": 0, "bytes": 0, "latency_ns": {
            "min": (p50 * 0.9) as u64, "p50": p50 as u64, "p90": (p50 * 1.1) as u64,
            "p99": (p50 * 1.3) as u64, "p999": (p50 * 1.5) as u64, "max": (p50 * 2.0) as u64,
            "mean": p50 as u64}}},
        "background": null
    })
}

pub const NO_SAMPLES: &[(u64, &str, u64, u64, Option<&str>)] = &[];

/// A store at `path` holding `n` overwrite-fsync runs (ids 1..=n), fsync 1 ms and up.
pub fn store_with_runs(path: &Path, n: usize) {
    let mut store = Store::open(path).unwrap();
    for i in 0..n {
        let r = result(
            "overwrite-fsync",
            json!({"sleep": "1s", "sync": "fsync"}),
            1.0 + i as f64 * 0.01,
            &format!("2026-11-22T09:{:02}:00Z", i % 60),
        );
        store.record_run(&r, NO_SAMPLES, None).unwrap();
    }
}

/// Runs fsynclab with `args`: exit status, stdout, stderr.
pub fn run(args: &[&str]) -> (i32, String, String) {
    run_in(Path::new("."), args)
}

/// Runs fsynclab with `args` in `cwd`: exit status, stdout, stderr.
fn run_in(cwd: &Path, args: &[&str]) -> (i32, String, String) {
    let out = fsynclab().current_dir(cwd).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `args` must be refused as bad input: exit status 2, one line on stderr containing `says`.
pub fn refused(args: &[&str], says: &str) {
    refused_in(Path::new("."), args, says)
}

pub fn refused_in(cwd: &Path, args: &[&str], says: &str) {
    let (code, _, err) = run_in(cwd, args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
}

pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The number of runs `fsynclab runs` lists in `store`.
pub fn listed(store: &Path) -> usize {
    let (code, out, err) = run(&["runs", "--store", s(store), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str::<Vec<Value>>(&out).unwrap().len()
}

/// Writes `result` as a result file at `path`.
pub fn result_file(path: &Path, result: &Value) {
    std::fs::write(path, serde_json::to_vec(result).unwrap()).unwrap();
}

/// A 5-second `fsynclab run overwrite-fsync` in `work` recording into `store` (then `more`),
/// started in `cwd`: refused in one line containing `says`, before it measured anything.
pub fn refused_before_measuring(cwd: &Path, work: &Path, store: &Path, more: &[&str], says: &str) {
    let run = [
        "run",
        "overwrite-fsync",
        "--dir",
        s(work),
        "--set",
        "duration=5s",
        "--quiet",
    ];
    let t0 = std::time::Instant::now();
    refused_in(cwd, &[&run[..], &["--store", s(store)], more].concat(), says);
    assert!(t0.elapsed().as_secs() < 5, "refused before measuring");
}

/// `fsynclab ARGS` started `n` times at once, each of which must succeed (`what` prefixes a
/// failure's stderr).
pub fn all_at_once_succeed(n: usize, args: &[&str], what: &str) {
    let children: Vec<_> = (0..n)
        .map(|_| {
            std::process::Command::new(common::bin())
                .args(args)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{what}{}", String::from_utf8_lossy(&out.stderr));
    }
}
