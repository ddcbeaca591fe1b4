//! The scratch disk of a `--kernel` run, split between the two machines: the host makes
//! the filesystem and serves its media (the image, or the emulated disk's FUSE file, whose
//! model then runs at the host's speed whatever the guest's CPU), the guest mounts it from
//! the virtio-blk disk QEMU gives it. Every step on either side is recorded on the undo
//! stack of the side that made it, as a scratch run's are.

use std::path::{Path, PathBuf};

use std::collections::BTreeMap;
use std::sync::Mutex;

use anyhow::Result;

use super::super::device::fuse::EmulatedDevice;
use super::super::request::ScratchOptions;
use super::super::scratch::{self, Scratch};
use super::super::state::{Step, Undo};
use super::super::{deadman, names, Live, Prepared, TestbedRequest};
use crate::error::Usage;

/// On the host: the scratch directory (under `--backing`), the image (on a private tmpfs
/// for `ram` and the emulated disks, as a scratch run keeps it), its filesystem, and the
/// emulated device serving it. Returns the scratch directory and the file QEMU serves.
pub fn serve(
    request: &ScratchOptions,
    size: u64,
    undo: &mut Undo,
    device: &mut Option<EmulatedDevice>,
    switch: &mut Option<deadman::Switch>,
) -> Result<(PathBuf, PathBuf)> {
    let (dir, image) = scratch::make_image(request, size, undo)?;
    let served = scratch::make_media(request, &dir, &image, undo, device, switch)?;
    Ok((dir, served))
}

/// In the guest: the filesystem the host made, mounted from the virtio-blk disk it serves,
/// at `/tmp/fsynclab-scratch-.../mnt` (the guest's own memory: nothing of it is on the host
/// when the guest ends, however it ends).
pub fn mount_in_guest(request: &ScratchOptions, undo: &mut Undo) -> Result<Scratch> {
    let disk = super::guest_disk().ok_or_else(|| {
        anyhow::anyhow!(Usage(
            "--kernel: the guest has no disk served by the host (virtio-blk serial fsynclab); is virtio_blk missing from the kernel?".into()
        ))
    })?;
    // /sys/block/NAME/size counts 512-byte sectors, whatever the disk's block size.
    let name = disk.trim_start_matches("/dev/");
    let size = crate::kernel::read_trimmed(format!("/sys/block/{name}/size"))
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(0, |sectors| sectors * 512);
    let dir = std::env::temp_dir().join(names::scratch_dir_name());
    undo.perform(Step::Directory { path: dir.clone() }, || {
        std::fs::create_dir(&dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))
    })?;
    let disk_path = Path::new(&disk);
    let mut made = scratch::mount_on(request, size, &dir, disk_path, disk_path, disk.clone(), undo)?;
    made.info.image = format!("{disk} (virtio-blk, served by the host)");
    Ok(made)
}

/// The host's half of a `--kernel` run's scratch filesystem: the filesystem made and its
/// media served (the image, or the emulated disk's FUSE file), for QEMU to give the guest as
/// a virtio-blk disk. Sysctls, the scheduler and dirty limits are the guest's, set there.
pub struct ServedDisk {
    /// Undone when dropped: the FUSE device, the tmpfs, the scratch directory.
    pub prepared: Prepared,
    /// The file QEMU serves.
    pub file: PathBuf,
}

/// Makes the filesystem `request`'s scratch options ask for and serves its media (see
/// [`ServedDisk`]); the same checks as [`prepare`] first.
pub fn serve_disk(request: &TestbedRequest, space_needed: u64) -> Result<ServedDisk> {
    let Some(s) = request.scratch() else {
        return Err(
            Usage("--kernel needs --scratch FS: the guest's run needs a filesystem of its own kernel".into()).into(),
        );
    };
    let size = s.size.unwrap_or_else(|| s.spec.default_size(space_needed));
    scratch::check_prerequisites(s, size)?;
    let mut device = None;
    let mut switch = None;
    let mut undo = Undo::new();
    let (dir, file) = match serve(s, size, &mut undo, &mut device, &mut switch) {
        Ok(made) => made,
        Err(e) => {
            if device.is_some() {
                undo.undo_above(|s| matches!(s, Step::Tmpfs { .. }));
            }
            drop(device);
            return Err(e);
        }
    };
    let prepared = Prepared {
        dir,
        live: Mutex::new(Live {
            undo,
            device,
            switch,
            unplugged: false,
        }),
        _sysctl_lock: None,
        scratch: None,
        profile: Some(s.device.clone()),
        remake: None,
        sysctls_set: BTreeMap::new(),
        device_mark: Mutex::new(None),
    };
    Ok(ServedDisk { prepared, file })
}
