//! Explain options that make no sense are refused in one line before anything runs, and a
//! BPF tracer that cannot run or load is said so (or, left to its default, why the calls are
//! not explained).

use std::path::Path;

use serde_json::Value;

use crate::common::{self, fsynclab, PrivateState};
use crate::runner::temp;

/// Issue 25: `--explain --tracer bpf` where BPF cannot run (simulated with FSYNCLAB_NO_BPF)
/// is refused in one line before anything runs.
pub fn tracer_bpf_is_refused_in_one_line_where_bpf_is_missing() {
    let dir = temp();
    let out = fsynclab()
        .args([
            "run",
            "overwrite-fsync",
            "--quiet",
            "--explain",
            "--tracer",
            "bpf",
            "--dir",
        ])
        .arg(dir.path())
        .env("FSYNCLAB_NO_BPF", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--explain") && err.contains("BPF"), "{err}");
    assert_eq!(common::leftovers(dir.path()), Vec::<String>::new());
}

/// Issue 25: where the BPF program cannot load although fsynclab runs as root (here root
/// without CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN, as in a container), `--explain --tracer bpf`
/// fails in one line that names the tracer and what to do, leaving nothing behind, rather than
/// measuring untraced (a bench took such a run for a cheap tracer); a run that left
/// `--explain` to its default is measured and its result says why its calls are not explained.
pub fn an_explain_run_whose_bpf_tracer_cannot_load_fails_and_a_default_run_says_why_unexplained() {
    let without_bpf = |args: &[&str], dir: &Path| {
        let state = PrivateState::new();
        let out = std::process::Command::new("setpriv")
            .args(["--bounding-set", "-bpf,-perfmon,-sys_admin", "--"])
            .arg(common::bin())
            .args(["run", "overwrite-fsync", "--quiet", "--no-store", "--format", "json"])
            .args([
                "--set",
                "iterations=20",
                "--set",
                "sleep=0s",
                "--set",
                "background=none",
                "--dir",
            ])
            .arg(dir)
            .args(args)
            .env(state.env().0, state.env().1)
            .output()
            .unwrap();
        assert_eq!(common::leftovers(state.path()), Vec::<String>::new(), "state file left");
        out
    };
    let dir = temp();
    let out = without_bpf(&["--explain", "--tracer", "bpf"], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        err.contains("--explain: the BPF tracer could not start")
            && err.contains("CAP_BPF")
            && err.contains("--tracer tracefs"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "a result was printed");
    assert_eq!(
        common::leftovers(dir.path()),
        Vec::<String>::new(),
        "work directory left"
    );

    let out = without_bpf(&[], dir.path());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["ops"]["fsync"]["count"], 20, "{result}");
    let notes = result["explain"]["notes"].to_string();
    assert!(notes.contains("tracing could not start"), "{notes}");
    assert!(
        result["explain"]["calls"].as_array().is_none_or(Vec::is_empty),
        "{result}"
    );
}

/// Issue 10: bad explain flags are refused in one line.
pub fn bad_explain_flags_are_refused_in_one_line() {
    let dir = temp();
    for (flags, says) in [
        (&["--explain-over", "soon"][..], "--explain-over soon"),
        (&["--explain-slowest", "150%"], "percentage from 0 to 100"),
        (&["--timeline-interval", "0"], "at least 1ms"),
        (&["--tracer", "perf"], "--tracer perf: expected tracefs or bpf"),
        // A tracer named for a run that traces nothing is a mistake, not a no-op.
        (&["--tracer", "bpf", "--no-explain"], "--tracer bpf with --no-explain"),
    ] {
        let out = fsynclab()
            .args(["run", "overwrite-fsync", "--quiet"])
            .args(flags)
            .arg("--dir")
            .arg(dir.path())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(says), "{err}");
    }
    assert_eq!(common::leftovers(dir.path()), Vec::<String>::new());
}

/// Issue 16: bad exec explain flags are refused in one line.
pub fn bad_exec_explain_flags_are_refused_in_one_line() {
    for (flag, value) in [
        ("--explain-slowest", "200%"),
        ("--explain-over", "soon"),
        ("--timeline-interval", "0ms"),
        ("--tracer", "perf"),
    ] {
        let out = fsynclab()
            .args(["exec", "--explain", flag, value, "--", "true"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.contains(flag), "{stderr}");
    }
    // Each refused before anything runs, in one line that says what to do: no command; an
    // explain option or a store without --explain (nothing would be traced or recorded);
    // --explain with --cut (the cut's recovery and check would be traced as the command's).
    let dir = temp();
    let marker = dir.path().join("ran");
    let touch = format!("touch {}", marker.display());
    for (args, says) in [
        (vec!["--explain"], "give the command after --"),
        (vec!["--explain", "--"], "give the command after --"),
        (vec!["--explain-over", "1s", "--", "sh", "-c", &touch], "add --explain"),
        (
            vec!["--timeline-interval", "1s", "--", "sh", "-c", &touch],
            "add --explain",
        ),
        (vec!["--tracer", "bpf", "--", "sh", "-c", &touch], "add --explain"),
        (
            vec!["--store", "s.sqlite", "--", "sh", "-c", &touch],
            "only with --explain",
        ),
        (vec!["--no-store", "--", "sh", "-c", &touch], "only with --explain"),
        (
            vec![
                "--explain",
                "--scratch",
                "ext4",
                "--device",
                "hdd-7200",
                "--cut",
                "after=1s",
                "--",
                "sh",
                "-c",
                &touch,
            ],
            "--explain and --cut",
        ),
    ] {
        let out = fsynclab()
            .current_dir(dir.path())
            .arg("exec")
            .args(&args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
        assert!(!marker.exists(), "{args:?}: the command ran");
    }
    assert!(
        common::leftovers(dir.path()).is_empty(),
        "{:?}",
        common::leftovers(dir.path())
    );
}
