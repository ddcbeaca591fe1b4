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

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::time::Instant;

use anyhow::{Context as _, Result};
use serde::Serialize;

use crate::environment::Fingerprint;
use crate::session::{Opened, Session};
use crate::signals;
use crate::testbed::TestbedRequest;

/// What `--output` records: the command, how it ended, and where it ran.
#[derive(Debug, Serialize)]
pub struct ExecRecord {
    pub command: Vec<String>,
    /// The exit status passed through (128 + N when signal N ended the command).
    pub exit_status: i32,
    pub elapsed_s: f64,
    pub environment: Fingerprint,
}

/// Runs `command` on the testbed `request` names; returns the exit status to pass through.
pub fn run(request: &TestbedRequest, command: &[OsString], output: Option<&PathBuf>) -> Result<i32> {
    let Some(program) = command.first() else {
        return Err(crate::error::Usage(
            "exec: give the command after --, e.g. fsynclab exec --scratch ext4 -- fio job.fio".into(),
        )
        .into());
    };
    let session = match Session::open(request, 0, "the command was not run")? {
        Opened::Ready(s) => s,
        Opened::Interrupted(sig) => return Ok(128 + sig),
    };
    let target = session.testbed();
    // Marks the start of the command for the emulated device's counters.
    let _ = target.flushes();
    let dir = target.dir().to_path_buf();
    let mut cmd = Command::new(program);
    cmd.args(&command[1..]).current_dir(&dir).env("FSYNCLAB_DIR", &dir);
    if let Some(device) = target.loop_device() {
        cmd.env("FSYNCLAB_LOOP_DEVICE", device);
    }
    // SAFETY: the closure runs in the child between fork and exec and only calls prctl,
    // which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // Signals are the command's from here on; one that came before it starts stops it.
    let forwarding = signals::forward_to_command();
    if let Some(sig) = session.stop().signal() {
        note!("fsynclab: interrupted by signal {sig} before the command started; it was not run");
        drop(forwarding);
        session.close();
        return Ok(128 + sig);
    }
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
    let status = wait_unreaped(child.id()).and_then(|()| {
        drop(forwarding);
        child.wait().context("cannot wait for the command")
    });
    let status = exit_code(status?);
    let elapsed_s = started.elapsed().as_secs_f64();
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
    if let Some(path) = output {
        let record = ExecRecord {
            command: command.iter().map(|a| a.to_string_lossy().into_owned()).collect(),
            exit_status: status,
            elapsed_s,
            environment,
        };
        crate::result::write_json_atomically(&record, path)?;
    }
    // A signal after the command ended (while undoing the testbed) ends fsynclab as a
    // signal does; otherwise the command's status is passed through.
    match session.close() {
        Some(sig) if !answered => {
            note!("fsynclab: interrupted by signal {sig} after the command ended (status {status}); what was set up is undone");
            Ok(128 + sig)
        }
        _ => Ok(status),
    }
}

/// 128 + N for a command ended by signal N, as shells report it.
fn exit_code(status: ExitStatus) -> i32 {
    status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1)
}

/// Waits until process `pid` has exited, leaving it a zombie so that its pid cannot be
/// reused while the signal relay may still send to it.
fn wait_unreaped(pid: u32) -> Result<()> {
    loop {
        // SAFETY: waitid writes only into `info`, a zeroed siginfo_t we own.
        let rc = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT)
        };
        if rc == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err).context("cannot wait for the command");
        }
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
