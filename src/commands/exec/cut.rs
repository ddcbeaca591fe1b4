//! `fsynclab exec --cut PLAN [--check COMMAND] -- WORKLOAD`: any program under a power cut.
//! The workload runs on the testbed; when the emulated disk loses power (as the plan says:
//! after a time, a number of flushes or writes, at a random moment) the workload is stopped
//! (SIGKILL to it and everything it started), the filesystem recovers from what the drive
//! kept ([`crate::testbed::power`]), and the checker runs on the recovered filesystem: its
//! exit status and output are the verdict. The filesystem's own checker runs read-only
//! afterwards, and what each step found is said in one line each.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use serde::Serialize;

use crate::child::{Bounded, OnSignal, Outcome};
use crate::environment::PowerCut;
use crate::error::Usage;
use crate::testbed::device::{CutPlan, DeviceControl};
use crate::testbed::power::{Check, Recovery};
use crate::testbed::{Prepared, TestbedRequest};

/// What `--cut` and `--check` ask for, checked.
#[derive(Clone, Debug)]
pub struct CutOptions {
    pub plan: CutPlan,
    pub check: Option<String>,
    /// How long the check may run.
    pub check_limit: Duration,
}

impl CutOptions {
    /// Reads `--cut PLAN` and `--check COMMAND`; a cut needs an emulated disk.
    pub fn read(
        cut: Option<&str>,
        check: Option<&str>,
        check_limit: Duration,
        request: &TestbedRequest,
    ) -> Result<Option<CutOptions>, Usage> {
        let Some(text) = cut else { return Ok(None) };
        let plan = CutPlan::parse(text).map_err(|why| Usage(format!("--cut {text}: {why}")))?;
        if !request.scratch().is_some_and(|s| s.device.is_emulated()) {
            return Err(Usage(format!(
                "--cut {text}: a power cut needs an emulated disk: add --scratch FS --device PROFILE (e.g. --scratch ext4 --device hdd-7200)"
            )));
        }
        if check_limit.is_zero() {
            return Err(Usage(
                "--check-timeout: must be longer than 0s (e.g. 30s or 10m)".into(),
            ));
        }
        Ok(Some(CutOptions {
            plan,
            check: check.map(str::to_string),
            check_limit,
        }))
    }
}

/// What the cut did and what survived, for `--output` and the lines said.
#[derive(Debug, Serialize)]
pub struct CutRecord {
    pub plan: String,
    /// What the drive held, kept and lost.
    pub cut: Option<PowerCut>,
    /// Whether the command was still running when the power went (it was stopped).
    pub stopped_the_command: bool,
    pub recovery: Recovery,
    /// The checker's command and exit status, when one was given and could run.
    pub check_command: Option<String>,
    pub check_status: Option<i32>,
    /// The filesystem's own checker, read-only.
    pub fsck: Option<Check>,
}

/// Arms the plan and watches for the cut while the command runs: once the drive loses
/// power, the command (while `pid` holds it) and what it started are killed.
pub(super) struct Watch {
    control: DeviceControl,
    pid: Arc<Mutex<Option<u32>>>,
    stopped: Arc<Mutex<bool>>,
    thread: Option<std::thread::JoinHandle<()>>,
    done: Arc<std::sync::atomic::AtomicBool>,
}

impl Watch {
    /// `ours` are the processes fsynclab had before the command (left alone at the cut).
    pub(super) fn start(testbed: &Prepared, plan: CutPlan, pid: u32, ours: &[(u32, String)]) -> Result<Watch> {
        let ours: Vec<u32> = ours.iter().map(|(p, _)| *p).collect();
        let control = testbed
            .device_control()
            .ok_or_else(|| anyhow::anyhow!("the emulated disk is gone: no power to cut"))?;
        control.arm_cut(plan);
        let pid = Arc::new(Mutex::new(Some(pid)));
        let stopped = Arc::new(Mutex::new(false));
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let (control, pid, stopped, done) = (control.clone(), pid.clone(), stopped.clone(), done.clone());
            let ours = ours.clone();
            std::thread::Builder::new().name("fsynclab-cut".into()).spawn(move || {
                while !done.load(std::sync::atomic::Ordering::SeqCst) {
                    let Some(cut) = control.wait_for_cut(Duration::from_millis(200)) else {
                        continue;
                    };
                    let held = pid.lock().unwrap_or_else(|p| p.into_inner());
                    if let Some(child) = *held {
                        note!(
                            "fsynclab exec: the power is cut at {:.3} s ({}); stopping the command",
                            cut.at_s,
                            cut.trigger
                        );
                        kill_tree(child);
                        // And what it started that left it (a server that daemonized:
                        // fsynclab, its subreaper, is now its parent). A power cut gives no
                        // process the time to shut down.
                        // Orphans keep coming while the killed die (a server's workers are
                        // the subreaper's once their parent is gone): a second to round them up.
                        for _ in 0..20 {
                            let orphans: Vec<u32> = super::children_of(std::process::id())
                                .into_iter()
                                .map(|(p, _)| p)
                                .filter(|p| *p != child && !ours.contains(p))
                                .collect();
                            if orphans.is_empty() {
                                break;
                            }
                            orphans.into_iter().for_each(kill_tree);
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
                    }
                    return;
                }
            })?
        };
        Ok(Watch {
            control,
            pid,
            stopped,
            thread: Some(thread),
            done,
        })
    }

    /// The command is about to be reaped: its pid must not be signalled any more.
    pub(super) fn forget_command(&self) {
        *self.pid.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    /// Ends the watch: cuts the power now if the command ended first, then recovers the
    /// filesystem, runs the checker in it, and the filesystem's own checker. Returns the
    /// record and the exit status fsynclab ends with: the checker's, else whether the
    /// filesystem came back clean.
    pub(super) fn finish(mut self, testbed: &Prepared, plan: &CutOptions) -> Result<(CutRecord, i32)> {
        self.forget_command();
        let cut = match self.control.power_cut() {
            Some(cut) => Some(cut),
            None => {
                note!("fsynclab exec: the command ended before the cut; the power is cut now");
                self.control.cut_power(plan.plan.keep, plan.plan.seed)
            }
        };
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(c) = &cut {
            note!(
                "fsynclab exec: the drive held {} writes ({} bytes) at the cut: {} reached the media, {} were lost, {} torn",
                c.held_writes,
                c.held_bytes,
                c.kept_writes,
                c.lost_writes,
                c.torn_writes
            );
        }
        let recovery = testbed.recover()?;
        let stopped = *self.stopped.lock().unwrap_or_else(|p| p.into_inner());
        let mut record = CutRecord {
            plan: plan.plan.to_string(),
            cut,
            stopped_the_command: stopped,
            recovery: recovery.clone(),
            check_command: plan.check.clone(),
            check_status: None,
            fsck: None,
        };
        if !recovery.mounted {
            note!(
                "fsynclab exec: the filesystem did not mount after the cut: {}",
                recovery.mount_error.as_deref().unwrap_or("?")
            );
            record.fsck = testbed.check().ok();
            return Ok((record, 1));
        }
        note!(
            "fsynclab exec: the filesystem mounted again after the cut (replay {:.1} ms)",
            recovery.replay_ms
        );
        if let Some(check) = &plan.check {
            match run_check(check, testbed.dir(), plan.check_limit) {
                Ok(Outcome::Exited(s)) => record.check_status = Some(s.code().unwrap_or(1)),
                Ok(Outcome::TimedOut) => {
                    note!(
                        "fsynclab exec: the check `{check}` did not end within {} (--check-timeout); it and what it started were stopped",
                        crate::units::format_duration(plan.check_limit)
                    );
                    record.check_status = Some(TIMED_OUT);
                }
                Ok(Outcome::Interrupted(sig)) => {
                    note!("fsynclab exec: signal {sig} stopped the check `{check}` and what it started; undoing");
                    return Ok((record, 128 + sig));
                }
                Err(e) => note!("fsynclab exec: cannot run the check `{check}`: {e}"),
            }
        }
        let fsck = testbed.check()?;
        note!(
            "fsynclab exec: `{}` {}",
            fsck.command,
            if fsck.clean {
                "finds the filesystem clean".to_string()
            } else {
                format!("exits {}: {}", fsck.exit_status, fsck.said.replace('\n', "; "))
            }
        );
        let status = match (record.check_status, &plan.check) {
            (Some(s), _) => s,
            (None, Some(_)) => 127,
            (None, None) => i32::from(!fsck.clean),
        };
        if let (Some(s), Some(check)) = (record.check_status, &plan.check) {
            note!("fsynclab exec: the check `{check}` exits {s}");
        }
        record.fsck = Some(fsck);
        Ok((record, status))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.done.store(true, std::sync::atomic::Ordering::SeqCst);
        *self.pid.lock().unwrap_or_else(|p| p.into_inner()) = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The exit status after a check that ran past its limit, as timeout(1)'s.
const TIMED_OUT: i32 = 124;

/// Runs the check `sh -c CHECK` in `dir` (its own process group, ended by a signal to
/// fsynclab or past `limit`, with what it started).
fn run_check(check: &str, dir: &std::path::Path, limit: Duration) -> std::io::Result<Outcome> {
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", check]).current_dir(dir).env("FSYNCLAB_DIR", dir);
    let rules = Bounded {
        limit,
        on_signal: OnSignal::Stop,
        say_after: None,
    };
    Ok(rules.run(&mut cmd)?.outcome)
}

/// SIGKILL to `pid` and every process below it, deepest first.
fn kill_tree(pid: u32) {
    for (child, _) in super::children_of(pid) {
        kill_tree(child);
    }
    // `pid` is the command (not yet reaped: the caller holds the lock that forgets it before
    // reaping) or one of its descendants.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    );
}
