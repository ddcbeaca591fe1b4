//! The emulated disk failing on purpose: power cuts (issue 18, item 1), injected faults
//! (issue 15, item 1), and a slow disk that must not keep a stopped run from ending (issue
//! 19, item 6). The power-cut tests drive the device through the library (a scratch
//! filesystem from `testbed::prepare`, cut through its `DeviceControl`), as the commands
//! that cut power will; the others go through the binary. Each checks that nothing is left.
#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::Need::{Fuse, Root, Tool};
use common::{backing, fsynclab, traces_under, ScratchRun};
use fsynclab::testbed::device::{CutPlan, Keep};
use serde_json::Value;

common::tests! {
    a_cut_after_sync_leaves_an_image_that_mounts_with_the_journal_replayed: [Root, Fuse, Tool("e2fsck")],
    after_a_cut_every_request_fails_at_once_and_nothing_reaches_the_media: [Root, Fuse],
    an_armed_cut_comes_as_the_nth_flush_is_acknowledged: [Root, Fuse],
    a_battery_backed_cache_survives_a_cut: [Root, Fuse],
    injected_faults_fail_exactly_the_requests_they_name_and_are_counted: [Root, Fuse],
    a_failing_flush_set_on_a_running_device_fails_once_then_heals: [Root, Fuse],
    bad_fault_options_are_one_line_saying_what_is_valid,
    faults_that_fail_the_mount_are_refused_and_leave_nothing: [Root, Fuse],
    n_failed_flushes_are_exactly_the_n_failed_fsync_calls_of_a_run: [Root, Fuse, Tool("mkfs.ext2")],
    physically_absurd_profiles_are_refused_with_the_valid_range,
    sigterm_during_a_mount_on_a_slow_disk_ends_the_run_within_seconds: [Root, Fuse],
    sigterm_while_the_command_waits_on_a_slow_disk_ends_the_run_within_seconds: [Root, Fuse],
}

/// A scratch `fs` of `size` on emulated disk `device`, under `backing`.
fn scratch(fs: &str, device: &str, size: &str, backing: &Path) -> fsynclab::testbed::Prepared {
    let args = fsynclab::cli::TargetArgs {
        scratch: Some(fs.into()),
        device: Some(device.into()),
        scratch_size: Some(size.into()),
        backing: Some(backing.to_path_buf()),
        ..Default::default()
    };
    fsynclab::testbed::prepare(&args.request().expect("a valid request"), 0)
        .unwrap_or_else(|e| panic!("scratch {fs} on {device}: {e:#}"))
}

/// Runs `program args`, panicking with its stderr unless it succeeds; returns its stdout.
fn run(program: &str, args: &[&str]) -> String {
    let out = Command::new(program).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// An image attached to a plain loop device and mounted, undone on drop (even when the test
/// fails half-way).
struct Replayed {
    loop_device: String,
    mount_point: PathBuf,
    mounted: bool,
}

impl Replayed {
    /// `losetup --find --show IMAGE`, then mounts it at `mount_point`: the filesystem
    /// replays its journal.
    fn attach(image: &Path, mount_point: &Path, fstype: &str) -> Replayed {
        std::fs::create_dir_all(mount_point).unwrap();
        let loop_device = run("losetup", &["--find", "--show", image.to_str().unwrap()]);
        let mut r = Replayed {
            loop_device,
            mount_point: mount_point.to_path_buf(),
            mounted: false,
        };
        run("mount", &["-t", fstype, &r.loop_device, mount_point.to_str().unwrap()]);
        r.mounted = true;
        r
    }

    fn unmount(&mut self) {
        if std::mem::take(&mut self.mounted) {
            run("umount", &[self.mount_point.to_str().unwrap()]);
        }
    }
}

impl Drop for Replayed {
    fn drop(&mut self) {
        // A mount just read can be busy for a moment (umount: target is busy, with no process
        // holding it): tried again for up to 5 s, as a user would, before giving up.
        if self.mounted {
            for _ in 0..50 {
                let done = Command::new("umount")
                    .arg(&self.mount_point)
                    .stderr(std::process::Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                if done {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        let _ = Command::new("losetup").args(["-d", &self.loop_device]).status();
        let _ = std::fs::remove_dir(&self.mount_point);
    }
}

/// 64 KiB of a pattern that names `seed`.
fn pattern(seed: u8) -> Vec<u8> {
    (0..65536u32).map(|i| (i % 251) as u8 ^ seed).collect()
}

/// Issue 18: a cut after sync leaves an image that mounts with the journal replayed.
fn a_cut_after_sync_leaves_an_image_that_mounts_with_the_journal_replayed() {
    let dir = backing();
    // Held past the device's end: a handle must not keep the media file (and its tmpfs) busy.
    let control;
    {
        let mut target = scratch("ext4", "hdd-5400", "64M", dir.path());
        control = target.device_control().expect("an emulated disk");
        // Made durable: written, fsynced, and its directory entry fsynced.
        let mut synced = std::fs::File::create(target.dir().join("synced")).unwrap();
        synced.write_all(&pattern(1)).unwrap();
        synced.sync_all().unwrap();
        drop(synced);
        std::fs::File::open(target.dir()).unwrap().sync_all().unwrap();
        // Not made durable: in the page cache, or in the drive's cache, when the power goes.
        std::fs::write(target.dir().join("unsynced"), pattern(2)).unwrap();
        let cut = control.cut_power(Keep::Nothing, 0).unwrap();
        assert_eq!(cut.trigger, "now");
        assert_eq!((cut.kept_writes, cut.torn_writes), (0, 0), "{cut:?}");
        assert_eq!(
            cut.lost_writes, cut.held_writes,
            "keep=none loses what the drive held: {cut:?}"
        );

        // Taken off the dead disk; the media as the cut left it, attached to a plain loop
        // device: mounting replays ext4's journal, and the synced file is there, whole.
        let image = target.unplug().unwrap();
        assert!(control.power_cut().is_none(), "the device is gone once unplugged");
        let mut replayed = Replayed::attach(&image, &dir.path().join("replay"), "ext4");
        let mut back = Vec::new();
        std::fs::File::open(replayed.mount_point.join("synced"))
            .unwrap()
            .read_to_end(&mut back)
            .unwrap();
        assert!(back == pattern(1), "the synced file came back different");
        replayed.unmount();
        // The checker finds nothing to repair (read-only: -n; exit 0 is clean).
        let fsck = Command::new("e2fsck")
            .args(["-fn", &replayed.loop_device])
            .output()
            .unwrap();
        assert_eq!(
            fsck.status.code(),
            Some(0),
            "e2fsck -fn after replay: {}",
            String::from_utf8_lossy(&fsck.stdout)
        );
    }
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// A hash of a file's bytes (FNV-1a), to tell whether anything wrote to it.
fn fingerprint(path: &Path) -> u64 {
    let mut f = std::fs::File::open(path).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut h: u64 = 0xcbf29ce484222325;
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            return h;
        }
        for b in &buf[..n] {
            h = (h ^ u64::from(*b)).wrapping_mul(0x100000001b3);
        }
    }
}

/// Issue 18: after a cut every request fails at once and nothing reaches the media.
fn after_a_cut_every_request_fails_at_once_and_nothing_reaches_the_media() {
    let dir = backing();
    {
        // A slow disk with a big cache: a lot is still in the cache when the power goes.
        let target = scratch("ext4", "hdd-5400,cache=32M", "64M", dir.path());
        let control = target.device_control().unwrap();
        let device = target.loop_device().unwrap().to_string();
        std::fs::write(target.dir().join("before"), pattern(3)).unwrap();
        let _ = target.flushes(); // marks where the activity below is measured from
        let cut = control.cut_power(Keep::Prefix, 5).unwrap();
        let image = target.image().unwrap().to_path_buf();
        let media = fingerprint(&image);

        // Every request from here fails, and none waits: the filesystem's (a new file,
        // fsynced) and the block device's own (a direct read, a flush).
        let start = Instant::now();
        let mut f = std::fs::File::create(target.dir().join("after")).unwrap();
        f.write_all(&pattern(4)).unwrap();
        assert!(f.sync_all().is_err(), "an fsync after the cut succeeded");
        let read = Command::new("dd")
            .args([
                &format!("if={device}"),
                "of=/dev/null",
                "bs=4k",
                "count=1",
                "iflag=direct",
            ])
            .output()
            .unwrap();
        assert!(!read.status.success(), "a direct read after the cut succeeded");
        let raw = std::fs::File::open(&device).unwrap();
        assert!(raw.sync_all().is_err(), "a flush after the cut succeeded");
        let took = start.elapsed();
        assert!(took < Duration::from_secs(5), "requests after the cut took {took:?}");
        assert_eq!(fingerprint(&image), media, "the media changed after the cut");

        let a = target.device_activity().unwrap();
        assert!(a.refused_after_cut >= 3, "{a:?}");
        assert_eq!(a.power_cut.as_ref(), Some(&cut), "the result records the cut");
        assert_eq!(
            cut.held_writes,
            cut.kept_writes + cut.lost_writes + cut.torn_writes,
            "{cut:?}"
        );
    }
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 18: an armed cut comes as the nth flush is acknowledged.
fn an_armed_cut_comes_as_the_nth_flush_is_acknowledged() {
    let dir = backing();
    {
        // ext2 has no journal: nothing but this test flushes the device.
        let target = scratch("ext2", "hdd-5400", "64M", dir.path());
        let control = target.device_control().unwrap();
        let flushes_before = target.flushes().unwrap();
        assert!(control.arm_cut(CutPlan::parse("flushes=3,keep=any,seed=11").unwrap()));
        assert!(control.power_cut().is_none(), "armed, not made");
        let mut f = std::fs::File::create(target.dir().join("f")).unwrap();
        let mut acknowledged = 0;
        for i in 0..10u8 {
            f.write_all(&pattern(i)).unwrap();
            if f.sync_all().is_err() {
                break;
            }
            acknowledged += 1;
        }
        let cut = control
            .wait_for_cut(Duration::from_secs(10))
            .expect("the daemon cut the power");
        assert_eq!(cut.trigger, "after 3 flushes");
        assert_eq!((cut.keep.as_str(), cut.seed), ("any", 11));
        assert_eq!(cut.flushes_before, flushes_before + 3, "{cut:?}");
        // An fsync of ext2 flushes the device once: the third was acknowledged, the fourth
        // failed.
        assert_eq!(acknowledged, 3);
    }
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 18: a battery backed cache survives a cut.
fn a_battery_backed_cache_survives_a_cut() {
    let dir = backing();
    {
        // A slow media (the slowest rate allowed): 4 MiB take seconds to drain, so the cut
        // right after the sync finds them in the cache.
        let mut target = scratch("ext2", "hdd-5400,nvcache=8M,rate=600K", "64M", dir.path());
        let control = target.device_control().unwrap();
        let data: Vec<u8> = (0..64).flat_map(|i| pattern(i as u8)).collect();
        std::fs::write(target.dir().join("f"), &data).unwrap();
        // Written back into the drive's battery-backed cache: a flush waits for nothing.
        run("sync", &["-f", target.dir().to_str().unwrap()]);
        let cut = control.cut_power(Keep::Nothing, 0).unwrap();
        assert_eq!(cut.keep, "battery");
        // 1 MiB takes 1.7 s to drain at 600K/s: most of the file is still in the cache.
        assert!(cut.held_bytes >= 3 << 20, "the file was still in the cache: {cut:?}");
        assert_eq!((cut.lost_writes, cut.unacknowledged_writes), (0, 0), "{cut:?}");
        assert_eq!((cut.kept_writes, cut.kept_bytes), (cut.held_writes, cut.held_bytes));
        // On the media, whole.
        let image = target.unplug().unwrap();
        let replayed = Replayed::attach(&image, &dir.path().join("replay"), "ext2");
        let back = std::fs::read(replayed.mount_point.join("f")).unwrap();
        assert!(back == data, "the file came back different");
    }
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 15: injected faults fail exactly the requests they name and are counted.
fn injected_faults_fail_exactly_the_requests_they_name_and_are_counted() {
    // ext2 has no journal and nothing touches the raw device but the command: the rules
    // meet only its requests. The 4 KiB block at 60 MiB: two writes to it fail, then it
    // heals (times=2); every read of it fails; a write elsewhere goes through.
    let dir = backing();
    let report = dir.path().join("report.json");
    let script = r#"
say() { if "$@" 2>/dev/null; then echo ok; else echo failed; fi; }
w() { say dd if=/dev/zero of=$FSYNCLAB_LOOP_DEVICE bs=4k count=1 seek=$1 oflag=direct conv=notrunc; }
r() { say dd if=$FSYNCLAB_LOOP_DEVICE of=/dev/null bs=4k count=1 skip=$1 iflag=direct; }
echo "write $(w 15360)"; echo "write elsewhere $(w 15000)"; echo "write $(w 15360)"; echo "write $(w 15360)"
echo "read $(r 15360)"; echo "read elsewhere $(r 15000)"; echo "read $(r 15360)"
"#;
    let device = "hdd-5400,fail=write:range=60M+4k:times=2,fail=read:range=60M+4k";
    let out = ScratchRun::exec_on("ext2", device, dir.path())
        .output_to(&report)
        .sh(script)
        .output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let said: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        said,
        [
            "write failed",
            "write elsewhere ok",
            "write failed",
            "write ok",
            "read failed",
            "read elsewhere ok",
            "read failed",
        ],
        "{stdout}"
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    let p = &r["environment"]["device_profile"];
    let a = &p["activity"];
    assert_eq!(
        (
            count(a, "failed_writes"),
            count(a, "failed_reads"),
            count(a, "failed_flushes")
        ),
        (2, 2, 0),
        "{a}"
    );
    assert_eq!(
        p["model"]["faults"],
        serde_json::json!(["fail=write:range=60M+4k:times=2", "fail=read:range=60M+4k"])
    );
    std::fs::remove_file(&report).unwrap();
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// Issue 15: a failing flush set on a running device fails once then heals.
fn a_failing_flush_set_on_a_running_device_fails_once_then_heals() {
    // Set once the filesystem is mounted (as a scenario makes the device fail when it
    // chooses): after one flush that goes through, one fails. ext2 flushes only when asked.
    let dir = backing();
    {
        let target = scratch("ext2", "hdd-5400", "64M", dir.path());
        let control = target.device_control().unwrap();
        let _ = target.flushes(); // marks where the activity below is measured from
        control.set_faults("fail=flush:after=1:times=1").unwrap();
        let raw = std::fs::File::open(target.loop_device().unwrap()).unwrap();
        let flushed: Vec<bool> = (0..3).map(|_| raw.sync_all().is_ok()).collect();
        assert_eq!(flushed, [true, false, true]);
        let a = target.device_activity().unwrap();
        assert_eq!((a.failed_flushes, a.failed_writes, a.failed_reads), (1, 0, 0), "{a:?}");
        assert!(control.set_faults("fail=flush:soon").is_err());
    }
    assert_eq!(traces_under(dir.path()), Vec::<String>::new(), "left behind");
}

/// `fsynclab exec ... --device DEVICE -- true`: its exit status and stderr.
fn exec_true(device: &str) -> (Option<i32>, String) {
    let out = fsynclab()
        .args(["exec", "--scratch", "ext4", "--scratch-size", "64M", "--device", device])
        .args(["--", "true"])
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Issue 15: bad fault options are one line saying what is valid.
fn bad_fault_options_are_one_line_saying_what_is_valid() {
    for (device, says) in [
        (
            "hdd-7200,fail=writes",
            "fail=writes: unknown kind 'writes'; expected fail=write|read|flush",
        ),
        ("hdd-7200,fail=write:range=1G", "range=1G: expected OFFSET+LENGTH"),
        ("hdd-7200,fail=flush:p=0", "p=0: expected a probability above 0"),
    ] {
        let (status, stderr) = exec_true(device);
        assert_eq!(status, Some(2), "{device}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{device}: {stderr}");
        assert!(stderr.contains(says), "{device}: {stderr}");
    }
}

/// Issue 15: faults that fail the mount are refused and leave nothing.
fn faults_that_fail_the_mount_are_refused_and_leave_nothing() {
    // A flush rule in force from the device's start fails mount's own flush. Before, the
    // failed mount also left the media's tmpfs busy (the device went after the undo that
    // needed it gone), for `fsynclab cleanup`, as any mount failing on an emulated disk did.
    let dir = backing();
    let private = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(private.path().to_path_buf());
    let out = ScratchRun::exec_on("ext4", "hdd-5400,fail=flush", dir.path())
        .command()
        .env(private.env().0, private.path())
        .args(["--", "true"])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("mount failed with the fail= rules in force from the device's start"),
        "{stderr}"
    );
    assert!(
        stderr.contains("let mount through with after=N or after=DURATION"),
        "{stderr}"
    );
    assert_cleanup_finds_nothing(&private, dir.path());
}

/// Issue 15: n failed flushes are exactly the n failed fsync calls of a run.
fn n_failed_flushes_are_exactly_the_n_failed_fsync_calls_of_a_run() {
    // Issue 15, item 3: a scenario run on a disk told to fail N requests finds exactly the N
    // calls they failed in its result, on the run's clock in the report and in `explain`,
    // and exits 1. Flushes, because their calls are known exactly: ext2 has no journal, so a
    // flush comes only from an fsync, once each; a failed write of writeback would reach
    // fsync only through the page cache, which merges requests, and another process's
    // sync(2) could write back metadata the rule then fails instead. The few flushes made
    // before the prober's (the work directory's own fsyncs) are let through by after=6.
    const N: usize = 3;
    let dir = backing();
    let private = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(private.path().to_path_buf());
    let report = dir.path().join("report.json");
    let device = format!("nvme,fail=flush:after=6:times={N}");
    let out = ScratchRun::run("overwrite-fsync")
        .arg("--no-explain")
        .fs("ext2")
        .size("160M")
        .device(&device)
        .backing(dir.path())
        .set("background", "none")
        .set("sleep", "0")
        .set("iterations", "12")
        .set("write_size", "4k")
        .command()
        .env(private.env().0, private.path())
        .arg("-o")
        .arg(&report)
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "failed calls make the run fail: {stderr}");
    assert!(
        stderr.contains(&format!("{N} calls failed (first: EIO from fsync at ")),
        "{stderr}"
    );

    // The result: exactly N failed calls, all fsync, one after another, and N failed flushes.
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    common::assert_matches_schema(&r);
    let fsyncs: Vec<&Value> = r["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["op"] == "fsync")
        .collect();
    assert_eq!(fsyncs.len(), 12, "every iteration's fsync is recorded");
    let failed: Vec<usize> = (0..fsyncs.len()).filter(|&i| fsyncs[i]["error"] == "EIO").collect();
    assert_eq!(failed.len(), N, "{failed:?}");
    assert_eq!(
        failed[N - 1] - failed[0],
        N - 1,
        "the failed calls are consecutive: {failed:?}"
    );
    let all_failed = r["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s.get("error").is_some())
        .count();
    assert_eq!(all_failed, N, "no call but those fsyncs failed");
    let a = &r["environment"]["device_profile"]["activity"];
    assert_eq!(
        (count(a, "failed_flushes"), count(a, "failed_writes")),
        (N as u64, 0),
        "{a}"
    );

    // On the run's clock, in the report and in `explain` alike.
    let at: Vec<String> = failed
        .iter()
        .map(|&i| format!("{:.3}s", fsyncs[i]["t_ns"].as_u64().unwrap() as f64 / 1e9))
        .collect();
    let line = format!(
        "failed calls: {N} of 24, on the run's clock: fsync EIO x{N} at {}",
        at.join(", ")
    );
    let below = format!("below them: the emulated disk failed {N} flushes (fail=flush:after=6:times={N})");
    let explained = fsynclab().arg("explain").arg(&report).output().unwrap();
    let explained = String::from_utf8_lossy(&explained.stdout).into_owned();
    for text in [stdout.to_string(), explained] {
        assert!(text.contains(&line), "{line}\nnot in:\n{text}");
        assert!(text.contains(&below), "{below}\nnot in:\n{text}");
    }
    std::fs::remove_file(&report).unwrap();
    assert_cleanup_finds_nothing(&private, dir.path());
}

/// Issue 19: physically absurd profiles are refused with the valid range.
fn physically_absurd_profiles_are_refused_with_the_valid_range() {
    // Issue 19, item 6: `write=1` put mount in D state for minutes; `rpm=1` took 175 s to
    // stop. Refused before anything is made, with the range real drives span.
    for (device, says) in [
        (
            "flush=1ms,write=1",
            "write=1 is beyond any real drive; valid: 600K to 64G per second",
        ),
        ("rpm=1,rate=50M", "rpm=1 is beyond any real drive; valid: 3600 to 15000"),
    ] {
        let (status, stderr) = exec_true(device);
        assert_eq!(status, Some(2), "{device}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{device}: {stderr}");
        assert!(stderr.contains(says), "{device}: {stderr}");
    }
}

/// The slowest disk the ranges allow for every request: a second of command latency.
const SLOWEST: &str = "latency=1s";

/// `fsynclab exec` on a scratch ext4 over [`SLOWEST`], under `backing`, with a private state
/// directory, running `script`.
fn slow_exec(backing: &Path, private: &common::PrivateState, script: &str) -> std::process::Child {
    ScratchRun::exec_on("ext4", SLOWEST, backing)
        .sh(script)
        .spawn_in(private)
}

/// Sends SIGTERM to `child` and returns how long it took to end and how.
fn sigterm(child: &mut std::process::Child) -> (Duration, std::process::ExitStatus) {
    let sent = Instant::now();
    common::send(child, libc::SIGTERM);
    let status = common::wait_at_most(child, Duration::from_secs(120));
    (sent.elapsed(), status)
}

/// What `fsynclab cleanup` says over `private`: nothing left to clean.
fn assert_cleanup_finds_nothing(private: &common::PrivateState, backing: &Path) {
    let said = private.cleanup();
    assert!(said.contains("nothing to clean up"), "{said}");
    assert_eq!(traces_under(backing), Vec::<String>::new(), "left behind");
}

/// Issue 19: SIGTERM during a mount on a slow disk ends the run within seconds.
fn sigterm_during_a_mount_on_a_slow_disk_ends_the_run_within_seconds() {
    // Mounting ext4 over a disk that answers each request after a second takes about 10 s
    // (9.1 s from SIGTERM to exit before the fix). SIGTERM once the mount has begun: the
    // device stops emulating time, the mount finishes at once, the run ends and undoes.
    let dir = backing();
    let private = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(private.path().to_path_buf());
    let mut child = slow_exec(dir.path(), &private, "true");
    let state = private.file_of(child.id());
    common::wait_for_file_containing(&state, "\"mount\"", &mut child);
    std::thread::sleep(Duration::from_millis(500));
    let (took, status) = sigterm(&mut child);
    let stderr = common::stderr_of(&mut child);
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(took < Duration::from_secs(5), "{took:?} from SIGTERM to exit: {stderr}");
    assert!(stderr.contains("while preparing the target"), "{stderr}");
    assert_cleanup_finds_nothing(&private, dir.path());
}

/// Issue 19: SIGTERM while the command waits on a slow disk ends the run within seconds.
fn sigterm_while_the_command_waits_on_a_slow_disk_ends_the_run_within_seconds() {
    // The command writes 16 MiB and syncs: 16 requests of 1 MiB and their flushes, a
    // second each. SIGTERM once it has started: forwarded to it, and the device stops
    // emulating time, so that the sync it waits in returns and the run ends.
    let dir = backing();
    let elsewhere = tempfile::tempdir().unwrap();
    let started = elsewhere.path().join("started");
    let script = format!(
        "touch {}; dd if=/dev/zero of=f bs=1M count=16 2>/dev/null; sync",
        started.display()
    );
    let private = common::PrivateState::new();
    let _cleanup = common::CleanupOnDrop(private.path().to_path_buf());
    let mut child = slow_exec(dir.path(), &private, &script);
    let deadline = Instant::now() + Duration::from_secs(90);
    while !started.exists() {
        assert!(
            child.try_wait().unwrap().is_none(),
            "fsynclab ended before the command started"
        );
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(500));
    let (took, status) = sigterm(&mut child);
    let stderr = common::stderr_of(&mut child);
    assert_eq!(status.code(), Some(143), "{stderr}");
    assert!(took < Duration::from_secs(5), "{took:?} from SIGTERM to exit: {stderr}");
    assert_cleanup_finds_nothing(&private, dir.path());
}

/// A failure count of the device's activity: the result leaves a count out when it is zero,
/// so an absent key reads as 0 (and anything else there is a wrong result, not a zero).
fn count(activity: &Value, key: &str) -> u64 {
    match activity.get(key) {
        None => 0,
        Some(v) => v.as_u64().unwrap_or_else(|| panic!("{key} is not a count: {v}")),
    }
}
