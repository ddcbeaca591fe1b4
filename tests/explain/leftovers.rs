//! What a traced run leaves behind: nothing when it ends, however runs and cleanups overlap;
//! and, killed with SIGKILL, trace instances that `cleanup` removes and no BPF program (the
//! kernel frees those with the last descriptor).

use std::io::BufRead as _;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, fsynclab, one_at_a_time, PrivateState};
use crate::runner::{fsynclab_in, temp};
use crate::tracefs::{
    assert_no_instance_of, assert_no_trace_left, instance_of, is_instance_of, trace_instances, tracefs_mounts,
};

/// `fsynclab run overwrite-fsync --explain FLAGS` in `dir` with the state directory `state`:
/// the prober alone, an fsync every `sleep` for `duration`.
fn traced_prober(state: &PrivateState, dir: &Path, flags: &[&str], sleep: &str, duration: &str) -> Command {
    let mut cmd = fsynclab_in(state);
    cmd.args(["run", "overwrite-fsync", "--explain"])
        .args(flags)
        .arg("--dir")
        .arg(dir)
        .args(["--set", "background=none", "--set"])
        .arg(format!("sleep={sleep}"))
        .arg("--set")
        .arg(format!("duration={duration}"));
    cmd
}

/// What a traced run prints on stdout, held until it is killed (a closed pipe would end it
/// first).
type Output = std::io::Lines<std::io::BufReader<std::process::ChildStdout>>;

/// `child`'s stdout, once it has printed a line for which `is_it` holds (failing with
/// `never` if it ends first): its tracer then runs.
fn once_it_said(child: &mut Child, is_it: impl Fn(&str) -> bool, never: &str) -> Output {
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    assert!(lines.any(|l| l.is_ok_and(|l| is_it(&l))), "{never}");
    lines
}

/// A minute-long explained run of the prober in `dir` (`extra`: its further flags), returned
/// once it has printed its first fsync, when its tracer is running; with the rest of its
/// output.
fn prober_tracing(state: &PrivateState, dir: &Path, extra: &[&str]) -> (Child, Output) {
    let mut child = traced_prober(state, dir, &[&["--format", "seed"], extra].concat(), "50ms", "60s")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The seed format prints a line per fsync.
    let lines = once_it_said(
        &mut child,
        |l| l.starts_with("fsync time"),
        "the run never printed an fsync",
    );
    (child, lines)
}

/// `exec --explain --tracer TRACER` of a command that says it started and sleeps a minute, in
/// `dir`, returned once the command has started; with the rest of its output.
fn exec_tracing(state: &PrivateState, dir: &Path, tracer: &str) -> (Child, Output) {
    let mut child = fsynclab_in(state)
        .args(["exec", "--explain", "--tracer", tracer, "--dir"])
        .arg(dir)
        .args(["--", "sh", "-c", "echo started; exec sleep 60"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = once_it_said(&mut child, |l| l == "started", "the command never started");
    (child, lines)
}

/// Neither the state directory nor the work directory holds anything.
fn assert_nothing_left(state: &PrivateState, dir: &Path) {
    assert_eq!(common::leftovers(state.path()), Vec::<String>::new(), "state file left");
    assert_eq!(common::leftovers(dir), Vec::<String>::new(), "work directory left");
}

/// The flags of the runs that overlap: traced by tracefs, their result printed as JSON.
const TRACEFS_JSON: &[&str] = &["--tracer", "tracefs", "--quiet", "--format", "json"];

/// Issue 10: cleanup removes the trace instance of a SIGKILLed run.
pub fn cleanup_removes_the_trace_instance_of_a_sigkilled_run() {
    let _one = one_at_a_time();
    let state = PrivateState::new();
    let dir = temp();
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut child, _output) = prober_tracing(&state, dir.path(), &["--tracer", "tracefs"]);
    let name = instance_of(child.id());
    assert!(trace_instances().contains(&name), "{name} not traced in");
    assert!(Instant::now() < deadline);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        trace_instances().contains(&name),
        "a SIGKILLed run cannot remove its instance"
    );
    let said = state.cleanup();
    assert!(
        said.lines()
            .any(|l| l.starts_with("undone: ") && l.ends_with(&format!("trace instance {name}"))),
        "{said}"
    );
    assert_no_instance_of(&[child.id()]);
    assert_nothing_left(&state, dir.path());
}

/// Issue 25: a `--tracer bpf` run killed with SIGKILL (no chance to clean up) leaves none of
/// its BPF programs loaded (attached through links its descriptors owned, never pinned), and
/// `cleanup` removes what else it left.
pub fn a_bpf_traced_run_killed_with_sigkill_leaves_no_bpf_program() {
    let state = PrivateState::new();
    let dir = temp();
    let (mut child, _output) = prober_tracing(&state, dir.path(), &["--tracer", "bpf"]);
    let programs = common::bpf::programs_of(child.id());
    assert!(programs.len() >= 4, "the run holds programs {programs:?}");
    assert!(programs.iter().all(|&id| common::bpf::loaded(id)), "{programs:?}");
    child.kill().unwrap();
    child.wait().unwrap();
    common::bpf::assert_freed(&programs, "the run");
    state.cleanup();
    assert_nothing_left(&state, dir.path());
}

/// Issue 10: overlapping runs leave tracefs as they found it.
pub fn overlapping_runs_leave_tracefs_as_they_found_it() {
    let _one = one_at_a_time();
    // Regression: run A mounted tracefs, run B traced in it too; A ended first and left the
    // mount to B, which had not mounted it and so never unmounted it. The whole test suite
    // once ended with tracefs mounted. Both runs are long and ended by Ctrl-C in that order,
    // so that they overlap whatever the machine's load.
    let before = tracefs_mounts();
    let state = PrivateState::new();
    let dir = temp();
    let start = || {
        traced_prober(&state, dir.path(), TRACEFS_JSON, "50ms", "60s")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let wait_for_instance = |run: &mut std::process::Child| {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !trace_instances().contains(&instance_of(run.id())) {
            if let Some(status) = run.try_wait().unwrap() {
                panic!(
                    "run {} ended ({status}) before it traced: {}",
                    run.id(),
                    common::stderr_of(run)
                );
            }
            assert!(Instant::now() < deadline, "run {} never traced", run.id());
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let mut a = start();
    wait_for_instance(&mut a);
    let mut b = start();
    wait_for_instance(&mut b);
    common::send(&a, libc::SIGINT);
    let a_status = common::wait_at_most(&mut a, Duration::from_secs(30));
    assert_eq!(a_status.code(), Some(130), "A: {}", common::stderr_of(&mut a));
    assert!(trace_instances().contains(&instance_of(b.id())), "B still traces");
    assert!(!tracefs_mounts().is_empty(), "B still traces");
    common::send(&b, libc::SIGINT);
    let b_status = common::wait_at_most(&mut b, Duration::from_secs(30));
    assert_eq!(b_status.code(), Some(130), "B: {}", common::stderr_of(&mut b));
    assert_no_trace_left(&[a.id(), b.id()], &before);
    assert_nothing_left(&state, dir.path());
}

/// Issue 19: concurrent traced runs and cleanups leave no instance and tracefs as found.
pub fn concurrent_traced_runs_and_cleanups_leave_no_instance_and_tracefs_as_found() {
    let _one = one_at_a_time();
    // Regression: a CI run beside other fsynclab runs and `cleanup` calls failed with trace
    // instances left. Runs that end, runs SIGKILLed while they trace, and cleanups, all at
    // once in two state directories (which share tracefs), mount, unmount and remove in
    // every order: each run must trace (no "tracing could not start"), each cleanup succeed,
    // and in the end no instance of any of them is left, nor a second or empty mount.
    const ROUNDS: usize = 6;
    let before = tracefs_mounts();
    let states = [PrivateState::new(), PrivateState::new()];
    let dir = temp();
    let pids = std::sync::Mutex::new(Vec::new());
    let failures = std::sync::Mutex::new(Vec::<String>::new());
    let fail = |what: String| failures.lock().unwrap().push(what);
    let running = std::sync::atomic::AtomicUsize::new(5);
    let start = |state: &PrivateState, duration: &str| {
        let child = traced_prober(state, dir.path(), TRACEFS_JSON, "20ms", duration)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        pids.lock().unwrap().push(child.id());
        child
    };
    let cleanup = |state: &PrivateState| {
        let out = fsynclab()
            .env(state.env().0, state.env().1)
            .arg("cleanup")
            .output()
            .unwrap();
        if !out.status.success() {
            fail(format!(
                "cleanup: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    };
    std::thread::scope(|s| {
        for worker in 0..3 {
            let (start, fail, running, states) = (&start, &fail, &running, &states);
            s.spawn(move || {
                for _ in 0..ROUNDS {
                    let out = start(&states[worker % 2], "300ms").wait_with_output().unwrap();
                    let result: Option<Value> = serde_json::from_slice(&out.stdout).ok();
                    let notes = result.as_ref().map(|r| r["explain"]["notes"].to_string());
                    let traced = notes.as_ref().is_some_and(|n| !n.contains("tracing"));
                    if !out.status.success() || !traced {
                        fail(format!(
                            "run: {} notes {notes:?}: {}",
                            out.status,
                            String::from_utf8_lossy(&out.stderr)
                        ));
                    }
                }
                running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        for state in &states {
            let (start, cleanup, running) = (&start, &cleanup, &running);
            s.spawn(move || {
                for round in 0..ROUNDS {
                    let mut child = start(state, "30s");
                    // Killed at once, while it makes its instance, or while it traces.
                    std::thread::sleep(Duration::from_millis([0, 150, 400][round % 3]));
                    child.kill().unwrap();
                    child.wait().unwrap();
                    cleanup(state);
                }
                running.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
            });
        }
        for state in &states {
            let (cleanup, running) = (&cleanup, &running);
            s.spawn(move || {
                while running.load(std::sync::atomic::Ordering::SeqCst) > 0 {
                    cleanup(state);
                    std::thread::sleep(Duration::from_millis(30));
                }
            });
        }
    });
    for state in &states {
        cleanup(state);
        assert_eq!(common::leftovers(state.path()), Vec::<String>::new(), "state file left");
    }
    let failures = failures.into_inner().unwrap();
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let pids = pids.into_inner().unwrap();
    assert_no_trace_left(&pids, &before);
    assert_eq!(
        common::leftovers(dir.path()),
        Vec::<String>::new(),
        "work directory left"
    );
}

/// Issue 16: `exec --explain` traces in two instances (the machine's events, the process
/// tree's); killed with SIGKILL while its command runs, it leaves both, and `cleanup`
/// removes both.
pub fn cleanup_removes_both_trace_instances_of_a_sigkilled_exec() {
    let _one = one_at_a_time();
    let state = PrivateState::new();
    let dir = temp();
    let (mut child, _output) = exec_tracing(&state, dir.path(), "tracefs");
    let pid = child.id();
    let ours = || -> Vec<String> {
        trace_instances()
            .into_iter()
            .filter(|i| is_instance_of(i, pid))
            .collect()
    };
    assert_eq!(ours().len(), 2, "{:?}", trace_instances());
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(ours().len(), 2, "a SIGKILLed run cannot remove its instances");
    state.cleanup();
    assert_no_instance_of(&[pid]);
}

/// Issue 25: an `exec --explain --tracer bpf` killed with SIGKILL while its command runs
/// leaves none of its BPF programs loaded (the fork and exit hooks of a command included),
/// and `cleanup` leaves no state file.
pub fn a_bpf_traced_exec_killed_with_sigkill_leaves_no_bpf_program() {
    let state = PrivateState::new();
    let dir = temp();
    let (mut child, _output) = exec_tracing(&state, dir.path(), "bpf");
    let programs = common::bpf::programs_of(child.id());
    assert!(
        programs.len() >= 6,
        "the exec holds its programs and the fork hooks: {programs:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    common::bpf::assert_freed(&programs, "the exec");
    state.cleanup();
    assert_eq!(common::leftovers(state.path()), Vec::<String>::new(), "state file left");
}
