//! A command run on another kernel (`--kernel K` on `run`, `load`, `probe`, `suite` and
//! `exec`): the same command line run inside a virtual machine that boots K ([`super::guest`]),
//! its results recorded in the host's store through the one recording step
//! ([`super::cell::record`]). Each command states what it needs of the guest
//! ([`GuestCommand`]); this is the one place that boots it and takes back what it made.
//!
//! In order: everything that can be refused is (the kernel, QEMU and virtme-ng, the options,
//! the store) before anything is made; the host makes the scratch filesystem and serves its
//! disk ([`crate::testbed::vm::disk`]); the guest boots and runs this very command line, less
//! `--kernel`, with the same binary (the host's root is the guest's, read-only but for the
//! results directory and the current directory); what the guest would have recorded it
//! writes to the results directory, which the host records once the guest has ended, and
//! the exit status is the command's inside. A guest past `--kernel-timeout` is ended; a
//! signal ends the VM at once; either way the disk is undone and nothing is left.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;

use super::cell::{self, Say};
use super::guest::{self, Booted};
use crate::compare::expect::Expectation;
use crate::error::NOT_MADE;
use crate::recording::Recording;
use crate::result::RunResult;
use crate::testbed::vm::{self, Ended, GuestDisk, Kernel};
use crate::testbed::TestbedRequest;
use crate::units::format_duration;

mod shared;

pub(crate) use shared::Writes;

/// A command to run on another kernel, as its command line asked: what every command takes
/// (`--kernel`, the testbed, `--kernel-timeout`, the store) and the command's own [`Needs`].
pub(crate) struct GuestCommand<'a> {
    pub kernel: Kernel,
    /// The testbed the command line names (its scratch filesystem is the guest's disk).
    pub request: TestbedRequest,
    /// `--kernel-timeout`, when given.
    pub kernel_timeout: Option<Duration>,
    /// Where what came back is recorded (`--store`, `--no-store`), for a command that
    /// records runs (not exec without --explain).
    pub record: Option<StoreFlags<'a>>,
    pub needs: Needs<'a>,
}

/// What a command needs of the guest, which each command states.
pub(crate) struct Needs<'a> {
    /// The room the run's files need on the scratch filesystem (the image's default size).
    pub space_needed: u64,
    /// Where its disk is emulated and who drives it.
    pub guest_disk: GuestDisk,
    /// How long the command is expected to measure (its plan's length), from which the
    /// guest's time limit is derived when `--kernel-timeout` is not given; `None` (exec, a
    /// run as long as its device takes): 30m.
    pub expected: Option<Duration>,
    /// A file or directory the command writes outside the current directory (`--output`,
    /// `--results`): checked here before the guest boots, and its directory made writable
    /// in the guest.
    pub writes: Option<Writes<'a>>,
    /// The program exec runs and its arguments (empty for the other commands): the files
    /// they name where the guest would hide them are shared with it.
    pub command: &'a [OsString],
    /// `--expect`: judged here on the result the guest wrote, so that a guest that did not
    /// boot or write one is told apart (125) from a run that missed (1).
    pub expect: &'a [Expectation],
    /// The verdict on what came back and the guest's exit status: a run's status says
    /// whether calls failed, a command's (exec) whether the command did.
    pub judge: Judge,
}

/// The store options of a command that records runs.
#[derive(Clone, Copy)]
pub(crate) struct StoreFlags<'a> {
    /// `--store PATH`.
    pub path: Option<&'a Path>,
    /// `--no-store`.
    pub off: bool,
}

/// How `--expect` judges what a guest brought back.
pub(crate) enum Judge {
    /// On the last result (a run, or exec's command), with the guest's exit status.
    Last(fn(&[Expectation], &RunResult, i32) -> i32),
    /// On every result (a suite's scenarios), with the guest's exit status.
    All(fn(&[Expectation], &[RunResult], i32) -> i32),
}

/// Runs this process's command line inside a guest booting `g.kernel`; returns the exit
/// status of the command inside (128 + N when signal N stopped the VM), or with `--expect`
/// the verdict on the result it brought back.
pub(crate) fn run(c: GuestCommand) -> Result<i32> {
    let g = &c.needs;
    // Refused before anything is made.
    let limit = c
        .kernel_timeout
        .unwrap_or_else(|| crate::matrix::plan::derived_guest_limit(g.expected));
    let request = &c.request;
    guest::refuse(request)?;
    let cwd = std::env::current_dir()?;
    let store = c.record.and_then(|r| r.path);
    let written = g.writes.map(|w| w.checked(&cwd, store)).transpose()?.flatten();
    // The store last: a refused run leaves none behind.
    let mut recording = match c.record {
        Some(r) => Some(Recording::open(r.path, r.off)?),
        None => None,
    };
    let booted = guest::boot(&guest::Boot {
        kernel: &c.kernel,
        request,
        space_needed: g.space_needed,
        guest_disk: g.guest_disk,
        argv: guest_argv(std::env::current_exe()?, std::env::args_os().skip(1)),
        rw_dirs: [Some(cwd.clone()), written].into_iter().flatten().collect(),
        read_dirs: shared::read_dirs(g.command, &cwd),
        limit,
        quiet: false,
    })?;
    let (ended, took, mut came_back, last_words) = match booted {
        Booted::Interrupted(sig) => return Ok(128 + sig),
        Booted::Ran {
            ended,
            took,
            results,
            last_words,
            host_disk_full,
        } => {
            if let Some(dir) = host_disk_full {
                note!(
                    "fsynclab: the host's disk under --backing ({}) is full: the guest's disk is a file there, and its writes failed as I/O errors in the guest",
                    dir.display()
                );
            }
            (ended, took, results, last_words)
        }
    };
    // What the guest recorded, recorded here, in the order it was made.
    if let Some(recording) = recording.as_mut() {
        for result in &mut came_back {
            cell::record(recording, result, None, Say::Stored)?;
        }
    }
    let code = match ended {
        Ended::Exited(code) => {
            if code != 0 && came_back.is_empty() {
                // The command's own error was shown as it came; a crash has none but the
                // console's.
                let why = match (code, &last_words) {
                    (vm::GUEST_CRASHED, Some(w)) => {
                        format!(": {}; the console's last words: {w}", vm::why_no_result(code))
                    }
                    (vm::GUEST_CRASHED, None) => format!(": {}", vm::why_no_result(code)),
                    _ => String::new(),
                };
                note!(
                    "fsynclab: the guest ({}) exited with status {code} after {}{why}",
                    c.kernel.release,
                    crate::units::clock(took)
                );
            }
            code
        }
        Ended::TimedOut => {
            note!(
                "fsynclab: the guest ({}) had not finished after {} (--kernel-timeout); it was ended, and its disk undone",
                c.kernel.release,
                format_duration(limit)
            );
            1
        }
        Ended::Interrupted(sig) => {
            note!("fsynclab: interrupted by signal {sig}; the guest was ended and its disk undone");
            128 + sig
        }
        Ended::QemuKilled(sig) => {
            note!(
                "fsynclab: the guest ({}) did not end: {} after {}; its disk was undone",
                c.kernel.release,
                vm::qemu_killed(sig),
                crate::units::clock(took)
            );
            1
        }
    };
    if g.expect.is_empty() {
        return Ok(code);
    }
    Ok(match (&ended, came_back.last(), &g.judge) {
        (Ended::Interrupted(_), ..) => code,
        (Ended::Exited(_), Some(last), Judge::Last(judge)) => judge(g.expect, last, code),
        (Ended::Exited(_), Some(_), Judge::All(judge)) => judge(g.expect, &came_back, code),
        _ => {
            note!(
                "fsynclab: --expect: no result came back from {} (it did not boot, or the run could not be made); exit status {NOT_MADE}",
                c.kernel.release
            );
            NOT_MADE
        }
    })
}

/// The options the host acts on and the guest does not see: the kernel it boots, how long
/// it waits, and the expectations it judges the returned result by.
const HOST_ONLY: [&str; 3] = ["--kernel", "--kernel-timeout", "--expect"];

/// The guest's command line: this binary, with the arguments given less [`HOST_ONLY`]
/// options (before a `--`, after which they are the command's own).
fn guest_argv(exe: PathBuf, args: impl Iterator<Item = OsString>) -> Vec<OsString> {
    let mut out = vec![exe.into_os_string()];
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        if arg == "--" {
            out.push(arg);
            out.extend(args.by_ref());
            break;
        }
        let text = arg.to_string_lossy();
        if HOST_ONLY.contains(&text.as_ref()) {
            args.next();
            continue;
        }
        if HOST_ONLY.iter().any(|o| text.starts_with(&format!("{o}="))) {
            continue;
        }
        out.push(arg);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_runs_the_same_command_line_without_kernel() {
        let args = [
            "exec",
            "--kernel",
            "6.1",
            "--scratch",
            "ext4",
            "--kernel-timeout=5m",
            "--expect",
            "fsync.p99<1s",
            "--expect=fsync.p50<1s",
            "--",
            "sh",
            "--kernel",
            "x",
        ]
        .map(OsString::from);
        let argv = guest_argv(PathBuf::from("/bin/fsynclab"), args.into_iter());
        let got: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(
            got,
            [
                "/bin/fsynclab",
                "exec",
                "--scratch",
                "ext4",
                "--",
                "sh",
                "--kernel",
                "x"
            ]
        );
    }
}
