//! Issue 4: scratch filesystems and emulated disks. Each privileged test provisions a small
//! scratch filesystem under its own temporary --backing directory and checks that the run
//! measured what was asked for and left nothing behind (no files, loop devices, mounts).
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Need::{Fuse, Root, That, Tool};
use common::{backing, fsynclab, traces_under, PrivateState, ScratchRun};
use serde_json::Value;

common::tests! {
    scratch_ext4_runs_and_cleans_up: [Root, Tool("mkfs.ext4")],
    scratch_ext3_data_writeback_reports_the_mount_option: [Root, Tool("mkfs.ext3")],
    scratch_xfs_runs_and_cleans_up: [Root, Tool("mkfs.xfs")],
    scratch_btrfs_runs_and_cleans_up: [Root, Tool("mkfs.btrfs")],
    scheduler_is_switched_for_the_run: [Root],
    sysctls_are_set_for_the_run_and_restored: [Root],
    flush_profile_delays_fsync_and_nobarrier_removes_it: [Root, Fuse],
    cleanup_removes_what_a_sigkilled_run_left: [Root, Fuse],
    sigterm_ends_a_scratch_run_and_cleans_up: [Root, Fuse],
    without_root_a_one_line_error_says_so: [That("setpriv to drop root", setpriv_when_root)],
    bad_scratch_options_are_usage_errors,
    named_profile_and_ram_are_recorded_in_the_result: [Root, Fuse],
    write_rate_paces_the_emulated_disk: [Root, Fuse],
    a_panic_during_the_run_still_undoes_everything: [Root, Fuse],
    suite_runs_on_one_scratch_target_and_records_it: [Root, Fuse],
    an_overlong_expiry_is_a_usage_error,
    bad_mkfs_options_are_usage_errors: [Root, Tool("mkfs.ext4")],
}

/// As root, the test drops to nobody with setpriv; as another user it needs nothing.
fn setpriv_when_root() -> bool {
    !common::is_root() || Path::new("/usr/bin/setpriv").exists()
}

/// Runs `fsynclab probe` on a scratch filesystem and returns the JSON result.
fn probe(backing: &Path, extra: &[&str]) -> Value {
    let out = ScratchRun::probe()
        .quiet()
        .json()
        .set("iterations", "5")
        .backing(backing)
        .args(extra)
        .command()
        .timeout(Duration::from_secs(240))
        .output()
        .expect("run fsynclab");
    assert!(
        out.status.success(),
        "fsynclab probe {extra:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let result: Value = serde_json::from_slice(&out.stdout).expect("JSON result");
    common::assert_matches_schema(&result);
    result
}

fn scratch_run(spec: &str, fstype: &str, option: Option<&str>) {
    let dir = backing();
    let r = probe(dir.path(), &["--scratch", spec]);
    let env = &r["environment"];
    assert_eq!(env["filesystem"]["fstype"], fstype, "{env}");
    assert_eq!(
        env["filesystem"]["source"].as_str().map(|s| s.starts_with("/dev/loop")),
        Some(true)
    );
    assert_eq!(env["scratch"]["fstype"], fstype);
    assert_eq!(env["device_profile"]["name"], "host");
    if let Some(opt) = option {
        let kernel = format!(
            "{},{}",
            env["filesystem"]["mount_options"], env["filesystem"]["super_options"]
        );
        assert!(kernel.contains(opt), "the kernel does not report {opt}: {kernel}");
    }
    assert!(r["ops"]["fdatasync"]["count"].as_u64() == Some(5), "{}", r["ops"]);
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 4: scratch ext4 runs and cleans up.
fn scratch_ext4_runs_and_cleans_up() {
    scratch_run("ext4", "ext4", None);
}

/// Issue 4: scratch ext3 data writeback reports the mount option.
fn scratch_ext3_data_writeback_reports_the_mount_option() {
    scratch_run("ext3:data=writeback", "ext3", Some("data=writeback"));
}

/// Issue 4: scratch xfs runs and cleans up.
fn scratch_xfs_runs_and_cleans_up() {
    scratch_run("xfs", "xfs", None);
}

/// Issue 4: scratch btrfs runs and cleans up.
fn scratch_btrfs_runs_and_cleans_up() {
    scratch_run("btrfs", "btrfs", None);
}

/// Issue 4: scheduler is switched for the run.
fn scheduler_is_switched_for_the_run() {
    let dir = backing();
    for scheduler in ["mq-deadline", "bfq", "kyber", "none"] {
        if scheduler != "mq-deadline" && scheduler != "none" && !common::kernel_offers_scheduler(scheduler) {
            // A kernel built without it (CONFIG_IOSCHED_BFQ): the refusal is checked instead.
            let out = fsynclab()
                .args([
                    "probe",
                    "--scratch",
                    "ext2",
                    "--scratch-size",
                    "128M",
                    "--scheduler",
                    scheduler,
                ])
                .arg("--backing")
                .arg(dir.path())
                .output()
                .unwrap();
            common::assert_refused_in_one_line(&out, &format!("does not offer scheduler {scheduler}"));
            eprintln!("{scheduler}: not in this kernel; its one-line refusal checked instead");
            continue;
        }
        let r = probe(
            dir.path(),
            &["--scratch", "ext2", "--scratch-size", "128M", "--scheduler", scheduler],
        );
        assert_eq!(
            r["environment"]["device"]["scheduler"], scheduler,
            "{}",
            r["environment"]
        );
        assert_eq!(r["environment"]["scratch"]["scheduler"], scheduler);
    }
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 4: sysctls are set for the run and restored.
fn sysctls_are_set_for_the_run_and_restored() {
    let read = |name: &str| {
        std::fs::read_to_string(format!("/proc/sys/vm/{name}"))
            .unwrap()
            .trim()
            .to_string()
    };
    let before = (read("dirty_ratio"), read("dirty_expire_centisecs"));
    let dir = backing();
    let r = probe(
        dir.path(),
        &[
            "--scratch",
            "ext2",
            "--scratch-size",
            "128M",
            "--dirty-ratio",
            "13",
            "--dirty-expire",
            "7s",
        ],
    );
    assert_eq!(r["environment"]["sysctls"]["dirty_ratio"], 13);
    assert_eq!(r["environment"]["sysctls"]["dirty_expire_centisecs"], 700);
    assert_eq!(r["environment"]["sysctls_set"]["dirty_ratio"], 13);
    assert_eq!((read("dirty_ratio"), read("dirty_expire_centisecs")), before);
}

/// Times fsync of a freshly written 4 KiB file on a scratch ext4 over an emulated disk whose
/// flushes take 20 ms; returns the median latency and the device flushes per fsync.
fn fresh_block_fsync(mount_options: &str, backing: &Path) -> (Duration, f64) {
    let args = fsynclab::cli::TargetArgs {
        scratch: Some(format!("ext4{mount_options}")),
        device: Some("flush=20ms".into()),
        scratch_size: Some("64M".into()),
        backing: Some(backing.to_path_buf()),
        ..Default::default()
    };
    let target =
        fsynclab::testbed::prepare(&args.request().expect("a valid request"), 0).expect("scratch ext4 on flush=20ms");
    let mut latencies = Vec::new();
    let loop_device = target.loop_device().expect("a loop device").to_string();
    let block_flushes = || fsynclab::testbed::loopdev::flushes_completed(&loop_device).expect("block stats");
    let block_before = block_flushes();
    let flushes_before = target.flushes().expect("emulated device counts flushes");
    for i in 0..5 {
        let path = target.dir().join(format!("block-{i}"));
        let mut f = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .mode(0o600)
            .open(&path)
            .unwrap();
        f.write_all(&[b'x'; 4096]).unwrap();
        let start = Instant::now();
        f.sync_all().expect("fsync");
        latencies.push(start.elapsed());
    }
    let flushes = target.flushes().unwrap() - flushes_before;
    // Every flush request the loop device completed reached the daemon as one fsync.
    assert_eq!(
        block_flushes() - block_before,
        flushes,
        "block-layer flushes vs the daemon's count"
    );
    latencies.sort();
    (latencies[2], flushes as f64 / 5.0)
}

/// Issue 4: flush profile delays fsync and nobarrier removes it.
fn flush_profile_delays_fsync_and_nobarrier_removes_it() {
    let dir = backing();
    let (barrier, per_fsync) = fresh_block_fsync("", dir.path());
    assert!(
        barrier >= Duration::from_millis(20),
        "fsync took {barrier:?} on a 20 ms flush device"
    );
    assert!(per_fsync >= 1.0, "{per_fsync} device flushes per fsync");
    let (nobarrier, per_fsync_nb) = fresh_block_fsync(":nobarrier", dir.path());
    // The device saw no flush, and no fsync waited as long as one takes (20 ms): what is left
    // is the write and the journal commit, whose time a loaded machine stretches.
    assert_eq!(per_fsync_nb, 0.0);
    assert!(
        nobarrier < Duration::from_millis(20),
        "fsync took {nobarrier:?} with nobarrier: the flush should be gone"
    );
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Starts a long scratch run and waits until its state file shows the filesystem mounted.
fn start_long_run(backing: &Path, state: &PrivateState) -> (std::process::Child, PathBuf) {
    let mut child = ScratchRun::run("overwrite-fsync")
        .quiet()
        .set("duration", "60s")
        .set("file_size", "32M")
        .fs("ext4")
        .size("256M")
        .device("flush=1ms")
        .backing(backing)
        .process()
        .env("FSYNCLAB_STORE", "off")
        .env(state.env().0, state.path())
        .env("FSYNCLAB_STORE", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start fsynclab");
    let state = state.file_of(child.id());
    common::wait_for_file_containing(&state, "\"mount\"", &mut child);
    std::thread::sleep(Duration::from_millis(500));
    (child, state)
}

/// Issue 4: cleanup removes what a SIGKILLed run left.
fn cleanup_removes_what_a_sigkilled_run_left() {
    // One at a time: one's cleanup would otherwise remove the leftovers the other checks.
    let _turn = common::one_at_a_time();
    let private = PrivateState::new();
    let _cleanup = common::CleanupOnDrop(private.path().to_path_buf());
    let dir = backing();
    let (mut child, state) = start_long_run(dir.path(), &private);
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    assert!(
        !traces_under(dir.path()).is_empty(),
        "a killed run leaves its scratch filesystem"
    );
    // The next scratch run points at the leftovers.
    let next = ScratchRun::probe()
        .quiet()
        .set("iterations", "1")
        .fs("ext2")
        .size("128M")
        .backing(dir.path())
        .command()
        .env(private.env().0, private.path())
        .output()
        .unwrap();
    let hint = String::from_utf8_lossy(&next.stderr);
    assert!(
        hint.contains(&format!("{}", child.id())) && hint.contains("`fsynclab cleanup` removes them"),
        "{hint}"
    );
    let stdout = private.cleanup();
    assert!(stdout.contains("loop device /dev/loop"), "{stdout}");
    assert!(!state.exists());
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 4: SIGTERM ends a scratch run and cleans up.
fn sigterm_ends_a_scratch_run_and_cleans_up() {
    // One at a time: one's cleanup would otherwise remove the leftovers the other checks.
    let _turn = common::one_at_a_time();
    let private = PrivateState::new();
    let _cleanup = common::CleanupOnDrop(private.path().to_path_buf());
    let dir = backing();
    let (mut child, state) = start_long_run(dir.path(), &private);
    common::send(&child, libc::SIGTERM);
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(143));
    assert!(!state.exists());
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 4: without root a one-line error says so.
fn without_root_a_one_line_error_says_so() {
    // As root, run a copy as nobody from a directory nobody can reach (the build directory
    // may sit under a private home).
    let reachable = tempfile::tempdir().unwrap();
    let mut cmd = if common::is_root() {
        use std::os::unix::fs::PermissionsExt;
        let bin = reachable.path().join("fsynclab");
        std::fs::copy(assert_cmd::cargo::cargo_bin("fsynclab"), &bin).unwrap();
        std::fs::set_permissions(reachable.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut c = Command::new("/usr/bin/setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"]).arg(&bin);
        c
    } else {
        Command::new(assert_cmd::cargo::cargo_bin("fsynclab"))
    };
    let out = cmd
        .env("FSYNCLAB_STORE", "off")
        .args(["probe", "--scratch", "ext4", "--backing", "/tmp"])
        .output()
        .unwrap();
    common::assert_refused_in_one_line(&out, "needs root");
}

/// Issue 4: bad scratch options are usage errors.
fn bad_scratch_options_are_usage_errors() {
    for args in [
        &["probe", "--scratch", "zfs"][..],
        &["probe", "--scratch", "ext4", "--dir", "/tmp"],
        &["probe", "--scheduler", "bfq"],
        &["probe", "--scratch", "ext4", "--device", "floppy"],
        &["probe", "--scratch", "xfs", "--scratch-size", "64M"],
        &["probe", "--scratch", "ext4", "--keep"],
    ] {
        let out = fsynclab().args(args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Issue 4: named profile and ram are recorded in the result.
fn named_profile_and_ram_are_recorded_in_the_result() {
    let dir = backing();
    let r = probe(
        dir.path(),
        &["--scratch", "ext2", "--scratch-size", "128M", "--device", "hdd-5400"],
    );
    let env = &r["environment"];
    assert_eq!(
        env["device"]["rotational"], true,
        "hdd profiles mark the loop device rotational"
    );
    assert_eq!(env["device_profile"]["name"], "hdd-5400");
    assert_eq!(env["device_profile"]["model"]["rpm"], 5400);
    assert_eq!(env["device_profile"]["write_bytes_per_s"], 70_000_000);
    assert!(
        env["device_profile"]["flushes"].as_u64() >= Some(10),
        "{}",
        env["device_profile"]
    );
    // The probe rewrites one block and flushes: each flush waits for the platter to come
    // round under the head (one rotation at 5400 rpm is 11.1 ms).
    let p50 = r["ops"]["fdatasync"]["latency_ns"]["p50"].as_u64().unwrap_or(0);
    assert!((8_000_000..25_000_000).contains(&p50), "fdatasync p50 {p50} ns");
    let findings = r["findings"].to_string();
    assert!(findings.contains("per foreground sync call"), "{findings}");

    let r = probe(
        dir.path(),
        &["--scratch", "ext2", "--scratch-size", "128M", "--device", "ram"],
    );
    assert_eq!(r["environment"]["device_profile"]["name"], "ram");
    assert!(
        r["ops"]["fdatasync"]["latency_ns"]["p50"].as_u64() < Some(5_000_000),
        "flushes on tmpfs cost nothing: {}",
        r["ops"]["fdatasync"]
    );
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 4: write rate paces the emulated disk.
fn write_rate_paces_the_emulated_disk() {
    let dir = backing();
    let r = ScratchRun::run("overwrite-fsync")
        .quiet()
        .json()
        .backing(dir.path())
        .fs("ext2")
        .size("128M")
        .device("flush=1ms,write=20M")
        .set("write_size", "4M")
        .set("background", "none")
        .set("sleep", "0")
        .set("iterations", "3")
        .set("duration", "0")
        .json_result();
    // 4 MiB at 20 MiB/s is 200 ms of writing before the flush.
    let p50 = r["ops"]["fsync"]["latency_ns"]["p50"].as_u64().unwrap();
    assert!(p50 >= 200_000_000, "fsync of 4 MiB took {p50} ns at 20 MiB/s");
    assert!(p50 < 2_000_000_000, "fsync of 4 MiB took {p50} ns at 20 MiB/s");
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 4: a panic during the run still undoes everything.
fn a_panic_during_the_run_still_undoes_everything() {
    let dir = backing();
    let args = fsynclab::cli::TargetArgs {
        scratch: Some("ext4".into()),
        device: Some("flush=1ms".into()),
        scratch_size: Some("64M".into()),
        backing: Some(dir.path().to_path_buf()),
        ..Default::default()
    };
    let outcome = std::panic::catch_unwind(|| {
        let target = fsynclab::testbed::prepare(&args.request().expect("a valid request"), 0).expect("scratch ext4");
        std::fs::write(target.dir().join("f"), b"x").unwrap();
        assert!(
            !traces_under(dir.path()).is_empty(),
            "the scratch filesystem is in place"
        );
        panic!("a scenario bug");
    });
    assert!(outcome.is_err());
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 4: suite runs on one scratch target and records it.
fn suite_runs_on_one_scratch_target_and_records_it() {
    let dir = backing();
    let results = tempfile::tempdir().unwrap();
    let mut cmd = fsynclab();
    cmd.args([
        "suite",
        "--quiet",
        "--scratch",
        "ext4",
        "--device",
        "flush=1ms",
        "--backing",
    ])
    .arg(dir.path())
    .arg("--results")
    .arg(results.path());
    for s in [
        "duration=1s",
        "sleep=100ms",
        "iterations=2",
        "file_size=64k",
        "random_file_size=8M",
        "small-files.sizes=4k,64k",
        "small-files.runs=1",
        "small-files.files=5",
        "datasync.rounds=1",
        "datasync.duration=20ms",
    ] {
        cmd.args(["--set", s]);
    }
    let out = cmd.timeout(Duration::from_secs(300)).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: Value =
        serde_json::from_str(&std::fs::read_to_string(results.path().join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["environment"]["scratch"]["fstype"], "ext4");
    assert_eq!(summary["environment"]["device_profile"]["name"], "flush=1ms");
    for e in summary["scenarios"].as_array().unwrap() {
        let file = e["result"].as_str().expect("a result file");
        let r: Value = serde_json::from_str(&std::fs::read_to_string(results.path().join(file)).unwrap()).unwrap();
        common::assert_matches_schema(&r);
        assert_eq!(r["environment"]["filesystem"]["fstype"], "ext4", "{file}");
        assert!(
            r["environment"]["device_profile"]["flushes"].as_u64().is_some(),
            "{file}"
        );
    }
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 8, item 11: a --dirty-expire too large for the kernel was called malformed.
fn an_overlong_expiry_is_a_usage_error() {
    let out = fsynclab()
        .args(["probe", "-q", "--dirty-expire", "9999999h"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("too long; the kernel takes at most 248 days"), "{err}");
}

/// Issue 8, item 11: a bad --mkfs-opts was a failure (exit 1) where bad mount options were
/// bad input (exit 2).
fn bad_mkfs_options_are_usage_errors() {
    let backing = backing();
    let out = ScratchRun::probe()
        .quiet()
        .fs("ext4")
        .args(["--mkfs-opts", "-b 3"])
        .backing(backing.path())
        .command()
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("--mkfs-opts \"-b 3\": mkfs.ext4 refused them"), "{err}");
    assert!(
        traces_under(backing.path()).is_empty(),
        "{:?}",
        traces_under(backing.path())
    );
}
