//! What a run has put in place, as an undo stack: every step (scratch directory, tmpfs,
//! emulated device, loop device, scheduler, mount, sysctl, work directory) is recorded
//! *before* it is done, and [`Undo`] undoes the steps in reverse order when dropped —
//! normal end, error, signal or panic. Undoing a step that was recorded but never done is
//! harmless, so a run killed between the two leaves nothing unrecorded.
//!
//! The stack is mirrored in a state file, `/run/fsynclab/<pid>.json` (for a non-root run's
//! work directory, `$XDG_RUNTIME_DIR/fsynclab/`), rewritten after each step and removed
//! once everything is undone. A run killed with SIGKILL leaves its file behind;
//! `fsynclab cleanup` ([`cleanup_leftovers`]) undoes the steps of dead processes the same
//! way, but only those whose paths have fsynclab's own shape ([`super::names`]).
//!
//! Every undo is checked (the mount is gone, the device detached, the sysctl reads back):
//! a step that could not be undone stays in the state file, and so does every step it
//! depends on (a loop device under a busy mount, the directory around them), and the run
//! ends with a non-zero status ([`teardown_failed`]).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize};

use super::{loopdev, mount, names, pause, sysctl};

/// Where the state files of root's runs live: one per running (or killed) fsynclab that
/// provisioned something.
pub const STATE_DIR: &str = "/run/fsynclab";

/// Names another state directory for everything: runs, their sysctl lock and `cleanup`.
/// The test suite sets it so that its runs and cleanups never meet a user's (nor a
/// user's leftovers make a test fail).
pub const STATE_DIR_ENV: &str = "FSYNCLAB_STATE_DIR";

/// Root's state directory: [`STATE_DIR_ENV`] when set, else [`STATE_DIR`].
pub fn root_state_dir() -> PathBuf {
    match std::env::var_os(STATE_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(STATE_DIR),
    }
}

/// One thing done (or about to be), with what is needed to undo it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// A directory we create (removed with everything in it): a scratch directory or a
    /// run's work directory.
    Directory { path: PathBuf },
    /// A tmpfs we mount for the `ram` device profile.
    Tmpfs { mount_point: PathBuf },
    /// The FUSE file system serving the image (the emulated device).
    Fuse { mount_point: PathBuf },
    /// A loop device attached to the image. Undone by the image: every loop device still
    /// attached to it is detached, one reused since for another file is left alone. The
    /// device is empty while `losetup` is choosing it.
    Loop {
        #[serde(default)]
        device: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<PathBuf>,
    },
    /// The scratch filesystem, mounted.
    Mount { mount_point: PathBuf },
    /// The I/O scheduler of a loop device, and the one it had before.
    Scheduler {
        device: String,
        previous: String,
        /// The image the device serves for us: a device serving another file since belongs
        /// to someone else and is left alone.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<PathBuf>,
    },
    /// Whether a loop device is marked rotational, and what it was before.
    Rotational {
        device: String,
        previous: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        image: Option<PathBuf>,
    },
    /// A `vm.` sysctl and the value it had before.
    Sysctl { name: String, previous: u64 },
    /// A tracefs instance (`instances/NAME`) for `--explain`, recorded before it is made so
    /// that no moment leaves one unrecorded; undoing a step whose instance was never made
    /// does nothing.
    TraceInstance { name: String },
    /// tracefs, mounted by fsynclab because it was not; unmounted only if no instance of
    /// anyone remains in it.
    Tracefs { mount_point: PathBuf },
}

impl Step {
    /// The step's kind, as the fault-injection points name it.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Directory { .. } => "directory",
            Step::Tmpfs { .. } => "tmpfs",
            Step::Fuse { .. } => "fuse",
            Step::Loop { .. } => "loop",
            Step::Mount { .. } => "mount",
            Step::Scheduler { .. } => "scheduler",
            Step::Rotational { .. } => "rotational",
            Step::Sysctl { .. } => "sysctl",
            Step::TraceInstance { .. } => "trace_instance",
            Step::Tracefs { .. } => "tracefs",
        }
    }

    /// Whether later steps live inside this one (a mount on a loop device on an image in a
    /// directory): while it cannot be undone, neither can the containers done before it.
    fn is_container(&self) -> bool {
        !matches!(
            self,
            Step::Scheduler { .. } | Step::Rotational { .. } | Step::Sysctl { .. }
        )
    }

    /// Undoes this step and checks that it is undone; an error says what is left and why.
    pub fn undo(&self) -> Result<()> {
        match self {
            Step::Directory { path } => {
                let path = mount::nothing_mounted_under(path)?;
                match std::fs::remove_dir_all(path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        anyhow::bail!("cannot remove {}: {e}", path.display())
                    }
                    _ if path.symlink_metadata().is_ok() => anyhow::bail!("{} is still there", path.display()),
                    _ => Ok(()),
                }
            }
            Step::Tmpfs { mount_point } | Step::Fuse { mount_point } | Step::Mount { mount_point } => {
                mount::unmount(mount_point)
            }
            Step::Loop { image: Some(image), .. } => loopdev::detach(image),
            Step::Loop { image: None, device } => {
                anyhow::bail!("{device}: no image recorded, so it cannot be told apart from someone else's")
            }
            // A device serving another file since belongs to someone else: left alone.
            Step::Scheduler { device, image, .. } | Step::Rotational { device, image, .. }
                if !still_ours(device, image.as_deref()) =>
            {
                Ok(())
            }
            Step::Scheduler { device, previous, .. } => loopdev::set_scheduler(device, previous),
            Step::Rotational { device, previous, .. } => match loopdev::set_rotational(device, *previous) {
                // A detached loop device may refuse; the next attach sets it afresh.
                Err(_) if loopdev::backing_file(device).is_none() => Ok(()),
                r => r,
            },
            Step::Sysctl { name, previous } => sysctl::write(name, *previous),
            Step::TraceInstance { name } => crate::explain::tracefs::remove_instance(name),
            Step::Tracefs { mount_point } => crate::explain::tracefs::unmount_if_unused(mount_point),
        }
    }

    /// Why `fsynclab cleanup` must not undo this step of process `pid`, if it must not: a
    /// path without fsynclab's shape, a device that is not a loop device, a sysctl that no
    /// run sets.
    fn refusal(&self, pid: u32) -> Option<String> {
        let not_ours = |what: &Path, shape: &str| {
            Some(format!(
                "{} does not have the shape of {shape} made by pid {pid}",
                what.display()
            ))
        };
        match self {
            Step::Directory { path } => {
                if !names::is_scratch_dir(path, pid) && !names::is_work_dir(path, pid) {
                    return not_ours(
                        path,
                        &format!("a directory (fsynclab-scratch-{pid}-XXXXXXXX or fsynclab-{pid}-XXXXXXXX)"),
                    );
                }
                match path.symlink_metadata() {
                    Ok(m) if !m.is_dir() => Some(format!("{} is not a directory", path.display())),
                    _ => None,
                }
            }
            Step::Tmpfs { mount_point } | Step::Fuse { mount_point } | Step::Mount { mount_point } => {
                let name = match self {
                    Step::Tmpfs { .. } => names::RAM_DIR,
                    Step::Fuse { .. } => names::DEVICE_DIR,
                    _ => names::MOUNT_DIR,
                };
                (!names::is_in_scratch_dir(mount_point, pid, &[name]))
                    .then(|| not_ours(mount_point, &format!("the `{name}` mount point of a scratch directory")))
                    .flatten()
            }
            Step::Loop { image, .. } => match image {
                Some(image) if names::is_scratch_image(image, pid) => None,
                Some(image) => not_ours(image, "a scratch image"),
                None => Some("a loop device without its image".into()),
            },
            Step::Scheduler { device, image, .. } | Step::Rotational { device, image, .. } => {
                if !is_loop_device(device) {
                    Some(format!("{device} is not a loop device"))
                } else {
                    image
                        .as_ref()
                        .filter(|i| !names::is_scratch_image(i, pid))
                        .and_then(|i| not_ours(i, "a scratch image"))
                }
            }
            Step::Sysctl { name, .. } => {
                (!sysctl::SETTABLE.contains(&name.as_str())).then(|| format!("vm.{name} is not a sysctl fsynclab sets"))
            }
            Step::TraceInstance { name } => (!crate::explain::tracefs::is_instance_of(name, pid))
                .then(|| format!("trace instance {name} does not have the shape of one made by pid {pid}")),
            Step::Tracefs { mount_point } => (mount_point != Path::new(crate::explain::tracefs::DEFAULT_MOUNT))
                .then(|| not_ours(mount_point, "the tracefs mount point fsynclab uses"))
                .flatten(),
        }
    }

    /// One line for messages: `mount /tmp/x/mnt`.
    pub fn describe(&self) -> String {
        match self {
            Step::Directory { path } => format!("directory {}", path.display()),
            Step::Tmpfs { mount_point } => format!("tmpfs at {}", mount_point.display()),
            Step::Fuse { mount_point } => format!("emulated device (FUSE) at {}", mount_point.display()),
            Step::Loop { device, image } if device.is_empty() => format!(
                "loop device on {}",
                image.as_deref().unwrap_or(Path::new("?")).display()
            ),
            Step::Loop { device, .. } => format!("loop device {device}"),
            Step::Mount { mount_point } => format!("mount {}", mount_point.display()),
            Step::Scheduler { device, previous, .. } => format!("scheduler of {device} (back to {previous})"),
            Step::Rotational { device, previous, .. } => format!("rotational flag of {device} (back to {previous})"),
            Step::Sysctl { name, previous } => format!("vm.{name} (back to {previous})"),
            Step::TraceInstance { name } => format!("trace instance {name}"),
            Step::Tracefs { mount_point } => format!("tracefs at {}", mount_point.display()),
        }
    }
}

/// `/dev/loopN`.
fn is_loop_device(device: &str) -> bool {
    device
        .strip_prefix("/dev/loop")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether loop `device` still serves `image` for us, or serves nothing (so that putting
/// its setting back restores the machine): one attached to another file belongs to
/// someone else now.
fn still_ours(device: &str, image: Option<&Path>) -> bool {
    match (loopdev::backing_file(device), image) {
        (None, _) | (Some(_), None) => true,
        (Some(file), Some(image)) => {
            let image = image.to_string_lossy();
            file == image || file == format!("{image} (deleted)")
        }
    }
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct StateFile {
    pid: u32,
    /// The process's start time (clock ticks after boot, /proc/PID/stat field 22): with the
    /// pid, it tells the process apart from a later one that reuses the pid.
    #[serde(default)]
    start_time: Option<u64>,
    steps: Vec<Step>,
}

/// Set once a teardown of this process left something in place (see [`teardown_failed`]).
static TEARDOWN_FAILED: AtomicBool = AtomicBool::new(false);

/// Whether any undo stack of this process failed to undo a step: the process must then
/// exit with a non-zero status, whatever the run measured.
pub fn teardown_failed() -> bool {
    TEARDOWN_FAILED.load(Ordering::SeqCst)
}

/// The undo stack of this process, mirrored in its state file.
#[derive(Debug)]
pub struct Undo {
    /// Tells this stack apart from the process's others (file name, last words).
    id: u64,
    steps: Vec<Step>,
    file: Option<PathBuf>,
    /// Failures of an earlier partial undo ([`Undo::undo_above`]), reported with the rest.
    failed_earlier: Vec<String>,
}

/// What undoing a stack did, one line per step.
#[derive(Debug, Default)]
pub struct UndoOutcome {
    pub undone: Vec<String>,
    /// Steps that failed, with why.
    pub failed: Vec<String>,
    /// Steps not tried because a step that failed still needs them.
    pub kept: Vec<String>,
}

impl UndoOutcome {
    pub fn is_complete(&self) -> bool {
        self.failed.is_empty() && self.kept.is_empty()
    }
}

impl Undo {
    /// An empty stack whose state file is `<root state dir>/<pid>.json` (runs as root).
    pub fn new() -> Undo {
        Undo::in_dir(&root_state_dir())
    }

    /// An empty stack whose state file is `dir/<pid>.json`; further stacks of the same
    /// process (the work directory's, or a library user preparing several targets at
    /// once) get `<pid>-<n>.json`.
    pub fn in_dir(dir: &Path) -> Undo {
        let mut undo = Undo::unrecorded();
        let pid = std::process::id();
        let name = if undo.id == 0 {
            format!("{pid}.json")
        } else {
            format!("{pid}-{}.json", undo.id)
        };
        undo.file = Some(dir.join(name));
        undo
    }

    /// An empty stack without a state file (nowhere to write one): undone all the same, and
    /// named in the message of a second signal, but `cleanup` cannot know of it.
    pub fn unrecorded() -> Undo {
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        Undo {
            id: INSTANCES.fetch_add(1, Ordering::Relaxed),
            steps: Vec::new(),
            file: None,
            failed_earlier: Vec::new(),
        }
    }

    /// Gives up the state file (it could not be written): the stack is still undone on drop.
    pub fn forget_file(&mut self) {
        if let Some(file) = self.file.take() {
            let _ = std::fs::remove_file(&file);
            let _ = std::fs::remove_file(file.with_extension("json.tmp"));
        }
        self.publish();
    }

    /// Records a step about to be done, in memory and in the state file.
    pub fn record(&mut self, step: Step) -> Result<()> {
        let kind = step.kind();
        self.steps.push(step);
        self.publish();
        self.save()?;
        pause::point(&format!("recorded:{kind}"));
        Ok(())
    }

    /// Records `step`, then does it with `act`: a kill between the two leaves a record of
    /// something not done, which undoes harmlessly, never the other way round.
    pub fn perform<T>(&mut self, step: Step, act: impl FnOnce() -> Result<T>) -> Result<T> {
        let kind = step.kind();
        self.record(step)?;
        let outcome = act();
        pause::point(&format!("done:{kind}"));
        outcome
    }

    /// Replaces the last step with what is known once it is done (the loop device's name).
    pub fn amend_last(&mut self, step: Step) -> Result<()> {
        if let Some(last) = self.steps.last_mut() {
            *last = step;
        }
        self.publish();
        self.save()
    }

    fn save(&self) -> Result<()> {
        let Some(file) = &self.file else { return Ok(()) };
        write_state(file, &self.steps)
    }

    /// Undoes, last first, the steps recorded after the last one `keep` matches, leaving
    /// that one and those below it: the owner can then release what only those need (the
    /// emulated device's media file, on a tmpfs below its FUSE mount). What could not be
    /// undone stays, and is reported when the rest is undone.
    pub fn undo_above(&mut self, keep: impl Fn(&Step) -> bool) {
        let Some(at) = self.steps.iter().rposition(keep) else {
            return;
        };
        let below = self.steps[..=at].to_vec();
        let mut above = self.steps.split_off(at + 1);
        let (id, file) = (self.id, self.file.clone());
        let outcome = undo_steps(
            &mut above,
            |_| None,
            |left| {
                let all: Vec<Step> = below.iter().chain(left).cloned().collect();
                publish(id, file.as_deref(), &all);
                if let Some(file) = &file {
                    let _ = write_state(file, &all);
                }
            },
        );
        self.steps.extend(above);
        self.failed_earlier.extend(outcome.failed);
        self.failed_earlier.extend(outcome.kept);
    }

    /// Undoes every step in reverse order, checking each; what could not be undone stays
    /// in the stack and its state file.
    pub fn undo_all(&mut self) -> UndoOutcome {
        let file = self.file.clone();
        let id = self.id;
        let outcome = undo_steps(
            &mut self.steps,
            |_| None,
            |left| {
                publish(id, file.as_deref(), left);
                if let Some(file) = &file {
                    let _ = write_state(file, left);
                }
            },
        );
        if let Some(file) = &self.file {
            if self.steps.is_empty() {
                let _ = std::fs::remove_file(file);
            }
        }
        self.publish();
        outcome
    }

    fn publish(&self) {
        publish(self.id, self.file.as_deref(), &self.steps);
    }

    /// Says on stderr what could not be undone, and what is left in place. Writes that fail
    /// (a closed terminal) are ignored: this runs in `Drop`, where a panic would abort.
    fn report_failure(&self, outcome: &UndoOutcome) {
        let mut err = std::io::stderr().lock();
        for failure in &outcome.failed {
            let _ = writeln!(err, "fsynclab: could not undo {failure}");
        }
        let left: Vec<String> = self.steps.iter().rev().map(Step::describe).collect();
        let how = match &self.file {
            Some(file) => format!(
                "`fsynclab cleanup` undoes them once the cause is gone (recorded in {})",
                file.display()
            ),
            None => "remove them by hand once the cause is gone".into(),
        };
        let fuse = if self.steps.iter().any(|s| matches!(s, Step::Fuse { .. })) {
            "; the emulated device ends with this process, so the filesystem left on it gives I/O errors"
        } else {
            ""
        };
        let _ = writeln!(err, "fsynclab: left in place: {}; {how}{fuse}", left.join(", "));
    }
}

impl Default for Undo {
    fn default() -> Self {
        Undo::new()
    }
}

impl Drop for Undo {
    fn drop(&mut self) {
        let mut outcome = self.undo_all();
        outcome.failed.splice(0..0, std::mem::take(&mut self.failed_earlier));
        if !outcome.is_complete() {
            TEARDOWN_FAILED.store(true, Ordering::SeqCst);
            self.report_failure(&outcome);
        }
        forget(self.id);
    }
}

/// Writes `steps` to the state file `file` atomically (temporary file, then rename; a kill
/// in between leaves the temporary file, which `cleanup` reads as the newer state).
fn write_state(file: &Path, steps: &[Step]) -> Result<()> {
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let state = StateFile {
        pid: std::process::id(),
        start_time: start_time(std::process::id()),
        steps: steps.to_vec(),
    };
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&state)?)
        .and_then(|()| std::fs::rename(&tmp, file))
        .with_context(|| format!("cannot write the state file {}", file.display()))
}

/// Undoes `steps` from the last to the first, keeping in `steps` what is left: the steps
/// that failed or that `refuse` gives a reason not to touch, and the containers below a
/// container left (a loop device under a mount still there, the directory around both).
/// `saved` gets what is left after each step undone.
fn undo_steps(
    steps: &mut Vec<Step>,
    refuse: impl Fn(&Step) -> Option<String>,
    mut saved: impl FnMut(&[Step]),
) -> UndoOutcome {
    let mut outcome = UndoOutcome::default();
    let mut blocker: Option<String> = None;
    let mut i = steps.len();
    while i > 0 {
        i -= 1;
        let step = steps[i].clone();
        let failure = if let Some(why) = refuse(&step) {
            Some(why)
        } else if let (Some(blocker), true) = (&blocker, step.is_container()) {
            outcome
                .kept
                .push(format!("{} (as {blocker} is still there)", step.describe()));
            continue;
        } else {
            pause::point(&format!("undo:{}", step.kind()));
            match step.undo() {
                Ok(()) => None,
                Err(e) => Some(format!("{e:#}")),
            }
        };
        match failure {
            None => {
                steps.remove(i);
                outcome.undone.push(step.describe());
                saved(steps);
                pause::point(&format!("undone:{}", step.kind()));
            }
            Some(why) => {
                outcome.failed.push(format!("{}: {why}", step.describe()));
                if step.is_container() && blocker.is_none() {
                    blocker = Some(step.describe());
                }
            }
        }
    }
    outcome
}

/// An undo stack that holds steps: its state file, and its steps described, last first.
type LiveStack = (Option<PathBuf>, Vec<String>);

/// The undo stacks of this process that hold steps, for the message of a second signal.
static LIVE: Mutex<BTreeMap<u64, LiveStack>> = Mutex::new(BTreeMap::new());

fn publish(id: u64, file: Option<&Path>, steps: &[Step]) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if steps.is_empty() {
        live.remove(&id);
    } else {
        let described = steps.iter().rev().map(Step::describe).collect();
        live.insert(id, (file.map(Path::to_path_buf), described));
    }
    crate::role::stop::set_last_words(last_words(&live));
}

fn forget(id: u64) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if live.remove(&id).is_some() {
        crate::role::stop::set_last_words(last_words(&live));
    }
}

/// What a second signal prints before exiting at once: everything it leaves, and how to
/// undo it.
fn last_words(live: &BTreeMap<u64, LiveStack>) -> String {
    let recorded: Vec<&str> = live
        .values()
        .filter(|(file, _)| file.is_some())
        .flat_map(|(_, steps)| steps.iter().map(String::as_str))
        .collect();
    let unrecorded: Vec<&str> = live
        .values()
        .filter(|(file, _)| file.is_none())
        .flat_map(|(_, steps)| steps.iter().map(String::as_str))
        .collect();
    let mut text = String::from("fsynclab: second signal: exiting at once");
    if recorded.is_empty() && unrecorded.is_empty() {
        text.push_str("; nothing was left to undo");
    }
    if !recorded.is_empty() {
        text.push_str(&format!(
            ", without undoing {}; `fsynclab cleanup` undoes them",
            recorded.join(", ")
        ));
    }
    if !unrecorded.is_empty() {
        text.push_str(&format!("; remove by hand: {}", unrecorded.join(", ")));
    }
    text.push('\n');
    text
}

/// The start time of process `pid`, field 22 of `/proc/PID/stat` (Documentation/
/// filesystems/proc.rst, table 1-4); the fields are counted after the `)` that ends the
/// command name, which may itself contain spaces.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    // After the name come field 3 (state) onwards: starttime is field 22.
    after_name.split_whitespace().nth(22 - 3)?.parse().ok()
}

/// Whether the process that wrote `state` is still running.
fn alive(state: &StateFile) -> bool {
    match (start_time(state.pid), state.start_time) {
        (Some(now), Some(then)) => now == then,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Where this user's runs record their steps: [`STATE_DIR_ENV`] when set; [`STATE_DIR`]
/// for root; for anyone else `$XDG_RUNTIME_DIR/fsynclab` when that is a directory of
/// theirs (a non-root run has only a work directory to record); None otherwise.
pub fn user_state_dir() -> Option<PathBuf> {
    if crate::sys::is_root() || std::env::var_os(STATE_DIR_ENV).is_some_and(|d| !d.is_empty()) {
        return Some(root_state_dir());
    }
    let runtime = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?);
    let meta = std::fs::metadata(&runtime).ok()?;
    use std::os::unix::fs::MetadataExt as _;
    // SAFETY: geteuid has no preconditions.
    let me = unsafe { libc::geteuid() };
    (runtime.is_absolute() && meta.is_dir() && meta.uid() == me).then(|| runtime.join("fsynclab"))
}

/// A state file found in a state directory: `<pid>.json` or `<pid>-<n>.json`, with the
/// temporary file a kill may have left beside it.
struct Found {
    /// `dir/<pid>[-<n>].json`
    file: PathBuf,
    /// The pid its name gives.
    pid: u32,
    /// The newest state it holds: the temporary file's if complete, else the file's.
    state: Result<StateFile, String>,
}

/// The state files in `dir`, in name order. A name that is not a state file's is skipped.
fn find_states(dir: &Path) -> Result<Vec<Found>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(anyhow::anyhow!("cannot read {}: {e}", dir.display())),
    };
    let mut stems: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter_map(|name| {
            let stem = name.strip_suffix(".json.tmp").or_else(|| name.strip_suffix(".json"))?;
            let pid = stem.split_once('-').map_or(stem, |(pid, _)| pid);
            pid.parse::<u32>().ok().map(|_| stem.to_string())
        })
        .collect();
    stems.sort();
    stems.dedup();
    let read = |path: &Path| -> Option<Result<StateFile, String>> {
        let text = std::fs::read_to_string(path).ok()?;
        Some(serde_json::from_str(&text).map_err(|e| format!("{}: not an fsynclab state file ({e})", path.display())))
    };
    Ok(stems
        .into_iter()
        .filter_map(|stem| {
            let file = dir.join(format!("{stem}.json"));
            let pid = stem
                .split_once('-')
                .map_or(stem.as_str(), |(pid, _)| pid)
                .parse()
                .ok()?;
            let state = match (read(&file.with_extension("json.tmp")), read(&file)) {
                (Some(Ok(newer)), _) => Ok(newer),
                (_, Some(state)) => state,
                (Some(Err(_)), None) => Ok(StateFile {
                    pid,
                    start_time: None,
                    steps: Vec::new(),
                }),
                // Removed since: its run has just ended.
                (None, None) => return None,
            };
            Some(Found { file, pid, state })
        })
        .collect())
}

/// The pids of dead processes whose leftovers are recorded in `dir` (for a hint to run
/// `fsynclab cleanup`).
pub fn dead_leftovers(dir: &Path) -> Vec<u32> {
    let mut pids: Vec<u32> = find_states(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| f.state.ok())
        .filter(|s| s.pid != std::process::id() && !s.steps.is_empty() && !alive(s))
        .map(|s| s.pid)
        .collect();
    pids.dedup();
    pids
}

/// Another process's changed sysctls recorded in `dir`: its pid, whether it is still
/// running, and the changes (`vm.dirty_ratio=5 (was 20)`).
pub struct SysctlChanges {
    pub pid: u32,
    pub running: bool,
    pub changes: Vec<String>,
}

/// The sysctl changes other processes recorded in `dir` and have not undone.
pub fn sysctl_changes(dir: &Path) -> Vec<SysctlChanges> {
    find_states(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| f.state.ok())
        .filter(|s| s.pid != std::process::id())
        .filter_map(|s| {
            let changes: Vec<String> = s
                .steps
                .iter()
                .filter_map(|step| match step {
                    Step::Sysctl { name, previous } => {
                        let now = sysctl::read(name).map_or("?".into(), |v| v.to_string());
                        Some(format!("vm.{name}={now} (was {previous})"))
                    }
                    _ => None,
                })
                .collect();
            (!changes.is_empty()).then(|| SysctlChanges {
                pid: s.pid,
                running: alive(&s),
                changes,
            })
        })
        .collect()
}

/// The directories recorded in the state files of `dir` (for the reminder about work
/// directories of killed runs).
pub fn recorded_directories(dir: &Path) -> Vec<PathBuf> {
    find_states(dir)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| f.state.ok())
        .flat_map(|s| s.steps)
        .filter_map(|step| match step {
            Step::Directory { path } => Some(path),
            _ => None,
        })
        .collect()
}

/// What `fsynclab cleanup` did, one line per step, each prefixed with the run's pid.
#[derive(Debug, Default)]
pub struct CleanupReport {
    /// Steps undone and checked.
    pub undone: Vec<String>,
    /// Steps that could not be undone, or that cleanup refused, with why.
    pub failed: Vec<String>,
    /// Steps not tried because a failed one still needs them.
    pub kept: Vec<String>,
    /// State files kept because something they record is left.
    pub kept_files: Vec<PathBuf>,
    /// Runs still going, left alone.
    pub running: Vec<u32>,
}

/// How long `cleanup` waits for a tool a killed run had started (a `mount`, an `mkfs`) to
/// end: it dies with the run, but may finish its system call first.
const STRAGGLER_WAIT: Duration = Duration::from_secs(10);

/// Processes other than this one whose command line names a path inside one of `dirs`.
fn stragglers(dirs: &[PathBuf]) -> Vec<String> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let me = std::process::id();
    procs
        .filter_map(|e| e.ok())
        .filter_map(|e| Some((e.file_name().to_str()?.parse::<u32>().ok()?, e.path())))
        .filter(|(pid, _)| *pid != me)
        .filter_map(|(pid, path)| {
            let cmdline = std::fs::read(path.join("cmdline")).ok()?;
            let args: Vec<String> = cmdline
                .split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect();
            args.iter()
                .any(|a| dirs.iter().any(|d| Path::new(a).starts_with(d)))
                .then(|| format!("pid {pid} ({})", args.join(" ").trim()))
        })
        .collect()
}

/// Undoes the leftovers of every fsynclab process that died without cleaning up (SIGKILL,
/// the OOM killer): the state files in `dir` whose process is gone. Only steps with
/// fsynclab's shape are undone; every undo is checked; a state file stays while anything
/// it records is left. Sysctls are restored only while no running fsynclab holds the
/// sysctl lock.
pub fn cleanup_leftovers(dir: &Path) -> Result<CleanupReport> {
    let mut report = CleanupReport::default();
    let found = find_states(dir)?;
    if found.is_empty() {
        return Ok(report);
    }
    let sysctl_lock = sysctl::try_lock(dir).ok().flatten();
    for Found { file, pid, state } in found {
        let mut state = match state {
            Ok(s) if s.pid == pid => s,
            Ok(s) => {
                report.failed.push(format!(
                    "{}: records pid {}, not the {pid} its name says; left alone",
                    file.display(),
                    s.pid
                ));
                continue;
            }
            Err(e) => {
                report.failed.push(format!("{e}; left alone"));
                continue;
            }
        };
        if state.pid == std::process::id() || alive(&state) {
            report.running.push(state.pid);
            continue;
        }
        let tmp = file.with_extension("json.tmp");
        if state.steps.is_empty() {
            let _ = std::fs::remove_file(&tmp);
            let _ = std::fs::remove_file(&file);
            continue;
        }

        // Tools the run had started must be gone before their work is undone.
        let dirs: Vec<PathBuf> = state
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Directory { path } if s.refusal(pid).is_none() => Some(path.clone()),
                _ => None,
            })
            .collect();
        let deadline = Instant::now() + STRAGGLER_WAIT;
        let mut busy = stragglers(&dirs);
        while !busy.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            busy = stragglers(&dirs);
        }
        if !busy.is_empty() {
            report.failed.push(format!(
                "pid {pid}: {} still at work in its directory; run `fsynclab cleanup` again when it has ended",
                busy.join(", ")
            ));
            report.kept_files.push(file);
            continue;
        }

        // Steps cleanup must not undo stay, with the reason, and so do the containers below.
        let refuse = |step: &Step| {
            step.refusal(pid).map(|why| format!("{why}; left alone")).or_else(|| {
                (matches!(step, Step::Sysctl { .. }) && sysctl_lock.is_none()).then(|| {
                    "a running fsynclab is changing sysctls now; run `fsynclab cleanup` again after it ends".into()
                })
            })
        };
        let start = state.start_time;
        let outcome = undo_steps(&mut state.steps, refuse, |left| {
            let _ = write_state_for(&file, pid, start, left);
        });
        let prefix = |lines: Vec<String>| lines.into_iter().map(move |l| format!("pid {pid}: {l}"));
        report.undone.extend(prefix(outcome.undone));
        report.failed.extend(prefix(outcome.failed));
        report.kept.extend(prefix(outcome.kept));
        if state.steps.is_empty() {
            std::fs::remove_file(&file)
                .or_else(|e| match e.kind() {
                    std::io::ErrorKind::NotFound => Ok(()),
                    _ => Err(e),
                })
                .with_context(|| format!("cannot remove {}", file.display()))?;
            let _ = std::fs::remove_file(&tmp);
        } else {
            write_state_for(&file, pid, state.start_time, &state.steps)?;
            report.kept_files.push(file);
        }
    }
    Ok(report)
}

/// Rewrites a dead run's state file with the steps left (keeping its pid and start time).
fn write_state_for(file: &Path, pid: u32, start_time: Option<u64>, steps: &[Step]) -> Result<()> {
    let state = StateFile {
        pid,
        start_time,
        steps: steps.to_vec(),
    };
    let tmp = file.with_extension("json.tmp");
    std::fs::write(&tmp, serde_json::to_vec_pretty(&state)?)
        .and_then(|()| std::fs::rename(&tmp, file))
        .with_context(|| format!("cannot write the state file {}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No process has this pid (pid_max is at most 2^22).
    const DEAD: u32 = 4_000_000_001;

    fn write_dead_state(dir: &Path, name: &str, steps: Vec<Step>) -> PathBuf {
        let file = dir.join(name);
        let state = StateFile {
            pid: DEAD,
            start_time: Some(1),
            steps,
        };
        std::fs::write(&file, serde_json::to_vec(&state).unwrap()).unwrap();
        file
    }

    #[test]
    fn undoes_in_reverse_and_removes_state_file() {
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let outer = work.path().join("fsynclab-outer");
        let inner = outer.join("inner");
        let mut undo = Undo::in_dir(state.path());
        let file = undo.file.clone().unwrap();
        {
            undo.perform(Step::Directory { path: outer.clone() }, || {
                Ok(std::fs::create_dir(&outer)?)
            })
            .unwrap();
            undo.perform(Step::Directory { path: inner.clone() }, || {
                Ok(std::fs::create_dir(&inner)?)
            })
            .unwrap();
            let saved: StateFile = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
            assert_eq!(saved.steps.len(), 2);
        }
        drop(undo);
        assert!(!outer.exists());
        assert!(!file.exists());
        assert!(!teardown_failed());
    }

    #[test]
    fn a_step_recorded_but_never_done_undoes_harmlessly() {
        let work = tempfile::tempdir().unwrap();
        let mut undo = Undo::unrecorded();
        undo.record(Step::Directory {
            path: work.path().join("never-made"),
        })
        .unwrap();
        assert!(undo.undo_all().is_complete());
    }

    #[test]
    fn a_failed_container_keeps_the_ones_below_it() {
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join("d");
        std::fs::create_dir(&dir).unwrap();
        let mut steps = vec![
            Step::Directory { path: dir.clone() },
            // No image recorded: this undo fails, and the directory must stay.
            Step::Loop {
                device: "/dev/loop99".into(),
                image: None,
            },
        ];
        let outcome = undo_steps(&mut steps, |_| None, |_| {});
        assert_eq!(outcome.failed.len(), 1, "{outcome:?}");
        assert_eq!(outcome.kept.len(), 1, "{outcome:?}");
        assert!(
            outcome.kept[0].contains("as loop device /dev/loop99 is still there"),
            "{outcome:?}"
        );
        assert_eq!(steps.len(), 2);
        assert!(dir.exists());
    }

    #[test]
    fn issue8_cleanup_undoes_dead_processes_only() {
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let dead = work.path().join(format!("fsynclab-scratch-{DEAD}-00000000"));
        std::fs::create_dir(&dead).unwrap();
        let file = write_dead_state(
            state.path(),
            &format!("{DEAD}.json"),
            vec![Step::Directory { path: dead.clone() }],
        );
        let mine = state.path().join(format!("{}.json", std::process::id()));
        std::fs::write(
            &mine,
            serde_json::to_vec(&StateFile {
                pid: std::process::id(),
                start_time: start_time(std::process::id()),
                steps: vec![],
            })
            .unwrap(),
        )
        .unwrap();
        let report = cleanup_leftovers(state.path()).unwrap();
        assert!(!dead.exists());
        assert!(!file.exists());
        assert!(mine.exists(), "a running process's state is left alone");
        assert_eq!(report.undone.len(), 1, "{report:?}");
        assert_eq!(report.running, [std::process::id()]);
    }

    #[test]
    fn issue8_cleanup_removes_only_paths_of_fsynclab_shape() {
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        // A directory of someone else's, a directory of another pid's shape, and a path
        // that climbs out of a scratch directory: none may go.
        let precious = work.path().join("precious");
        let other_pid = work.path().join("fsynclab-scratch-12-00000000");
        let climbing = work.path().join(format!("fsynclab-scratch-{DEAD}-00000000"));
        for d in [&precious, &other_pid, &climbing] {
            std::fs::create_dir(d).unwrap();
        }
        let ours = work.path().join(format!("fsynclab-{DEAD}-0000abcd"));
        std::fs::create_dir(&ours).unwrap();
        let file = write_dead_state(
            state.path(),
            &format!("{DEAD}.json"),
            vec![
                Step::Directory { path: precious.clone() },
                Step::Directory {
                    path: other_pid.clone(),
                },
                Step::Directory {
                    path: climbing.join("..").join("precious"),
                },
                Step::Mount {
                    mount_point: PathBuf::from("/proc"),
                },
                Step::Sysctl {
                    name: "swappiness".into(),
                    previous: 0,
                },
                Step::Directory { path: ours.clone() },
            ],
        );
        let report = cleanup_leftovers(state.path()).unwrap();
        assert!(precious.exists() && other_pid.exists() && climbing.exists());
        assert!(
            !ours.exists(),
            "the work directory of fsynclab's shape goes: {report:?}"
        );
        assert_eq!(report.failed.len(), 5, "{report:?}");
        assert!(report.failed.iter().all(|f| f.contains("left alone")), "{report:?}");
        assert!(file.exists(), "the state file stays while anything it records is left");
        assert_eq!(report.kept_files, std::slice::from_ref(&file));
        let left: StateFile = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(left.steps.len(), 5);
    }

    #[test]
    fn issue8_cleanup_reads_the_state_a_kill_left_half_written() {
        let state = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let dir = work.path().join(format!("fsynclab-scratch-{DEAD}-00000001"));
        std::fs::create_dir(&dir).unwrap();
        // Killed between writing the temporary file and renaming it: the temporary file
        // holds the newer state.
        let old = write_dead_state(state.path(), &format!("{DEAD}.json"), vec![]);
        let tmp = write_dead_state(
            state.path(),
            &format!("{DEAD}.json.tmp"),
            vec![Step::Directory { path: dir.clone() }],
        );
        let report = cleanup_leftovers(state.path()).unwrap();
        assert!(!dir.exists(), "{report:?}");
        assert!(!old.exists() && !tmp.exists());
        // Killed while writing the first temporary file: nothing was done yet.
        std::fs::write(state.path().join(format!("{DEAD}-1.json.tmp")), b"{\"pid\":").unwrap();
        cleanup_leftovers(state.path()).unwrap();
        assert_eq!(std::fs::read_dir(state.path()).unwrap().count(), 0);
    }

    #[test]
    fn start_time_tells_processes_apart() {
        let mine = start_time(std::process::id()).expect("own start time");
        assert!(start_time(1).is_some_and(|init| init <= mine));
        assert_eq!(start_time(u32::MAX - 1), None);
    }

    #[test]
    fn last_words_name_what_is_left_and_how_to_undo_it() {
        let mut live = BTreeMap::new();
        assert_eq!(
            last_words(&live),
            "fsynclab: second signal: exiting at once; nothing was left to undo\n"
        );
        live.insert(
            0,
            (
                Some(PathBuf::from("/run/fsynclab/1.json")),
                vec!["mount /x/mnt".to_string(), "loop device /dev/loop0".to_string()],
            ),
        );
        live.insert(1, (None, vec!["directory /d/fsynclab-1-00000000".to_string()]));
        assert_eq!(
            last_words(&live),
            "fsynclab: second signal: exiting at once, without undoing mount /x/mnt, loop device /dev/loop0; \
             `fsynclab cleanup` undoes them; remove by hand: directory /d/fsynclab-1-00000000\n"
        );
    }
}
