//! The bench scripts under docs/bench stop on Ctrl-C mid-round, run as their usage says
//! (under `fsynclab exec`): the script exits 130, the `fsynclab watch` it started is ended,
//! and its scratch files are gone. A stand-in for fsynclab plays the watch, so that the
//! script's own handling is what is tested, without BPF.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{leftovers, Need};

common::tests! {
    ctrl_c_mid_round_ends_the_script_its_watch_and_its_files: [
        Need::Tool("bpftool"), Need::Tool("cc"), Need::Tool("bc"), Need::Tool("python3"), Need::Tool("ps"),
    ],
}

/// Plays `fsynclab watch`: writes its pid where the test reads it, prints the hooks line the
/// scripts wait for, and runs until it is ended (SIGTERM's default action), or for 60 s at
/// most, so that a failed test does not leave it running. The test asserts the script ended
/// within 10 s of the signal, well before that.
const FAKE_WATCH: &str = "#!/bin/sh\necho $$ > \"$FAKE_WATCH_PID.part\"\nmv \"$FAKE_WATCH_PID.part\" \"$FAKE_WATCH_PID\"\necho 'hooks: stand-in'\nn=0\nwhile [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done\n";

/// Whether process `pid` still runs (a zombie has ended: it waits only to be reaped).
fn running(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| s.rsplit_once(") ").map(|(_, rest)| !rest.starts_with('Z')))
        .unwrap_or(false)
}

fn ctrl_c_mid_round_ends_the_script_its_watch_and_its_files() {
    let dir = tempfile::tempdir().unwrap();
    let (work, tmp) = (dir.path().join("work"), dir.path().join("tmp"));
    std::fs::create_dir(&work).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    let fake = dir.path().join("fake-fsynclab");
    std::fs::write(&fake, FAKE_WATCH).unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let pid_file = dir.path().join("watch.pid");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/bench/watch-program-share.sh");
    // One workload, dd, long enough alone (about a second) that the signal finds the watch
    // around its second run; the watch starts after the first.
    // Under exec, which inherits the watch once Ctrl-C has ended the subshell that started
    // it, and reaps it only when the script has ended: the script must not wait for a zombie.
    let mut child = common::with_default_signals(&mut Command::new(common::bin()))
        .env("FSYNCLAB_STORE", "off")
        .args(["exec", "--dir"])
        .arg(&work)
        .args(["--", "bash"])
        .arg(&script)
        .arg(&fake)
        .arg("3")
        .env("TMPDIR", &tmp)
        .env("FSYNC_DIR", &work)
        .env("IRQ_DIR", &work)
        .env("FAKE_WATCH_PID", &pid_file)
        .env("WORKLOADS", "dd")
        .env("DD_COUNT", "300000")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own process group, which the signal goes to, as a terminal's Ctrl-C does.
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !pid_file.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            panic!(
                "the script ended ({status}) before its watch started: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(Instant::now() < deadline, "the watch did not start in 120 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let watch: i32 = std::fs::read_to_string(&pid_file).unwrap().trim().parse().unwrap();
    assert!(running(watch), "the stand-in watch runs before the signal");
    let sent = Instant::now();
    // SAFETY: kill has no memory preconditions; the group is our child's, not yet reaped.
    assert_eq!(unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) }, 0);
    let status = common::wait_at_most(&mut child, Duration::from_secs(30));
    let took = sent.elapsed();
    let stderr = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} to stop after Ctrl-C: {stderr}"
    );
    assert!(
        !running(watch),
        "the watch (pid {watch}) still runs after the script ended"
    );
    assert_eq!(
        leftovers(&tmp),
        Vec::<String>::new(),
        "the script's scratch directory is left"
    );
    assert_eq!(leftovers(&work), Vec::<String>::new(), "the workload's files are left");
}
