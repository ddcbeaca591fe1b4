//! Issue 26 item 5: `--expect EXPR` makes a run's exit status the verdict on its figures,
//! as `git bisect run` reads it: 0 when every expectation is met, 1 when one is not, 125
//! when the run could not be made (a kernel that is not there), 2 for an expression that
//! is not one, refused before anything runs. Each expectation is one line on stderr with
//! the measured figure. The runs are short `--dir` runs; bounds are chosen so the verdict
//! is certain (no fsync is under 1 ns, every one of a 1-second run is under 1 hour).
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use common::Need::{Root, Tracefs};
use common::{fsynclab, leftovers, ScratchRun, TINY};

common::tests! {
    a_run_that_meets_every_expectation_exits_0_and_says_so,
    a_run_that_misses_one_expectation_exits_1_and_says_which,
    a_malformed_expectation_is_refused_before_anything_runs,
    a_kernel_that_is_not_there_exits_125_with_an_expectation,
    exec_expect_judges_the_commands_traced_calls: [Root, Tracefs],
    exec_expect_without_explain_is_refused_in_one_line,
}

/// `run overwrite-fsync --dir DIR` with the tiny settings and `expect` expressions: its exit
/// status and stderr.
fn run_expecting(dir: &std::path::Path, expect: &[&str]) -> (Option<i32>, String) {
    let mut cmd = fsynclab();
    cmd.args(["run", "overwrite-fsync", "--dir"]).arg(dir).args(TINY);
    for e in expect {
        cmd.args(["--expect", e]);
    }
    let out = cmd.output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

/// Two expectations, both certain to hold: exit status 0, a line each with its figure.
fn a_run_that_meets_every_expectation_exits_0_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run_expecting(dir.path(), &["fsync.p50<1h", "write.ops/s>0"]);
    assert_eq!(code, Some(0), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("expect fsync.p50<1h: measured "))
        .unwrap_or_else(|| panic!("{err}"));
    assert!(line.ends_with(" ms, met"), "{line}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("expect write.ops/s>0: measured ") && l.ends_with(" ops/s, met")),
        "{err}"
    );
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

/// One expectation met and one that cannot be (no fsync takes under a nanosecond): exit
/// status 1, the missed one said.
fn a_run_that_misses_one_expectation_exits_1_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = run_expecting(dir.path(), &["fsync.p50<1h", "fsync.p50<1ns"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("expect fsync.p50<1h: ") && l.ends_with(", met")),
        "{err}"
    );
    assert!(
        err.lines()
            .any(|l| l.starts_with("expect fsync.p50<1ns: measured ") && l.ends_with(" ms, not met")),
        "{err}"
    );
}

/// A figure `compare` does not know, a latency without its unit, no comparison: exit status
/// 2, one line, and nothing was measured (the directory is left as it was).
fn a_malformed_expectation_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    for (bad, says) in [
        ("fsync.p42<5ms", "'fsync.p42' is not a figure"),
        ("fsync.p99<50", "'50' needs a unit"),
        ("fsync.p99", "no comparison"),
    ] {
        let (code, err) = run_expecting(dir.path(), &["fsync.p50<1h", bad]);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("--expect {bad}: {says}")), "{err}");
        assert!(!err.contains("expect fsync.p50<1h"), "nothing was measured: {err}");
    }
    assert_eq!(leftovers(dir.path()), Vec::<String>::new());
}

/// `--kernel` naming a kernel that is not installed: refused before any VM or disk is made,
/// with exit status 125, so that `git bisect run` skips a commit whose kernel was not built.
fn a_kernel_that_is_not_there_exits_125_with_an_expectation() {
    let backing = common::backing();
    let out = ScratchRun::run("overwrite-fsync")
        .kernel("0.0.0-none")
        .args(["--expect", "fsync.p99<50ms"])
        .fs("ext4")
        .backing(backing.path())
        .command()
        .assert()
        .code(125)
        .get_output()
        .clone();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--kernel 0.0.0-none: no /boot/vmlinuz-0.0.0-none"),
        "{err}"
    );
    assert_eq!(leftovers(backing.path()), Vec::<String>::new());
}

/// `exec --explain --expect ... -- COMMAND` in DIR with the store in STORE: its exit status
/// and stderr. The command makes 20 fsyncs of a 4 KiB write unless `script` says otherwise.
fn exec_expecting(dir: &std::path::Path, expect: &[&str], script: &str) -> (Option<i32>, String) {
    let mut cmd = fsynclab();
    cmd.args(["exec", "--explain", "--no-store", "--dir"]).arg(dir);
    for e in expect {
        cmd.args(["--expect", e]);
    }
    let out = cmd.args(["--", "sh", "-c", script]).output().unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

const FSYNCS: &str = "for i in $(seq 20); do dd if=/dev/zero of=f bs=4k count=1 conv=fsync 2>/dev/null; done";

/// Issue 26 item 5, a database team's CI: `exec --explain --expect` judges the figures of
/// the command's own traced sync calls: met (0), not met (1), a figure the command never
/// made (125, naming the figures it has), and a command that fails (1, saying so).
fn exec_expect_judges_the_commands_traced_calls() {
    let dir = tempfile::tempdir().unwrap();
    let (code, err) = exec_expecting(dir.path(), &["fsync.p99<1h"], FSYNCS);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("expect fsync.p99<1h: measured ") && l.ends_with(", met")),
        "{err}"
    );
    let (code, err) = exec_expecting(dir.path(), &["fsync.p99<1h", "fsync.p50<1ns"], FSYNCS);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("expect fsync.p50<1ns: measured ") && l.ends_with(", not met")),
        "{err}"
    );
    let (code, err) = exec_expecting(dir.path(), &["fdatasync.p99<1h"], FSYNCS);
    assert_eq!(code, Some(125), "{err}");
    assert!(err.contains("fdatasync.p99"), "{err}");
    let (code, err) = exec_expecting(dir.path(), &["fsync.p99<1h"], &format!("{FSYNCS}; exit 3"));
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("the command exited with status 3"), "{err}");
    assert_eq!(leftovers(dir.path()), vec!["f".to_string()]);
}

/// `exec --expect` without `--explain` has no figures to judge: one line, exit status 2,
/// the command not run.
fn exec_expect_without_explain_is_refused_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran");
    let out = fsynclab()
        .args(["exec", "--dir"])
        .arg(dir.path())
        .args(["--expect", "fsync.p99<10ms", "--", "touch"])
        .arg(&marker)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("add --explain"), "{err}");
    assert!(!marker.exists(), "the command ran");
}
