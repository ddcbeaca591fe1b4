//! mkfs, mount and unmount. mkfs runs on the image file before it is attached (faster, and
//! no discard requests through the emulated device); `mount` and `umount` are the commands.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};

use super::command;
use crate::kernel::process;

/// Makes a filesystem of type `fstype` on `target` (a file or device) with extra `opts`.
/// ext4 gets its inode tables and journal written now (`lazy_itable_init=0`), so no
/// background initialisation adds writes and flushes to the measurement.
pub fn mkfs(fstype: &str, target: &Path, opts: &[String]) -> Result<()> {
    let target = target.to_str().context("image path is not UTF-8")?;
    let mut args: Vec<&str> = match fstype {
        "ext2" | "ext3" | "ext4" => vec!["-F", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0"],
        "xfs" => vec!["-f", "-q"],
        "btrfs" => vec!["-f", "-q"],
        _ => vec![],
    };
    args.extend(opts.iter().map(String::as_str));
    args.push(target);
    let tool = format!("mkfs.{fstype}");
    // mkfs.btrfs refuses to run while it cannot tell whether its target is mounted: it looks at
    // every loop device's backing file, and one that lives on a FUSE mount whose daemon is gone
    // (another run's emulated disk, in the middle of its teardown) answers ENOTCONN. Another
    // fsynclab may be at that moment beside this one: wait for it to pass, then name the mount.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match command::run(&tool, &args) {
            Ok(_) => return Ok(()),
            Err(e) if format!("{e:#}").contains("cannot check mount status") => {
                if Instant::now() >= deadline {
                    let dead = dead_fuse_mounts();
                    if dead.is_empty() {
                        return Err(e);
                    }
                    return Err(e.context(format!(
                        "a FUSE mount whose daemon is gone is in the way: {}; `fsynclab cleanup` \
                         removes fsynclab's own, `umount -l PATH` another's",
                        dead.join(", ")
                    )));
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(e) => return Err(e),
        }
    }
}

/// FUSE mounts of this machine whose daemon is gone (their root answers ENOTCONN).
fn dead_fuse_mounts() -> Vec<String> {
    crate::kernel::mountinfo::mounts()
        .into_iter()
        .filter(|m| m.fstype.starts_with("fuse"))
        .filter(|m| {
            std::fs::metadata(&m.mount_point)
                .err()
                .is_some_and(|e| e.raw_os_error() == Some(libc::ENOTCONN))
        })
        .map(|m| m.mount_point)
        .collect()
}

/// Mounts `source` of type `fstype` at `mount_point` with `options` (may be empty).
pub fn mount(fstype: &str, source: &str, mount_point: &Path, options: &str) -> Result<()> {
    let mp = mount_point.to_str().context("mount point is not UTF-8")?;
    let mut args = vec!["-t", fstype];
    if !options.is_empty() {
        args.extend(["-o", options]);
    }
    args.extend([source, mp]);
    // A loop device just reattached may still be settling (udev probing it): retry once.
    command::run("mount", &args).map(|_| ()).or_else(|first| {
        std::thread::sleep(std::time::Duration::from_millis(200));
        command::run("mount", &args).map(|_| ()).map_err(|_| first)
    })
}

/// Whether something is mounted exactly at `path`.
pub fn is_mount_point(path: &Path) -> bool {
    crate::kernel::mounts()
        .iter()
        .any(|m| Path::new(&m.mount_point) == path)
}

/// Returns `dir` if no filesystem is mounted inside it, so that removing it cannot reach
/// into a mount that failed to come off; else an error naming the mount.
pub fn nothing_mounted_under(dir: &Path) -> Result<&Path> {
    match crate::kernel::mounts()
        .into_iter()
        .find(|m| Path::new(&m.mount_point).starts_with(dir))
    {
        Some(m) => anyhow::bail!("{} is still mounted", m.mount_point),
        None => Ok(dir),
    }
}

/// How long an unmount is retried while the mount is busy: a process that is just exiting,
/// or udev probing the device, lets go within this; a shell sitting in the directory does not.
const BUSY_RETRY: Duration = Duration::from_secs(2);

/// Unmounts `mount_point` and checks that it is gone; not mounted is not an error. Never
/// lazily (MNT_DETACH): a lazy unmount only hides a busy mount, which then keeps its loop
/// device and image alive where nobody sees them. A mount still busy after [`BUSY_RETRY`]
/// is an error that names who holds it.
pub fn unmount(mount_point: &Path) -> Result<()> {
    if !is_mount_point(mount_point) {
        return Ok(());
    }
    let mp = mount_point.to_str().context("mount point is not UTF-8")?;
    let deadline = Instant::now() + BUSY_RETRY;
    loop {
        let outcome = command::run("umount", &[mp]);
        if !is_mount_point(mount_point) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            let why = match outcome {
                Err(e) if !e.to_string().contains("busy") => format!("{e:#}"),
                _ => busy_because(mount_point),
            };
            anyhow::bail!("{why}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Why `dir` is busy, as far as /proc tells.
fn busy_because(dir: &Path) -> String {
    let users = users_of(dir);
    if users.is_empty() {
        "busy, though no process has a file or directory there (a loop device or a bind mount may hold it)".into()
    } else {
        format!("busy: {}", users.join(", "))
    }
}

/// The processes using something inside `dir`: their working directory, root directory or
/// an open file is there (`/proc/PID/cwd`, `root`, `fd/*`; Documentation/filesystems/proc.rst).
/// At most five, as `pid 12 (bash) has its working directory there`.
pub fn users_of(dir: &Path) -> Vec<String> {
    let inside = |link: &Path| std::fs::read_link(link).is_ok_and(|target| target.starts_with(dir));
    let mut users = Vec::new();
    for pid in process::pids() {
        let proc_dir = PathBuf::from(format!("/proc/{pid}"));
        let how = if inside(&proc_dir.join("cwd")) {
            "has its working directory there"
        } else if inside(&proc_dir.join("root")) {
            "has its root directory there"
        } else if std::fs::read_dir(proc_dir.join("fd"))
            .is_ok_and(|fds| fds.filter_map(|f| f.ok()).any(|f| inside(&f.path())))
        {
            "has a file open there"
        } else {
            continue;
        };
        let comm = process::comm(pid).unwrap_or_default();
        users.push(format!("pid {pid} ({comm}) {how}"));
        if users.len() == 5 {
            break;
        }
    }
    users
}

/// Where block `device` (`/dev/loop3`) is mounted, if anywhere.
pub fn mount_point_of_device(device: &str) -> Option<String> {
    crate::kernel::mounts()
        .into_iter()
        .find(|m| m.source == device)
        .map(|m| m.mount_point)
}
