//! A power cut's cycle on a scratch filesystem over an emulated disk: after the disk has lost
//! power (it fails every request from then on, and its media holds only what had been
//! drained, see [`super::device`]), the testbed is torn down without writing anything more
//! (unmount: the filesystem's last writes fail; loop device; the emulated device), the media
//! is attached again as the drive left it (a plain loop device on the image) and mounted, so
//! that the filesystem recovers by itself (journal or log replay), as after a real cut. Then
//! the filesystem's own checker runs read-only, and the next cycle gets a fresh filesystem on
//! a new emulated disk, mounted where the last one was.
//!
//! In a `--kernel` guest whose disk the host emulates, the disk stays where it is: the guest
//! unmounts, asks the host to turn the drive's power on again over the media as the cut
//! left them (or to make the next filesystem on them), forgets the blocks it had cached,
//! and mounts the same disk again ([`super::vm::control`]).
//!
//! Each step is on the testbed's undo stack, so a signal or a SIGKILL at any point of a
//! cycle leaves what `fsynclab cleanup` undoes, as for any run.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::device::DeviceControl;
use super::state::Step;
use super::{command, loopdev, mount, names, scratch, vm, Prepared};

/// The filesystem mounted again after a cut.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Recovery {
    /// Whether it mounted; when not, why.
    pub(crate) mounted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mount_error: Option<String>,
    /// How long the mount took: the journal's (or log's) replay, mostly.
    pub(crate) replay_ms: f64,
    /// How long the teardown after the cut took.
    pub(crate) teardown_ms: f64,
}

/// What the filesystem's own checker said, run read-only on the recovered media.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct Check {
    /// The command, as run: `e2fsck -fn /dev/loop3`.
    pub(crate) command: String,
    pub(crate) exit_status: i32,
    /// Whether it found the filesystem clean (exit status 0).
    pub(crate) clean: bool,
    /// Its last lines, for the result.
    pub(crate) said: String,
    pub(crate) ms: f64,
}

/// The read-only checker of `fstype` and its arguments before the device.
fn checker(fstype: &str) -> (&'static str, &'static [&'static str]) {
    match fstype {
        "xfs" => ("xfs_repair", &["-n"]),
        "btrfs" => ("btrfs", &["check", "--readonly"]),
        // ext2, ext3, ext4: force a full check, change nothing.
        _ => ("e2fsck", &["-fn"]),
    }
}

impl Prepared {
    /// After a cut: tears the scratch filesystem down without writing (nothing reaches the
    /// media any more), attaches the media again and mounts it where it was, timing the
    /// replay. A filesystem that does not mount is a result, not an error.
    pub(crate) fn recover(&self) -> Result<Recovery> {
        let Some((options, _)) = &self.remake else {
            anyhow::bail!("no scratch filesystem to recover");
        };
        let info = self.scratch.as_ref().context("no scratch filesystem to recover")?;
        let mut live = self.live();
        if let Some(served) = live.served.clone() {
            return self.recover_served(&mut live, &served, &options.spec.fstype, &options.spec.mount_options);
        }
        let t0 = Instant::now();
        // Everything above the tmpfs that holds the media, but the sysctls (and anything
        // else that is not the scratch filesystem's).
        live.undo.undo_selected_above(
            |s| matches!(s, Step::Tmpfs { .. }),
            |s| {
                matches!(
                    s,
                    Step::Mount { .. }
                        | Step::Scheduler { .. }
                        | Step::Rotational { .. }
                        | Step::Loop { .. }
                        | Step::Fuse { .. }
                )
            },
        )?;
        // The device's last handle on the media file goes with it; what the run counts on
        // its disk (flushes, activity) ends with it.
        live.device = None;
        live.switch = None;
        live.unplugged = true;
        *self.device_mark.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let teardown_ms = t0.elapsed().as_secs_f64() * 1e3;

        let image = std::path::PathBuf::from(&info.image);
        let loop_device = live.undo.perform(
            Step::Loop {
                device: String::new(),
                image: Some(image.clone()),
            },
            || loopdev::attach(&image, false),
        )?;
        live.undo.amend_last(Step::Loop {
            device: loop_device.clone(),
            image: Some(image.clone()),
        })?;
        Ok(self.mount_recovered(
            &mut live,
            &options.spec.fstype,
            &loop_device,
            &options.spec.mount_options,
            teardown_ms,
        ))
    }

    /// The recovery's mount of `device` where the filesystem was, timed: the journal's (or
    /// log's) replay.
    fn mount_recovered(
        &self,
        live: &mut Live,
        fstype: &str,
        device: &str,
        options: &str,
        teardown_ms: f64,
    ) -> Recovery {
        let mount_point = self.dir.clone();
        let t1 = Instant::now();
        let mounted = live.undo.perform(
            Step::Mount {
                mount_point: mount_point.clone(),
            },
            || mount::mount(fstype, device, &mount_point, options),
        );
        let replay_ms = t1.elapsed().as_secs_f64() * 1e3;
        Recovery {
            mounted: mounted.is_ok(),
            mount_error: mounted.err().map(|e| format!("{e:#}")),
            replay_ms,
            teardown_ms,
        }
    }

    /// [`Prepared::recover`] in a guest whose disk the host emulates: the filesystem is taken
    /// off the disk (the mount, the scheduler, the rotational flag), the host turns the
    /// drive's power on again over the media as the cut left them (time not emulated, as the
    /// host's plain loop device), and the same disk is mounted again.
    fn recover_served(&self, live: &mut Live, served: &DeviceControl, fstype: &str, options: &str) -> Result<Recovery> {
        let t0 = Instant::now();
        self.take_off_served_disk(live)?;
        live.unplugged = true;
        *self.device_mark.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let disk = vm::disk::served_disk()?;
        if !served.power_on(false) {
            anyhow::bail!("the host did not turn the guest's disk on again after its power cut");
        }
        vm::disk::forget_cached_blocks(&disk)?;
        let teardown_ms = t0.elapsed().as_secs_f64() * 1e3;
        Ok(self.mount_recovered(live, fstype, &disk, options, teardown_ms))
    }

    /// In a guest whose disk the host emulates: undoes what is set up on the disk above the
    /// scratch directory (the mount, the scheduler, the rotational flag).
    fn take_off_served_disk(&self, live: &mut Live) -> Result<()> {
        let scratch_dir = self.dir.parent().map(Path::to_path_buf);
        live.undo.undo_selected_above(
            |s| matches!(s, Step::Directory { path } if Some(path) == scratch_dir.as_ref()),
            |s| matches!(s, Step::Mount { .. } | Step::Scheduler { .. } | Step::Rotational { .. }),
        )
    }

    /// Unmounts the recovered filesystem and runs its checker read-only on the media.
    pub(crate) fn check(&self) -> Result<Check> {
        let Some((options, _)) = &self.remake else {
            anyhow::bail!("no scratch filesystem to check");
        };
        let mut live = self.live();
        if mount::is_mount_point(&self.dir) {
            match live.served.is_some() {
                // The recovery's mount is on the served disk, above the scratch directory.
                true => self.take_off_served_disk(&mut live)?,
                false => live
                    .undo
                    .undo_selected_above(|s| matches!(s, Step::Loop { .. }), |s| matches!(s, Step::Mount { .. }))?,
            }
        }
        let device = live
            .undo
            .steps()
            .iter()
            .rev()
            .find_map(|s| match s {
                Step::Loop { device, .. } if !device.is_empty() => Some(device.clone()),
                _ => None,
            })
            .or_else(|| live.served.as_ref().and_then(|_| vm::guest_disk()))
            .context("the recovered media has no loop device")?;
        let (tool, args) = checker(&options.spec.fstype);
        let mut all: Vec<&str> = args.to_vec();
        all.push(&device);
        let t0 = Instant::now();
        let out = command::output(tool, &all)?;
        let ms = t0.elapsed().as_secs_f64() * 1e3;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let said = lines[lines.len().saturating_sub(4)..].join("\n");
        let exit_status = out.status.code().unwrap_or(-1);
        Ok(Check {
            command: format!("{tool} {}", all.join(" ")),
            exit_status,
            clean: exit_status == 0,
            said,
            ms,
        })
    }

    /// A fresh filesystem on a new emulated disk for the next cycle, mounted where the last
    /// one was; what is left of the last (a mount, the plain loop device) is undone first.
    pub(crate) fn fresh_filesystem(&self) -> Result<Duration> {
        let Some((options, size)) = &self.remake else {
            anyhow::bail!("no scratch filesystem to make again");
        };
        let info = self.scratch.as_ref().context("no scratch filesystem to make again")?;
        let t0 = Instant::now();
        let mut live = self.live();
        if let Some(served) = live.served.clone() {
            // The host makes the filesystem on the media with the drive's power off, then
            // turns it on as the profile's drive afresh.
            self.take_off_served_disk(&mut live)?;
            match served.answer(vm::control::Request::PowerOn { fresh: true }) {
                vm::control::Reply::Done(true) => {}
                vm::control::Reply::Refused(why) => anyhow::bail!("{why}"),
                _ => anyhow::bail!("the host did not make the guest's next filesystem"),
            }
            let disk = vm::disk::served_disk()?;
            vm::disk::forget_cached_blocks(&disk)?;
            let dir = self.dir.parent().context("the scratch mount point has no parent")?;
            vm::disk::mount_served(options, dir, &mut live.undo)?;
            return Ok(t0.elapsed());
        }
        live.undo.undo_selected_above(
            |s| matches!(s, Step::Tmpfs { .. }),
            |s| matches!(s, Step::Mount { .. } | Step::Loop { .. }),
        )?;
        let image = std::path::PathBuf::from(&info.image);
        std::fs::File::options()
            .write(true)
            .open(&image)
            .and_then(|f| {
                f.set_len(0)?;
                f.set_len(*size)
            })
            .with_context(|| format!("cannot empty the image {}", image.display()))?;
        let dir = self
            .dir
            .parent()
            .context("the scratch mount point has no parent")?
            .to_path_buf();
        debug_assert!(self.dir.ends_with(names::MOUNT_DIR));
        let Live {
            undo, device, switch, ..
        } = &mut *live;
        scratch::bring_up(options, *size, &dir, &image, undo, device, switch)?;
        Ok(t0.elapsed())
    }
}

use super::Live;
