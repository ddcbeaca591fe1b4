//! Loop devices through `losetup`, and the I/O scheduler of a block device through sysfs
//! (`/sys/block/NAME/queue/scheduler`, Documentation/ABI/stable/sysfs-block).

use std::path::Path;

use anyhow::{Context as _, Result};

use super::command;

/// Attaches `image` to a free loop device with buffered I/O (`--direct-io=off`: the loop
/// driver then turns a cache flush into an fsync of the image file) and returns its path.
pub fn attach(image: &Path) -> Result<String> {
    let image = image.to_str().context("image path is not UTF-8")?;
    // Two processes may pick the same free device at once; the loser gets EBUSY and retries.
    let mut attempt = 0;
    let out = loop {
        match command::run("losetup", &["--find", "--show", "--direct-io=off", image]) {
            Err(e) if attempt < 5 && e.to_string().contains("busy") => {
                attempt += 1;
                std::thread::sleep(std::time::Duration::from_millis(50 * attempt));
            }
            r => break r?,
        }
    };
    let device = out.trim().to_string();
    if !device.starts_with("/dev/loop") {
        anyhow::bail!("losetup printed no loop device for {image}: {device:?}");
    }
    Ok(device)
}

/// The file behind loop `device` as the kernel shows it (with ` (deleted)` once removed),
/// or None when the device is not attached.
pub fn backing_file(device: &str) -> Option<String> {
    std::fs::read_to_string(format!("{}/loop/backing_file", sysfs_dir(device)))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Whether loop `device` is attached to exactly `image` (the kernel adds ` (deleted)` once
/// the file is removed).
fn attached_to(device: &str, image: &Path) -> bool {
    let image = image.to_string_lossy();
    backing_file(device).is_some_and(|file| file == image || file == format!("{image} (deleted)"))
}

/// The loop devices attached to `image`, as `/dev/loopN`.
pub fn devices_backed_by(image: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/sys/block") else {
        return Vec::new();
    };
    let mut devices: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|name| name.starts_with("loop"))
        .map(|name| format!("/dev/{name}"))
        .filter(|device| attached_to(device, image))
        .collect();
    devices.sort();
    devices
}

/// Detaches every loop device attached to `image`, and waits until the kernel has let go (a
/// device that someone still holds open, udev probing it for instance, detaches on its last
/// close). Devices attached to other files are left alone, so a device reused since by
/// someone else is safe. A device still mounted is an error naming the mount: `losetup -d`
/// would only mark it to go away later, out of sight.
pub fn detach(image: &Path) -> Result<()> {
    for device in devices_backed_by(image) {
        if let Some(mount_point) = super::mount::mount_point_of_device(&device) {
            anyhow::bail!("{device} is still mounted at {mount_point}");
        }
        command::run("losetup", &["-d", &device])?;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while attached_to(&device, image) {
            if std::time::Instant::now() > deadline {
                anyhow::bail!("{device} is still attached 10 s after losetup -d: something holds it open");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    Ok(())
}

/// `/sys/block/loop3` for `/dev/loop3`.
fn sysfs_dir(device: &str) -> String {
    format!("/sys/block/{}", device.trim_start_matches("/dev/"))
}

/// The active scheduler of `device`, and all it offers.
pub fn scheduler(device: &str) -> Result<(Option<String>, Vec<String>)> {
    let path = format!("{}/queue/scheduler", sysfs_dir(device));
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    Ok(crate::environment::parse_scheduler(text.trim()))
}

/// Selects the I/O scheduler of `device`; the error names those it offers.
pub fn set_scheduler(device: &str, name: &str) -> Result<()> {
    let path = format!("{}/queue/scheduler", sysfs_dir(device));
    if std::fs::write(&path, name).is_err() {
        let offered = scheduler(device).map(|(_, all)| all.join(", ")).unwrap_or_default();
        anyhow::bail!("{device} does not offer scheduler {name} (it offers: {offered})");
    }
    Ok(())
}

/// Whether `device` is marked rotational (`queue/rotational`).
pub fn rotational(device: &str) -> Result<bool> {
    let path = format!("{}/queue/rotational", sysfs_dir(device));
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    Ok(text.trim() == "1")
}

/// Marks `device` rotational or not.
pub fn set_rotational(device: &str, rotational: bool) -> Result<()> {
    let path = format!("{}/queue/rotational", sysfs_dir(device));
    std::fs::write(&path, if rotational { "1" } else { "0" }).with_context(|| format!("cannot write {path}"))
}

/// Flush requests completed on `device` since it was set up: field 16 of
/// `/sys/block/NAME/stat` (Documentation/block/stat.rst; the first 15 fields are read,
/// write, in-flight and discard counters, ignored here).
pub fn flushes_completed(device: &str) -> Result<u64> {
    let path = format!("{}/stat", sysfs_dir(device));
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    parse_flushes(&text).with_context(|| format!("{path}: no flush counter (kernel before 5.5?)"))
}

fn parse_flushes(stat: &str) -> Option<u64> {
    stat.split_whitespace().nth(15)?.parse().ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn flush_counter_is_the_sixteenth_field() {
        let stat = "  100 0 800 5 200 0 1600 9 0 12 14 0 0 0 0 42 77\n";
        assert_eq!(super::parse_flushes(stat), Some(42));
        assert_eq!(super::parse_flushes("1 2 3"), None);
    }
}
