//! `fsynclab exec [TARGET OPTIONS] -- COMMAND ARGS...`: puts the testbed under any program.
//! It provisions the target as `run` does (a scratch filesystem on an emulated disk, a
//! scheduler, sysctls), runs COMMAND with the mounted filesystem as its working directory,
//! passes its exit status through, and undoes everything afterwards on every way out.
//!
//! Signals, while the command runs, are the command's business first
//! ([`signals::forward_to_command`]): one that another process sent (`kill`, `timeout`) is forwarded
//! to it; one the terminal generated already reached it. Either way fsynclab says it waits
//! for the command to end, then undoes. A second signal kills the command (SIGKILL). The
//! command gets SIGKILL if fsynclab itself dies (PR_SET_PDEATHSIG), so that `fsynclab
//! cleanup` finds nothing busy.
//!
//! With `--cut` ([`cut`]), the emulated disk loses power while the command runs; with
//! `--explain` ([`explained`]), the command's sync calls are traced and explained, and the
//! run is recorded.

mod cut;
mod explained;
mod reaper;

pub use cut::CutOptions;
pub(crate) use explained::Request as ExplainRequest;

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde::Serialize;

use crate::child::reap_if_exited;
use crate::compare::expect::Expectation;
use crate::environment::Fingerprint;
use crate::error::Usage;
use crate::kernel::process;
use crate::run::on_kernel::{Judge, Needs, Writes};
use crate::run::session::{Opened, Session};
use crate::signals;
use crate::testbed::vm::GuestDisk;
use crate::testbed::TestbedRequest;

/// What `--output` records: the command, how it ended, and where it ran.
#[derive(Debug, Serialize)]
pub struct ExecRecord {
    pub command: Vec<String>,
    /// The exit status passed through (128 + N when signal N ended the command).
    pub exit_status: i32,
    pub elapsed_s: f64,
    pub environment: Fingerprint,
    /// With `--cut`: what the cut did, how the filesystem came back, what the checks said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub power_cut: Option<cut::CutRecord>,
}

/// Runs `command` on the testbed `request` names, under a power cut when `cut` asks for
/// one; returns the exit status to pass through (or the check's, after a cut). With
/// `explain`, its sync calls are traced, explained and recorded ([`explained`]).
pub(crate) fn run(
    request: &TestbedRequest,
    command: &[OsString],
    output: Option<&PathBuf>,
    cut: Option<&CutOptions>,
    explain: Option<ExplainRequest>,
    expect: &[Expectation],
) -> Result<i32> {
    let program = program_of(command)?;
    if let Some(path) = output {
        crate::named_file::check(path, None)?;
    }
    let session = match Session::open(request, 0, "the command was not run")? {
        Opened::Ready(s) => s,
        Opened::Interrupted(sig) => return Ok(128 + sig),
    };
    let explained = explain.map(explained::Explained::prepare).transpose()?;
    let target = session.testbed();
    // Marks the start of the command for the emulated device's counters.
    let _ = target.flushes();
    let dir = target.dir().to_path_buf();
    let mut cmd = Command::new(program);
    cmd.args(&command[1..]).current_dir(&dir).env("FSYNCLAB_DIR", &dir);
    if let Some(device) = target.loop_device() {
        cmd.env("FSYNCLAB_LOOP_DEVICE", device);
    }
    crate::child::dies_with_us(&mut cmd);
    // The command's own children outlive it when it ends first (`sh -c 'dd ...; sync'`
    // under SIGTERM): as the subreaper, fsynclab inherits them, and ends them before the
    // testbed is undone (`end_what_it_left`).
    let ours = children_of(std::process::id());
    set_child_subreaper()?;
    // Signals are the command's from here on; one that came before it starts stops it.
    let forwarding = signals::forward_to_command();
    if let Some(sig) = session.stop().signal() {
        note!("fsynclab: interrupted by signal {sig} before the command started; it was not run");
        drop(forwarding);
        session.close();
        return Ok(128 + sig);
    }
    let tracing = explained.as_ref().map(|e| e.start(&dir)).transpose()?;
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            // As shells do: 127 for a command that is not there, 126 for one that cannot run.
            let status = if e.kind() == std::io::ErrorKind::NotFound {
                127
            } else {
                126
            };
            note!("fsynclab: exec: cannot run {}: {e}", program.to_string_lossy());
            return Ok(status);
        }
    };
    forwarding.started(child.id());
    let watch = cut
        .map(|c| cut::Watch::start(target, c.plan, child.id(), &ours))
        .transpose()?;
    let ours_pids: Vec<u32> = ours.iter().map(|(pid, _)| *pid).collect();
    let reaper = reaper::Reaper::start(child.id(), ours_pids).context("cannot start reaping the command's orphans")?;
    let status = crate::child::wait_unreaped(child.id())
        .context("cannot wait for the command")
        .and_then(|()| {
            reaper.stop();
            drop(forwarding);
            if let Some(w) = &watch {
                w.forget_command();
            }
            child.wait().context("cannot wait for the command")
        });
    let status = exit_code(status?);
    let elapsed_s = started.elapsed().as_secs_f64();
    end_what_it_left(&ours);
    let command_line: Vec<String> = command.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    let cut_outcome = match (watch, cut) {
        (Some(w), Some(c)) => Some(w.finish(target, c)?),
        _ => None,
    };
    // A signal while the command ran was the command's to answer: its status says how.
    let answered = session.stop().signal().is_some();

    let mut environment = crate::environment::fingerprint(&dir);
    target.annotate_environment(&mut environment);
    if let Some(info) = environment.device_profile.as_mut() {
        info.activity = target.device_activity();
    }
    if let Some(line) = summary(&environment) {
        note!("fsynclab exec: {line}");
    }
    let traced = match (explained, tracing) {
        (Some(e), Some(running)) => Some(e.finish(running, &command_line, status, answered, environment.clone())?),
        _ => None,
    };
    let (cut_record, status) = match cut_outcome {
        Some((record, verdict)) => (Some(record), verdict),
        None => (None, status),
    };
    if let Some(path) = output {
        let record = ExecRecord {
            command: command_line,
            exit_status: status,
            elapsed_s,
            environment,
            power_cut: cut_record,
        };
        crate::result::write_json_atomically(&record, path)?;
    }
    // A signal after the command ended (while undoing the testbed) ends fsynclab as a
    // signal does; otherwise the command's status is passed through, or with --expect the
    // verdict on its calls.
    match session.close() {
        Some(sig) if !answered => {
            note!("fsynclab: interrupted by signal {sig} after the command ended (status {status}); what was set up is undone");
            Ok(128 + sig)
        }
        _ => Ok(match traced {
            Some(result) if !expect.is_empty() => judged(expect, &result, status),
            _ => status,
        }),
    }
}

/// `--expect`'s exit status for a command that exited with `status`: the verdict on its
/// traced calls when it exited 0; 1 when it failed (a benchmark that fails does not meet
/// what was expected); its own status when a signal ended it.
pub(crate) fn judged(expect: &[Expectation], result: &crate::result::RunResult, status: i32) -> i32 {
    if status >= 128 {
        return status;
    }
    let verdict = super::run::judge(expect, result, 0);
    if status != 0 && verdict != crate::error::NOT_MADE {
        note!("fsynclab: --expect: the command exited with status {status}, so it does not meet what was expected");
        return 1;
    }
    verdict
}

/// The program to run: the first word after `--`, which exec cannot do without.
pub(crate) fn program_of(command: &[OsString]) -> Result<&OsString, crate::error::Usage> {
    command.first().ok_or_else(|| {
        crate::error::Usage("exec: give the command after --, e.g. fsynclab exec --scratch ext4 -- fio job.fio".into())
    })
}

/// 128 + N for a command ended by signal N, as shells report it.
fn exit_code(status: ExitStatus) -> i32 {
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// Makes this process the one that inherits its descendants when their parent ends, rather
/// than init (`PR_SET_CHILD_SUBREAPER`, proc(5)... prctl(2)).
fn set_child_subreaper() -> Result<()> {
    nix::sys::prctl::set_child_subreaper(true)
        .map_err(std::io::Error::from)
        .context("cannot become the command's subreaper")
}

/// The processes whose parent is `pid`, read from /proc/PID/stat's fourth field (proc(5)),
/// with their names.
pub(crate) fn children_of(pid: u32) -> Vec<(u32, String)> {
    process::pids()
        .into_iter()
        .filter_map(|child| Some((child, process::stat(child)?)))
        // A zombie has ended: it only waits to be reaped.
        .filter(|(_, s)| s.ppid == pid && s.state != 'Z')
        .map(|(child, s)| (child, s.name))
        .collect()
}

/// Ends what the command left running once it ended (its children, inherited as their
/// subreaper, and theirs in turn), so that nothing keeps the testbed busy: SIGTERM, then
/// SIGKILL to those still there after five seconds, reaping each. `ours` are the children
/// fsynclab had before the command (the emulated device's guard), left alone. One that
/// cannot die (waiting on the device in the kernel) is waited for up to two minutes, then
/// left to the teardown, which says who keeps the testbed busy.
fn end_what_it_left(ours: &[(u32, String)]) {
    let me = std::process::id();
    // Children that have already exited (zombies, handed to us when their parent ended
    // first: a daemon's `pg_ctl stop` waits for the server, not for its reaping) are
    // reaped, not said to be running.
    let left = || -> Vec<(u32, String)> {
        children_of(me)
            .into_iter()
            .filter(|(pid, _)| !ours.iter().any(|(o, _)| o == pid))
            .filter(|(pid, _)| !reap_if_exited(*pid))
            .collect()
    };
    // The orphans of the command a power cut killed, inherited as their subreaper.
    reaper::reap_zombies(&[]);
    let first = left();
    if first.is_empty() {
        return;
    }
    let names: Vec<String> = first.iter().map(|(pid, comm)| format!("{comm} (pid {pid})")).collect();
    note!(
        "fsynclab: the command ended and left {} running in the testbed; ending {} (SIGTERM, SIGKILL after 5 s)",
        names.join(", "),
        if first.len() == 1 { "it" } else { "them" }
    );
    let started = Instant::now();
    let mut killed = false;
    let mut signalled: Vec<u32> = Vec::new();
    loop {
        let now_left = left();
        if now_left.is_empty() {
            return;
        }
        for (pid, _) in &now_left {
            let sig = if killed { Signal::SIGKILL } else { Signal::SIGTERM };
            if !signalled.contains(pid) {
                // `pid` is our child (inherited), not reaped, so the pid is not reused.
                let _ = kill(Pid::from_raw(*pid as i32), sig);
                signalled.push(*pid);
            }
            // Reaps it if it has ended (it is our child now).
            reap_if_exited(*pid);
        }
        let waited = started.elapsed();
        if !killed && waited > Duration::from_secs(5) {
            killed = true;
            signalled.clear();
        }
        if waited > Duration::from_secs(120) {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// One line about what the emulated disk did during the command.
fn summary(env: &Fingerprint) -> Option<String> {
    let p = env.device_profile.as_ref()?;
    let a = p.activity.as_ref()?;
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    Some(format!(
        "device {}: {} writes ({:.1} MiB), {} reads ({:.1} MiB), {} flushes (mean {}, max {}), {} seeks, cache peak {:.1} MiB, media busy {:.0}%",
        p.name,
        a.writes,
        mib(a.write_bytes),
        a.reads,
        mib(a.read_bytes),
        a.flushes,
        a.flush_ms_mean.map_or("-".into(), |m| format!("{m:.1} ms")),
        a.flush_ms_max.map_or("-".into(), |m| format!("{m:.1} ms")),
        a.seeks,
        mib(a.cache_max_bytes),
        a.media_busy_fraction * 100.0
    ))
}

/// How long a power cut's `--check` may run unless `--check-timeout` says otherwise.
const CHECK_TIMEOUT: Duration = Duration::from_secs(600);

/// `fsynclab exec`: everything that can be refused is refused before the testbed is made.
/// `--expect` of exec, read: it judges the traced calls, so it needs `--explain`.
pub(crate) fn expectations(args: &crate::cli::ExecArgs) -> Result<Vec<Expectation>, Usage> {
    let expect = super::run::expectations(&args.verdict)?;
    if !expect.is_empty() && !args.explain.explain {
        return Err(Usage(
            "exec --expect judges the figures of the command's sync calls, which only --explain traces: add --explain"
                .into(),
        ));
    }
    Ok(expect)
}

/// What the command line asks for that cannot be done, whatever the machine (or kernel):
/// refused here, and on the host before a guest boots for `--kernel`.
pub(crate) fn refuse_the_impossible(args: &crate::cli::ExecArgs) -> Result<(), Usage> {
    program_of(&args.command)?;
    if !args.explain.explain && (args.record.store.is_some() || args.record.no_store) {
        let flag = if args.record.no_store { "--no-store" } else { "--store" };
        return Err(Usage(format!(
            "exec {flag}: exec records a run only with --explain; add --explain, or leave {flag} out"
        )));
    }
    if args.explain.explain && args.cut.is_some() {
        // The cut's watcher, the recovery and the check run beside the command and would be
        // traced as its own.
        return Err(Usage(
            "exec: --explain and --cut do not go together yet: run the power cut without --explain, or explain the command without --cut"
                .into(),
        ));
    }
    Ok(())
}

/// `exec`: its line read ([`super::measuring`]), then the command run as it asks.
pub(crate) fn command(args: &crate::cli::ExecArgs) -> Result<i32> {
    super::measuring(&args.target, || expectations(args), |expect| exec(args, expect))
}

fn exec(args: &crate::cli::ExecArgs, expect: &[Expectation]) -> Result<i32> {
    refuse_the_impossible(args)?;
    // On another kernel (`--kernel`), the whole command runs in a guest.
    let needs = Needs {
        space_needed: 0,
        guest_disk: match args.cut.is_some() {
            true => GuestDisk::Driven,
            false => GuestDisk::Served,
        },
        expected: None,
        writes: args.output.as_deref().map(Writes::File),
        command: &args.command,
        expect,
        judge: Judge::Last(judged),
    };
    let record = args.explain.explain.then_some(&args.record);
    if let Some(code) = super::kernel::on_kernel(&args.target, record, needs)? {
        return Ok(code);
    }
    let request = args.target.request()?;
    if args.check.is_some() && args.cut.is_none() {
        return Err(Usage(
            "--check runs after a power cut: add --cut PLAN (e.g. --cut after=5s), or leave --check out".into(),
        )
        .into());
    }
    let check_timeout = match (&args.check_timeout, &args.check) {
        (None, _) => CHECK_TIMEOUT,
        (Some(_), None) => {
            return Err(Usage("--check-timeout bounds --check: add --check COMMAND, or leave it out".into()).into())
        }
        (Some(text), Some(_)) => {
            crate::units::parse_duration(text).map_err(|e| Usage(format!("--check-timeout {text}: {e}")))?
        }
    };
    let cut = CutOptions::read(args.cut.as_deref(), args.check.as_deref(), check_timeout, &request)?;
    let explain = args.explain.options()?.map(|options| ExplainRequest {
        options,
        store: args.record.store.clone(),
        no_store: args.record.no_store,
    });
    run(
        &request,
        &args.command,
        args.output.as_ref(),
        cut.as_ref(),
        explain,
        expect,
    )
}
