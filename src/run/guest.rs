//! A command run inside a guest booting another kernel, with the results it brings back:
//! the host serves the scratch disk ([`crate::testbed::vm::disk`]; a run that cuts its
//! power drives it from inside through a control port, [`crate::testbed::vm::control`]; a
//! run that makes disks of its own emulates them inside the guest instead), the guest boots
//! and runs the command with the same binary over the host's root (read-only but for the
//! results directory and the directories the command writes to), and what the guest would
//! have recorded comes back as results, in the order it was made. `--kernel K` on a command
//! ([`crate::commands::kernel`]) and a matrix's `kernel=` cell ([`super::cell`]) both boot
//! through here. A guest past its limit is ended; a signal ends the VM at once; either way
//! the served disk is undone and nothing is left.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;

use crate::environment::VmInfo;
use crate::error::Usage;
use crate::result::RunResult;
use crate::testbed::device::DeviceProfile;
use crate::testbed::vm::{self, Ended, GuestDisk, Kernel, Launch};
use crate::testbed::TestbedRequest;
use crate::units::format_duration;

/// The guest's memory: room for the page cache a run's writeback builds up, whatever the
/// host has (the emulated disk's media stay on the host).
const GUEST_MEMORY_BYTES: u64 = 2 << 30;

/// One command to run on another kernel.
pub(crate) struct Boot<'a> {
    pub(crate) kernel: &'a Kernel,
    pub(crate) request: &'a TestbedRequest,
    /// The room the run's files need on the scratch filesystem (the image's default size).
    pub(crate) space_needed: u64,
    /// Where the run's disk is emulated, and whether the run drives it from inside.
    pub(crate) guest_disk: GuestDisk,
    /// The command inside: this binary and its arguments.
    pub(crate) argv: Vec<OsString>,
    /// Host directories the command writes to besides the results directory.
    pub(crate) rw_dirs: Vec<PathBuf>,
    /// Host directories the command reads that the guest would hide behind its own.
    pub(crate) read_dirs: Vec<PathBuf>,
    /// How long the guest may run, boot included.
    pub(crate) limit: Duration,
    /// A matrix cell's guest: its stdout is not shown, nor the boot line (the cell's
    /// progress line says what runs).
    pub(crate) quiet: bool,
}

/// What booting came to.
pub(crate) enum Booted {
    /// A signal came while the disk was prepared: nothing ran, what was set up is undone.
    Interrupted(i32),
    /// The guest ran and ended as `ended` after `took`, bringing back `results`; one that
    /// brought none back has its console's last words (a kernel panic's line).
    Ran {
        ended: Ended,
        took: Duration,
        results: Vec<RunResult>,
        last_words: Option<String>,
        /// The host directory (`--backing`) whose filesystem was full when the guest ended:
        /// its disk's writes failed (the guest saw them fail as I/O errors).
        host_disk_full: Option<PathBuf>,
    },
}

/// What a guest needs of the machine and of the request, refused in one line before
/// anything is made (a caller that opens a results store checks this first, so that a
/// refused run leaves no empty store): QEMU and virtme-ng (the latter's path returned), and
/// a scratch filesystem for the guest's kernel to mount.
pub(crate) fn refuse(request: &TestbedRequest) -> Result<PathBuf, Usage> {
    let vng = vm::check_tools()?;
    if request.scratch().is_none() {
        return Err(Usage(
            "--kernel needs --scratch FS: the run's filesystem must be the guest kernel's own, on the disk the host serves it"
                .into(),
        ));
    }
    Ok(vng)
}

/// Boots `b.kernel` and runs `b.argv` inside on the disk the host serves (or, for a run that
/// drives its disk, on one the guest emulates itself).
pub(crate) fn boot(b: &Boot) -> Result<Booted> {
    // Refused before anything is made.
    let vng = refuse(b.request)?;
    let stop = crate::signals::watch()?;
    let disk_in_guest = b.guest_disk == GuestDisk::InGuest;
    let served = match vm::disk::serve_disk(b.request, b.space_needed, !disk_in_guest) {
        Ok(served) => served,
        // Ctrl-C reaches the mkfs we were waiting for: say so rather than its error.
        Err(_) if stop.signal().is_some() => {
            let sig = stop.signal().unwrap_or(libc::SIGINT);
            note!("fsynclab: interrupted by signal {sig} while preparing the guest's disk; what was set up is undone");
            return Ok(Booted::Interrupted(sig));
        }
        Err(e) => return Err(e),
    };
    if let Some(sig) = stop.signal() {
        note!("fsynclab: interrupted by signal {sig} while preparing the guest's disk; nothing was run");
        return Ok(Booted::Interrupted(sig));
    }
    let results = served.prepared.dir().join("results");
    std::fs::create_dir(&results)?;

    let accelerator = vm::accelerator();
    let profile = match b.request.scratch().map(|s| &s.device) {
        Some(DeviceProfile::Emulated(p)) => p.name.clone(),
        Some(other) => other.to_string(),
        None => String::new(),
    };
    // A disk the guest emulates keeps its media in the guest's memory, which a scratch run
    // wants at most half of.
    let media_bytes = match (disk_in_guest, b.request.scratch()) {
        (true, Some(s)) => 2 * s.size.unwrap_or_else(|| s.spec.default_size(b.space_needed)),
        _ => 0,
    };
    let info = VmInfo {
        accelerator: accelerator.name().into(),
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes: GUEST_MEMORY_BYTES + media_bytes,
        boot: "virtme-ng".into(),
        disk: profile,
        disk_in_guest,
        ..VmInfo::default()
    };
    let mut rw_dirs = vec![results.clone()];
    for dir in &b.rw_dirs {
        if dir != std::path::Path::new("/") && !rw_dirs.contains(dir) {
            rw_dirs.push(dir.clone());
        }
    }
    if !b.quiet {
        note!(
            "fsynclab: booting {} ({}) under QEMU/{}, {} CPU{}, {}; the guest is ended after {}",
            b.kernel.release,
            b.kernel.image.display(),
            accelerator.name(),
            info.cpus,
            if info.cpus == 1 { "" } else { "s" },
            crate::units::human_size(info.memory_bytes),
            format_duration(b.limit)
        );
    }
    // A run that drives its disk asks the host's device through a port; a disk that is not
    // emulated has nothing to drive (the run refuses it inside).
    let control = match (b.guest_disk, served.prepared.device_control()) {
        (GuestDisk::Driven, Some(device)) => Some(vm::control::Server::listen(
            &served.prepared.dir().join("control.sock"),
            device,
            served.remake(),
        )?),
        _ => None,
    };
    let launch = Launch {
        kernel: b.kernel,
        vm: &info,
        accelerator,
        disk: served.file.as_deref(),
        control: control.as_ref().map(vm::control::Server::path),
        rw_dirs,
        read_dirs: b.read_dirs.clone(),
        results: &results,
        argv: b.argv.clone(),
        limit: b.limit,
        stdout_shown: !b.quiet,
        console: &served.prepared.dir().join("console.log"),
        tmp: &served.prepared.private_tmp()?,
    };
    let (ended, took) = vm::launch(&vng, &launch)?;
    // Asked before the disk is undone, which frees what its image took.
    let host_disk_full = full_disk(served.prepared.dir());

    // What the guest would have recorded, in the order it was made.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&results)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let results = files
        .iter()
        .map(|f| RunResult::load(f))
        .collect::<Result<Vec<_>, _>>()?;
    let last_words = match results.is_empty() {
        true => vm::console_last_words(&served.prepared.dir().join("console.log")),
        false => None,
    };
    drop(control);
    drop(served);
    Ok(Booted::Ran {
        ended,
        took,
        results,
        last_words,
        host_disk_full,
    })
}

/// The host directory `dir` is in when its filesystem has no room left (under 1 MiB): the
/// guest's disk is a file there, whose writes then fail as the guest's I/O errors.
fn full_disk(dir: &std::path::Path) -> Option<PathBuf> {
    let space = crate::sys::fs_space(dir).ok()?;
    (space.available < crate::units::Bytes::MIB).then(|| dir.parent().unwrap_or(dir).to_path_buf())
}
