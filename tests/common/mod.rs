//! Shared helpers of the integration tests, and the harness they run under.
//!
//! # How a test file is written
//! Every file under tests/ is a test binary with its own `main` (`harness = false` in
//! Cargo.toml), run by [`harness::run`] on libtest-mimic: it prints and filters like `cargo
//! test` (`cargo test --test NAME FILTER`, `--exact`, `--skip`, `--list`, `--test-threads`;
//! `--nocapture` is accepted, and output is never captured), and a test that cannot run here
//! is reported as ignored with its reason, `test NAME ... ignored (skipped: needs root)`, and
//! counted in the closing line, instead of returning early and passing. With
//! `FSYNCLAB_REQUIRE_PRIVILEGED=1` (as `.ci/run` sets) such a test fails instead: CI runs
//! them all. A file lists its tests once, each with what it needs, then defines them as
//! plain functions (no `#[test]`; one left out of the list is dead code, which clippy
//! refuses):
//!
//! ```ignore
//! mod common;
//!
//! use common::Need::{Fuse, Root, Tool};
//!
//! common::tests! {
//!     bad_scratch_options_are_usage_errors,
//!     scratch_xfs_runs_and_cleans_up: [Root, Tool("mkfs.xfs")],
//!     exec_runs_the_command_in_the_scratch_filesystem: [Root, Fuse],
//! }
//!
//! /// Issue 4: a bad --scratch, --device or --scratch-size is refused with exit 2.
//! fn bad_scratch_options_are_usage_errors() { /* asserts, panics on failure */ }
//! ```
//!
//! A test is named for the behaviour it checks; the issue it guards goes in the first line of
//! its doc comment (`/// Issue NN: ...`), not in its name.
//!
//! A file that would pass 1,000 lines is split by what its parts check into modules under a
//! folder of its name, still one binary (each binary is one more link in CI): tests/explain.rs
//! declares `#[path = "explain/journal.rs"] mod journal;` and lists that module's tests by
//! their path, `journal::slow_fsyncs_on_xfs_name_the_log_force: [Root]`, each still named by
//! its own name (`cargo test --test explain slow_fsyncs_on_xfs`).
//!
//! and a `[[test]] name = "FILE" harness = false` entry in Cargo.toml. What a test needs is
//! checked when it is about to run, before its body: [`Need`] lists the kinds (root,
//! /dev/fuse, tracefs, a tool on the PATH, or any check of the test's own with
//! [`Need::That`]).
//!
//! Converting a test written for libtest: drop its `#[test]`, add its name to the file's
//! `common::tests!` list, and turn its early return into the list's needs: `if
//! !require_root() { return; }` becomes `: [Root]`, a `require("/dev/fuse", ..)` `Fuse`,
//! tracefs `Tracefs`, `find_tool("mkfs.xfs")` `Tool("mkfs.xfs")`. A new file also needs its
//! `[[test]]` entry (without it, cargo builds it with libtest and finds no test). One
//! difference from libtest: a single FILTER argument, not several.
//!
//! # The helpers
//! The binary under test ([`fsynclab`], [`bin`]); scratch backing directories and what a
//! run can leave in them ([`backing`], [`traces_under`], [`leftovers`]); waiting on a
//! child for a state file or a line of its stderr ([`wait_for_file_containing`],
//! [`StderrLines`]) and for a run to be measuring ([`wait_until_measuring`]) so that a
//! signal's timing is certain; a private state directory and `fsynclab cleanup` on drop
//! ([`PrivateState`], [`CleanupOnDrop`]); one test at a time within a file
//! ([`one_at_a_time`]); the command line of a run on a scratch filesystem ([`ScratchRun`]),
//! run to its end or started in a state directory; what a command printed once it succeeded
//! ([`success_stdout`], [`success_json`], [`run_json`]) or its one-line refusal
//! ([`assert_refused_in_one_line`]); a directory left empty ([`assert_left_empty`]); a
//! result's samples and string lists ([`samples_of`], [`strings`]); a run in a guest
//! ([`guest::GuestRun`]). When two files, or two tests, would spell out the same lines, the
//! lines go here.
#![allow(dead_code, unused_imports, unused_macros)] // each file uses what it needs of them

pub mod bpf;
pub mod guest;
pub mod harness;
mod scratch_run;

use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use assert_cmd::Command;

pub use harness::Need;
pub use scratch_run::ScratchRun;

/// Lists a file's tests, each with what it needs, and makes the file's `main`:
/// `common::tests! { plain_test, root_test: [Root], xfs_test: [Root, Tool("mkfs.xfs")] }`.
/// A test defined in a module of the file is named by its path (`bpf::xfs_test: [Root]`)
/// and listed by its own name, as if it were at the top.
macro_rules! tests {
    ($($first:ident $(:: $rest:ident)* $(: [$($need:expr),* $(,)?])?),* $(,)?) => {
        fn main() -> std::process::ExitCode {
            crate::common::harness::run(vec![
                $(crate::common::harness::Test {
                    name: crate::common::harness::last_name(stringify!($first $(:: $rest)*)),
                    body: $first $(:: $rest)*,
                    needs: vec![$($($need),*)?],
                }),*
            ])
        }
    };
}
pub(crate) use tests;

/// The binary, with the results store off (`FSYNCLAB_STORE=off`), so that tests never write
/// into the user's store; a test of the store gives `--store` or its own `FSYNCLAB_STORE`.
pub fn fsynclab() -> Command {
    let mut cmd = Command::cargo_bin("fsynclab").expect("binary built");
    cmd.env_remove("RUST_LOG");
    cmd.env("FSYNCLAB_STORE", "off");
    cmd
}

pub use fsynclab::sys::is_root;
pub use harness::privileged_required;

/// The path of the binary under test, for a `std::process::Command` (a run the test signals,
/// or whose stderr it reads as it goes).
pub fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("fsynclab")
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

/// `--set` values that make every scenario of a suite tiny: global keys apply to each
/// scenario declaring them (scenarios of other branches included), SCENARIO.KEY ones to that
/// scenario only.
pub const SUITE_TINY: &[&str] = &[
    "duration=1s",
    "sleep=100ms",
    "iterations=2",
    "overwrite-fsync.file_size=64k",
    "random-writeback.random_file_size=8M",
    "datasync.file_size=64k",
    "small-files.sizes=4k,64k",
    "small-files.runs=1",
    "small-files.files=5",
    "datasync.rounds=1",
    "datasync.duration=20ms",
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

/// Fails unless `out` is a refusal of bad input: exit status 2 and one line on stderr,
/// containing `says`. Returns what it said.
pub fn assert_refused_in_one_line(out: &std::process::Output, says: &str) -> String {
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains(says), "{err}");
    err
}

/// What `cmd` printed on stdout, once it has succeeded (a failure shows its stderr).
pub fn success_stdout(cmd: &mut Command) -> String {
    let out = cmd.assert().success().get_output().stdout.clone();
    String::from_utf8(out).expect("stdout is text")
}

/// `fsynclab run SCENARIO --quiet --format json --dir DIR --set S...`, which must succeed: its
/// result.
pub fn run_json(scenario: &str, dir: &Path, sets: &[&str]) -> serde_json::Value {
    let mut cmd = fsynclab();
    cmd.args(["run", scenario, "--quiet", "--format", "json", "--dir"])
        .arg(dir);
    for s in sets {
        cmd.args(["--set", s]);
    }
    success_json(&mut cmd)
}

/// What `cmd` printed on stdout as JSON, once it has succeeded.
pub fn success_json(cmd: &mut Command) -> serde_json::Value {
    serde_json::from_str(&success_stdout(cmd)).expect("JSON on stdout")
}

/// A call's sample as the store's codec takes it: when, the operation, its latency, its bytes
/// and its error.
pub type Sample = (u64, String, u64, u64, Option<String>);

/// The samples of a result JSON, as the store's codec takes them.
pub fn samples_of(result: &serde_json::Value) -> Vec<Sample> {
    result["samples"]
        .as_array()
        .expect("samples")
        .iter()
        .map(|s| {
            (
                s["t_ns"].as_u64().expect("t_ns"),
                s["op"].as_str().expect("op").to_string(),
                s["latency_ns"].as_u64().expect("latency_ns"),
                s["bytes"].as_u64().expect("bytes"),
                s.get("error").and_then(serde_json::Value::as_str).map(str::to_string),
            )
        })
        .collect()
}

/// The strings of a JSON array (a result's findings, a table's columns).
pub fn strings(array: &serde_json::Value) -> Vec<&str> {
    array
        .as_array()
        .expect("an array")
        .iter()
        .map(|v| v.as_str().expect("a string"))
        .collect()
}

/// Fails unless `dir` is empty: a run leaves the directory it was given as it found it.
pub fn assert_left_empty(dir: &Path) {
    assert!(leftovers(dir).is_empty(), "left behind: {:?}", leftovers(dir));
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

    /// `fsynclab cleanup` over this state directory, which must succeed: what it said, its
    /// stdout then its stderr.
    pub fn cleanup(&self) -> String {
        let out = fsynclab()
            .arg("cleanup")
            .env(STATE_DIR_ENV, self.0.path())
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "fsynclab cleanup: {said}");
        said
    }
}

impl Drop for PrivateState {
    /// A run a test killed (a failing test's run, ended by [`wait_at_most`]) leaves its state
    /// file here: what it records is undone before the directory goes, or its mount and
    /// loop device would stay with nothing that records them.
    fn drop(&mut self) {
        let recorded = std::fs::read_dir(self.0.path())
            .map(|d| d.flatten().any(|e| e.path().extension().is_some_and(|x| x == "json")))
            .unwrap_or(false);
        if recorded {
            let _ = fsynclab().arg("cleanup").env(STATE_DIR_ENV, self.0.path()).output();
        }
    }
}

/// This machine's memory in bytes (MemTotal in /proc/meminfo).
pub fn mem_total() -> u64 {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("MemTotal in /proc/meminfo");
    kib * 1024
}

/// Whether the running kernel's configuration can be read (/boot/config-RELEASE or
/// /proc/config.gz): where it cannot, fsynclab does not know HZ, and a pause in jiffies
/// has no length in ms.
pub fn kernel_config_readable() -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    Path::new(&format!("/boot/config-{}", release.trim())).exists() || Path::new("/proc/config.gz").exists()
}

/// Whether the running kernel offers I/O scheduler `name` (bfq and kyber are config options a
/// kernel may leave out: CONFIG_IOSCHED_BFQ): the schedulers a block device's
/// queue/scheduler lists are the kernel's, the same for every blk-mq device, loop devices too.
/// Tests that need one that is missing check the one-line refusal instead, and say so.
pub fn kernel_offers_scheduler(name: &str) -> bool {
    let Ok(devices) = std::fs::read_dir("/sys/block") else {
        return false;
    };
    devices.flatten().any(|d| {
        std::fs::read_to_string(d.path().join("queue/scheduler"))
            .map(|text| text.split_whitespace().any(|s| s.trim_matches(['[', ']']) == name))
            .unwrap_or(false)
    })
}

/// A temporary directory for scratch images and work directories (`--backing`).
pub fn backing() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("fsynclab-test-")
        .tempdir()
        .expect("temp dir")
}

/// Loop devices and mounts whose paths lie under `dir`, plus files left in it: what a run
/// on `--backing dir` may leave behind, and nothing of another run's elsewhere.
pub fn traces_under(dir: &Path) -> Vec<String> {
    let d = dir.to_string_lossy().to_string();
    let mut out: Vec<String> = leftovers(dir);
    let losetup = std::process::Command::new("losetup")
        .arg("-a")
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default();
    out.extend(
        String::from_utf8_lossy(&losetup)
            .lines()
            .filter(|l| l.contains(&d))
            .map(String::from),
    );
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    out.extend(mountinfo.lines().filter(|l| l.contains(&d)).map(String::from));
    out
}

/// The calling test's turn: the tests of a file that take it run one at a time (those that
/// time the emulated disk, that check what is left on the machine, or that call `fsynclab
/// cleanup`, which would undo what another is looking at).
pub fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    TURN.lock().unwrap_or_else(|p| p.into_inner())
}

/// Starts `cmd`'s process with every signal at its default action and none blocked,
/// whatever the tests run under: `nohup` ignores SIGHUP, a non-interactive shell's background
/// job ignores SIGINT and SIGQUIT, and fsynclab keeps a signal ignored at its start ignored
/// (as nohup means). A test that sends a run a signal starts the run with this.
pub fn with_default_signals(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt as _;
    let last = libc::SIGRTMAX();
    // SAFETY: between fork and exec the closure calls only async-signal-safe functions
    // (signal, sigemptyset, sigprocmask) on its own stack.
    unsafe {
        cmd.pre_exec(move || {
            for signal in 1..=last {
                if signal != libc::SIGKILL && signal != libc::SIGSTOP {
                    // glibc's own signals (32, 33) are refused with EINVAL: harmless.
                    libc::signal(signal, libc::SIG_DFL);
                }
            }
            let mut none: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut none);
            libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
            Ok(())
        });
    }
    cmd
}

/// Sends `signal` to `child`.
pub fn send(child: &Child, signal: i32) {
    // SAFETY: kill has no memory preconditions; the pid is our own child, not yet reaped.
    assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0, "kill {signal}");
}

/// Waits for `child` at most `limit`, killing it (and failing) if it takes longer. The
/// failure says what the child was doing and which signals it ignored or blocked: a run
/// that inherited a signal ignored (a test started under `nohup`) keeps it ignored.
pub fn wait_at_most(child: &mut Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if Instant::now() > deadline {
            let state = process_state(child.id());
            // Reaped before the panic, so that a cleanup guard sees a dead run.
            let _ = child.kill();
            let _ = child.wait();
            panic!("fsynclab did not end within {limit:?} ({state})");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process's state, where it sleeps in the kernel, and the signals it ignores and
/// blocks (masks from /proc/PID/status: bit N-1 is signal N; SIGHUP ignored is 1).
fn process_state(pid: u32) -> String {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map_or("?".to_string(), |v| v.trim().to_string())
    };
    let wchan = std::fs::read_to_string(format!("/proc/{pid}/wchan")).unwrap_or_default();
    format!(
        "state {}, wchan {}, SigIgn {}, SigBlk {}",
        field("State:"),
        if wchan.is_empty() { "?" } else { &wchan },
        field("SigIgn:"),
        field("SigBlk:")
    )
}

/// The stderr of a finished child (piped).
pub fn stderr_of(child: &mut Child) -> String {
    let mut text = String::new();
    if let Some(mut err) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut err, &mut text);
    }
    text
}

/// Waits until `path` exists and contains `needle` (a state file showing a step), failing if
/// `child` ends first or a minute passes.
pub fn wait_for_file_containing(path: &Path, needle: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_to_string(path).is_ok_and(|s| s.contains(needle)) {
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("fsynclab ended ({status}) before {} showed {needle}", path.display());
        }
        assert!(Instant::now() < deadline, "{} never showed {needle}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the run `child` started with `--dir dir` is measuring: its work directory in
/// `dir` holds a file of `name` with data in it (the work directory is made, and the
/// environment read, before the scenario writes anything; the prober's file,
/// `fsync-tester.tst-file`, has data once the first probe is written). Fails if `child`
/// ends first or a minute passes.
pub fn wait_until_measuring(dir: &Path, name: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    let written = || {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|work| std::fs::metadata(work.path().join(name)).is_ok_and(|m| m.len() > 0))
    };
    while !written() {
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("fsynclab ended ({status}) before it wrote {name} in {}", dir.display());
        }
        assert!(
            Instant::now() < deadline,
            "no {name} written in {} within 60 s",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The prober's file in a work directory (src/role/prober.rs), for [`wait_until_measuring`].
pub const PROBE_FILE: &str = "fsync-tester.tst-file";

/// A child's stderr read line by line as it comes, so that a test can wait for what the run
/// says (and act once it has said it) and still have all of it at the end.
pub struct StderrLines {
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl StderrLines {
    /// Takes `child`'s piped stderr.
    pub fn of(child: &mut Child) -> StderrLines {
        let stderr = child.stderr.take().expect("stderr piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        StderrLines {
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Waits until a line equals `line`, failing if `child` ends first or `limit` passes.
    pub fn wait_for(&mut self, line: &str, child: &mut Child, limit: Duration) {
        let deadline = Instant::now() + limit;
        loop {
            match self.lines.recv_timeout(Duration::from_millis(50)) {
                Ok(l) if l == line => {
                    self.seen.push(l);
                    return;
                }
                Ok(l) => self.seen.push(l),
                Err(_) => {
                    if let Some(status) = child.try_wait().expect("wait") {
                        // What it said before it ended is still in the pipe.
                        self.seen.extend(self.lines.try_iter());
                        panic!("fsynclab ended ({status}) before saying {line:?}: {:?}", self.seen);
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "never said {line:?} within {limit:?}: {:?}",
                self.seen
            );
        }
    }

    /// Waits until the run says it paused at `point` (a test pause point of
    /// src/testbed/pause.rs, `FSYNCLAB_TEST_PAUSE`; the `@N` of its Nth time is not said),
    /// failing if `child` ends first or `limit` passes.
    pub fn wait_for_pause(&mut self, point: &str, child: &mut Child, limit: Duration) {
        let name = point.split('@').next().unwrap_or(point);
        self.wait_for(&format!("fsynclab: test pause at {name}"), child, limit);
    }

    /// Waits until a line contains `part`, and returns it; fails if `child` ends first or
    /// `limit` passes.
    pub fn wait_for_containing(&mut self, part: &str, child: &mut Child, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        loop {
            match self.lines.recv_timeout(Duration::from_millis(50)) {
                Ok(l) => {
                    self.seen.push(l.clone());
                    if l.contains(part) {
                        return l;
                    }
                }
                Err(_) => {
                    if let Some(status) = child.try_wait().expect("wait") {
                        self.seen.extend(self.lines.try_iter());
                        panic!("fsynclab ended ({status}) before saying {part:?}: {:?}", self.seen);
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "never said {part:?} within {limit:?}: {:?}",
                self.seen
            );
        }
    }

    /// Everything said, once the child has ended (its stderr closed).
    pub fn all(mut self) -> String {
        self.seen.extend(self.lines.iter());
        let mut text = self.seen.join("\n");
        text.push('\n');
        text
    }
}

/// Runs `fsynclab cleanup` over a state directory when dropped, so that a failing test
/// leaves nothing behind.
pub struct CleanupOnDrop(pub PathBuf);

impl Drop for CleanupOnDrop {
    fn drop(&mut self) {
        let _ = fsynclab().arg("cleanup").env(STATE_DIR_ENV, &self.0).output();
    }
}
