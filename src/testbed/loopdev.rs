//! Loop devices through `losetup`, and the I/O scheduler of a block device and its tunables
//! through sysfs (`/sys/block/NAME/queue/scheduler` and `queue/iosched/`,
//! Documentation/ABI/stable/sysfs-block, Documentation/block/{bfq,deadline,kyber}-iosched.rst).

use std::path::Path;

use anyhow::{Context as _, Result};

use super::command;

/// Attaches `image` to a free loop device and returns its path. Either way the loop driver
/// turns a cache flush into an fsync of the image file. Buffered I/O (`direct_io` false)
/// suits an image on the host or on tmpfs; direct I/O suits the emulated disk's FUSE image:
/// each block request then reaches the daemon whole, without a copy in the FUSE file's page
/// cache, and several at once.
pub fn attach(image: &Path, direct_io: bool) -> Result<String> {
    let image = image.to_str().context("image path is not UTF-8")?;
    let dio = if direct_io { "--direct-io=on" } else { "--direct-io=off" };
    // Two processes may pick the same free device at once; the loser gets EBUSY and retries.
    let mut attempt = 0;
    let out = loop {
        match command::run("losetup", &["--find", "--show", dio, image]) {
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
    crate::kernel::read_trimmed(format!("{}/loop/backing_file", sysfs_dir(device)))
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
    Ok(crate::kernel::block::parse_scheduler(&text))
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

/// The schedulers the kernel has: what `--scheduler` accepts.
pub const SCHEDULERS: [&str; 4] = ["none", "mq-deadline", "bfq", "kyber"];

/// `--scheduler NAME[:TUNABLE=VALUE,...]` as typed, checked for its form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedulerSpec {
    pub name: String,
    pub tunables: Vec<(String, String)>,
}

impl SchedulerSpec {
    pub fn parse(text: &str) -> Result<SchedulerSpec, crate::error::Usage> {
        let bad = |why: String| {
            crate::error::Usage(format!(
                "--scheduler {text}: {why}; expected NAME[:TUNABLE=VALUE,...] with NAME one of {} (e.g. bfq:slice_idle=8,low_latency=0)",
                SCHEDULERS.join(", ")
            ))
        };
        let (name, rest) = text.split_once(':').unwrap_or((text, ""));
        if !SCHEDULERS.contains(&name) {
            return Err(bad(format!("unknown scheduler '{name}'")));
        }
        let mut tunables = Vec::new();
        for part in rest.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .filter(|(k, v)| !k.is_empty() && !v.is_empty() && !k.contains('/') && !k.contains(".."))
                .ok_or_else(|| bad(format!("'{part}' is not TUNABLE=VALUE")))?;
            tunables.push((k.to_string(), v.to_string()));
        }
        if name == "none" && !tunables.is_empty() {
            return Err(bad("none has no tunables".into()));
        }
        Ok(SchedulerSpec {
            name: name.to_string(),
            tunables,
        })
    }
}

impl std::fmt::Display for SchedulerSpec {
    /// As typed: `bfq:slice_idle=8,low_latency=0`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)?;
        for (i, (k, v)) in self.tunables.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { ':' } else { ',' })?;
        }
        Ok(())
    }
}

/// The tunables of `device`'s active scheduler and their values (`queue/iosched/*`).
pub fn tunables(device: &str) -> Result<Vec<(String, String)>> {
    let dir = format!("{}/queue/iosched", sysfs_dir(device));
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(out);
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Ok(value) = std::fs::read_to_string(entry.path()) {
            out.push((name, value.trim().to_string()));
        }
    }
    out.sort();
    Ok(out)
}

/// Sets tunable `name` of `device`'s active scheduler to `value`; an unknown tunable or a
/// value the kernel refuses is a one-line usage error naming what is valid.
pub fn set_tunable(device: &str, scheduler: &str, name: &str, value: &str) -> Result<()> {
    let path = format!("{}/queue/iosched/{name}", sysfs_dir(device));
    if !Path::new(&path).exists() {
        let known: Vec<String> = tunables(device)?.into_iter().map(|(n, _)| n).collect();
        return Err(crate::error::Usage(format!(
            "--scheduler {scheduler}: unknown tunable '{name}'; {scheduler} has: {}",
            known.join(", ")
        ))
        .into());
    }
    std::fs::write(&path, value).map_err(|e| {
        crate::error::Usage(format!(
            "--scheduler {scheduler}: the kernel refused {name}={value} ({e})"
        ))
    })?;
    Ok(())
}

/// Whether `device` is marked rotational (`queue/rotational`).
pub fn rotational(device: &str) -> Result<bool> {
    let path = format!("{}/queue/rotational", sysfs_dir(device));
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    Ok(crate::kernel::block::parse_rotational(&text))
}

/// Marks `device` rotational or not.
pub fn set_rotational(device: &str, rotational: bool) -> Result<()> {
    let path = format!("{}/queue/rotational", sysfs_dir(device));
    std::fs::write(&path, if rotational { "1" } else { "0" }).with_context(|| format!("cannot write {path}"))
}

/// Flush requests completed on `device` since it was set up (`/sys/block/NAME/stat`,
/// [`crate::kernel::block_stat`]).
pub fn flushes_completed(device: &str) -> Result<u64> {
    let path = format!("{}/stat", sysfs_dir(device));
    let text = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    text.parse::<crate::kernel::BlockStat>()
        .ok()
        .and_then(|stat| stat.flushes_completed)
        .with_context(|| format!("{path}: no flush counter (kernel before 5.5?)"))
}

#[cfg(test)]
mod tests {
    use super::SchedulerSpec;

    #[test]
    fn scheduler_spec_takes_tunables() {
        let s = SchedulerSpec::parse("bfq:slice_idle=8,low_latency=0").unwrap();
        assert_eq!(s.name, "bfq");
        assert_eq!(
            s.tunables,
            [("slice_idle".into(), "8".into()), ("low_latency".into(), "0".into())]
        );
        assert_eq!(SchedulerSpec::parse("mq-deadline").unwrap().tunables, vec![]);
        for (bad, says) in [
            ("cfq", "unknown scheduler 'cfq'"),
            ("bfq:slice_idle", "not TUNABLE=VALUE"),
            ("bfq:../x=1", "not TUNABLE=VALUE"),
            ("none:x=1", "none has no tunables"),
        ] {
            let err = SchedulerSpec::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
            assert!(err.contains("none, mq-deadline, bfq, kyber"), "{err}");
        }
    }
}
