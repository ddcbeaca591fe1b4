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
use crate::result::RunResult;
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

use device::fuse::{DeviceMark, EmulatedDevice};
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
    /// Where the current run's device activity is measured from (see [`Prepared::flushes`]).
    device_mark: std::sync::Mutex<Option<DeviceMark>>,
    device: Option<EmulatedDevice>,
}

impl Prepared {
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Device cache flushes so far: counted by the emulated device when there is one, else
    /// the flush requests the block layer completed on the scratch loop device (`host`,
    /// `ram`); None for `--dir` runs.
    ///
    /// Callers read it just before a run and hand it to [`Prepared::annotate`] after; so
    /// reading it also marks where the emulated device's activity of the run starts.
    pub fn flushes(&self) -> Option<u64> {
        match (&self.device, &self.scratch) {
            (Some(d), _) => {
                let mark = d.mark();
                *self.device_mark.lock().unwrap_or_else(|p| p.into_inner()) = Some(mark);
                Some(d.flushes())
            }
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

    /// What the emulated device did since [`Prepared::flushes`] was last read (None without
    /// an emulated device).
    pub fn device_activity(&self) -> Option<crate::environment::DeviceActivity> {
        let device = self.device.as_ref()?;
        let mark = self.device_mark.lock().unwrap_or_else(|p| p.into_inner()).clone()?;
        Some(device.activity_since(&mark))
    }

    /// Adds the target's configuration to a result: the scratch filesystem, the device
    /// profile with the flushes counted since `flushes_before` and what the emulated device
    /// did, the sysctls set.
    pub fn annotate(&self, result: &mut RunResult, flushes_before: Option<u64>) {
        self.annotate_environment(&mut result.environment);
        let Some(profile) = &self.profile else { return };
        let mut info = profile.info();
        info.activity = self.device_activity();
        if let Some(lag) = info
            .activity
            .as_ref()
            .map(|a| a.drain_lag_ms_max)
            .filter(|l| *l > DAEMON_LAG_MS)
        {
            result.findings.push(format!(
                "device: the emulated disk's daemon fell up to {lag:.0} ms behind its model (CPU or memory bandwidth): throughput figures here are the daemon's ceiling, not the profile's"
            ));
        }
        if let (Some(before), Some(now)) = (flushes_before, self.flushes()) {
            let flushes = now.saturating_sub(before);
            let syncs: u64 = result
                .ops
                .iter()
                .filter(|(op, _)| op.contains("sync"))
                .map(|(_, o)| o.count)
                .sum();
            info.flushes = Some(flushes);
            info.flushes_counted_by = Some(self.flushes_counted_by().to_string());
            if syncs > 0 {
                let per = flushes as f64 / syncs as f64;
                info.flushes_per_sync = Some(per);
                result.findings.push(format!(
                    "device: {flushes} cache flushes during the run, {per:.2} per foreground sync call ({syncs} calls; setup included)"
                ));
            } else {
                result
                    .findings
                    .push(format!("device: {flushes} cache flushes during the run"));
            }
        }
        result.environment.device_profile = Some(info);
    }
}

/// How far behind its model the emulated disk's daemon may fall before a run says that the
/// daemon, not the profile, set the pace.
const DAEMON_LAG_MS: f64 = 250.0;

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
        device_mark: std::sync::Mutex::new(None),
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
        scheduler: args
            .scheduler
            .as_deref()
            .map(loopdev::SchedulerSpec::parse)
            .transpose()?,
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
