//! The fsyncgate sequence on one filesystem, on a scratch filesystem of its own over an
//! emulated disk, in named steps:
//!
//! 1. a file of four blocks of old content, made durable (fsync of the file and directory);
//! 2. a descriptor opened before the error; the disk told to fail every write of the
//!    file's second block ([`super::locate`]);
//! 3. new content written over that block (buffered), then fsync: the writeback fails;
//! 4. when the first fsync wrote nothing that failed (ext4 data=journal puts the data in
//!    its journal first), the kernel's own writeback is made to happen now (syncfs through
//!    another descriptor) instead of at the next flusher wake-up; when the whole disk
//!    fails, always, so that every filesystem commits its journal or log on the failing
//!    disk (an fsync of an overwrite need not: XFS forced its log in some runs, not others);
//! 5. fsync again; the block read back through the page cache; fsync through the
//!    descriptor opened before the error and through one opened after it;
//! 6. the disk healthy again; what the filesystem then lets an application do;
//! 7. unmount, mount (the journal replayed), and the block read from the disk; with
//!    `fault=flush` (the disk failed one cache flush instead of the block's write), the
//!    power is cut instead (the drive keeps nothing of its volatile cache) and the
//!    filesystem recovered from the media ([`crate::testbed::power`]).
//!
//! Each call's return, latency and the writes the disk failed during it are kept, and what
//! the kernel logged about the device meanwhile.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context as _, Result};

use super::details::{Behaviour, Call, Content};
use super::locate;
use super::{BLOCK, NEW, OLD};
use crate::kernel::kmsg::{self, KernelLog};
use crate::sys::{self, Errno};
use crate::testbed::device::DeviceProfile;
use crate::testbed::device::{DeviceControl, Keep};
use crate::testbed::request::{Place, ScratchOptions};
use crate::testbed::scratch::ScratchSpec;
use crate::testbed::{self, Prepared, TestbedRequest};
use crate::units::Bytes;

/// The file's blocks; the one that fails is the second (the paper's "single block update"
/// of a middle block).
const BLOCKS: usize = 4;
const TARGET: u64 = BLOCK as u64;
const FILE: &str = "fsyncgate";

/// The scratch image of a row: the smallest each filesystem takes, at least 64 MiB. Btrfs
/// below 1 GiB still gets separate data and metadata chunks from mkfs.btrfs 6.x.
fn image_size(spec: &ScratchSpec) -> u64 {
    spec.min_size().max(64 * Bytes::MIB)
}

/// Which writes the disk fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scope {
    /// The writes of the file's block (on Btrfs, of its data chunks): a bad sector under
    /// the data, as the published experiments inject.
    Block,
    /// Every write, from the new content on: a disk that stops taking writes (dm-error
    /// over the whole device); the journal and metadata fail too.
    Disk,
    /// The next cache flush, once; then the power is cut: what the calls after the failed
    /// flush made durable (the data sat in the drive's volatile cache).
    Flush,
}

impl Scope {
    pub(super) fn name(self) -> &'static str {
        match self {
            Scope::Block => "block",
            Scope::Disk => "disk",
            Scope::Flush => "flush",
        }
    }
}

impl crate::params::Choice for Scope {
    const NAMES: &'static [&'static str] = &["block", "disk", "flush"];
    const ALL: &'static [Scope] = &[Scope::Block, Scope::Disk, Scope::Flush];
}

/// Runs the sequence for `spec` on a new scratch filesystem over `device`, failing the
/// writes `scope` names, its directory in `backing`. An error means the row could not be
/// measured (the filesystem could not be made, or its block found); what the failure did
/// is always a result.
pub(super) fn measure(spec: &ScratchSpec, device: &DeviceProfile, scope: Scope, backing: &Path) -> Result<Behaviour> {
    let bed = testbed::prepare(&request(spec, device, backing), 0)?;
    let disk = bed
        .device_control()
        .context("the scratch filesystem is not on an emulated disk")?;
    let _ = bed.flushes(); // marks where the disk's counts start
    let result = run(&bed, &disk, spec, scope);
    // Healthy again whatever happened, so that the teardown's unmount goes through.
    let _ = disk.set_faults("");
    result
}

/// Makes `spec`'s scratch filesystem over `device` as [`measure`] does, mounts it and takes
/// it down again: the kernel judges mount options, for `--set fs` as for `--scratch`, and a
/// refusal is `--scratch`'s one-line [`crate::error::Usage`].
pub(super) fn try_mount(spec: &ScratchSpec, device: &DeviceProfile, backing: &Path) -> Result<()> {
    testbed::prepare(&request(spec, device, backing), 0).map(drop)
}

/// The testbed of one row: `spec` on a scratch filesystem of its own over `device`.
fn request(spec: &ScratchSpec, device: &DeviceProfile, backing: &Path) -> TestbedRequest {
    TestbedRequest {
        place: Place::Scratch(Box::new(ScratchOptions {
            spec: spec.clone(),
            mkfs_options: Vec::new(),
            size: Some(image_size(spec)),
            backing: backing.to_path_buf(),
            scheduler: None,
            device: device.clone(),
            bdi: None,
        })),
        sysctls: Vec::new(),
    }
}

/// Requests the disk failed so far, and the flushes it completed.
fn disk_counts(bed: &Prepared) -> (u64, u64) {
    bed.device_activity().map_or((0, 0), |a| {
        (a.failed_writes + a.failed_flushes + a.failed_reads, a.flushes)
    })
}

/// Times `call`, with what the disk failed and flushed meanwhile.
fn timed(bed: &Prepared, call: impl FnOnce() -> std::io::Result<()>) -> Call {
    let (failed, flushes) = disk_counts(bed);
    let start = Instant::now();
    let outcome = call();
    let latency_ns = start.elapsed().as_nanos() as u64;
    let (failed_after, flushes_after) = disk_counts(bed);
    Call {
        error: outcome.err().map(|e| Errno::of(&e)),
        latency_ns,
        disk_failed: failed_after - failed,
        flushes: flushes_after - flushes,
    }
}

fn run(bed: &Prepared, disk: &DeviceControl, spec: &ScratchSpec, scope: Scope) -> Result<Behaviour> {
    let dir = bed.dir();
    let mut log = KernelLog::from_now();
    let path = dir.join(FILE);

    // 1. The old content, durable.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .with_context(|| format!("cannot create {}", path.display()))?;
    sys::pwrite_all(&file, &[OLD; BLOCK * BLOCKS], 0, false).context("cannot write the old content")?;
    sys::fsync(&file).context("cannot make the old content durable")?;
    let root = File::open(dir)?;
    sys::fsync(&root).context("cannot make the file's name durable")?;

    // 2. A descriptor opened before the error; the disk fails the block's writes.
    let before = OpenOptions::new().read(true).write(true).open(&path)?;
    let fault = fault_rules(scope, spec, &file, &root)?;
    disk.set_faults(&fault)?;

    // 3. New content over the block, and the first fsync.
    let write = timed(bed, || sys::pwrite_all(&file, &[NEW; BLOCK], TARGET, false));
    let first_fsync = timed(bed, || sys::fsync(&file));

    // 4. The kernel's writeback, now, if the first fsync did not reach the failing write.
    let writeback = (disk_counts(bed).0 == 0 || scope == Scope::Disk).then(|| timed(bed, || sys::syncfs(&root)));

    // 5. The second fsync, the page, and the other descriptors.
    let second_fsync = timed(bed, || sys::fsync(&file));
    let page = read_block(&file);
    let fd_before = timed(bed, || sys::fsync(&before));
    let after = OpenOptions::new().read(true).write(true).open(&path);
    let fd_after = match &after {
        Ok(f) => timed(bed, || sys::fsync(f)),
        Err(e) => Call::failed(e),
    };
    let disk_failed = disk_counts(bed).0;

    // 6. The disk healthy again: what is the filesystem's state?
    disk.set_faults("")?;
    let state = bed.filesystem_state();

    // 7. Unmounted, mounted, read from the disk; with a failed flush, the power cut
    // instead, and the filesystem recovered from what the drive had made durable.
    drop((file, before, after, root));
    let device = bed.loop_device().unwrap_or_default().to_string();
    let (on_disk, cut) = match scope {
        Scope::Flush => {
            let cut = disk.cut_power(Keep::Nothing, 0);
            (recovered_content(bed, &path), cut)
        }
        Scope::Block | Scope::Disk => (remounted_content(bed, &path), None),
    };
    let kernel = kmsg::naming(log.read_new(), &device, KERNEL_LINES);

    Ok(Behaviour {
        filesystem: spec_label(spec),
        fault,
        write,
        first_fsync,
        writeback,
        second_fsync,
        page,
        fd_before,
        fd_after,
        disk_failed,
        state,
        on_disk,
        cut,
        kernel,
    })
}

/// The `fail=` rules of `scope`: the file's block (`file`'s second) or, on Btrfs, its data
/// chunks (read through the directory `root`); the whole disk; or the next flush.
fn fault_rules(scope: Scope, spec: &ScratchSpec, file: &File, root: &File) -> Result<String> {
    let ranges = match scope {
        Scope::Flush => return Ok("fail=flush:times=1".to_string()),
        Scope::Disk => vec![(0, image_size(spec))],
        Scope::Block if spec.fstype == "btrfs" => {
            locate::btrfs_data_ranges(root).context("cannot read where btrfs keeps its data")?
        }
        Scope::Block => {
            let at = locate::block_on_disk(file, TARGET, BLOCK as u64)
                .context("cannot find where the file's block lies on the disk (FIEMAP)")?;
            vec![(at, BLOCK as u64)]
        }
    };
    Ok(ranges
        .iter()
        .map(|(offset, len)| format!("fail=write:range={offset}+{len}"))
        .collect::<Vec<_>>()
        .join(","))
}

/// The most kernel messages a row keeps.
const KERNEL_LINES: usize = 12;

/// `ext4:data=journal` as the row names it.
pub(super) fn spec_label(spec: &ScratchSpec) -> String {
    if spec.mount_options.is_empty() {
        spec.fstype.clone()
    } else {
        format!("{}:{}", spec.fstype, spec.mount_options)
    }
}

/// The target block as `file` reads it now.
fn read_block(file: &File) -> Content {
    let mut buf = vec![0u8; BLOCK];
    match file.read_exact_at(&mut buf, TARGET) {
        Ok(()) => Content::of(&buf),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Content::Short,
        Err(e) => Content::Unreadable(Errno::of(&e)),
    }
}

/// The block as the drive left it at the power cut: the filesystem torn down without
/// writing, its media attached again and mounted (the journal replayed).
fn recovered_content(bed: &Prepared, path: &Path) -> Result<Content, String> {
    let recovery = bed.recover().map_err(|e| format!("recovery failed: {e:#}"))?;
    if !recovery.mounted {
        return Err(format!(
            "mount failed after the cut: {}",
            recovery.mount_error.unwrap_or_default()
        ));
    }
    match File::open(path) {
        Ok(f) => Ok(read_block(&f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Content::Missing),
        Err(e) => Ok(Content::Unreadable(Errno::of(&e))),
    }
}

/// The block as the disk holds it: the filesystem unmounted and mounted again (healthy).
fn remounted_content(bed: &Prepared, path: &Path) -> Result<Content, String> {
    bed.unmount_scratch().map_err(|e| format!("unmount failed: {e:#}"))?;
    bed.mount_scratch().map_err(|e| format!("mount failed: {e:#}"))?;
    match File::open(path) {
        Ok(f) => Ok(read_block(&f)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Content::Missing),
        Err(e) => Ok(Content::Unreadable(Errno::of(&e))),
    }
}
