//! Issue 19, items 5, 8 and 15: matrices. Their input and plans are bounded, values spelled
//! differently are one value, and resumes at once make each run once.

use serde_json::{json, Value};

use fsynclab::store::Store;

use crate::common::{self, fsynclab};
use crate::setup::{all_at_once_succeed, run, s};

/// `args` must be refused within 20 s (a regression must not hang the suite), as bad
/// input: exit status 2, one line on stderr containing `says`.
fn refused_quickly(args: &[&str], says: &str) {
    let t0 = std::time::Instant::now();
    let out = fsynclab()
        .args(args)
        .timeout(std::time::Duration::from_secs(20))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?} (after {:?}): {err}", t0.elapsed());
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: one line: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert!(t0.elapsed().as_secs() < 5, "{args:?} took {:?}", t0.elapsed());
}

/// Issue 19, item 5: `matrix --file /dev/zero --dry-run` grew by 850 MB/s, `--file FIFO` blocked
/// for ever, a 100x100x100 plan with `--repeat 1000 --dry-run` printed nothing for 10 minutes at 16
/// GB. Files are bounded and regular; a plan is counted before it is built, and one past the stated
/// limit needs --yes.
pub fn matrix_input_and_plans_are_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let fifo = tmp.path().join("plan.toml");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    refused_quickly(
        &["matrix", "--file", "/dev/zero", "--dry-run"],
        "a device, not a matrix file",
    );
    refused_quickly(
        &["matrix", "--file", s(&fifo), "--dry-run"],
        "a FIFO, not a matrix file",
    );
    let big = tmp.path().join("big.toml");
    let mut text = String::from("scenario = \"fsync-tps\"\n");
    while text.len() <= 1 << 20 {
        text.push_str("# padding padding padding padding padding padding padding padding\n");
    }
    std::fs::write(&big, text).unwrap();
    refused_quickly(&["matrix", "--file", s(&big), "--dry-run"], "larger than 1024 KiB");

    let hundred = |key: &str, unit: &str| {
        format!(
            "{key}={}",
            (1..=100).map(|i| format!("{i}{unit}")).collect::<Vec<_>>().join(",")
        )
    };
    let (a, b, c) = (
        hundred("record_size", "k"),
        hundred("file_size", "M"),
        hundred("duration", "ms"),
    );
    let huge = [
        "matrix",
        "fsync-tps",
        "--axis",
        &a,
        "--axis",
        &b,
        "--axis",
        &c,
        "--repeat",
        "1000",
        "--dry-run",
    ];
    refused_quickly(
        &huge,
        "1000000000 runs (100 x 100 x 100 cells x 1000 repetitions), more than the 1000000",
    );
    let mut with_yes = huge.to_vec();
    with_yes.push("--yes");
    refused_quickly(&with_yes, "more than the 1000000 a matrix can plan");
    // 12,000 runs: past the 10,000 made unasked; with --yes the plan is printed.
    let many = format!(
        "duration={}",
        (1..=2400).map(|i| format!("{i}ms")).collect::<Vec<_>>().join(",")
    );
    let args = ["matrix", "fsync-tps", "--axis", &many, "--dry-run"];
    refused_quickly(
        &args,
        "12000 runs (2400 cells x 5 repetitions), more than the 10000 a matrix makes unasked; give --yes",
    );
    let out = fsynclab()
        .args(args)
        .arg("--yes")
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("2400 cells, 5 repetitions: 12000 runs"));
}

/// Issue 19, item 15: matrix values spelled differently (`sleep=0,0s,0ms`, `1G,1024M`) became
/// separate cells. They are read through the parameter's type, and one value given twice is
/// refused.
pub fn matrix_values_spelled_differently_are_one_value() {
    let tmp = tempfile::tempdir().unwrap();
    refused_quickly(
        &["matrix", "overwrite-fsync", "--axis", "sleep=0,0s,0ms", "--dry-run"],
        "--axis sleep: 0 and 0s are the same value; give each value once",
    );
    refused_quickly(
        &["matrix", "overwrite-fsync", "--axis", "file_size=1G,1024M", "--dry-run"],
        "--axis file_size: 1G and 1024M are the same value",
    );
    refused_quickly(
        &[
            "matrix",
            "overwrite-fsync",
            "--axis",
            "scratch-size=1G,1024M",
            "--dry-run",
        ],
        "--axis scratch-size: 1G and 1024M are the same value",
    );
    let file = tmp.path().join("m.toml");
    std::fs::write(
        &file,
        "scenario = \"overwrite-fsync\"\n[axes]\nsleep = [\"250ms\", \"0.25s\"]\n",
    )
    .unwrap();
    refused_quickly(
        &["matrix", "--file", s(&file), "--dry-run"],
        "250ms and 0.25s are the same value",
    );
    let (code, out, err) = run(&["matrix", "overwrite-fsync", "--axis", "sleep=0,1s", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("2 cells"), "{out}");
}

/// Issue 19, item 8: two `matrix --resume ID` at once both made the missing runs: 7 runs in a 4-run
/// matrix, the duplicates folded into the medians. Each run's place is claimed in the store
/// first: three resumes at once make each run once.
pub fn concurrent_resumes_make_each_run_once() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("S.sqlite");
    let work = tmp.path().join("work");
    std::fs::create_dir(&work).unwrap();
    {
        // A matrix recorded with its plan, none of its 4 runs made yet (as one stopped at once).
        let mut st = Store::open(&store).unwrap();
        st.create_matrix(&fsynclab::store::MatrixRecord {
            id: "m1".into(),
            scenario: "overwrite-fsync".into(),
            created_at: "2026-11-22T09:00:00Z".into(),
            plan: json!({
                "scenario": "overwrite-fsync",
                "sets": ["duration=1s", "sleep=100ms", "file_size=16M", "chunk=1M"],
                "target": [["dir", s(&work)]],
                "axes": [{"key": "sync", "values": ["fsync", "fdatasync"]}],
                "repeat": 2,
            }),
        })
        .unwrap();
    }
    all_at_once_succeed(3, &["matrix", "--resume", "m1", "--quiet", "--store", s(&store)], "");
    let (code, out, err) = run(&["runs", "--matrix", "m1", "--format", "json", "--store", s(&store)]);
    assert_eq!(code, 0, "{err}");
    let mut places: Vec<String> = serde_json::from_str::<Vec<Value>>(&out)
        .unwrap()
        .iter()
        .map(|r| r["matrix"]["cell"].to_string() + &r["matrix"]["repetition"].to_string())
        .collect();
    places.sort();
    let made = places.len();
    places.dedup();
    assert_eq!((made, places.len()), (4, 4), "each of the 4 runs made once: {out}");
    assert!(common::leftovers(&work).is_empty(), "{:?}", common::leftovers(&work));
}
