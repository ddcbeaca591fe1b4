//! Shared helpers of the integration tests: the binary under test, and the rule for tests
//! that need root or loop devices — skip with the reason on a machine without them, but
//! fail when `FSYNCLAB_REQUIRE_PRIVILEGED=1` (as `.ci/run` sets), never skip silently.
#![allow(dead_code)]

use std::path::Path;

use assert_cmd::Command;

pub fn fsynclab() -> Command {
    let mut cmd = Command::cargo_bin("fsynclab").expect("binary built");
    cmd.env_remove("RUST_LOG");
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
