//! How the tests of `--explain` start fsynclab and read what it made: a run to its end with a
//! state directory of its own (its pid known, for its trace instances), a run's JSON result
//! and text report, an `exec --explain` of a shell script, a stored run exported.

use std::path::Path;
use std::process::Stdio;

use serde_json::Value;

use crate::common::{self, fsynclab, PrivateState};

/// A temporary directory of the test's own: a work directory, a backing, a store's.
pub use crate::common::backing as temp;

/// A run of the test's own, whose pid it knows.
pub struct Run {
    pub pid: u32,
    pub out: std::process::Output,
}

/// fsynclab with the state directory `state` and the results store off, as a process the test
/// starts itself (to know its pid, signal it, or read its output as it comes).
pub fn fsynclab_in(state: &PrivateState) -> std::process::Command {
    let mut cmd = std::process::Command::new(common::bin());
    cmd.env(state.env().0, state.env().1).env("FSYNCLAB_STORE", "off");
    cmd
}

/// Runs fsynclab with `args` to its end, with the results store off.
pub fn run_to_end(state: &PrivateState, args: &[std::ffi::OsString]) -> Run {
    let child = fsynclab_in(state)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    Run {
        pid,
        out: child.wait_with_output().unwrap(),
    }
}

/// `fsynclab run SCENARIO ARGS... --format json` with a private state directory; the result,
/// checked against the schema, the text report the same result prints as (`show`), and the
/// run's pid.
pub fn run_json<A: AsRef<std::ffi::OsStr> + std::fmt::Debug>(scenario: &str, args: &[A]) -> (Value, String, u32) {
    let state = PrivateState::new();
    let dir = temp();
    let file = dir.path().join("result.json");
    let mut all: Vec<std::ffi::OsString> = ["run", scenario, "--quiet", "--format", "json", "--output"]
        .into_iter()
        .map(Into::into)
        .collect();
    all.push(file.clone().into());
    all.extend(args.iter().map(|a| a.as_ref().to_os_string()));
    let Run { pid, out } = run_to_end(&state, &all);
    assert!(
        out.status.success(),
        "{scenario} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_matches_schema(&result);
    let text = fsynclab().args(["show"]).arg(&file).output().unwrap();
    assert!(text.status.success());
    assert_eq!(common::leftovers(state.path()), Vec::<String>::new(), "state file left");
    (result, String::from_utf8(text.stdout).unwrap(), pid)
}

/// `fsynclab exec --explain ... -- sh -c SCRIPT` with a private state directory and store:
/// the run's output, and its pid.
pub fn exec_explained<A: AsRef<std::ffi::OsStr>>(store: &Path, target: &[A], script: &str) -> Run {
    let state = PrivateState::new();
    let mut args: Vec<std::ffi::OsString> = vec!["exec".into(), "--explain".into(), "--store".into(), store.into()];
    args.extend(target.iter().map(|a| a.as_ref().to_os_string()));
    args.extend(["--", "sh", "-c", script].map(Into::into));
    let run = run_to_end(&state, &args);
    assert_eq!(common::leftovers(state.path()), Vec::<String>::new(), "state file left");
    run
}

/// A stored run exported as its JSON result (checked against the schema).
pub fn exported(store: &Path, run: &str) -> Value {
    let out = fsynclab()
        .args(["export", run, "--format", "json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    common::assert_matches_schema(&result);
    result
}
