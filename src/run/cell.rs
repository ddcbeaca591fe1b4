//! The one recorded cell: a planned run on a freshly made testbed, measured through a
//! [`Session`], the testbed undone, a signal checked for, and the result recorded in the
//! store (at its matrix place when it has one; kept in a file elsewhere when the store
//! cannot take it). A matrix's runs, a farm task's run and a reproduction's runs are all
//! made here; each caller says the line its progress shows. A cell of another kernel is
//! made in a guest booting it ([`guest`]), its result read back and recorded the same way.
//!
//! Every run fsynclab records goes through [`record`], the one recording step: those made
//! here, a command's own run on a testbed it opened ([`Session::measure_shown`]: run, load,
//! probe, and suite's scenarios on their shared testbed), a program's traced calls (exec
//! --explain), a watch, and what a guest brought back for a command run under `--kernel`
//! ([`super::on_kernel`]).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};

use super::engine::{Finished, Planned, Status};
use super::guest::{self, Booted};
use super::session::{Opened, Session};
use crate::matrix::claim;
use crate::recording::{self, Recording};
use crate::report::{self, Format};
use crate::result::RunResult;
use crate::store::{MatrixPlace, RunId};
use crate::testbed::vm::{Ended, Kernel};
use crate::testbed::TestbedRequest;

/// One run to make.
pub(crate) struct Cell<'a> {
    pub(crate) planned: &'a Planned,
    pub(crate) request: &'a TestbedRequest,
    /// How lines name the run: `device=ram #2`.
    pub(crate) label: &'a str,
    /// Where the run goes in its matrix, when it has one.
    pub(crate) place: Option<&'a MatrixPlace>,
    /// Whether the place is claimed in the store first, so that processes continuing one
    /// matrix share its runs.
    pub(crate) claim: bool,
    /// What a line about an interruption starts with: `fsynclab: matrix m3`.
    pub(crate) who: &'a str,
    /// Another kernel to make the run on (a matrix's `kernel=` axis); none: this one.
    pub(crate) kernel: Option<&'a OnKernel>,
}

/// A run made in a guest booting another kernel ([`guest`]): the kernel, the run's
/// arguments inside (`run SCENARIO --set ... --scratch ...`), and how long the guest may
/// take, boot included.
pub(crate) struct OnKernel {
    pub(crate) kernel: Kernel,
    pub(crate) args: Vec<String>,
    pub(crate) limit: Duration,
}

/// A run made and recorded.
pub(crate) struct Recorded {
    pub(crate) id: Option<RunId>,
    pub(crate) finished: Finished,
    /// From the start of [`make`] to the run recorded.
    pub(crate) took: Duration,
    /// A signal that came after the measurement: the run is whole and kept.
    pub(crate) late_signal: Option<i32>,
}

impl Recorded {
    /// `LABEL: run 42{extra} (3 calls failed, recorded) in 1.2 s`.
    pub(crate) fn line(&self, label: &str, extra: &str) -> String {
        let status = match &self.finished.status {
            Status::Errors { count, .. } => format!(" ({count} calls failed, recorded)"),
            _ => String::new(),
        };
        format!(
            "{label}: run {}{extra}{status} in {:.1} s",
            self.id.map_or("-".to_string(), |i| i.to_string()),
            self.took.as_secs_f64()
        )
    }
}

/// What making one run came to.
pub(crate) enum Made {
    /// Made and recorded.
    Run(Box<Recorded>),
    /// Another process makes it, or has stored it meanwhile: why.
    LeftToOther(String),
    /// It could not be made; the run was not kept.
    Failed(Failure),
    /// A signal stopped it; the run was not kept.
    Interrupted(i32),
}

/// Why a run could not be made.
pub(crate) enum Failure {
    /// The testbed could not be made.
    Prepare(anyhow::Error),
    /// The measurement failed.
    Measure(anyhow::Error),
}

/// Makes `cell`: claimed (when asked), measured on a freshly made testbed, recorded in
/// `recording`. An error is one of the store's (a claim, a record that could not be kept).
pub(crate) fn make(cell: &Cell<'_>, recording: &mut Recording) -> Result<Made> {
    // Claimed before anything is made: another process may be making this run.
    if let (true, Some(place), Some(store)) = (cell.claim, cell.place, recording.store_mut()) {
        if let Some(why) = claim::take(store, place)? {
            return Ok(Made::LeftToOther(format!("{}: {why}; left to it", cell.label)));
        }
    }
    let t0 = Instant::now();
    let measured = match cell.kernel {
        None => measure_here(cell),
        Some(on) => measure_in_guest(cell, on),
    };
    let (mut finished, late_signal) = match measured {
        Ok(m) => m,
        Err(made) => return Ok(made),
    };
    if let Status::Interrupted(sig) = finished.status {
        note!("{}: interrupted during {}; that run was not kept", cell.who, cell.label);
        return Ok(Made::Interrupted(sig));
    }
    let id = record(recording, &mut finished.result, cell.place, Say::Nothing)?;
    Ok(Made::Run(Box::new(Recorded {
        id,
        finished,
        took: t0.elapsed(),
        late_signal,
    })))
}

/// Whether [`record`] says where a run went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Say {
    /// `stored as run 42 in ~/...` on stderr: a run a command made on its own (run, load,
    /// probe, exec --explain, watch, and those made in a guest).
    Stored,
    /// Nothing: the caller's progress line names the run (a matrix's, a reproduction's, a
    /// suite's scenarios).
    Nothing,
}

/// The one recording step of every run, however it was made (on a testbed made for it or
/// shared, in a guest, a program traced, a watch): `result` recorded in `recording` (at
/// `place` in a matrix, when it has one) and told where it went. When the store fails, the
/// result is kept in a file instead and the error says where: a measurement is never lost.
pub(crate) fn record(
    recording: &mut Recording,
    result: &mut RunResult,
    place: Option<&MatrixPlace>,
    say: Say,
) -> Result<Option<RunId>> {
    let id = recording
        .record(result, place)
        .map_err(|e| recording::keep_elsewhere(result, e))?;
    if let (Some(id), Some(path), Say::Stored) = (id, recording.path(), say) {
        note!("stored as run {id} in {}", recording::shown_store(path));
    }
    Ok(id)
}

/// The run measured on this kernel, on a freshly made testbed (mkfs, loop device, emulated
/// disk, sysctls, all undone when the session closes at the end of the run), and a signal
/// that came after it; or what the cell came to when it could not be measured.
fn measure_here(cell: &Cell<'_>) -> Result<(Finished, Option<i32>), Made> {
    let session = match Session::open(cell.request, cell.planned.plan.space_needed(), "that run was not made") {
        Ok(Opened::Ready(s)) => s,
        Ok(Opened::Interrupted(sig)) => return Err(Made::Interrupted(sig)),
        Err(e) => return Err(Made::Failed(Failure::Prepare(e))),
    };
    let mut exporter = report::exporter(Format::Text, true);
    let finished = session
        .measure_shown(cell.planned, false, exporter.as_mut(), true, false)
        .finished;
    let late_signal = session.close();
    match finished {
        Ok(f) => Ok((f, late_signal)),
        Err(e) => Err(Made::Failed(Failure::Measure(e))),
    }
}

/// The run measured in a guest booting `on.kernel`, on a disk the host serves, and read
/// back from the result the guest wrote ([`guest::boot`]).
fn measure_in_guest(cell: &Cell<'_>, on: &OnKernel) -> Result<(Finished, Option<i32>), Made> {
    let exe = std::env::current_exe().map_err(|e| Made::Failed(Failure::Prepare(e.into())))?;
    let argv = std::iter::once(exe.into_os_string())
        .chain(on.args.iter().map(OsString::from))
        .collect();
    let booted = guest::boot(&guest::Boot {
        kernel: &on.kernel,
        request: cell.request,
        space_needed: cell.planned.plan.space_needed(),
        guest_disk: cell.planned.plan.guest_disk(),
        argv,
        rw_dirs: Vec::new(),
        read_dirs: Vec::new(),
        limit: on.limit,
        quiet: true,
    });
    let release = &on.kernel.release;
    match booted {
        Err(e) => Err(Made::Failed(Failure::Prepare(e))),
        Ok(Booted::Interrupted(sig)) => Err(Made::Interrupted(sig)),
        Ok(Booted::Ran {
            ended,
            mut results,
            last_words,
            ..
        }) => match (ended, results.pop()) {
            (Ended::Interrupted(sig), _) => {
                note!(
                    "{}: interrupted during {}; the guest was ended and that run not kept",
                    cell.who,
                    cell.label
                );
                Err(Made::Interrupted(sig))
            }
            (Ended::Exited(_), Some(result)) => {
                let status = Status::of_result(&result);
                Ok((Finished { result, status }, None))
            }
            (Ended::Exited(code), None) => Err(Made::Failed(Failure::Measure(anyhow!(
                "the guest booting {release} brought no result back (exit status {code}): {}{}",
                crate::testbed::vm::why_no_result(code),
                last_words.map_or(String::new(), |w| format!("; the console's last words: {w}"))
            )))),
            (Ended::QemuKilled(sig), _) => Err(Made::Failed(Failure::Measure(anyhow!(
                "the guest booting {release} did not end: {}",
                crate::testbed::vm::qemu_killed(sig)
            )))),
            (Ended::TimedOut, _) => Err(Made::Failed(Failure::Measure(anyhow!(
                "the guest booting {release} had not finished after {}; it was ended, and its disk undone",
                crate::units::format_duration(on.limit)
            )))),
        },
    }
}
