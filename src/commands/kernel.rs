//! `--kernel K` on `run`, `load`, `probe`, `suite` and `exec`: the same command run inside a virtual
//! machine that boots K, its results recorded in the host's store.
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
use std::path::PathBuf;

use anyhow::Result;

use crate::cli::{RecordArgs, TargetArgs};
use crate::compare::expect::Expectation;
use crate::environment::VmInfo;
use crate::error::{Usage, NOT_MADE};
use crate::recording::Recording;
use crate::result::RunResult;
use crate::testbed::vm::{self, Ended, Kernel, Launch};
use crate::units::{format_duration, parse_duration};

/// The guest's memory: room for the page cache a run's writeback builds up, whatever the
/// host has (the emulated disk's media stay on the host).
const GUEST_MEMORY_BYTES: u64 = 2 << 30;

/// A command to run on another kernel.
pub(crate) struct GuestRun<'a> {
    pub kernel: Kernel,
    pub target: &'a TargetArgs,
    pub record: Option<&'a RecordArgs>,
    /// The room the run's files need on the scratch filesystem (the image's default size).
    pub space_needed: u64,
    /// A file or directory the command writes outside the current directory (`--output`,
    /// `--results`): its directory is made writable in the guest too.
    pub writes: Option<&'a std::path::Path>,
    /// `--expect`: judged here on the result the guest wrote, so that a guest that did not
    /// boot or write one is told apart (125) from a run that missed (1).
    pub expect: &'a [Expectation],
}

/// The kernel `--kernel` names, or `None` for the host's own (no VM).
pub(crate) fn wanted(target: &TargetArgs) -> Result<Option<Kernel>, Usage> {
    match &target.kernel {
        Some(spec) if !VmInfo::in_guest() => vm::resolve(spec),
        _ => Ok(None),
    }
}

/// Refuses `--kernel` (other than `host`) on a command that cannot take it yet.
pub(crate) fn refuse(target: &TargetArgs, command: &str) -> Result<(), Usage> {
    match target.kernel.as_deref().map(str::trim) {
        None | Some("host") => Ok(()),
        Some(k) => Err(Usage(format!(
            "--kernel {k}: `fsynclab {command}` does not boot other kernels yet; `run`, `load`, `probe`, `suite` and `exec` do"
        ))),
    }
}

/// Runs this process's command line inside a guest booting `g.kernel`; returns the exit
/// status of the command inside (128 + N when signal N stopped the VM).
pub(crate) fn run(g: GuestRun) -> Result<i32> {
    // Refused before anything is made.
    let vng = vm::check_tools()?;
    let limit = parse_duration(&g.target.kernel_timeout)
        .map_err(|e| Usage(format!("--kernel-timeout {}: {e}", g.target.kernel_timeout)))?;
    let request = g.target.request()?;
    if request.scratch().is_none() {
        return Err(Usage(
            "--kernel needs --scratch FS: the run's filesystem must be the guest kernel's own, on the disk the host serves it"
                .into(),
        )
        .into());
    }
    let mut recording = match g.record {
        Some(r) => Some(Recording::open(r.store.as_deref(), r.no_store)?),
        None => None,
    };
    let cwd = std::env::current_dir()?;
    let argv = guest_argv(std::env::current_exe()?, std::env::args_os().skip(1));

    let stop = crate::signals::watch()?;
    let served = match crate::testbed::vm::disk::serve_disk(&request, g.space_needed) {
        Ok(served) => served,
        // Ctrl-C reaches the mkfs we were waiting for: say so rather than its error.
        Err(_) if stop.signal().is_some() => {
            let sig = stop.signal().unwrap_or(libc::SIGINT);
            note!("fsynclab: interrupted by signal {sig} while preparing the guest's disk; what was set up is undone");
            return Ok(128 + sig);
        }
        Err(e) => return Err(e),
    };
    if let Some(sig) = stop.signal() {
        note!("fsynclab: interrupted by signal {sig} while preparing the guest's disk; nothing was run");
        return Ok(128 + sig);
    }
    let results = served.prepared.dir().join("results");
    std::fs::create_dir(&results)?;

    let accelerator = vm::accelerator();
    let profile = match request.scratch().map(|s| &s.device) {
        Some(crate::testbed::device::DeviceProfile::Emulated(p)) => p.name.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    let info = VmInfo {
        accelerator: accelerator.name().into(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes: GUEST_MEMORY_BYTES,
        boot: "virtme-ng".into(),
        disk: profile,
        ..VmInfo::default()
    };
    let mut rw_dirs = vec![results.clone()];
    let written = g
        .writes
        .map(|w| cwd.join(w))
        .and_then(|w| w.parent().map(std::path::Path::to_path_buf))
        .and_then(|d| std::fs::canonicalize(d).ok());
    for dir in [Some(cwd), written].into_iter().flatten() {
        if dir != std::path::Path::new("/") && !rw_dirs.contains(&dir) {
            rw_dirs.push(dir);
        }
    }
    note!(
        "fsynclab: booting {} ({}) under QEMU/{}, {} CPUs, {}; the guest is ended after {}",
        g.kernel.release,
        g.kernel.image.display(),
        accelerator.name(),
        info.cpus,
        crate::units::human_size(info.memory_bytes),
        format_duration(limit)
    );
    let launch = Launch {
        kernel: &g.kernel,
        vm: &info,
        accelerator,
        disk: Some(&served.file),
        rw_dirs,
        results: &results,
        argv,
        limit,
    };
    let (ended, took) = vm::launch(&vng, &launch)?;

    // What the guest recorded, recorded here, in the order it was made.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&results)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut came_back = Vec::new();
    for file in files {
        let mut result = RunResult::load(&file)?;
        if let Some(recording) = recording.as_mut() {
            recording.record_and_say(&mut result)?;
        }
        came_back.push(result);
    }
    let stored = came_back.len();
    drop(served);
    let code = match ended {
        Ended::Exited(code) => {
            if code != 0 && stored == 0 {
                note!(
                    "fsynclab: the guest ({}) exited with status {code} after {}",
                    g.kernel.release,
                    format_duration(took)
                );
            }
            code
        }
        Ended::TimedOut => {
            note!(
                "fsynclab: the guest ({}) had not finished after {} (--kernel-timeout); it was ended, and its disk undone",
                g.kernel.release,
                format_duration(limit)
            );
            1
        }
        Ended::Interrupted(sig) => {
            note!("fsynclab: interrupted by signal {sig}; the guest was ended and its disk undone");
            128 + sig
        }
    };
    if g.expect.is_empty() {
        return Ok(code);
    }
    Ok(match (&ended, came_back.last()) {
        (Ended::Interrupted(_), _) => code,
        (Ended::Exited(_), Some(result)) => super::run::judge(g.expect, result, code),
        _ => {
            note!(
                "fsynclab: --expect: no result came back from {} (it did not boot, or the run could not be made); exit status {NOT_MADE}",
                g.kernel.release
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
