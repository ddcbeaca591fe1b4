//! Issue 61: the hooks a watch attaches. It says them in the line after its first and
//! records them with the run; `--detail` attaches only the groups its level asks for and a
//! call it cannot split says so; a kernel that refuses every way asked for is one line naming
//! what was tried; a watch killed at any moment of its start leaves no program or map.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::{stored_run_1, watching};
use crate::common::{backing, bin, fsynclab, send, wait_at_most};

/// A python3 named `name` (a link to the interpreter) that makes `fsyncs` 4 KiB writes and
/// fsyncs of a file in `dir`, and `writes` writes to a file opened O_DSYNC.
fn syncing(name: &str, dir: &std::path::Path, fsyncs: u32, writes: u32) -> std::process::Child {
    let python = Command::new("python3")
        .args(["-c", "import os, sys; print(os.path.realpath(sys.executable))"])
        .output()
        .unwrap();
    let link = dir.join(name);
    std::os::unix::fs::symlink(String::from_utf8_lossy(&python.stdout).trim(), &link).unwrap();
    let script = format!(
        "import os
fd = os.open('{d}/f', os.O_WRONLY | os.O_CREAT)
for _ in range({fsyncs}):
    os.pwrite(fd, b'x' * 4096, 0); os.fsync(fd)
g = os.open('{d}/g', os.O_WRONLY | os.O_CREAT | os.O_DSYNC)
for _ in range({writes}):
    os.write(g, b'y' * 4096)",
        d = dir.display()
    );
    Command::new(&link).args(["-c", &script]).spawn().unwrap()
}

/// The watch's next stderr line, which says its hooks.
fn hooks_line(stderr: &mut impl std::io::BufRead) -> String {
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.starts_with("hooks: "), "{line}");
    line
}

/// Issue 61: a watch says in one line which hooks it attached (the sync calls by their
/// functions where this kernel allows fentry, else at raw_syscalls, with why), and its
/// stored run records the same; its every call is counted and its slow calls split into
/// parts either way.
pub(crate) fn a_watch_says_in_a_line_which_hooks_it_attached_and_records_them() {
    let dir = backing();
    let store = dir.path().join("results.sqlite");
    let name = format!("hk{}", std::process::id() % 100_000);
    let (mut watch, mut stderr) = watching(&["--comm", &name, "--threshold", "0"], &store, &[]);
    let line = hooks_line(&mut stderr);
    assert!(
        line.contains("the sync calls by fentry/fexit on __x64_sys_fsync")
            || line.contains("the sync calls at the trace points sys_enter, sys_exit"),
        "{line}"
    );
    assert!(
        line.contains("sched_switch") && line.contains("(--detail disk)"),
        "{line}"
    );
    let mut program = syncing(&name, dir.path(), 10, 3);
    assert!(program.wait().unwrap().success());
    send(&watch, libc::SIGINT);
    assert!(wait_at_most(&mut watch, Duration::from_secs(30)).success());
    let shown = stored_run_1(&store);
    let hooks = &shown["explain"]["bpf"]["hooks"];
    let by_functions = hooks["sync_calls"] == "functions";
    assert_eq!(
        by_functions,
        line.contains("the sync calls by fentry/fexit"),
        "{hooks:#}\n{line}"
    );
    let attached: Vec<&str> = hooks["attached"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h.as_str().unwrap())
        .collect();
    assert!(attached.contains(&"tp_btf/sched_switch"), "{attached:?}");
    assert_eq!(attached.contains(&"__x64_sys_fsync"), by_functions, "{attached:?}");
    assert_eq!(attached.contains(&"tp_btf/sys_enter"), !by_functions, "{attached:?}");
    assert_eq!(shown["ops"]["fsync"]["count"], 10, "{shown}");
    assert_eq!(shown["ops"]["write_odsync"]["count"], 3, "{shown}");
    let calls = shown["explain"]["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 13, "{shown}");
    assert!(calls
        .iter()
        .all(|c| c["parts"].as_array().is_some_and(|p| !p.is_empty())));
}

/// Issue 61: `--detail latency` attaches neither the scheduler's nor the block layer's
/// hooks and splits each call by its task's scheduler counters (on a CPU, waiting for one,
/// asleep and not named; on a kernel without CONFIG_SCHED_INFO, one part that says it was
/// not split); `--detail sleeps` attaches the scheduler's (its calls split into time on a
/// CPU and sleeps) and not the block layer's. Either way the parts add up to the latency.
pub(crate) fn each_detail_attaches_only_its_hooks_and_splits_each_call_its_own_way() {
    for (detail, has_sched, has_block) in [("latency", false, false), ("sleeps", true, false)] {
        let dir = backing();
        let store = dir.path().join("results.sqlite");
        let name = format!("dt{}", std::process::id() % 100_000);
        let args = ["--comm", &name, "--threshold", "0", "--detail", detail];
        let (mut watch, mut stderr) = watching(&args, &store, &[]);
        let line = hooks_line(&mut stderr);
        assert_eq!(line.contains("sched_switch"), has_sched, "{detail}: {line}");
        assert_eq!(line.contains("block_rq_complete"), has_block, "{detail}: {line}");
        assert!(line.contains(&format!("(--detail {detail})")), "{line}");
        let mut program = syncing(&name, dir.path(), 5, 0);
        assert!(program.wait().unwrap().success());
        send(&watch, libc::SIGINT);
        let mut out = String::new();
        std::io::Read::read_to_string(&mut watch.stdout.take().unwrap(), &mut out).unwrap();
        assert!(wait_at_most(&mut watch, Duration::from_secs(30)).success());
        let calls: Vec<&str> = out.lines().filter(|l| l.contains(" fsync(fd ")).collect();
        assert_eq!(calls.len(), 5, "{detail}:\n{out}");
        // /proc/PID/schedstat is there where the kernel keeps sched_info.
        let counted = !has_sched && Path::new("/proc/self/schedstat").exists();
        for call in calls {
            assert_eq!(call.contains("not split"), !has_sched && !counted, "{detail}: {call}");
            if has_sched || counted {
                assert!(call.contains(" on CPU"), "{detail}: {call}");
            }
        }
        let shown = stored_run_1(&store);
        assert_eq!(shown["params"]["detail"], detail, "{shown}");
        let mut asleep_ns = 0;
        for call in shown["explain"]["calls"].as_array().unwrap() {
            let parts = call["parts"].as_array().unwrap();
            let sum: u64 = parts.iter().map(|p| p["ns"].as_u64().unwrap()).sum();
            assert_eq!(sum, call["latency_ns"].as_u64().unwrap(), "{detail}: {call}");
            if counted {
                // On a CPU, waiting for one, and asleep: nothing named.
                for part in parts {
                    let cause = part["cause"].as_str().unwrap();
                    let asleep = cause == "unattributed"
                        && part["reason"]
                            .as_str()
                            .unwrap()
                            .contains("split by the task's scheduler counters");
                    assert!(cause == "on_cpu" || cause == "runnable" || asleep, "{detail}: {call}");
                    if asleep {
                        asleep_ns += part["ns"].as_u64().unwrap();
                    }
                }
            }
        }
        // A 4 KiB fsync on a block device's filesystem waits for the disk: the counters see
        // the task off its CPU in some of the five (a tmpfs's fsync need not sleep).
        let on_disk = libc::major(std::os::linux::fs::MetadataExt::st_dev(&dir.path().metadata().unwrap())) != 0;
        if counted && on_disk {
            assert!(asleep_ns > 0, "{detail}: no call was seen asleep: {shown}");
        }
    }
}

/// Issue 61: a watch not told its `--detail` is at `latency` for the whole machine (no
/// scheduler or block hook: every task of a busy machine would pay them, a call being in
/// flight nearly always), saying so and what `--detail disk` would add, and at `disk` for
/// the tasks named; told, either takes the level given and says nothing more.
pub(crate) fn a_whole_machine_watch_defaults_to_latency_and_a_watch_of_named_tasks_to_disk() {
    let dir = backing();
    let cases: [(&[&str], &str, bool); 4] = [
        (&[], "latency", true),
        (&["--comm", "no-such-task"], "disk", false),
        (&["--detail", "disk"], "disk", false),
        (&["--comm", "no-such-task", "--detail", "latency"], "latency", false),
    ];
    for (i, (args, detail, says_default)) in cases.into_iter().enumerate() {
        let store = dir.path().join(format!("results-{i}.sqlite"));
        let out = fsynclab()
            .arg("watch")
            .args(args)
            .args(["--duration", "1s", "--store"])
            .arg(&store)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        let hooks = stderr.lines().find(|l| l.starts_with("hooks: ")).unwrap_or_default();
        assert!(hooks.ends_with(&format!("(--detail {detail})")), "{args:?}: {hooks}");
        assert_eq!(hooks.contains("sched_switch"), detail != "latency", "{args:?}: {hooks}");
        let said = stderr.contains("detail: latency, the default for the whole machine");
        assert_eq!(said, says_default, "{args:?}: {stderr}");
        let shown = Command::new(bin())
            .args(["show", "1", "--format", "json", "--store"])
            .arg(&store)
            .output()
            .unwrap();
        let shown: Value = serde_json::from_slice(&shown.stdout).unwrap();
        assert_eq!(shown["params"]["detail"], detail, "{args:?}: {shown}");
    }
}

/// Issue 61 (bad input): asked for the sync calls' functions alone (FSYNCLAB_BPF_HOOKS),
/// a kernel that refuses fentry (this project's VM) is one line naming the functions tried,
/// exit 1, and no program of that kind stays loaded; a kernel that allows them says so in
/// its hooks line instead.
pub(crate) fn a_kernel_that_refuses_the_hooks_asked_for_is_one_line_naming_them() {
    let out = fsynclab()
        .args(["watch", "--duration", "1s", "--no-store"])
        .env("FSYNCLAB_BPF_HOOKS", "functions")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() {
        assert!(
            stderr.contains("hooks: the sync calls by fentry/fexit on __x64_sys_fsync"),
            "{stderr}"
        );
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("the kernel refused every hook tried: fentry/fexit on __x64_sys_fsync, __x64_sys_fdatasync"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("sys_enter"),
        "only the functions were asked for: {stderr}"
    );
    let listed = Command::new("bpftool").args(["prog", "show"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(!listed.contains("on_enter_fsync"), "{listed}");
}

/// The ids of the BPF programs and maps loaded, each with whether a process holds it
/// (bpftool's `pids`).
fn loaded_objects() -> Vec<(String, u64, bool)> {
    let mut all = Vec::new();
    for kind in ["prog", "map"] {
        let out = Command::new("bpftool").args([kind, "show", "-j"]).output().unwrap();
        let list: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Array(Vec::new()));
        for o in list.as_array().into_iter().flatten() {
            let held = o["pids"].as_array().is_some_and(|p| !p.is_empty());
            all.push((kind.to_string(), o["id"].as_u64().unwrap(), held));
        }
    }
    all
}

/// Issue 61 (bad input): a watch killed with SIGKILL at any moment of its start (while it
/// loads, attaches, or has just said it watches) leaves no program or map of its own
/// loaded: none is pinned, and the kernel frees each with the last descriptor. (A program
/// or map another test's process holds is not the watch's: bpftool names its holder.)
pub(crate) fn a_watch_killed_at_any_moment_of_its_start_leaves_no_program_or_map() {
    let before: Vec<u64> = loaded_objects().into_iter().map(|(_, id, _)| id).collect();
    for delay_ms in [0u64, 10, 30, 60, 100, 200, 400, 800] {
        let mut watch = Command::new(bin())
            .args(["watch", "--comm", "no-such-task", "--no-store"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay_ms));
        send(&watch, libc::SIGKILL);
        wait_at_most(&mut watch, Duration::from_secs(10));
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let orphans: Vec<(String, u64, bool)> = loaded_objects()
            .into_iter()
            .filter(|(_, id, held)| !held && !before.contains(id))
            .collect();
        if orphans.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "left loaded with no holder: {orphans:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
