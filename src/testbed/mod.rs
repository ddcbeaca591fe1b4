//! Where the I/O goes: a directory the user names with `--dir`, or a scratch filesystem
//! fsynclab makes for the run (`--scratch`, [`scratch`]) on a loop device over an image
//! file, optionally served by an emulated disk (`--device`, [`device`]). Either way
//! fsynclab works only inside a new subdirectory ([`WorkDir`]) and removes it afterwards.
//!
//! [`prepare`] turns the target options into a directory to run in, holding whatever must
//! be undone afterwards (loop device, mounts, scheduler, sysctls: the [`state::Undo`] stack)
//! until the [`Prepared`] is dropped — on every way out, panics included.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::cli::TargetArgs;
use crate::error::Usage;
use crate::units::{parse_duration, parse_size};

pub mod command;
pub mod device;
pub mod loopdev;
pub mod mount;
pub mod scratch;
pub mod state;
pub mod sysctl;
pub mod workdir;

pub use workdir::WorkDir;

use device::fuse::EmulatedDevice;
use device::DeviceProfile;
use scratch::{ScratchRequest, ScratchSpec};
use state::{Step, Undo};

/// A target ready for runs: the directory to run in, and what must be undone afterwards.
/// Fields drop in order: the undo stack (unmount, detach, FUSE unmount...) before the
/// emulated device's session thread is joined.
pub struct Prepared {
    dir: PathBuf,
    undo: Undo,
    scratch: Option<crate::environment::ScratchInfo>,
    profile: Option<DeviceProfile>,
    sysctls_set: BTreeMap<String, u64>,
    device: Option<EmulatedDevice>,
}

impl Prepared {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Device cache flushes so far: counted by the emulated device when there is one, else
    /// the flush requests the block layer completed on the scratch loop device (`host`,
    /// `ram`); None for `--dir` runs.
    pub fn flushes(&self) -> Option<u64> {
        match (&self.device, &self.scratch) {
            (Some(d), _) => Some(d.flushes()),
            (None, Some(s)) => loopdev::flushes_completed(&s.loop_device).ok(),
            (None, None) => None,
        }
    }

    /// The scratch loop device (`/dev/loop3`), if there is one.
    pub fn loop_device(&self) -> Option<&str> {
        self.scratch.as_ref().map(|s| s.loop_device.as_str())
    }

    fn flushes_counted_by(&self) -> &'static str {
        if self.device.is_some() {
            "emulated device"
        } else {
            "block layer"
        }
    }

    /// What was put in place, in order (for messages and tests).
    pub fn steps(&self) -> &[Step] {
        self.undo.steps()
    }

    /// Adds the target's configuration, without flush counts, to a fingerprint.
    pub fn annotate_environment(&self, env: &mut crate::environment::Fingerprint) {
        env.scratch = self.scratch.clone();
        env.sysctls_set = self.sysctls_set.clone();
        env.device_profile = self.profile.as_ref().map(DeviceProfile::info);
    }

    /// Records in `env` the device cache flushes since `flushes_before`, and per foreground
    /// sync call of the run.
    pub fn count_flushes(
        &self,
        env: &mut crate::environment::Fingerprint,
        flushes_before: Option<u64>,
        sync_calls: u64,
    ) {
        let Some(profile) = &self.profile else { return };
        let mut info = profile.info();
        if let (Some(before), Some(now)) = (flushes_before, self.flushes()) {
            let flushes = now.saturating_sub(before);
            info.flushes = Some(flushes);
            info.flushes_counted_by = Some(self.flushes_counted_by().to_string());
            info.flushes_per_sync = (sync_calls > 0).then(|| flushes as f64 / sync_calls as f64);
        }
        env.device_profile = Some(info);
    }
}

/// Prepares the target the options name, sized for a run that needs little space.
pub fn prepare(args: &TargetArgs) -> Result<Prepared> {
    prepare_for(args, 0)
}

/// Refuses the scratch-only options without `--scratch`. clap's `requires` does not fire
/// when `--dir` (which `--scratch` conflicts with) is given, and a silently ignored
/// `--scheduler bfq` would make a user compare two runs on the same scheduler.
fn require_scratch_for_its_options(args: &TargetArgs) -> Result<()> {
    if args.scratch.is_some() {
        return Ok(());
    }
    let given = [
        ("--mkfs-opts", args.mkfs_opts.is_some()),
        ("--scratch-size", args.scratch_size.is_some()),
        ("--backing", args.backing.is_some()),
        ("--scheduler", args.scheduler.is_some()),
        ("--device", args.device.is_some()),
    ];
    match given.iter().find(|(_, set)| *set) {
        Some((flag, _)) => Err(crate::error::Usage(format!(
            "{flag} applies to a scratch filesystem only: add --scratch FS (e.g. --scratch ext4) instead of --dir"
        ))
        .into()),
        None => Ok(()),
    }
}

/// Prepares the target the options name; a scratch image without `--scratch-size` gets
/// room for `space_needed` bytes of files plus a margin.
pub fn prepare_for(args: &TargetArgs, space_needed: u64) -> Result<Prepared> {
    require_scratch_for_its_options(args)?;
    let request = scratch_request(args, space_needed)?;
    let sysctls = sysctl_request(args)?;
    if let Some(r) = &request {
        scratch::check_prerequisites(r)?;
        let dead = state::dead_leftovers(Path::new(state::STATE_DIR));
        if !dead.is_empty() {
            eprintln!(
                "fsynclab: runs killed earlier (pid {}) left scratch filesystems behind; `fsynclab cleanup` removes them",
                dead.iter().map(u32::to_string).collect::<Vec<_>>().join(", ")
            );
        }
    } else if !sysctls.is_empty() && !crate::sys::is_root() {
        return Err(Usage(
            "--dirty-ratio, --dirty-background-ratio and --dirty-expire need root: run fsynclab as root".into(),
        )
        .into());
    }

    // Declared before `undo` so that it is dropped after it (locals drop in reverse).
    let mut device = None;
    let mut undo = Undo::new();
    let (dir, scratch) = match &request {
        Some(r) => {
            let s = scratch::provision(r, &mut undo, &mut device)?;
            (s.mount_point, Some(s.info))
        }
        None => (args.dir.clone(), None),
    };
    let mut sysctls_set = BTreeMap::new();
    for (name, value) in sysctls {
        let (in_force, previous) = sysctl::in_force(name)?;
        sysctl::write(name, value)?;
        undo.push(Step::Sysctl {
            name: in_force,
            previous,
        })?;
        sysctls_set.insert(name.to_string(), value);
    }
    Ok(Prepared {
        dir,
        undo,
        scratch,
        profile: request.map(|r| r.device),
        sysctls_set,
        device,
    })
}

fn scratch_request(args: &TargetArgs, space_needed: u64) -> Result<Option<ScratchRequest>, Usage> {
    let Some(text) = &args.scratch else { return Ok(None) };
    let spec = ScratchSpec::parse(text)?;
    let size = match &args.scratch_size {
        Some(s) => {
            let size = parse_size(s)
                .map_err(|e| Usage(format!("--scratch-size {s}: {e}")))?
                .get();
            if size < spec.min_size() {
                return Err(Usage(format!(
                    "--scratch-size {s}: {} needs at least {}",
                    spec.fstype,
                    crate::units::human_size(spec.min_size())
                )));
            }
            size
        }
        None => spec.default_size(space_needed),
    };
    let device = match &args.device {
        Some(d) => DeviceProfile::parse(d)?,
        None => DeviceProfile::Host,
    };
    let mkfs_options = args
        .mkfs_opts
        .as_deref()
        .map(|o| o.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default();
    Ok(Some(ScratchRequest {
        spec,
        mkfs_options,
        size,
        backing: args.backing.clone().unwrap_or_else(|| PathBuf::from(".")),
        scheduler: args.scheduler.clone(),
        device,
    }))
}

/// The sysctls to set, by their `/proc/sys/vm` names.
fn sysctl_request(args: &TargetArgs) -> Result<Vec<(&'static str, u64)>, Usage> {
    let mut out = Vec::new();
    if let Some(r) = args.dirty_ratio {
        out.push(("dirty_ratio", r));
    }
    if let Some(r) = args.dirty_background_ratio {
        out.push(("dirty_background_ratio", r));
    }
    if let Some(e) = &args.dirty_expire {
        let d = parse_duration(e).map_err(|err| Usage(format!("--dirty-expire {e}: {err}")))?;
        out.push(("dirty_expire_centisecs", (d.as_millis() / 10) as u64));
    }
    Ok(out)
}
