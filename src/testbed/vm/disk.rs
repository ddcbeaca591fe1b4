//! The scratch disk of a `--kernel` run, split between the two machines: the host makes
//! the filesystem and serves its media (the image, or the emulated disk's FUSE file, whose
//! model then runs at the host's speed whatever the guest's CPU), the guest mounts it from
//! the virtio-blk disk QEMU gives it. Every step on either side is recorded on the undo
//! stack of the side that made it, as a scratch run's are.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::super::device::fuse::EmulatedDevice;
use super::super::request::ScratchOptions;
use super::super::scratch::{self, Scratch};
use super::super::state::{Step, Undo};
use super::super::{deadman, names, Live, Prepared, TestbedRequest};
use crate::error::Usage;
use crate::kernel::mountinfo::{self, MountInfo};

/// On the host: the scratch directory (under `--backing`), the image (on a private tmpfs
/// for `ram` and the emulated disks, as a scratch run keeps it), its filesystem, and the
/// emulated device serving it. Returns the scratch directory, the image and the file QEMU
/// serves.
pub fn serve(
    request: &ScratchOptions,
    size: u64,
    undo: &mut Undo,
    device: &mut Option<EmulatedDevice>,
    switch: &mut Option<deadman::Switch>,
) -> Result<(PathBuf, PathBuf, PathBuf)> {
    let (dir, image) = scratch::make_image(request, size, undo)?;
    let served = scratch::make_media(request, &dir, &image, undo, device, switch)?;
    Ok((dir, image, served))
}

/// In the guest: the filesystem the host made, mounted from the virtio-blk disk it serves,
/// at `fsynclab-scratch-.../mnt` in a directory of the guest's own memory (see
/// [`guest_own_dir`]): nothing of it is on the host when the guest ends, however it ends.
pub fn mount_in_guest(request: &ScratchOptions, undo: &mut Undo) -> Result<Scratch> {
    let dir = guest_memory()?.join(names::scratch_dir_name());
    undo.perform(Step::Directory { path: dir.clone() }, || {
        std::fs::create_dir(&dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))
    })?;
    mount_served(request, &dir, undo)
}

/// In the guest: the disk the host serves.
pub fn served_disk() -> Result<String> {
    super::guest_disk().ok_or_else(|| {
        anyhow::anyhow!(Usage(
            "--kernel: the guest has no disk served by the host (virtio-blk serial fsynclab); is virtio_blk missing from the kernel?".into()
        ))
    })
}

/// In the guest: the filesystem on the disk the host serves, mounted at `dir/mnt` (again, in
/// a power cut's next cycle), its scheduler and limits set as `request` says.
pub fn mount_served(request: &ScratchOptions, dir: &Path, undo: &mut Undo) -> Result<Scratch> {
    let disk = served_disk()?;
    // /sys/block/NAME/size counts 512-byte sectors, whatever the disk's block size.
    let name = disk.trim_start_matches("/dev/");
    let size = crate::kernel::read_trimmed(format!("/sys/block/{name}/size"))
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(0, |sectors| sectors * 512);
    let disk_path = Path::new(&disk);
    let mut made = scratch::mount_on(request, size, dir, disk_path, disk_path, disk.clone(), undo)?;
    made.info.image = format!("{disk} (virtio-blk, served by the host)");
    Ok(made)
}

/// In the guest, once the host has changed the media under the served disk (the power back
/// on after a cut, a new filesystem made): drops what the guest's kernel kept of the disk's
/// blocks (BLKFLSBUF), so that the next mount reads the media as they now are.
pub fn forget_cached_blocks(disk: &str) -> Result<()> {
    use std::os::fd::AsRawFd as _;
    /// BLKFLSBUF, _IO(0x12, 97), from the kernel's uapi linux/fs.h.
    const BLKFLSBUF: libc::c_ulong = 0x1261;
    let file = std::fs::File::open(disk).map_err(|e| anyhow::anyhow!("cannot open {disk}: {e}"))?;
    // SAFETY: BLKFLSBUF takes no argument; the descriptor is open for the call's length.
    if unsafe { libc::ioctl(file.as_raw_fd(), BLKFLSBUF as _, 0) } != 0 {
        anyhow::bail!(
            "cannot drop {disk}'s cached blocks: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// In a guest that emulates its disk itself (a run that drives it: [`crate::environment::VmInfo::disk_in_guest`]):
/// `request` with its scratch directory moved into the guest's own memory (see
/// [`guest_own_dir`]), after loading the loop and FUSE modules the scratch filesystem is
/// made with. The disk is then made as a scratch run's, inside the guest.
pub fn local_in_guest(request: &TestbedRequest) -> Result<TestbedRequest> {
    if request.scratch().is_none() {
        return Ok(request.clone());
    }
    // Built in, or loaded here: a missing one is said by the checks that follow.
    for module in ["loop", "fuse"] {
        let _ = crate::testbed::command::output("modprobe", &[module]);
    }
    Ok(request.backed_by(guest_memory()?))
}

/// A directory of the guest's own memory for its scratch directories: see [`guest_own_dir`].
fn guest_memory() -> Result<PathBuf, Usage> {
    let parents = [PathBuf::from("/run"), std::env::temp_dir()];
    guest_own_dir(&mountinfo::mounts(), &parents).ok_or_else(|| {
        Usage(
            "--kernel: neither the guest's /run nor its /tmp is a tmpfs of its own (one is shared with the host); run fsynclab from another directory".into(),
        )
    })
}

/// The first of `candidates` on a tmpfs: virtme-ng mounts one on the guest's /run and /tmp,
/// but a directory it shares with the host (the current directory, read-write, when that is
/// /tmp) is the host's, and a mount point left there by a guest whose kernel died would
/// stay on the host.
fn guest_own_dir(mounts: &[MountInfo], candidates: &[PathBuf]) -> Option<PathBuf> {
    candidates
        .iter()
        .find(|dir| mountinfo::mount_of(mounts, dir).is_some_and(|m| m.fstype == "tmpfs"))
        .cloned()
}

/// The host's half of a `--kernel` run's scratch filesystem: the filesystem made and its
/// media served (the image, or the emulated disk's FUSE file), for QEMU to give the guest as
/// a virtio-blk disk. Sysctls, the scheduler and dirty limits are the guest's, set there.
pub struct ServedDisk {
    /// Undone when dropped: the FUSE device, the tmpfs, the scratch directory.
    pub prepared: Prepared,
    /// The file QEMU serves; none when the guest emulates its disk itself.
    pub file: Option<PathBuf>,
    /// The filesystem's image under it, and how it was made: for the next filesystem a
    /// power cut's run asks for ([`ServedDisk::remake`]).
    made: Option<(PathBuf, ScratchOptions, u64)>,
}

impl ServedDisk {
    /// Makes a new filesystem on the served media, as the first was made (the image emptied,
    /// then mkfs): a power cut's next cycle, asked for by the guest with the drive's power
    /// off, so that nothing else writes to the media meanwhile.
    pub fn remake(&self) -> impl Fn() -> Result<()> + Send + 'static {
        let made = self.made.clone();
        move || {
            let Some((image, request, size)) = &made else {
                anyhow::bail!("the guest's disk is not served by the host");
            };
            std::fs::File::options()
                .write(true)
                .open(image)
                .and_then(|f| {
                    f.set_len(0)?;
                    f.set_len(*size)
                })
                .map_err(|e| anyhow::anyhow!("cannot empty the image {}: {e}", image.display()))?;
            crate::testbed::mount::mkfs(&request.spec.fstype, image, &request.mkfs_options)
        }
    }
}

/// Makes the filesystem `request`'s scratch options ask for and serves its media (see
/// [`ServedDisk`]); the same checks as [`prepare`] first. Without `media` (the guest makes
/// its disk itself: [`local_in_guest`]) only the scratch directory is made, for the guest's
/// results and console.
pub fn serve_disk(request: &TestbedRequest, space_needed: u64, media: bool) -> Result<ServedDisk> {
    let Some(s) = request.scratch() else {
        return Err(
            Usage("--kernel needs --scratch FS: the guest's run needs a filesystem of its own kernel".into()).into(),
        );
    };
    let size = s.size.unwrap_or_else(|| s.spec.default_size(space_needed));
    // The same tools and room, whichever side makes the disk.
    scratch::check_prerequisites(s, size)?;
    // A failure drops `live`, which undoes what was made in the right order.
    let mut live = Live::new();
    let Live {
        undo, device, switch, ..
    } = &mut live;
    let (dir, file, made) = match media {
        true => serve(s, size, undo, device, switch)
            .map(|(dir, image, file)| (dir, Some(file), Some((image, s.clone(), size))))?,
        false => (scratch::make_dir(&s.backing, undo)?, None, None),
    };
    let prepared = Prepared::new(dir, live, Some(s.device.clone()));
    Ok(ServedDisk { prepared, file, made })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guest's mounts when fsynclab was started in /tmp: virtme-ng's tmpfs on /tmp is
    /// covered by the host's /tmp, shared over virtiofs.
    const SHARED_TMP: &str = "\
20 1 0:20 / / ro,relatime - virtiofs ROOTFS ro
21 20 0:21 / /run rw,relatime - tmpfs run rw,mode=755
22 20 0:22 / /tmp rw,relatime - tmpfs tmpfs rw
23 22 0:23 /tmp /tmp rw,relatime - virtiofs virtme_rw_0 rw
";

    #[test]
    fn the_guest_mount_point_avoids_a_directory_shared_with_the_host() {
        let mounts = mountinfo::parse_mountinfo(SHARED_TMP);
        let tmp_first = [PathBuf::from("/tmp"), PathBuf::from("/run")];
        assert_eq!(guest_own_dir(&mounts, &tmp_first), Some(PathBuf::from("/run")));
        let private = mountinfo::parse_mountinfo(&SHARED_TMP.replace("23 22 0:23 /tmp /tmp", "23 22 0:23 /home /home"));
        assert_eq!(guest_own_dir(&private, &tmp_first), Some(PathBuf::from("/tmp")));
        assert_eq!(guest_own_dir(&mounts, &[PathBuf::from("/tmp")]), None);
    }
}
