//! Scratch filesystems (`--scratch FS[:MOUNT_OPTIONS]`): a filesystem made for one run on a
//! loop device, and removed afterwards.
//!
//! Lifecycle, each step recorded on the undo stack ([`super::state::Undo`]) just before it
//! is done: private directory → (tmpfs for `--device ram` and the emulated disks' media) →
//! sparse image file → mkfs → (FUSE emulated device) → loop device → scheduler and its
//! tunables → per-device dirty limits (`--bdi`) → mount. Undone in reverse: unmount, dirty
//! limits and scheduler back, detach, FUSE unmount, directory removed.

use std::path::{Path, PathBuf};

use anyhow::Result;

use super::command::find_tool;
use super::device::fuse::{EmulatedDevice, IMAGE_NAME};
use super::device::DeviceProfile;
use super::loopdev::SchedulerSpec;
use super::request::ScratchOptions;
use super::state::{Step, Undo};
use super::{bdi, loopdev, mount, names};
use crate::environment::ScratchInfo;
use crate::error::Usage;
use crate::sys;
use crate::units::{human_size, Bytes};

pub use super::scratch_spec::{ScratchSpec, DEFAULT_MIN_SIZE, FILESYSTEMS};

/// Refuses, in one line saying how to get it, what the machine lacks for `request`.
/// `size` is the image's size, decided ([`ScratchOptions::size`] or the scenario's need).
pub fn check_prerequisites(request: &ScratchOptions, size: u64) -> Result<(), Usage> {
    if !sys::is_root() {
        return Err(Usage(
            "--scratch needs root (loop devices, mkfs, mount): run fsynclab as root, e.g. with sudo".into(),
        ));
    }
    if let Some(missing) = missing_tool(&request.spec.fstype, |t| find_tool(t).is_some()) {
        return Err(Usage(missing));
    }
    if request.device.is_emulated() && !Path::new("/dev/fuse").exists() {
        return Err(Usage(
            "--device: emulated disks need FUSE and /dev/fuse is missing; load it with `modprobe fuse`".into(),
        ));
    }
    let backing = &request.backing;
    if !backing.is_dir() {
        return Err(Usage(format!(
            "--backing {}: no such directory; create it or choose another",
            backing.display()
        )));
    }
    // The emulated disks keep their media in memory too (see `device::fuse`).
    if request.device == DeviceProfile::Ram || request.device.is_emulated() {
        let available = crate::kernel::Meminfo::read()
            .and_then(|m| m.available_bytes)
            .unwrap_or(u64::MAX);
        if size > available / 2 {
            let what = match &request.device {
                DeviceProfile::Emulated(p) => format!("{} (an emulated disk keeps its media in memory)", p.name),
                _ => "ram".to_string(),
            };
            return Err(Usage(format!(
                "--device {what}: the {} image would take more than half of the {} of memory available; lower --scratch-size or use --device host",
                human_size(size),
                human_size(available)
            )));
        }
    } else {
        let space = sys::fs_space(backing).map_err(|e| {
            Usage(format!(
                "--backing {}: cannot read its free space ({e})",
                backing.display()
            ))
        })?;
        if space.available < size {
            return Err(Usage(format!(
                "--backing {}: {} free, the scratch image needs {}; lower --scratch-size or choose another --backing",
                backing.display(),
                human_size(space.available),
                human_size(size)
            )));
        }
    }
    Ok(())
}

/// The first tool `--scratch FSTYPE` needs that `installed` says is missing, as the one-line
/// message saying which Debian package brings it.
pub fn missing_tool(fstype: &str, installed: impl Fn(&str) -> bool) -> Option<String> {
    let package = FILESYSTEMS.iter().find(|f| f.0 == fstype).map_or("e2fsprogs", |f| f.1);
    let mkfs = format!("mkfs.{fstype}");
    let missing = [
        (mkfs.as_str(), package),
        ("losetup", "mount"),
        ("mount", "mount"),
        ("umount", "mount"),
    ]
    .into_iter()
    .find(|(tool, _)| !installed(tool))
    .map(|(tool, pkg)| format!("--scratch {fstype}: {tool} is not installed; install it with `apt-get install {pkg}`"));
    missing
}

/// A provisioned scratch filesystem: what the run needs to know about it.
pub struct Scratch {
    pub mount_point: PathBuf,
    pub info: ScratchInfo,
}

/// Provisions `request` on an image of `size` bytes, recording every step on `undo` before doing it; `device` receives
/// the emulated device (which must outlive the undo of the loop device: the caller drops it
/// last) and `switch` its dead man's switch ([`super::deadman`]).
pub fn provision(
    request: &ScratchOptions,
    size: u64,
    undo: &mut Undo,
    device: &mut Option<EmulatedDevice>,
    switch: &mut Option<super::deadman::Switch>,
) -> Result<Scratch> {
    let (dir, image) = make_image(request, size, undo)?;
    bring_up(request, size, &dir, &image, undo, device, switch)
}

/// A run's scratch directory, new, under `backing`; recorded on `undo`.
pub(crate) fn make_dir(backing: &Path, undo: &mut Undo) -> Result<PathBuf> {
    let backing = std::fs::canonicalize(backing)?;
    let dir = backing.join(names::scratch_dir_name());
    undo.perform(Step::Directory { path: dir.clone() }, || {
        std::fs::create_dir(&dir).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))
    })?;
    Ok(dir)
}

/// The scratch directory of a run (under `--backing`: everything of the run lives in it)
/// and an image of `size` bytes in it, on a private tmpfs for `ram` and for the emulated
/// disks' media; each step recorded on `undo`. Returns the directory and the image. A
/// scratch run and a `--kernel` run's served disk ([`super::vm::disk`]) both start here.
pub(crate) fn make_image(request: &ScratchOptions, size: u64, undo: &mut Undo) -> Result<(PathBuf, PathBuf)> {
    let dir = make_dir(&request.backing, undo)?;
    let image_dir = if request.device == DeviceProfile::Ram || request.device.is_emulated() {
        let ram = dir.join(names::RAM_DIR);
        std::fs::create_dir(&ram)?;
        let size = format!("size={}", size + 16 * Bytes::MIB);
        undo.perform(
            Step::Tmpfs {
                mount_point: ram.clone(),
            },
            || mount::mount("tmpfs", "fsynclab-ram", &ram, &size),
        )?;
        ram
    } else {
        dir.clone()
    };
    let image = image_dir.join(names::IMAGE_FILE);
    std::fs::File::create(&image)
        .and_then(|f| f.set_len(size))
        .map_err(|e| anyhow::anyhow!("cannot create the image {}: {e}", image.display()))?;
    Ok((dir, image))
}

/// Makes the filesystem on `image` (in the scratch directory `dir`) and mounts it at
/// `dir/mnt` through the emulated device, loop device and scheduler `request` names, each
/// step recorded on `undo`. Done once per run, and again for each power-cut cycle after the
/// first (see [`super::power`]).
pub(crate) fn bring_up(
    request: &ScratchOptions,
    size: u64,
    dir: &Path,
    image: &Path,
    undo: &mut Undo,
    device: &mut Option<EmulatedDevice>,
    switch: &mut Option<super::deadman::Switch>,
) -> Result<Scratch> {
    let loop_target = make_media(request, dir, image, undo, device, switch)?;
    // Recorded by its image before losetup picks the device, then amended with its name.
    let loop_device = undo.perform(
        Step::Loop {
            device: String::new(),
            image: Some(loop_target.clone()),
        },
        || loopdev::attach(&loop_target, request.device.is_emulated()),
    )?;
    undo.amend_last(Step::Loop {
        device: loop_device.clone(),
        image: Some(loop_target.clone()),
    })?;
    mount_on(request, size, dir, image, &loop_target, loop_device, undo)
}

/// The scratch filesystem's media: the filesystem made on `image`, and the emulated device
/// serving it (under `dir/dev`) when `request` names one. Returns the file that holds the
/// media as a disk would: the device's FUSE file, or the image itself.
pub(crate) fn make_media(
    request: &ScratchOptions,
    dir: &Path,
    image: &Path,
    undo: &mut Undo,
    device: &mut Option<EmulatedDevice>,
    switch: &mut Option<super::deadman::Switch>,
) -> Result<PathBuf> {
    // With options of the user's, a failing mkfs is refused input (exit 2), as mount
    // options the kernel refuses are.
    mount::mkfs(&request.spec.fstype, image, &request.mkfs_options).map_err(|e| {
        if request.mkfs_options.is_empty() {
            e
        } else {
            anyhow::anyhow!(Usage(format!(
                "--mkfs-opts \"{}\": mkfs.{} refused them ({e:#})",
                request.mkfs_options.join(" "),
                request.spec.fstype
            )))
        }
    })?;

    // The emulated device serving the image.
    Ok(match &request.device {
        DeviceProfile::Emulated(profile) => {
            let dev_dir = dir.join(names::DEVICE_DIR);
            std::fs::create_dir_all(&dev_dir)?;
            *device = Some(undo.perform(
                Step::Fuse {
                    mount_point: dev_dir.clone(),
                },
                || EmulatedDevice::mount(image, &dev_dir, profile),
            )?);
            *switch = Some(super::deadman::arm(&dev_dir)?);
            dev_dir.join(IMAGE_NAME)
        }
        _ => image.to_path_buf(),
    })
}

/// Mounts the scratch filesystem at `dir/mnt` from the block device `loop_device` (a loop
/// device over `loop_target`, or a guest's virtio disk), its rotational flag, scheduler and
/// dirty limits set as `request` says, each step recorded on `undo`.
pub(crate) fn mount_on(
    request: &ScratchOptions,
    size: u64,
    dir: &Path,
    image: &Path,
    loop_target: &Path,
    loop_device: String,
    undo: &mut Undo,
) -> Result<Scratch> {
    let loop_target = loop_target.to_path_buf();
    if let DeviceProfile::Emulated(profile) = &request.device {
        let previous = loopdev::rotational(&loop_device)?;
        if previous != profile.rotational() {
            undo.perform(
                Step::Rotational {
                    device: loop_device.clone(),
                    previous,
                    image: Some(loop_target.clone()),
                },
                || loopdev::set_rotational(&loop_device, profile.rotational()),
            )?;
        }
    }

    let scheduler_tunables = match &request.scheduler {
        Some(spec) => set_scheduler(&loop_device, spec, &loop_target, undo)?,
        None => Default::default(),
    };

    let bdi = match &request.bdi {
        Some(spec) => set_bdi(&loop_device, spec, &loop_target, undo)?,
        None => Default::default(),
    };

    let mount_point = dir.join(names::MOUNT_DIR);
    std::fs::create_dir_all(&mount_point)?;
    undo.perform(
        Step::Mount {
            mount_point: mount_point.clone(),
        },
        || {
            mount::mount(
                &request.spec.fstype,
                &loop_device,
                &mount_point,
                &request.spec.mount_options,
            )
        },
    )
    .map_err(|e| {
        if let DeviceProfile::Emulated(p) = &request.device {
            if !p.figures.faults.is_empty() {
                return anyhow::anyhow!(Usage(format!(
                    "--device {}: mount failed with the fail= rules in force from the device's start ({e:#}); \
                     let mount through with after=N or after=DURATION",
                    p.name
                )));
            }
        }
        if request.spec.mount_options.is_empty() {
            e
        } else {
            anyhow::anyhow!(Usage(format!(
                "--scratch {}:{}: the kernel refused these mount options ({e:#})",
                request.spec.fstype, request.spec.mount_options
            )))
        }
    })?;

    Ok(Scratch {
        mount_point,
        info: ScratchInfo {
            fstype: request.spec.fstype.clone(),
            mount_options: request.spec.mount_options.clone(),
            mkfs_options: request.mkfs_options.join(" "),
            size_bytes: size,
            image: image.display().to_string(),
            loop_device,
            scheduler: request.scheduler.as_ref().map(|s| s.name.clone()),
            scheduler_tunables,
            bdi,
            ..Default::default()
        },
    })
}

/// Sets `spec`'s knobs of `device`'s bdi in the order given, pushing for each the file that
/// undoes it with its value now (once per file: two knobs of one file are undone by its
/// first value). Returns every knob as read back.
fn set_bdi(
    device: &str,
    spec: &super::bdi::BdiSpec,
    image: &Path,
    undo: &mut Undo,
) -> Result<std::collections::BTreeMap<String, u64>> {
    let mut saved: Vec<&str> = Vec::new();
    for (knob, value) in &spec.knobs {
        let file = bdi::restore_file(knob);
        if saved.contains(&file) {
            bdi::write(device, knob, *value)?;
            continue;
        }
        let previous = bdi::read(device, file)?;
        undo.perform(
            Step::Bdi {
                device: device.to_string(),
                file: file.to_string(),
                previous,
                image: Some(image.to_path_buf()),
            },
            || bdi::write(device, knob, *value),
        )?;
        saved.push(file);
    }
    Ok(bdi::read_all(device))
}

/// Selects `spec`'s scheduler on `device` and sets its tunables, pushing what undoes it:
/// switching back discards the tuned scheduler instance. When the scheduler asked for is
/// already active, it is switched to `none` and back first, so that the tunables apply to a
/// fresh instance that the undo discards too. Returns the tunables as read back.
fn set_scheduler(
    device: &str,
    spec: &SchedulerSpec,
    image: &Path,
    undo: &mut Undo,
) -> Result<std::collections::BTreeMap<String, String>> {
    let (previous, _) = loopdev::scheduler(device)?;
    let previous = previous.unwrap_or_else(|| "none".into());
    let wanted = &spec.name;
    let refused = |e: anyhow::Error| anyhow::anyhow!(Usage(format!("--scheduler {wanted}: {e:#}")));
    let step = |previous: String| Step::Scheduler {
        device: device.to_string(),
        previous,
        image: Some(image.to_path_buf()),
    };
    if previous == *wanted && !spec.tunables.is_empty() {
        // Through `none`, so that undoing restores the scheduler's own defaults too.
        undo.perform(step(previous.clone()), || {
            loopdev::set_scheduler(device, "none").map_err(refused)
        })?;
        undo.perform(step("none".into()), || {
            loopdev::set_scheduler(device, wanted).map_err(refused)
        })?;
    } else {
        undo.perform(step(previous), || {
            loopdev::set_scheduler(device, wanted).map_err(refused)
        })?;
    }
    let shown = spec.to_string();
    for (name, value) in &spec.tunables {
        loopdev::set_tunable(device, &shown, name, value)?;
    }
    let set: std::collections::BTreeMap<String, String> = loopdev::tunables(device)?
        .into_iter()
        .filter(|(n, _)| spec.tunables.iter().any(|(k, _)| k == n))
        .collect();
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_fs_and_mount_options() {
        let s = ScratchSpec::parse("ext4:nobarrier,commit=5").unwrap();
        assert_eq!(s.fstype, "ext4");
        assert_eq!(s.mount_options, "nobarrier,commit=5");
        assert_eq!(ScratchSpec::parse("xfs").unwrap().mount_options, "");
        let err = ScratchSpec::parse("zfs:foo").unwrap_err().to_string();
        assert!(
            err.contains("unknown filesystem 'zfs'; valid: ext2, ext3, ext4, xfs, btrfs"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_mkfs_names_its_package() {
        let msg = missing_tool("xfs", |t| t != "mkfs.xfs").unwrap();
        assert_eq!(
            msg,
            "--scratch xfs: mkfs.xfs is not installed; install it with `apt-get install xfsprogs`"
        );
        assert!(missing_tool("btrfs", |t| t != "mkfs.btrfs")
            .unwrap()
            .contains("btrfs-progs"));
        assert!(missing_tool("ext4", |t| t != "losetup")
            .unwrap()
            .contains("apt-get install mount"));
        assert_eq!(missing_tool("ext4", |_| true), None);
    }

    #[test]
    fn default_size_covers_the_scenario_with_a_floor() {
        let ext4 = ScratchSpec::parse("ext4").unwrap();
        assert_eq!(ext4.default_size(0), Bytes::GIB);
        let big = ext4.default_size(4 * Bytes::GIB);
        assert!(big >= 5 * Bytes::GIB && big % Bytes::MIB == 0, "{big}");
    }
}
