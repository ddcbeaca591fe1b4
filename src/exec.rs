//! `fsynclab exec [TARGET OPTIONS] -- COMMAND ARGS...`: puts the testbed under any program.
//! It provisions the target as `run` does (a scratch filesystem on an emulated disk, a
//! scheduler, sysctls), runs COMMAND with the mounted filesystem as its working directory,
//! passes its exit status through, and undoes everything afterwards on every way out.
//!
//! Signals: SIGINT, SIGTERM and SIGHUP are caught. One that another process sent (`kill`,
//! `timeout`) is forwarded to the command; one the terminal generated already reached the
//! command, which shares our process group, so it is not sent twice (the rule sudo follows).
//! Either way fsynclab waits for the command to end, then undoes. A second signal kills the
//! command (SIGKILL). The command gets SIGKILL if fsynclab itself dies (PR_SET_PDEATHSIG),
//! so that `fsynclab cleanup` finds nothing busy.

use std::ffi::OsString;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context as _, Result};
use serde::Serialize;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use signal_hook::iterator::exfiltrator::WithOrigin;
use signal_hook::iterator::SignalsInfo;
use signal_hook::low_level::siginfo::Cause;

use crate::cli::TargetArgs;
use crate::environment::Fingerprint;
use crate::testbed;

/// What `--output` records: the command, how it ended, and where it ran.
#[derive(Debug, Serialize)]
pub struct ExecRecord {
    pub command: Vec<String>,
    /// The exit status passed through (128 + N when signal N ended the command).
    pub exit_status: i32,
    pub elapsed_s: f64,
    pub environment: Fingerprint,
}

/// Runs `command` on the target `args` describe; returns the exit status to pass through.
pub fn run(args: &TargetArgs, command: &[OsString], output: Option<&PathBuf>) -> Result<i32> {
    let Some(program) = command.first() else {
        return Err(crate::error::Usage(
            "exec: give the command after --, e.g. fsynclab exec --scratch ext4 -- fio job.fio".into(),
        )
        .into());
    };
    if let Some(path) = output {
        crate::output::check(path, None)?;
    }
    let relay = Relay::install()?;
    let target = match testbed::prepare_for(args, 0) {
        Err(_) if relay.first_signal().is_some() => {
            let sig = relay.first_signal().unwrap_or(SIGINT);
            note!("fsynclab: interrupted by signal {sig} while preparing the target; what was set up is undone");
            return Ok(128 + sig);
        }
        r => r?,
    };
    if let Some(sig) = relay.first_signal() {
        note!("fsynclab: interrupted by signal {sig} while preparing the target; the command was not run");
        return Ok(128 + sig);
    }
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
    relay.watch(child.id());
    let status = wait_unreaped(child.id()).and_then(|()| {
        relay.forget_child();
        child.wait().context("cannot wait for the command")
    });
    relay.close();
    let status = exit_code(status?);
    let elapsed_s = started.elapsed().as_secs_f64();

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
    drop(target);
    Ok(status)
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

/// The signal relay: a thread that receives SIGINT, SIGTERM and SIGHUP and passes them on
/// to the command as the module's comment says.
struct Relay {
    handle: signal_hook::iterator::Handle,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The command's pid while it may receive signals, else 0.
    child: Arc<AtomicI32>,
    /// The first signal received, or 0.
    first: Arc<AtomicU32>,
}

impl Relay {
    fn install() -> Result<Relay> {
        let mut signals =
            SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP]).context("cannot install the signal handlers")?;
        let handle = signals.handle();
        let child = Arc::new(AtomicI32::new(0));
        let first = Arc::new(AtomicU32::new(0));
        let thread = {
            let (child, first) = (child.clone(), first.clone());
            std::thread::Builder::new()
                .name("fsynclab-signals".into())
                .spawn(move || {
                    let mut received = 0;
                    for origin in signals.forever() {
                        received += 1;
                        let _ = first.compare_exchange(0, origin.signal as u32, Ordering::SeqCst, Ordering::SeqCst);
                        let pid = child.load(Ordering::SeqCst);
                        if pid <= 0 {
                            continue;
                        }
                        let sig = if received > 1 {
                            note!("fsynclab: second signal: killing the command");
                            libc::SIGKILL
                        } else if matches!(origin.cause, Cause::Sent(_)) {
                            origin.signal
                        } else {
                            // The terminal sent it to the whole foreground group.
                            continue;
                        };
                        // SAFETY: kill has no memory preconditions; `pid` is our child,
                        // not yet reaped (see `wait_unreaped`).
                        unsafe {
                            libc::kill(pid, sig);
                        }
                    }
                })
                .context("cannot start the signal relay")?
        };
        Ok(Relay {
            handle,
            thread: Some(thread),
            child,
            first,
        })
    }

    fn first_signal(&self) -> Option<i32> {
        match self.first.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }

    fn watch(&self, pid: u32) {
        self.child.store(pid as i32, Ordering::SeqCst);
    }

    fn forget_child(&self) {
        self.child.store(0, Ordering::SeqCst);
    }

    /// Stops relaying: signals from now on get their default action again.
    fn close(self) {}
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
