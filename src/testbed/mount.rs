//! mkfs, mount and unmount. mkfs runs on the image file before it is attached (faster, and
//! no discard requests through the emulated device); `mount` and `umount` are the commands.

use std::path::Path;

use anyhow::{Context as _, Result};

use super::command;

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
    command::run(&format!("mkfs.{fstype}"), &args).map(|_| ())
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
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    crate::environment::parse_mountinfo(&text)
        .iter()
        .any(|m| Path::new(&m.mount_point) == path)
}

/// Returns `dir` if no filesystem is mounted inside it, so that removing it cannot reach
/// into a mount that failed to come off; else an error naming the mount.
pub fn nothing_mounted_under(dir: &Path) -> Result<&Path> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    match crate::environment::parse_mountinfo(&text)
        .into_iter()
        .find(|m| Path::new(&m.mount_point).starts_with(dir))
    {
        Some(m) => anyhow::bail!("{} is still mounted", m.mount_point),
        None => Ok(dir),
    }
}

/// Unmounts `mount_point`; not mounted is not an error. Falls back to a lazy unmount
/// (MNT_DETACH) when busy, so that cleanup never stops halfway.
pub fn unmount(mount_point: &Path) -> Result<()> {
    if !is_mount_point(mount_point) {
        return Ok(());
    }
    let mp = mount_point.to_str().context("mount point is not UTF-8")?;
    match command::run("umount", &[mp]) {
        Ok(_) => Ok(()),
        Err(first) => command::run("umount", &["-l", mp]).map(|_| ()).map_err(|_| first),
    }
}
