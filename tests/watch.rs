//! Issue 25: `fsynclab watch` follows the sync calls of processes already running with a BPF
//! program in the kernel, prints each slow one with parts that add up to it, ends with the
//! percentiles, is recorded as a run that `runs`, `explain` and `report` read, leaves no BPF
//! program behind however it ends, and refuses in one line where BPF cannot run. The privileged tests need root and a kernel with BPF and BTF; the one
//! with a slow disk also FUSE (the emulated 7200 rpm disk under a scratch ext4).

#![allow(clippy::unwrap_used)] // a test fails loudly: that is its job

mod common;
#[path = "watch/hooks.rs"]
mod hooks;

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::harness::Need;
use common::Need::{Bpf, Fuse, Root, Tool};
use common::{backing, bin, fsynclab, send, wait_at_most, ScratchRun};
use hooks::{
    a_kernel_that_refuses_the_hooks_asked_for_is_one_line_naming_them,
    a_watch_killed_at_any_moment_of_its_start_leaves_no_program_or_map,
    a_watch_says_in_a_line_which_hooks_it_attached_and_records_them,
    a_whole_machine_watch_defaults_to_latency_and_a_watch_of_named_tasks_to_disk,
    each_detail_attaches_only_its_hooks_and_splits_each_call_its_own_way,
};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

common::tests! {
    watch_pid_reports_the_slow_fsyncs_of_a_program_started_before_it: [Root, Fuse, Bpf],
    a_watch_is_stored_as_a_run_whose_slow_calls_explain_reads: [Root, Fuse, Bpf],
    watch_cgroup_reports_only_the_tasks_inside_it: [Root, Bpf, CGROUP2],
    a_watch_counts_the_failed_sync_calls_apart: [Root, Bpf, Tool("python3")],
    a_watch_killed_with_sigkill_leaves_no_bpf_program: [Root, Bpf, Tool("bpftool")],
    a_watch_of_more_short_lived_processes_than_the_kernel_keeps_counts_and_names_every_call:
        [Root, Bpf, Tool("python3")],
    a_watch_of_processes_by_id_ends_when_the_last_of_them_ends: [Root, Bpf, Tool("sleep")],
    a_watch_of_a_process_whose_main_thread_ended_follows_its_other_threads_to_the_end:
        [Root, Bpf, Tool("python3")],
    watch_refuses_in_one_line_where_bpf_is_missing,
    watch_refuses_in_one_line_without_root: [Root, Tool("setpriv")],
    a_watch_whose_reader_goes_away_stops_quietly_and_is_stored: [Root, Bpf, Tool("python3")],
    bad_watch_flags_are_refused_in_one_line,
    a_watch_says_in_a_line_which_hooks_it_attached_and_records_them: [Root, Bpf, Tool("python3")],
    each_detail_attaches_only_its_hooks_and_splits_each_call_its_own_way: [Root, Bpf, Tool("python3")],
    a_whole_machine_watch_defaults_to_latency_and_a_watch_of_named_tasks_to_disk: [Root, Bpf],
    a_kernel_that_refuses_the_hooks_asked_for_is_one_line_naming_them: [Root, Bpf, Tool("bpftool")],
    a_watch_killed_at_any_moment_of_its_start_leaves_no_program_or_map: [Root, Bpf, Tool("bpftool")],
}

/// A cgroup v2 hierarchy to make a test's cgroup in.
const CGROUP2: Need = Need::That("cgroup v2 mounted (a cgroup2 line in /proc/self/mountinfo)", || {
    cgroup2_mount().is_some()
});

/// Where cgroup v2 is mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified beside v1.
fn cgroup2_mount() -> Option<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    info.lines().rev().find_map(|l| {
        let (left, right) = l.split_once(" - ")?;
        let mount_point = left.split(' ').nth(4)?;
        (right.split(' ').next()? == "cgroup2").then(|| PathBuf::from(mount_point))
    })
}

/// A cgroup made for one test; dropped (the test passed or failed), it kills what is still
/// in it and removes it.
struct TestCgroup {
    dir: PathBuf,
}

impl TestCgroup {
    fn make() -> TestCgroup {
        let dir = cgroup2_mount()
            .unwrap()
            .join(format!("fsynclab-test-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap();
        TestCgroup { dir }
    }
}

impl Drop for TestCgroup {
    fn drop(&mut self) {
        for _ in 0..100 {
            let procs = std::fs::read_to_string(self.dir.join("cgroup.procs")).unwrap_or_default();
            for pid in procs.lines().filter_map(|l| l.trim().parse::<i32>().ok()) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
            }
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!("could not remove the test cgroup {}", self.dir.display());
    }
}

/// A latency as watch prints it (`31.800ms`, `120.4us`, `1.2s`, `640ns`), in ns.
fn ns_of(text: &str) -> f64 {
    let split = text.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(text.len());
    let (value, unit) = text.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => panic!("no latency: {text:?}"),
    };
    value.parse::<f64>().unwrap_or_else(|_| panic!("no latency: {text:?}")) * scale
}

/// Each slow call's line: `... fsync(fd 17 PATH) 31.800ms: 27.161ms waiting for ...; 4.518ms
/// ...; 120.4us on CPU | meanwhile ...` → (latency, parts) in ns.
fn latency_and_parts(line: &str) -> (f64, Vec<f64>) {
    let (head, rest) = line.split_once(": ").unwrap();
    let latency = ns_of(head.rsplit(' ').next().unwrap());
    let parts_text = rest.split(" | ").next().unwrap();
    let parts = outside_parentheses(parts_text)
        .into_iter()
        .map(|p| ns_of(p.split(' ').next().unwrap()))
        .collect();
    (latency, parts)
}

/// `text` split at each `; ` outside parentheses: a part's commit may say `(commit 49.6ms:
/// 48.9ms cache flushes; the device wrote 32.0 KiB meanwhile)`.
fn outside_parentheses(text: &str) -> Vec<&str> {
    let (mut out, mut depth, mut from) = (Vec::new(), 0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ';' if depth == 0 && text[i..].starts_with("; ") => {
                out.push(&text[from..i]);
                from = i + 2;
            }
            _ => {}
        }
    }
    out.push(&text[from..]);
    out
}

/// A program making slow fsyncs for `duration`, started now: seed 000's run (1 MiB write +
/// fsync every 100 ms behind a streaming writer) on a scratch ext4 over the emulated 7200
/// rpm disk made under `backing`, storing nothing.
fn fsyncing_on_a_slow_disk(backing: &Path, duration: &str) -> std::process::Child {
    ScratchRun::run("overwrite-fsync")
        .quiet()
        .args([
            "--no-explain",
            "--set",
            &format!("duration={duration}"),
            "--set",
            "sleep=100ms",
        ])
        .args(["--set", "file_size=16M", "--set", "chunk=1M"])
        .fs("ext4")
        .device("hdd-7200")
        .backing(backing)
        .process()
        .env("FSYNCLAB_STORE", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Ends programs started to outlive a watch (a process that ended by the watch's end is
/// summed under its name, not its pid, and a watch may take seconds to load on a busy
/// machine): each must still be running, and ended with SIGTERM it undoes its run and exits
/// with 128 + 15. All are ended before anything is asserted.
fn end_after_the_watch(programs: &mut [&mut std::process::Child]) {
    let running: Vec<bool> = programs.iter_mut().map(|p| p.try_wait().unwrap().is_none()).collect();
    for p in programs.iter() {
        let _ = kill(Pid::from_raw(p.id() as i32), Signal::SIGTERM);
    }
    let ended: Vec<_> = programs
        .iter_mut()
        .map(|p| wait_at_most(p, Duration::from_secs(60)))
        .collect();
    assert!(
        running.iter().all(|r| *r),
        "a watched program ended before the watch did: {ended:?}"
    );
    assert!(
        ended.iter().all(|s| s.code() == Some(143)),
        "a watched program did not end cleanly on SIGTERM: {ended:?}"
    );
}

/// `fsynclab watch --pid PID --threshold T --duration D`.
fn watch_pid(pid: u32, threshold: &str, duration: &str) -> assert_cmd::Command {
    let mut cmd = fsynclab();
    cmd.args([
        "watch",
        "--pid",
        &pid.to_string(),
        "--threshold",
        threshold,
        "--duration",
        duration,
    ]);
    cmd
}

/// Issue 25: a program that was already making fsyncs on a slow disk when the watch began
/// (a run of seed 000 over the emulated 7200 rpm disk) has its slow fsyncs printed, each
/// split into parts that add up to it (within the rounding of the printed figures) and at
/// least one naming a cause read from the kernel stack, a wait for the journal naming the
/// commit it ended with; the summary has its percentiles.
fn watch_pid_reports_the_slow_fsyncs_of_a_program_started_before_it() {
    let dir = backing();
    let mut program = fsyncing_on_a_slow_disk(dir.path(), "120s");
    let pid = program.id();
    std::thread::sleep(Duration::from_millis(500));
    let out = watch_pid(pid, "2ms", "6s").output().unwrap();
    end_after_the_watch(&mut [&mut program]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "watch failed: {stderr}");
    let calls: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(&format!("fsynclab[{pid}/")))
        .collect();
    assert!(!calls.is_empty(), "no slow fsync of {pid} printed:\n{stdout}");
    for line in &calls {
        assert!(line.contains(" fsync(fd "), "{line}");
        let (latency, parts) = latency_and_parts(line);
        assert!(latency >= 2e6, "a call under the threshold printed: {line}");
        let sum: f64 = parts.iter().sum();
        // Each figure is printed to three or four significant digits.
        assert!(
            (sum - latency).abs() <= latency * 0.005 + 1e3,
            "parts add to {sum} of {latency}: {line}"
        );
    }
    let named = [
        "waiting for a journal commit",
        "waiting for data writeback",
        "device cache flush",
    ];
    assert!(
        calls.iter().any(|l| named.iter().any(|n| l.contains(n))),
        "no call names what it waited for:\n{stdout}"
    );
    // seed 000's fsyncs wait for ext4's journal; a wait for it names the commit (but one
    // that began before the watch did, whose start the program never saw).
    assert!(
        calls
            .iter()
            .any(|l| l.contains("waiting for a journal commit: jbd2 transaction ") && l.contains(" (commit ")),
        "no wait for the journal names its commit:\n{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("fsynclab[{pid}]")))
        .unwrap_or_else(|| panic!("no summary row for {pid}:\n{stdout}"));
    let count: u64 = row.split_whitespace().nth(2).unwrap().parse().unwrap();
    assert!(count >= calls.len() as u64, "{row}");
    assert!(
        stdout.contains("run time was not counted (--bpf-stats counts it)"),
        "without --bpf-stats the summary must say the programs' run time was not counted:\n{stdout}"
    );
}

/// Issue 25: a watch of a program started before it, ended by --duration, is stored as a
/// run: `runs` lists it as scenario watch, `explain ID` shows its slow calls each with parts
/// that add up to it (within the rounding of the printed figures) and what the tracer cost
/// (its programs' run time, asked for with --bpf-stats, which the stored run says), and
/// `report ID` draws it.
fn a_watch_is_stored_as_a_run_whose_slow_calls_explain_reads() {
    let dir = backing();
    let store = dir.path().join("results.sqlite");
    let mut program = fsyncing_on_a_slow_disk(dir.path(), "8s");
    let pid = program.id();
    std::thread::sleep(Duration::from_millis(500));
    let with_store = |args: &[&str]| {
        let out = Command::new(bin())
            .args(args)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?} failed: {stderr}");
        (stdout, stderr)
    };
    let (_, said) = with_store(&[
        "watch",
        "--pid",
        &pid.to_string(),
        "--threshold",
        "2ms",
        "--duration",
        "4s",
        "--bpf-stats",
    ]);
    let status = wait_at_most(&mut program, Duration::from_secs(60));
    assert!(status.success(), "the watched run failed: {status}");
    let id = said
        .lines()
        .find_map(|l| l.strip_prefix("stored as run "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("the watch was not stored: {said}"))
        .to_string();

    let (runs, _) = with_store(&["runs"]);
    let row = runs
        .lines()
        .find(|l| l.split_whitespace().next() == Some(id.as_str()))
        .unwrap_or_else(|| panic!("run {id} not listed:\n{runs}"));
    assert!(row.contains(" watch "), "{row}");
    // `id  started  scenario  measured  calls ...`: the calls the kernel counted.
    let listed_calls: u64 = row.split_whitespace().nth(6).unwrap().parse().unwrap();
    assert!(listed_calls > 0, "{row}");

    let (explained, _) = with_store(&["explain", &id]);
    assert!(explained.starts_with("watch "), "{explained}");
    assert!(
        explained.contains("by the tracer in the kernel (BPF)") && explained.contains("its programs ran"),
        "the tracer's cost is not shown:\n{explained}"
    );
    let (json, _) = with_store(&["show", &id, "--format", "json"]);
    let stored: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        stored["explain"]["bpf"]["program_stats"],
        serde_json::Value::Bool(true),
        "the stored run does not say the run-time statistics were on"
    );
    assert_eq!(stored["params"]["bpf_stats"], "on", "{}", stored["params"]);
    // `fsync (fsynclab 812) at 1.234s took 31.800ms; parts add up to 31.800ms`, then one
    // line a part: `   27.161ms  85.4%  waiting for ...`.
    let mut calls = 0;
    let mut lines = explained.lines().peekable();
    while let Some(line) = lines.next() {
        let Some((head, total)) = line.split_once("; parts add up to ") else {
            continue;
        };
        calls += 1;
        assert!(head.starts_with("fsync (fsynclab"), "{line}");
        let latency = ns_of(head.rsplit(' ').next().unwrap());
        assert_eq!(ns_of(total), latency, "{line}");
        assert!(latency >= 2e6, "a call under the threshold kept: {line}");
        let mut sum = 0.0;
        let is_part = |l: &&&str| l.starts_with("  ") && l.split_whitespace().nth(1).is_some_and(|w| w.ends_with('%'));
        while let Some(part) = lines.peek().filter(is_part) {
            sum += ns_of(part.split_whitespace().next().unwrap());
            lines.next();
        }
        assert!(
            (sum - latency).abs() <= latency * 0.005 + 1e3,
            "parts add to {sum} of {latency}: {line}"
        );
    }
    assert!(calls > 0, "no slow call explained:\n{explained}");

    let page = dir.path().join("watch.html");
    with_store(&["report", &id, "-o", page.to_str().unwrap()]);
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("watch") && html.contains("fsync"),
        "the page lacks the run"
    );
    // Issue 64: the runs table counts the calls `runs` counts (it said 0: a watch keeps
    // histograms, not per-call samples).
    let runs_table = &html[html.find("<h2>Runs</h2>").unwrap()..];
    let row = &runs_table[runs_table.find("<tr><td>").unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    let cells: Vec<&str> = row
        .split("<td")
        .skip(1)
        .map(|c| c.split('>').nth(1).unwrap().split('<').next().unwrap())
        .collect();
    assert_eq!(cells[5], listed_calls.to_string(), "{row}");
}

/// Issue 25: `--cgroup` follows only the tasks of that cgroup: of two programs making the same
/// fsyncs, one started in a cgroup made for the test and one outside, only the first's calls
/// are printed and counted (the filter runs in the kernel, at each call's entry). Both
/// programs must outlive the watch (a process that ended is summed under its name, not its
/// pid), however long the watch takes to load: they run until ended once the watch is over.
fn watch_cgroup_reports_only_the_tasks_inside_it() {
    let cgroup = TestCgroup::make();
    let dir = backing();
    // A prober fsyncing 1 MiB overwrites every 20ms, nothing in the background, for longer
    // than the test waits: it is ended with SIGTERM after the watch.
    let syncing = |name: &str, in_cgroup: Option<&Path>| {
        let work = dir.path().join(name);
        std::fs::create_dir(&work).unwrap();
        let mut cmd = Command::new("sh");
        let procs = in_cgroup.map_or("/dev/null".into(), |c| c.join("cgroup.procs"));
        cmd.arg("-c")
            .arg(r#"echo $$ > "$0" && exec "$@""#)
            .arg(procs)
            .arg(bin())
            .args(["run", "overwrite-fsync", "--no-explain", "--set", "background=none"])
            .args(["--set", "duration=120s", "--set", "sleep=20ms", "--dir"])
            .arg(&work)
            .env("FSYNCLAB_STORE", "off")
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd.spawn().unwrap()
    };
    let mut inside = syncing("inside", Some(&cgroup.dir));
    let mut outside = syncing("outside", None);
    std::thread::sleep(Duration::from_millis(500));
    let out = fsynclab()
        .args(["watch", "--cgroup"])
        .arg(&cgroup.dir)
        .args(["--threshold", "0s", "--duration", "3s"])
        .output()
        .unwrap();
    end_after_the_watch(&mut [&mut inside, &mut outside]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "watch failed: {stderr}");
    assert!(stderr.contains("the tasks of cgroup"), "{stderr}");
    let (inside, outside) = (inside.id(), outside.id());
    let printed = |pid: u32| stdout.lines().filter(|l| l.contains(&format!("[{pid}/"))).count();
    assert!(printed(inside) > 0, "no call of {inside} (inside) printed:\n{stdout}");
    assert_eq!(printed(outside), 0, "a call of {outside} (outside) printed:\n{stdout}");
    let row = |pid: u32| {
        stdout
            .lines()
            .any(|l| l.trim_start().starts_with(&format!("fsynclab[{pid}]")))
    };
    assert!(row(inside), "no summary row for {inside}:\n{stdout}");
    assert!(!row(outside), "a summary row for {outside}:\n{stdout}");
}

/// Issue 25: a watched program's failed sync calls are counted apart from the rest: a program
/// that fsyncs a file and then a pipe (which has no fsync: EINVAL) each round has about half
/// its fsyncs failed, which the summary's `failed` column and the stored run's errors say.
fn a_watch_counts_the_failed_sync_calls_apart() {
    let dir = backing();
    let store = dir.path().join("results.sqlite");
    let script = r#"
import os, sys, time
r, w = os.pipe()
f = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
end = time.time() + 8
while time.time() < end:
    os.write(f, b"x" * 4096)
    os.fsync(f)
    try:
        os.fsync(w)
    except OSError:
        pass
    time.sleep(0.005)
"#;
    let mut program = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir.path().join("data"))
        .spawn()
        .unwrap();
    let pid = program.id();
    std::thread::sleep(Duration::from_millis(500));
    let out = watch_pid(pid, "1h", "3s").arg("--store").arg(&store).output().unwrap();
    let status = wait_at_most(&mut program, Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(status.success(), "the syncing program failed");
    // `  python3[PID]  fsync  CALLS  FAILED  p50 ...`
    let row: Vec<&str> = stdout
        .lines()
        .find(|l| l.trim_start().starts_with(&format!("python3[{pid}]")))
        .unwrap_or_else(|| panic!("no summary row for {pid}:\n{stdout}"))
        .split_whitespace()
        .collect();
    assert_eq!(row[1], "fsync", "{stdout}");
    let (calls, failed): (u64, u64) = (row[2].parse().unwrap(), row[3].parse().unwrap());
    assert!(calls >= 20, "{stdout}");
    // One fsync of the pipe after each of the file: half fail, give or take the round the
    // watch began or ended in.
    assert!(failed.abs_diff(calls / 2) <= 1, "{failed} of {calls} failed:\n{stdout}");
    let shown = stored_run_1(&store);
    assert_eq!(shown["ops"]["fsync"]["count"], calls, "{shown}");
    assert_eq!(shown["ops"]["fsync"]["errors"], failed, "{shown}");
}

/// A watch of processes by id, with neither --duration nor a signal, ends once each of them
/// has ended (the first one while the second still runs does not end it), says so, and is
/// stored as any other.
fn a_watch_of_processes_by_id_ends_when_the_last_of_them_ends() {
    let dir = backing();
    let store = dir.path().join("results.sqlite");
    let mut first = Command::new("sleep").arg("1").spawn().unwrap();
    let mut second = Command::new("sleep").arg("4").spawn().unwrap();
    let started = std::time::Instant::now();
    let mut watch = Command::new(bin())
        .args(["watch", "--pid", &format!("{},{}", first.id(), second.id()), "--store"])
        .arg(&store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    first.wait().unwrap();
    second.wait().unwrap();
    let status = wait_at_most(&mut watch, Duration::from_secs(30));
    let took = started.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut watch.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "{err}");
    assert!(
        err.contains(&format!("processes {}, {} ended", first.id(), second.id())),
        "{err}"
    );
    assert!(
        took >= Duration::from_secs(4),
        "ended after {took:?}, before the second process"
    );
    assert_eq!(stored_run_1(&store)["scenario"], "watch");
}

/// A process whose main thread has ended while another thread goes on syncing (its main
/// thread a zombie until the last ends) is not taken for ended: a watch of it by id goes on
/// until its last thread ends, and counts every call in the process's one row, past the
/// times the watch takes the ended processes out of the kernel's maps.
fn a_watch_of_a_process_whose_main_thread_ended_follows_its_other_threads_to_the_end() {
    const CALLS: u32 = 40;
    let dir = backing();
    let store = dir.path().join("results.sqlite");
    let go = dir.path().join("go");
    // The second thread waits for `go`, then makes CALLS fsyncs over 6 s (more than the
    // 5 s between the watch's takings); the main thread ends at once (pthread_exit).
    let script = r#"
import ctypes, os, sys, threading, time
def sync():
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
    for _ in range(int(sys.argv[3])):
        os.write(fd, b"x" * 4096)
        os.fsync(fd)
        time.sleep(0.15)
threading.Thread(target=sync).start()
ctypes.CDLL(None).pthread_exit(None)
"#;
    let mut program = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(dir.path().join("data"))
        .arg(&go)
        .arg(CALLS.to_string())
        .spawn()
        .unwrap();
    let pid = program.id();
    let since = std::time::Instant::now();
    while !std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap()
        .contains(") Z ")
    {
        assert!(
            since.elapsed() < Duration::from_secs(10),
            "the main thread of {pid} did not end"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let (watch, mut stderr) = watching(&["--pid", &pid.to_string(), "--threshold", "1h"], &store, &[]);
    std::fs::write(&go, "").unwrap();
    let status = wait_at_most(&mut program, Duration::from_secs(60));
    assert!(status.success(), "the syncing program failed");
    let out = watch.wait_with_output().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut err).unwrap();
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("process {pid} ended")), "{err}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let rows: Vec<&str> = stdout.lines().filter(|l| l.contains(" fsync ")).collect();
    assert_eq!(rows.len(), 1, "{stdout}");
    let row: Vec<&str> = rows[0].split_whitespace().collect();
    assert_eq!(
        row[..3],
        [&*format!("python3[{pid}]"), "fsync", &*CALLS.to_string()],
        "{stdout}"
    );
    assert_eq!(stored_run_1(&store)["ops"]["fsync"]["count"], CALLS, "{stdout}");
}

/// `fsynclab watch ARGS --store STORE` started with `env`, once it says it is watching: its
/// process (stdout piped) and the rest of its stderr.
fn watching(
    args: &[&str],
    store: &Path,
    env: &[(&str, &str)],
) -> (std::process::Child, BufReader<std::process::ChildStderr>) {
    let mut watch = Command::new(bin())
        .envs(env.iter().copied())
        .arg("watch")
        .args(args)
        .arg("--store")
        .arg(store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(watch.stderr.take().unwrap());
    let mut said = String::new();
    stderr.read_line(&mut said).unwrap();
    assert!(said.starts_with("watching the sync calls"), "{said}");
    (watch, stderr)
}

/// Run 1 of results store `store`, as `show --format json` prints it.
fn stored_run_1(store: &Path) -> serde_json::Value {
    let shown = Command::new(bin())
        .args(["show", "1", "--format", "json", "--store"])
        .arg(store)
        .output()
        .unwrap();
    serde_json::from_slice(&shown.stdout).unwrap()
}

/// Issue 25 (memory stays bounded however long it watches): the kernel keeps the names of
/// 4,096 processes and 16,384 histogram buckets; a watch takes the processes that ended out
/// of both as it goes, every 5 s and whenever 1,024 new processes have come. 4,500
/// processes, each forked to make one fsync and exit, are all counted, in one row of their
/// name, none nameless, nothing lost.
fn a_watch_of_more_short_lived_processes_than_the_kernel_keeps_counts_and_names_every_call() {
    const PROCESSES: u64 = 4_500;
    let dir = backing();
    let store = dir.path().join("results.sqlite");
    // A name of this test's own: the watch follows the tasks of that name (a command's name
    // is its file's, here a link to python).
    let name = format!("fsf{}", std::process::id() % 100_000);
    let python = Command::new("python3")
        .args(["-c", "import os, sys; print(os.path.realpath(sys.executable))"])
        .output()
        .unwrap();
    let link = dir.path().join(&name);
    std::os::unix::fs::symlink(String::from_utf8_lossy(&python.stdout).trim(), &link).unwrap();
    // The takings every 5 s put off for the hour: only those that new processes' names bring
    // on (a quarter of the kernel's names) keep the names from filling, however fast this
    // machine forks (825 a second were seen, 4,125 processes in the first 5 s).
    let (watch, mut stderr) = watching(
        &["--comm", &name, "--threshold", "1h", "--duration", "5m"],
        &store,
        &[("FSYNCLAB_TEST_TAKE_EVERY", "3600")],
    );
    let script = r#"
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for _ in range(int(sys.argv[2])):
    pid = os.fork()
    if pid == 0:
        os.fsync(fd)
        os._exit(0)
    os.waitpid(pid, 0)
"#;
    let forked = Command::new(&link)
        .arg("-c")
        .arg(script)
        .arg(dir.path().join("data"))
        .arg(PROCESSES.to_string())
        .status()
        .unwrap();
    assert!(forked.success(), "the forking program failed");
    send(&watch, libc::SIGINT);
    let out = watch.wait_with_output().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{rest}");
    assert!(!rest.contains("lost in the kernel"), "{rest}");
    // The parent made no sync call: one row, its children's, `fsfN (4500 exited) fsync 4500`.
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("process "))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 1, "{stdout}");
    assert_eq!(
        rows[0][..4],
        [name.as_str(), &format!("({PROCESSES}"), "exited)", "fsync"],
        "{stdout}"
    );
    assert_eq!(rows[0][4], PROCESSES.to_string(), "{stdout}");
    let shown = stored_run_1(&store);
    assert_eq!(shown["ops"]["fsync"]["count"], PROCESSES, "{shown}");
    assert_eq!(
        shown["details"]["watch"]["exited"][format!("{name} ({PROCESSES} exited)")],
        PROCESSES,
        "{shown}"
    );
}

/// Issue 25: a watch killed with SIGKILL (no chance to clean up) leaves none of its BPF
/// programs loaded: they were attached through links its descriptors owned, never pinned.
fn a_watch_killed_with_sigkill_leaves_no_bpf_program() {
    let mut watch = Command::new(bin())
        .args(["watch", "--comm", "no-such-task"])
        .env("FSYNCLAB_STORE", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut said = String::new();
    BufReader::new(watch.stderr.take().unwrap())
        .read_line(&mut said)
        .unwrap();
    assert!(said.starts_with("watching the sync calls"), "{said}");
    let programs = common::bpf::programs_of(watch.id());
    assert!(programs.len() >= 4, "the watch holds programs {programs:?}");
    for &id in &programs {
        assert!(
            common::bpf::loaded(id),
            "bpftool does not see program {id} while the watch runs"
        );
    }
    send(&watch, libc::SIGKILL);
    wait_at_most(&mut watch, Duration::from_secs(10));
    common::bpf::assert_freed(&programs, "the watch");
}

/// Issue 25: where BPF cannot run (simulated with FSYNCLAB_NO_BPF, which the tracer treats as
/// a kernel without it), watch says so in one line and fails.
fn watch_refuses_in_one_line_where_bpf_is_missing() {
    let out = fsynclab()
        .args(["watch", "--duration", "1s"])
        .env("FSYNCLAB_NO_BPF", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("BPF"), "{stderr}");
}

/// Issue 25: run by a user other than root, watch says it needs root in one line.
fn watch_refuses_in_one_line_without_root() {
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(bin())
        .args(["watch", "--duration", "1s"])
        .env("FSYNCLAB_STORE", "off")
        .output()
        .unwrap();
    // Bad input, as everywhere else (issue 64: it was 1).
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("needs root"), "{stderr}");
}

/// Issue 64: a watch whose reader goes away (`| head -2`) stops quietly with 141, as `run`
/// does, and is stored (it aborted with "failed printing to stdout: Broken pipe", 134, and
/// nothing stored); one whose stdout takes no writes (`> /dev/full`) says so in one line,
/// exits 1, and is stored too.
fn a_watch_whose_reader_goes_away_stops_quietly_and_is_stored() {
    let dir = backing();
    let store = dir.path().join("results.sqlite");
    // fsyncs enough to print more lines than the reader takes.
    let fsyncing = Command::new("python3")
        .args(["-c", "import os,time\nfor i in range(2000):\n    f=open('f','w'); f.write('x'); f.flush(); os.fsync(f.fileno()); f.close(); time.sleep(0.02)"])
        .current_dir(dir.path())
        .spawn()
        .unwrap();
    let _fsyncing = KillOnDrop(fsyncing);
    let watch = |stdout: Stdio| {
        Command::new(bin())
            .args([
                "watch",
                "--comm",
                "python3",
                "--threshold",
                "0",
                "--duration",
                "20s",
                "--store",
            ])
            .arg(&store)
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut piped = watch(Stdio::piped());
    let mut head = BufReader::new(piped.stdout.take().unwrap());
    let mut line = String::new();
    head.read_line(&mut line).unwrap();
    assert!(line.contains("python3["), "{line}");
    drop(head);
    let status = wait_at_most(&mut piped, Duration::from_secs(30));
    let said = common::stderr_of(&mut piped);
    assert_eq!(status.code(), Some(141), "{said}");
    assert!(!said.contains("panicked") && !said.contains("Broken pipe"), "{said}");
    assert!(said.contains("stored as run 1"), "{said}");

    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let mut into_full = watch(Stdio::from(full));
    let status = wait_at_most(&mut into_full, Duration::from_secs(30));
    let said = common::stderr_of(&mut into_full);
    assert_eq!(status.code(), Some(1), "{said}");
    assert!(said.contains("stored as run 2"), "{said}");
    let error: Vec<&str> = said.lines().filter(|l| l.starts_with("Error:")).collect();
    assert_eq!(error.len(), 1, "{said}");
    assert!(error[0].contains("No space left on device"), "{said}");
}

/// Kills a helper process when dropped, also when the test fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Issue 25: a process that does not exist, a command name too long to be one, a zero
/// duration, a threshold that is no duration, two of --pid, --comm and --cgroup, or a cgroup
/// that does not exist or is no cgroup v2 directory are usage errors (exit 2), said in one
/// line.
fn bad_watch_flags_are_refused_in_one_line() {
    for (args, says) in [
        (&["--pid", "999999999"][..], "no such process"),
        (&["--pid", "postgres"][..], "expected a process id"),
        (&["--comm", "a-name-longer-than-15"][..], "1 to 15 bytes"),
        (&["--duration", "0s"][..], "more than 0s"),
        (&["--threshold", "soon"][..], "--threshold soon"),
        (&["--stack-over", "1x"][..], "--stack-over 1x"),
        (
            &["--detail", "everything"][..],
            "--detail everything: expected latency, sleeps or disk",
        ),
        (&["--pid", "1", "--comm", "x"][..], "give one of them"),
        (
            &["--comm", "x", "--cgroup", "/"][..],
            "--comm and --cgroup: give one of them",
        ),
        (
            &["--cgroup", "/no/such/cgroup"][..],
            "--cgroup /no/such/cgroup: no such cgroup directory",
        ),
    ] {
        let out = fsynclab().arg("watch").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}
