//! The undo stack of a running process: steps recorded before they are done, mirrored in
//! the state file after each, undone in reverse (checked) when the stack is dropped, and
//! what a second signal prints before the process exits at once.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use anyhow::{Context as _, Result};

use super::super::pause;
use super::file::write_state;
use super::{root_state_dir, Step};

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
    pub(super) file: Option<PathBuf>,
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

    /// The steps in place, first done first.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }

    /// Undoes, last first, the steps above the last one `anchor` matches that `which`
    /// selects; the others stay where they are (a power cut undoes the scratch filesystem's
    /// mount, loop device and emulated device, and keeps the tmpfs below and the sysctls
    /// above). The first step that cannot be undone stops it with its error, and stays in
    /// the stack for the teardown.
    pub fn undo_selected_above(&mut self, anchor: impl Fn(&Step) -> bool, which: impl Fn(&Step) -> bool) -> Result<()> {
        let Some(at) = self.steps.iter().rposition(anchor) else {
            return Ok(());
        };
        let mut i = self.steps.len();
        while i > at + 1 {
            i -= 1;
            let step = self.steps[i].clone();
            if !which(&step) {
                continue;
            }
            pause::point(&format!("undo:{}", step.kind()));
            step.undo()
                .with_context(|| format!("cannot undo {}", step.describe()))?;
            self.steps.remove(i);
            self.publish();
            if let Some(file) = &self.file {
                let _ = write_state(file, &self.steps);
            }
            pause::point(&format!("undone:{}", step.kind()));
        }
        Ok(())
    }

    /// The step on top of the stack (the last one recorded and not undone).
    pub fn last(&self) -> Option<&Step> {
        self.steps.last()
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

/// Undoes `steps` from the last to the first, keeping in `steps` what is left: the steps
/// that failed or that `refuse` gives a reason not to touch, and the containers below a
/// container left (a loop device under a mount still there, the directory around both).
/// `saved` gets what is left after each step undone.
pub(super) fn undo_steps(
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
    crate::signals::set_last_words(last_words(&live));
}

fn forget(id: u64) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if live.remove(&id).is_some() {
        crate::signals::set_last_words(last_words(&live));
    }
}

/// What a second signal prints before exiting at once: everything it leaves, and how to
/// undo it.
pub(super) fn last_words(live: &BTreeMap<u64, LiveStack>) -> String {
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
