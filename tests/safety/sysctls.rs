//! Issue 8, item 1: the vm sysctls two runs would set. A second run setting them is refused
//! while one holds them, a killed run's are put back by `cleanup` before another sets them,
//! and a result says when one changed under it.

use std::process::Stdio;

use serde_json::Value;

use crate::common::{self, fsynclab, leftovers, send, wait_for_file_containing};
use crate::setup::{dir_run, serial, state_dir, state_file, sysctl, SysctlGuard};

/// Issue 8: a second run setting sysctls is refused while one is live.
pub fn a_second_run_setting_sysctls_is_refused_while_one_is_live() {
    let _serial = serial();
    let _guard = SysctlGuard::new("dirty_ratio");
    let before = sysctl("dirty_ratio");
    let dir = tempfile::tempdir().unwrap();
    // A is live until the test stops it, after B's attempt: the order is certain.
    let mut a = dir_run(dir.path(), "60s", &["--dirty-ratio", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file_containing(&state_file(a.id()), "\"sysctl\"", &mut a);
    let b = dir_run(dir.path(), "3s", &["--dirty-ratio", "7"])
        .env_remove("FSYNCLAB_SYSCTL_WAIT")
        .output()
        .unwrap();
    let b_err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(b.status.code(), Some(2), "the second run must be refused: {b_err}");
    assert_eq!(b_err.trim_end().lines().count(), 1, "{b_err}");
    assert!(
        b_err.contains(&format!("fsynclab pid {}", a.id())) && b_err.contains("vm.dirty_ratio=5"),
        "the refusal names the run holding the sysctls: {b_err}"
    );
    assert_eq!(sysctl("dirty_ratio"), "5", "the refused run changed nothing");
    send(&a, libc::SIGINT);
    let a_out = a.wait_with_output().unwrap();
    assert_eq!(
        a_out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&a_out.stderr)
    );
    let r: Value = serde_json::from_slice(&a_out.stdout).unwrap();
    assert_eq!(r["environment"]["sysctls_set"]["dirty_ratio"], 5);
    let findings = r["findings"].to_string();
    assert!(
        !findings.contains("sysctls:"),
        "A ran under its own value throughout: {findings}"
    );
    assert_eq!(sysctl("dirty_ratio"), before, "restored by the one run that set it");
}

/// With FSYNCLAB_SYSCTL_WAIT (scripts/test.sh sets it, for another fsynclab's tests beside),
/// a second run setting sysctls waits for the live one to end, says so once, then runs
/// under its own value; a value that is not seconds is refused in one line, before anything.
pub fn a_second_run_setting_sysctls_waits_for_the_live_one_under_sysctl_wait() {
    let _serial = serial();
    let _guard = SysctlGuard::new("dirty_ratio");
    let before = sysctl("dirty_ratio");
    let dir = tempfile::tempdir().unwrap();
    let bad = dir_run(dir.path(), "1s", &["--dirty-ratio", "7"])
        .env("FSYNCLAB_SYSCTL_WAIT", "soon")
        .output()
        .unwrap();
    let bad_err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{bad_err}");
    assert_eq!(bad_err.trim_end().lines().count(), 1, "{bad_err}");
    assert!(bad_err.contains("FSYNCLAB_SYSCTL_WAIT"), "{bad_err}");
    assert_eq!(sysctl("dirty_ratio"), before, "the refused run changed nothing");
    let mut a = dir_run(dir.path(), "2s", &["--dirty-ratio", "5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_file_containing(&state_file(a.id()), "\"sysctl\"", &mut a);
    let b = dir_run(dir.path(), "1s", &["--dirty-ratio", "7"])
        .env("FSYNCLAB_SYSCTL_WAIT", "120")
        .output()
        .unwrap();
    let b_err = String::from_utf8_lossy(&b.stderr);
    assert!(b.status.success(), "the second run waited and ran: {b_err}");
    assert_eq!(b_err.matches("waiting up to").count(), 1, "said once: {b_err}");
    let a_out = a.wait_with_output().unwrap();
    assert!(a_out.status.success(), "{}", String::from_utf8_lossy(&a_out.stderr));
    let a_result: Value = serde_json::from_slice(&a_out.stdout).unwrap();
    let b_result: Value = serde_json::from_slice(&b.stdout).unwrap();
    assert_eq!(a_result["environment"]["sysctls_set"]["dirty_ratio"], 5);
    assert_eq!(b_result["environment"]["sysctls_set"]["dirty_ratio"], 7);
    assert_eq!(sysctl("dirty_ratio"), before, "each run restored what it set");
}

/// Issue 8: a killed run's sysctls are cleaned up before another run sets them.
pub fn a_killed_runs_sysctls_are_cleaned_up_before_another_run_sets_them() {
    let _serial = serial();
    let _guard = SysctlGuard::new("dirty_ratio");
    let _cleanup = common::CleanupOnDrop(state_dir());
    let before = sysctl("dirty_ratio");
    let dir = tempfile::tempdir().unwrap();
    let mut a = dir_run(dir.path(), "60s", &["--dirty-ratio", "5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for_file_containing(&state_file(a.id()), "\"sysctl\"", &mut a);
    a.kill().unwrap();
    a.wait().unwrap();
    let b = dir_run(dir.path(), "1s", &["--dirty-ratio", "7"])
        .env_remove("FSYNCLAB_SYSCTL_WAIT")
        .output()
        .unwrap();
    let b_err = String::from_utf8_lossy(&b.stderr);
    assert_eq!(b.status.code(), Some(2), "{b_err}");
    assert!(
        b_err.contains(&format!("pid {}", a.id())) && b_err.contains("run `fsynclab cleanup` first"),
        "{b_err}"
    );
    let cleanup = fsynclab().arg("cleanup").output().unwrap();
    assert!(cleanup.status.success(), "{}", String::from_utf8_lossy(&cleanup.stderr));
    assert_eq!(sysctl("dirty_ratio"), before);
    assert!(leftovers(dir.path()).is_empty(), "{:?}", leftovers(dir.path()));
    let b = dir_run(dir.path(), "1s", &["--dirty-ratio", "7"]).output().unwrap();
    assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
    assert_eq!(sysctl("dirty_ratio"), before);
}

/// Issue 8: a result says when a sysctl changed under it.
pub fn a_result_says_when_a_sysctl_changed_under_it() {
    let _serial = serial();
    let _guard = SysctlGuard::new("dirty_ratio");
    let before: u64 = sysctl("dirty_ratio").parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut run = dir_run(dir.path(), "2s", &[])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The run read the sysctls before it wrote its first probe; it measures 2 s from there.
    common::wait_until_measuring(dir.path(), common::PROBE_FILE, &mut run);
    std::fs::write("/proc/sys/vm/dirty_ratio", (before - 1).to_string()).unwrap();
    let out = run.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    let findings = r["findings"].to_string();
    assert!(
        findings.contains(&format!("vm.dirty_ratio {before} -> {}", before - 1)),
        "{findings}"
    );
}
