//! Where the I/O goes: a directory the user names with `--dir`, or a scratch filesystem
//! fsynclab makes for the run (`--scratch`, [`scratch`]) on a loop device over an image
//! file, optionally served by an emulated disk (`--device`, [`device`]). Either way
//! fsynclab works only inside a new subdirectory ([`WorkDir`]) and removes it afterwards.
//!
//! [`prepare`] turns a [`TestbedRequest`] (the options, typed: [`request`]) into a directory to run in, holding whatever must
//! be undone afterwards (loop device, mounts, scheduler, sysctls: the [`state::Undo`] stack)
//! until the [`Prepared`] is dropped — on every way out, panics included. What a run
//! killed with SIGKILL leaves, `fsynclab cleanup` undoes from the state files
//! ([`state::cleanup_leftovers`]).
//!
//! Sysctls are machine-wide: a run that sets them holds [`sysctl::SysctlLock`] until they are
//! back, and a second such run is refused, naming the first (see [`sysctl_claim::claim_sysctls`] for why
//! refusing rather than sharing).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Result;

use crate::environment::{SysctlChange, SysctlsChanged};
use crate::error::Usage;

pub mod bdi;
pub mod command;
pub mod deadman;
pub mod device;
mod live;
pub mod loopdev;
pub mod machine_lock;
pub mod mount;
pub mod names;
pub mod pause;
pub(crate) mod power;
pub mod remount;
pub mod request;
pub mod scratch;
mod scratch_spec;
pub mod state;
pub mod sysctl;
mod sysctl_claim;
mod trace_setup;
pub(crate) mod tracefs;
pub mod vm;
pub mod workdir;

pub use workdir::WorkDir;

use device::fuse::{DeviceMark, EmulatedDevice};
use device::{DeviceControl, DeviceProfile};
use live::Live;
pub use request::{Key, Place, Spelling, TestbedRequest};
use state::Step;

/// A target ready for runs: the directory to run in, and what must be undone afterwards.
/// Fields drop in order: the undo stack (unmount, detach, FUSE unmount, sysctls back)
/// before the sysctl lock is released, the emulated device's session thread is joined and
/// its dead man's switch disarmed.
pub struct Prepared {
    dir: PathBuf,
    /// What is set up and the emulated device serving it; a power-cut cycle changes both
    /// while a run holds the testbed ([`power`]).
    live: Mutex<Live>,
    _sysctl_lock: Option<sysctl::SysctlLock>,
    scratch: Option<crate::environment::ScratchInfo>,
    profile: Option<DeviceProfile>,
    /// The scratch filesystem as asked for, and its image's size, to make it again.
    remake: Option<(request::ScratchOptions, u64)>,
    sysctls_set: BTreeMap<String, u64>,
    /// Where the current run's device activity is measured from (see [`Prepared::flushes`]).
    device_mark: Mutex<Option<DeviceMark>>,
}

impl Prepared {
    /// What `live` set up in `dir`, on a disk of `profile`: no sysctl set, no run measured.
    fn new(dir: PathBuf, live: Live, profile: Option<DeviceProfile>) -> Prepared {
        Prepared {
            dir,
            live: Mutex::new(live),
            _sysctl_lock: None,
            scratch: None,
            profile,
            remake: None,
            sysctls_set: BTreeMap::new(),
            device_mark: Mutex::new(None),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A directory of the run's own in the system's temporary directory, removed with the
    /// testbed, and by `fsynclab cleanup` after a run that was killed: the TMPDIR of a tool
    /// the run starts that leaves files there when it is killed (virtme-ng leaves its
    /// guest's exit-status file, `virtme_retXXXXXXXX`, when it ends by a signal).
    /// The system's temporary directory is TMPDIR's, or /tmp where TMPDIR holds what
    /// virtme-ng and QEMU cannot take in a path (a space, a comma: [`vm::plain_path`]).
    pub fn private_tmp(&self) -> Result<PathBuf> {
        let system = std::env::temp_dir();
        let system = if vm::plain_path(&system) {
            system
        } else {
            PathBuf::from("/tmp")
        };
        let path = system.join(names::work_dir_name());
        self.live().undo.perform(Step::Directory { path: path.clone() }, || {
            std::fs::create_dir(&path).map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))
        })?;
        Ok(path)
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Device cache flushes so far: counted by the emulated device when there is one, else
    /// the flush requests the block layer completed on the scratch loop device (`host`,
    /// `ram`); None for `--dir` runs.
    ///
    /// Callers read it just before a run and hand it to [`Prepared::annotate`] after; so
    /// reading it also marks where the emulated device's activity of the run starts.
    pub fn flushes(&self) -> Option<u64> {
        let live = self.live();
        if live.unplugged {
            return None;
        }
        match (&live.device, &self.scratch) {
            (Some(d), _) => {
                let mark = d.mark();
                *self.device_mark.lock().unwrap_or_else(|p| p.into_inner()) = Some(mark);
                Some(d.flushes())
            }
            (None, Some(s)) => loopdev::flushes_completed(&s.loop_device).ok(),
            (None, None) => None,
        }
    }

    /// The emulated device's controls (power cuts, injected faults, stopping time), if the
    /// scratch filesystem is on an emulated disk.
    pub fn device_control(&self) -> Option<DeviceControl> {
        let live = self.live();
        live.device
            .as_ref()
            .map(EmulatedDevice::control)
            .or_else(|| live.served.clone())
    }

    /// The scratch filesystem's image: for an emulated disk, its media, which holds exactly
    /// what has reached it.
    pub fn image(&self) -> Option<&Path> {
        self.scratch.as_ref().map(|s| Path::new(&s.image))
    }

    /// Takes the scratch filesystem off its disk, as after a power cut: undoes every step
    /// recorded after the image was made (the mount, whose writes now fail if the power is
    /// cut; the scheduler; the loop device; the emulated device; sysctls set for the run)
    /// and leaves the image where it is, as the disk left it, for a plain loop device
    /// (`losetup`, then mount: the filesystem replays its journal). The image's directory and
    /// tmpfs are undone when this is dropped. Returns the image's path. Whatever holds the
    /// filesystem (an open file, a process working in it) must be gone first: the unmount
    /// is refused otherwise, and said so.
    pub fn unplug(&mut self) -> Result<PathBuf> {
        let image = self
            .image()
            .map(Path::to_path_buf)
            .ok_or_else(|| anyhow::anyhow!("unplug: there is no scratch image"))?;
        let live = self.live.get_mut().unwrap_or_else(|p| p.into_inner());
        let holds_image = |s: &Step| matches!(s, Step::Tmpfs { .. } | Step::Directory { .. });
        live.undo.undo_above(holds_image);
        if !live.undo.last().is_some_and(holds_image) {
            // The device stays until the drop retries what is left above the image.
            anyhow::bail!(
                "unplug: {} could not be undone (said above why); closing what holds it lets the end of the run finish",
                live.undo.last().map_or_else(|| "a step".to_string(), Step::describe)
            );
        }
        live.device = None;
        live.unplugged = true;
        *self.device_mark.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(image)
    }

    /// The scratch loop device (`/dev/loop3`), if there is one.
    pub fn loop_device(&self) -> Option<&str> {
        self.scratch
            .as_ref()
            .filter(|_| !self.live().unplugged)
            .map(|s| s.loop_device.as_str())
    }

    fn flushes_counted_by(&self) -> &'static str {
        if self.live().device.is_some() {
            "emulated device"
        } else {
            "block layer"
        }
    }

    /// Adds the target's configuration, without flush counts, to a fingerprint.
    pub fn annotate_environment(&self, env: &mut crate::environment::Fingerprint) {
        env.scratch = self.scratch.clone();
        env.sysctls_set = self.sysctls_set.clone();
        env.device_profile = self.profile.as_ref().map(DeviceProfile::info);
    }

    /// A finding when a writeback sysctl the run started under (`env.sysctls`) is no longer
    /// in force: another process changed it while the run went on.
    pub fn sysctl_finding(&self, env: &crate::environment::Fingerprint) -> Option<SysctlsChanged> {
        sysctls_changed(&env.sysctls, &crate::environment::read_sysctls())
    }

    /// What the emulated device did since [`Prepared::flushes`] was last read (None without
    /// an emulated device).
    pub fn device_activity(&self) -> Option<crate::environment::DeviceActivity> {
        let live = self.live();
        let device = live.device.as_ref()?;
        let mark = self.device_mark.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        Some(device.activity_since(&mark))
    }

    /// Records in `env` the device cache flushes since `flushes_before`, per foreground sync
    /// call of the run, and what the emulated device did.
    pub fn count_flushes(
        &self,
        env: &mut crate::environment::Fingerprint,
        flushes_before: Option<u64>,
        sync_calls: u64,
    ) {
        let Some(profile) = &self.profile else { return };
        let mut info = profile.info();
        info.activity = self.device_activity();
        if let (Some(before), Some(now)) = (flushes_before, self.flushes()) {
            let flushes = now.saturating_sub(before);
            info.flushes = Some(flushes);
            info.flushes_counted_by = Some(self.flushes_counted_by().to_string());
            info.flushes_per_sync = (sync_calls > 0).then(|| flushes as f64 / sync_calls as f64);
        }
        env.device_profile = Some(info);
    }
}

/// Prepares what `request` asks for; a scratch image without a size gets room for
/// `space_needed` bytes of files plus a margin.
pub fn prepare(request: &TestbedRequest, space_needed: u64) -> Result<Prepared> {
    let image_size = |s: &request::ScratchOptions| s.size.unwrap_or_else(|| s.spec.default_size(space_needed));
    // Inside a `--kernel` guest the host made the filesystem and serves its disk, unless the
    // run drives its disk: the guest then makes it as a scratch run does, in its own memory.
    let disk_in_guest = crate::environment::VmInfo::disk_in_this_guest();
    let moved;
    let request = match disk_in_guest {
        true => {
            moved = vm::disk::local_in_guest(request)?;
            &moved
        }
        false => request,
    };
    let in_guest = crate::environment::VmInfo::in_guest() && !disk_in_guest;
    if in_guest && request.scratch().is_some() && !crate::sys::is_root() {
        return Err(Usage("--scratch needs root in the guest".into()).into());
    } else if let Some(s) = request.scratch().filter(|_| !in_guest) {
        scratch::check_prerequisites(s, image_size(s))?;
    } else if !request.sysctls.is_empty() && !crate::sys::is_root() {
        return Err(Usage(
            "--dirty-ratio, --dirty-background-ratio and --dirty-expire need root: run fsynclab as root".into(),
        )
        .into());
    }
    if request.needs_root() {
        let dead = state::dead_leftovers(&state::root_state_dir());
        if !dead.is_empty() {
            note!(
                "fsynclab: runs killed earlier (pid {}) left scratch filesystems, work directories or sysctls behind; `fsynclab cleanup` removes them",
                dead.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            );
        }
    }

    // Declared before `live` so that it is dropped after it (locals drop in reverse).
    let sysctl_lock = if request.sysctls.is_empty() {
        None
    } else {
        Some(sysctl_claim::claim_sysctls(request, &state::root_state_dir())?)
    };
    // A failure from here drops `live`, which undoes what was set up in the right order
    // (the emulated device's media on its tmpfs: [`Live`]'s drop).
    let mut live = Live::new();
    let (dir, scratch) = match &request.place {
        Place::Scratch(s) if in_guest => {
            let made = vm::disk::mount_in_guest(s, &mut live.undo)?;
            if s.device.is_emulated() {
                live.served = vm::control::Port::open()?.map(|port| DeviceControl::remote(std::sync::Arc::new(port)));
            }
            (made.mount_point, Some(made.info))
        }
        Place::Scratch(s) => {
            let Live {
                undo, device, switch, ..
            } = &mut live;
            let made = scratch::provision(s, image_size(s), undo, device, switch)?;
            (made.mount_point, Some(made.info))
        }
        Place::Dir(dir) => {
            // A directory that is not there is said before anything else (issue 14's
            // review: the explanation's note came first for a user without root).
            workdir::check_parent(dir)?;
            (dir.clone(), None)
        }
    };
    let mut prepared = Prepared {
        _sysctl_lock: sysctl_lock,
        scratch,
        remake: request.scratch().map(|s| (s.clone(), image_size(s))),
        ..Prepared::new(dir, live, request.scratch().map(|s| s.device.clone()))
    };
    for s in &request.sysctls {
        let (in_force, previous) = sysctl::in_force(s.name)?;
        let live = prepared.live.get_mut().unwrap_or_else(|p| p.into_inner());
        live.undo.perform(
            Step::Sysctl {
                name: in_force,
                previous,
            },
            || sysctl::write(s.name, s.value),
        )?;
        prepared.sysctls_set.insert(s.name.to_string(), s.value);
    }
    pause::point("prepared");
    Ok(prepared)
}

/// A finding naming the writeback sysctls that changed between the run's start (`before`)
/// and its end (`after`): the result then did not run under the values it records
/// throughout (another process, or another fsynclab run, set them meanwhile).
fn sysctls_changed(before: &BTreeMap<String, u64>, after: &BTreeMap<String, u64>) -> Option<SysctlsChanged> {
    let changed: Vec<SysctlChange> = before
        .iter()
        .filter_map(|(name, &was)| {
            let now = *after.get(name)?;
            (now != was).then(|| SysctlChange {
                name: name.clone(),
                was,
                now,
            })
        })
        .collect();
    (!changed.is_empty()).then_some(SysctlsChanged(changed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sysctl_changed_during_the_run_is_a_finding() {
        let before: BTreeMap<String, u64> = [("dirty_ratio".to_string(), 20), ("dirty_bytes".to_string(), 0)].into();
        assert_eq!(sysctls_changed(&before, &before), None);
        let mut after = before.clone();
        after.insert("dirty_ratio".into(), 5);
        let finding = sysctls_changed(&before, &after).expect("a finding").to_string();
        assert!(
            finding.starts_with("sysctls: vm.dirty_ratio 20 -> 5 during the run"),
            "{finding}"
        );
    }
}
