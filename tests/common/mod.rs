//! Shared helpers of the integration tests: the binary under test, and the rule for tests
//! that need root or loop devices — skip with the reason on a machine without them, but
//! fail when `FSYNCLAB_REQUIRE_PRIVILEGED=1` (as `.ci/run` sets), never skip silently.
#![allow(dead_code)]

use std::path::Path;

use assert_cmd::Command;

/// The binary, with the results store off (`FSYNCLAB_STORE=off`), so that tests never write
/// into the user's store; a test of the store gives `--store` or its own `FSYNCLAB_STORE`.
pub fn fsynclab() -> Command {
    let mut cmd = Command::cargo_bin("fsynclab").expect("binary built");
    cmd.env_remove("RUST_LOG");
    cmd.env("FSYNCLAB_STORE", "off");
    cmd
}

/// Whether privileged tests must run (CI) rather than skip.
pub fn privileged_required() -> bool {
    std::env::var("FSYNCLAB_REQUIRE_PRIVILEGED").is_ok_and(|v| v == "1")
}

/// Returns true when the test may go on. Otherwise prints why it skips, or panics when
/// privileged tests are required.
pub fn require(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    if privileged_required() {
        panic!("FSYNCLAB_REQUIRE_PRIVILEGED=1 but {what} is not available");
    }
    eprintln!("skipped: needs {what}");
    false
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

pub fn require_root() -> bool {
    require("root", is_root())
}

/// Entries left in `dir` (a test's parent directory must be empty after a run).
pub fn leftovers(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Parameters that make any prober scenario finish in about a second.
pub const TINY: &[&str] = &[
    "--set",
    "duration=1s",
    "--set",
    "sleep=100ms",
    "--set",
    "file_size=16M",
    "--set",
    "chunk=1M",
    "--set",
    "random_file_size=16M",
    "--quiet",
];

/// Validates `result` against `schema/result-v1.schema.json`, panicking with every error.
pub fn assert_matches_schema(result: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../schema/result-v1.schema.json")).expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(result)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "result does not match the schema:\n{}",
        errors.join("\n")
    );
}

/// Runs `fsynclab run SCENARIO --quiet --dir DIR --set S...` and checks that it is refused as
/// bad input: exit status 2 and exactly one line on stderr, containing `says`.
pub fn assert_refused(scenario: &str, dir: &Path, sets: &[&str], says: &str) {
    let mut cmd = fsynclab();
    cmd.args(["run", scenario, "--quiet", "--dir"]).arg(dir);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.assert().code(2).get_output().clone();
    let err = String::from_utf8(out.stderr).expect("stderr is text");
    assert_eq!(err.trim_end().lines().count(), 1, "{scenario} {sets:?}: {err}");
    assert!(err.contains(says), "{scenario} {sets:?}: {err}");
}

/// The variable that gives fsynclab another state directory (`/run/fsynclab` otherwise).
pub const STATE_DIR_ENV: &str = "FSYNCLAB_STATE_DIR";

/// A state directory of the test's own, so that its runs and its `fsynclab cleanup` never
/// meet a user's runs or leftovers (nor another test's). Pass it to each fsynclab the test
/// starts with [`PrivateState::env`]; dropped, it removes the directory.
pub struct PrivateState(tempfile::TempDir);

impl PrivateState {
    pub fn new() -> PrivateState {
        PrivateState(
            tempfile::Builder::new()
                .prefix("fsynclab-test-state-")
                .tempdir()
                .expect("temp dir"),
        )
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// `(variable, value)` to hand to `Command::env`.
    pub fn env(&self) -> (&'static str, &Path) {
        (STATE_DIR_ENV, self.0.path())
    }

    /// The state file of the run with `pid`.
    pub fn file_of(&self, pid: u32) -> std::path::PathBuf {
        self.0.path().join(format!("{pid}.json"))
    }
}
