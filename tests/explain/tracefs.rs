//! The trace instances of tracefs: those of the test's own runs, found whether tracefs is
//! mounted or not, under the lock every fsynclab takes around its tracefs changes, and the
//! check that runs left tracefs as they found it.

use std::path::Path;

use crate::common;
use crate::runner::temp;

/// fsynclab's trace instances in tracefs now (none when tracefs is not mounted), of any run
/// on the machine: a test asserts only on its own runs' ([`instance_of`]), since other
/// fsynclab runs may trace beside it.
pub fn trace_instances() -> Vec<String> {
    std::fs::read_dir("/sys/kernel/tracing/instances")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("fsynclab-"))
                .collect()
        })
        .unwrap_or_default()
}

/// The trace instance of the run with `pid`.
pub fn instance_of(pid: u32) -> String {
    format!("fsynclab-{pid}")
}

/// The test's own runs left no trace instance, in tracefs or, unmounted, in the kernel.
pub fn assert_no_instance_of(pids: &[u32]) {
    let held = tracefs_lock();
    let left: Vec<String> = all_trace_instances(&held)
        .into_iter()
        .filter(|i| pids.iter().any(|&p| is_instance_of(i, p)))
        .collect();
    assert!(left.is_empty(), "left: {left:?}");
}

/// Whether trace instance `name` is one process `pid` made: `fsynclab-PID` or `fsynclab-PID-N`.
pub fn is_instance_of(name: &str, pid: u32) -> bool {
    name.strip_prefix(&format!("fsynclab-{pid}"))
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

/// The lock every fsynclab takes around its tracefs changes (mount, making and removing an
/// instance, unmount): while a test holds it, no fsynclab is between two of those steps.
const TRACEFS_LOCK: &str = "/run/lock/fsynclab-tracefs.lock";

struct TracefsLock(#[allow(dead_code)] std::fs::File);

fn tracefs_lock() -> TracefsLock {
    use std::os::fd::AsRawFd as _;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(TRACEFS_LOCK)
        .unwrap();
    // SAFETY: flock on a descriptor we own; no memory is passed.
    while unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) } != 0 {
        assert_eq!(std::io::Error::last_os_error().kind(), std::io::ErrorKind::Interrupted);
    }
    TracefsLock(file)
}

/// The tracefs mounts at /sys/kernel/tracing, bottom first, by source (`fsynclab` for one
/// an fsynclab mounted, `nodev` or another name for a user's).
pub fn tracefs_mounts() -> Vec<String> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .filter(|l| l.contains(" /sys/kernel/tracing ") && l.contains(" - tracefs "))
        .filter_map(|l| l.split(" - ").nth(1)?.split_whitespace().nth(1).map(str::to_string))
        .collect()
}

/// Every trace instance the kernel has, tracefs mounted or not (an instance outlives an
/// unmount of tracefs): when it is not mounted, it is mounted for the look at a private
/// mount point and unmounted again.
fn all_trace_instances(_held: &TracefsLock) -> Vec<String> {
    if !tracefs_mounts().is_empty() {
        return common::leftovers(Path::new("/sys/kernel/tracing/instances"));
    }
    let at = temp();
    let status = std::process::Command::new("mount")
        .args(["-t", "tracefs", "fsynclab-test"])
        .arg(at.path())
        .status()
        .unwrap();
    assert!(status.success(), "cannot mount tracefs to look");
    let instances = common::leftovers(&at.path().join("instances"));
    let status = std::process::Command::new("umount").arg(at.path()).status().unwrap();
    assert!(status.success(), "cannot unmount the tracefs mounted to look");
    instances
}

/// Checks that the runs with `pids` left no trace instance, and tracefs mounted as it was
/// (`before`, from [`tracefs_mounts`]). Another fsynclab may trace beside the test (root's
/// runs trace by default): its instances are not the test's, and it may have mounted
/// tracefs, or unmounted the mount there was; but a user's mount stays, and an fsynclab
/// mount with no instance in it, or a second one, is a leftover.
pub fn assert_no_trace_left(pids: &[u32], before: &[String]) {
    let held = tracefs_lock();
    let instances = all_trace_instances(&held);
    let ours: Vec<&String> = instances
        .iter()
        .filter(|i| pids.iter().any(|p| is_instance_of(i, *p)))
        .collect();
    assert!(ours.is_empty(), "left: {ours:?}");
    let after = tracefs_mounts();
    let users = |m: &[String]| m.iter().filter(|s| *s != "fsynclab").cloned().collect::<Vec<_>>();
    assert_eq!(
        users(&after),
        users(before),
        "a user's tracefs mount changed: {before:?} -> {after:?}"
    );
    let fsynclabs = after.len() - users(&after).len();
    assert!(
        fsynclabs == 0 || (fsynclabs == 1 && !instances.is_empty()),
        "tracefs mounts before: {before:?}, now: {after:?} with instances {instances:?}"
    );
}
