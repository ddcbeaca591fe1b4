//! A kernel booted for the run (`--kernel K`): the same fsynclab command runs inside a
//! virtual machine that boots K over the host's own root, and the result comes back to the
//! host.
//!
//! K is `host` (no VM), an installed kernel's release (`/boot/vmlinuz-K` with
//! `/lib/modules/K`), or the path of a bzImage (its release is read from the image's header,
//! its modules from `/lib/modules/RELEASE` when they are there). [`resolve`] checks all of it,
//! and that the kernel can make and mount what a run needs, before anything is made: a one-line
//! error otherwise.
//!
//! The boot path is virtme-ng ([`launch`]): it shares the host's root read-only over 9p
//! (writable where fsynclab asks, `--rwdir`), builds the initramfs a modular kernel needs,
//! and returns the guest command's exit status. The scratch disk is not emulated inside the
//! guest: the host serves it (its image, or the emulated disk's FUSE file) as a virtio-blk
//! disk with `cache=none`, so the disk model runs at the host's speed and a guest's flush
//! reaches it as an fsync. Inside, the guest fsynclab finds that disk by its serial
//! ([`guest_disk`]) and mounts it instead of making a loop device.

use std::path::{Path, PathBuf};

use crate::error::Usage;

mod accelerator;
mod console;
pub mod control;
pub mod disk;
mod launch;
mod qemu_end;
mod script;
mod share;

pub use accelerator::{accelerator, Accelerator};
pub use console::console_last_words;
pub use launch::{check_tools, launch, qemu_killed, why_no_result, Ended, Launch, GUEST_CRASHED};
pub use share::{hidden_in_guest, plain as plain_path};

/// Where a guest writes the results it would record; the host records them.
pub const GUEST_RESULTS_ENV: &str = "FSYNCLAB_GUEST_RESULTS";
/// The QEMU binary virtme-ng runs.
const QEMU: &str = "qemu-system-x86_64";
/// The serial of the virtio-blk disk the host serves to the guest.
pub const DISK_SERIAL: &str = "fsynclab";

/// Where a `--kernel` run's scratch disk is emulated, and who drives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GuestDisk {
    /// The host emulates it and serves it to the guest; the run inside writes to it.
    Served,
    /// The host emulates and serves it, and the run inside drives it (cuts its power, turns
    /// it on again for the recovery, makes the next filesystem) through the control port
    /// ([`control`]): a power cut's run.
    Driven,
    /// The guest emulates it itself, its timing the guest's CPU's: a run that makes disks
    /// of its own (fsync-errors makes a failing disk a row).
    InGuest,
}

/// A kernel to boot, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    /// The kernel image QEMU boots.
    pub image: PathBuf,
    /// Its release (`uname -r` inside).
    pub release: String,
}

/// What `--kernel K` names: `None` for `host` (no VM), else the kernel, checked: the image is
/// there, its modules are, and its configuration has what a run needs.
pub fn resolve(spec: &str) -> Result<Option<Kernel>, Usage> {
    let spec = spec.trim();
    if spec.is_empty() || spec == "host" {
        return Ok(None);
    }
    let (image, release) = if spec.contains('/') || Path::new(spec).is_file() {
        let image = PathBuf::from(spec);
        if let Some(what) = not_an_image(&image) {
            return Err(Usage(format!("--kernel {spec}: {what}")));
        }
        // Absolute: the guest is booted from another directory than this one.
        let image = std::fs::canonicalize(&image).unwrap_or(image);
        let release = bzimage_release(&image).ok_or_else(|| {
            Usage(format!(
                "--kernel {spec}: not an x86 bzImage (no kernel version in its header); give arch/x86/boot/bzImage or an installed release"
            ))
        })?;
        (image, release)
    } else {
        let image = PathBuf::from(format!("/boot/vmlinuz-{spec}"));
        if !image.is_file() {
            return Err(Usage(format!(
                "--kernel {spec}: no /boot/vmlinuz-{spec}; installed: {}; install one with apt-get install linux-image-{spec} (scripts/setup.sh installs a Debian 6.1 kernel), or give a bzImage path",
                installed().join(", ").if_empty("none")
            )));
        }
        if !Path::new("/lib/modules").join(spec).is_dir() {
            return Err(Usage(format!(
                "--kernel {spec}: no /lib/modules/{spec}: its modules are not installed (apt-get install linux-image-{spec})"
            )));
        }
        (image, spec.to_string())
    };
    check_config(spec, &release)?;
    Ok(Some(Kernel { image, release }))
}

/// What `path` is when it is not a file a kernel could be booted from, in words that say
/// what to give instead.
fn not_an_image(path: &Path) -> Option<String> {
    use std::os::unix::fs::FileTypeExt as _;
    let kind = match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some("no such kernel image".into()),
        Err(e) => return Some(format!("cannot be read ({e})")),
        Ok(m) if m.is_file() => return None,
        Ok(m) if m.is_dir() => "a directory",
        Ok(m) if m.file_type().is_char_device() => "a character device",
        Ok(m) if m.file_type().is_block_device() => "a block device",
        Ok(m) if m.file_type().is_fifo() => "a FIFO",
        Ok(_) => "not a regular file",
    };
    Some(format!(
        "that is {kind}, not a kernel image; give a bzImage (arch/x86/boot/bzImage of a kernel tree) or an installed release"
    ))
}

/// The releases of the kernels installed in /boot.
pub fn installed() -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir("/boot")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.strip_prefix("vmlinuz-").map(str::to_string))
        .collect();
    out.sort();
    out
}

trait IfEmpty {
    fn if_empty(self, empty: &str) -> String;
}

impl IfEmpty for String {
    fn if_empty(self, empty: &str) -> String {
        if self.is_empty() {
            empty.to_string()
        } else {
            self
        }
    }
}

/// What a run needs of the kernel: the filesystems a scratch run makes (ext4 at least), the
/// virtio disk it is served on, the virtio-serial ports virtme-ng runs the command through
/// (and a power cut asks the host's disk through), and 9p over virtio, which shares the
/// host's root (fsynclab always asks virtme-ng for 9p: [`launch`]). Each
/// built in (`=y`) or a module (`=m`, loaded from `/lib/modules/RELEASE`).
const NEEDED: &[(&[&str], &str)] = &[
    (&["CONFIG_EXT4_FS"], "ext4"),
    (&["CONFIG_VIRTIO_BLK"], "virtio-blk disks"),
    (&["CONFIG_VIRTIO_PCI"], "virtio PCI devices"),
    (
        &["CONFIG_VIRTIO_CONSOLE"],
        "virtio-serial ports (virtme-ng's script I/O, a power cut's control port)",
    ),
    (&["CONFIG_9P_FS"], "9p, to share the host's root"),
    (&["CONFIG_NET_9P_VIRTIO"], "9p over virtio, to share the host's root"),
];

/// Refuses a kernel whose configuration (`/boot/config-RELEASE`, or the `build/.config` of its
/// modules) lacks what [`NEEDED`] lists; a kernel whose configuration cannot be found is
/// booted as it is.
fn check_config(spec: &str, release: &str) -> Result<(), Usage> {
    let candidates = [
        PathBuf::from(format!("/boot/config-{release}")),
        Path::new("/lib/modules").join(release).join("build/.config"),
    ];
    let Some(config) = candidates.iter().find_map(|p| std::fs::read_to_string(p).ok()) else {
        return Ok(());
    };
    let has_modules = Path::new("/lib/modules").join(release).is_dir();
    match lacking(&config, has_modules) {
        Some((options, what)) => Err(Usage(format!(
            "--kernel {spec}: its configuration lacks {what} ({} =y, or =m with its modules in /lib/modules/{release})",
            options.join(" or ")
        ))),
        None => Ok(()),
    }
}

/// The first of [`NEEDED`] that `config` has neither built in nor as a module it can load.
fn lacking(config: &str, has_modules: bool) -> Option<(&'static [&'static str], &'static str)> {
    NEEDED.iter().copied().find(|(options, _)| {
        !options.iter().any(|o| match crate::kernel::config::value(config, o) {
            Some("y") => true,
            Some("m") => has_modules,
            _ => false,
        })
    })
}

/// The release in an x86 bzImage's header: the setup header ("HdrS" at 0x202) points, at
/// 0x20e, to the version string (`6.1.0-56-amd64 (debian-kernel@...) #1 SMP ...`) 0x200
/// bytes further (Documentation/arch/x86/boot.rst, `kernel_version`).
pub fn bzimage_release(image: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut head = vec![0u8; 64 * 1024];
    let mut file = std::fs::File::open(image).ok()?;
    let n = file.read(&mut head).ok()?;
    head.truncate(n);
    if head.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let offset = u16::from_le_bytes([*head.get(0x20e)?, *head.get(0x20f)?]) as usize + 0x200;
    let text = head.get(offset..)?;
    let end = text.iter().position(|&b| b == 0 || b == b' ')?;
    let release = std::str::from_utf8(&text[..end]).ok()?;
    (!release.is_empty()).then(|| release.to_string())
}

/// Inside a guest: the virtio-blk disk the host serves (`/dev/vdX` whose serial is
/// [`DISK_SERIAL`]).
pub fn guest_disk() -> Option<String> {
    let entries = std::fs::read_dir("/sys/block").ok()?;
    entries.flatten().find_map(|e| {
        let name = e.file_name().to_str()?.to_string();
        let serial = std::fs::read_to_string(e.path().join("serial")).ok()?;
        (serial.trim() == DISK_SERIAL).then(|| format!("/dev/{name}"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_no_kernel_and_a_missing_release_is_refused_in_one_line() {
        assert!(matches!(resolve("host"), Ok(None)));
        let err = resolve("0.0.0-none").unwrap_err().0;
        assert!(
            err.starts_with("--kernel 0.0.0-none: no /boot/vmlinuz-0.0.0-none"),
            "{err}"
        );
        assert!(!err.contains('\n'));
        let err = resolve("/nonexistent/bzImage").unwrap_err().0;
        assert!(err.contains("no such kernel image"), "{err}");
    }

    /// A path that exists but is no file is said for what it is, not "no such kernel image".
    #[test]
    fn a_directory_or_a_device_as_kernel_is_named_for_what_it_is() {
        let err = resolve("/dev/null").unwrap_err().0;
        assert!(
            err.starts_with("--kernel /dev/null: that is a character device, not a kernel image"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let spec = dir.path().to_str().unwrap();
        let err = resolve(spec).unwrap_err().0;
        assert!(err.contains("that is a directory, not a kernel image"), "{err}");
        assert!(!err.contains('\n'));
    }

    /// A kernel without virtio_console has no port for virtme-ng's script nor for a power
    /// cut's requests: refused before it boots, naming the option.
    #[test]
    fn a_kernel_without_virtio_serial_ports_is_refused_naming_them() {
        let full =
            "CONFIG_EXT4_FS=y\nCONFIG_VIRTIO_BLK=m\nCONFIG_VIRTIO_PCI=y\nCONFIG_VIRTIO_CONSOLE=m\nCONFIG_9P_FS=m\nCONFIG_NET_9P_VIRTIO=m\n";
        assert_eq!(lacking(full, true), None);
        let (options, what) = lacking(full, false).unwrap();
        assert_eq!(options, ["CONFIG_VIRTIO_BLK"], "{what}");
        let without = full.replace("CONFIG_VIRTIO_CONSOLE=m\n", "# CONFIG_VIRTIO_CONSOLE is not set\n");
        let (options, what) = lacking(&without, true).unwrap();
        assert_eq!(options, ["CONFIG_VIRTIO_CONSOLE"]);
        assert!(what.contains("power cut"), "{what}");
    }

    /// A kernel that could share the host's root over virtiofs but not over 9p: refused,
    /// since fsynclab boots every guest with 9p (virtme-ng's `--force-9p`).
    #[test]
    fn a_kernel_without_9p_over_virtio_is_refused_even_with_virtiofs() {
        let full = "CONFIG_EXT4_FS=y\nCONFIG_VIRTIO_BLK=y\nCONFIG_VIRTIO_PCI=y\nCONFIG_VIRTIO_CONSOLE=y\n\
                    CONFIG_9P_FS=y\nCONFIG_NET_9P_VIRTIO=y\nCONFIG_VIRTIO_FS=y\n";
        assert_eq!(lacking(full, false), None);
        let virtiofs_only = full.replace("CONFIG_NET_9P_VIRTIO=y\n", "");
        let (options, what) = lacking(&virtiofs_only, false).unwrap();
        assert_eq!(options, ["CONFIG_NET_9P_VIRTIO"]);
        assert!(what.contains("9p"), "{what}");
    }
}
