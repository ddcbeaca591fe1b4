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

/// Detaches a loop device; one already gone is not an error.
pub fn detach(device: &str) -> Result<()> {
    if !Path::new(&sysfs_dir(device)).join("loop").exists() {
        return Ok(());
    }
    command::run("losetup", &["-d", device]).map(|_| ())
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
