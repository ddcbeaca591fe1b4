//! One way to run, for `run`, `load`, `probe`, `suite`, `matrix` and `exec`: a session
//! watches the signals, opens the testbed a [`TestbedRequest`] names, measures planned
//! scenarios on it through the [`engine`] (this is the one place that runs it), or runs a
//! command on it; the testbed is undone when the session closes (or is dropped, on every way
//! out).
//!
//! A signal at any phase ends the command with 128 + its number and a clean machine:
//! - while the testbed is being made: what was made is undone, nothing is measured
//!   ([`Session::open`] returns [`Opened::Interrupted`]);
//! - while measuring: the run ends early and its result, marked interrupted, is kept;
//! - after the measurement (printing, recording) or during the teardown: the command still
//!   finishes its work, then [`Session::close`] reports the signal.
//!
//! A second SIGINT, SIGTERM or SIGQUIT exits at once, saying what it leaves for `fsynclab
//! cleanup` ([`crate::signals`]).

use anyhow::Result;

use crate::observe::Observer;
use crate::report::{Exporter, Live};
use crate::run::engine::{self, Finished, Planned};
use crate::signals;
use crate::stop::Stop;
use crate::testbed::{self, Prepared, TestbedRequest};

/// A testbed opened under a signal watch.
pub(crate) struct Session {
    stop: Stop,
    testbed: Prepared,
}

/// What [`Session::measure_shown`] came to.
pub(crate) struct Shown {
    pub(crate) finished: Result<Finished>,
    /// Whether a live line could not be printed because stdout's reader is gone.
    pub(crate) stdout_closed: bool,
}

/// What [`Session::open`] gives.
pub(crate) enum Opened {
    Ready(Box<Session>),
    /// A signal came while the testbed was being made: it is undone, and said so.
    Interrupted(i32),
}

impl Session {
    /// Watches the signals, then makes the testbed `request` names (room for
    /// `space_needed` bytes of files). `not_done` says, after a signal, what did not happen:
    /// "nothing was measured", "the command was not run".
    pub(crate) fn open(request: &TestbedRequest, space_needed: u64, not_done: &str) -> Result<Opened> {
        // Signals first: a Ctrl-C while a scratch target is being made must not kill us halfway.
        let stop = signals::watch()?;
        let testbed = match testbed::prepare(request, space_needed) {
            Ok(t) => t,
            // Ctrl-C reaches the mkfs or mount we were waiting for: say so rather than its error.
            Err(_) if stop.signal().is_some() => {
                let sig = stop.signal().unwrap_or(libc::SIGINT);
                let undone = if testbed::state::teardown_failed() {
                    "what could not be undone is listed above"
                } else {
                    "what was set up is undone"
                };
                note!("fsynclab: interrupted by signal {sig} while preparing the target; {undone}");
                return Ok(Opened::Interrupted(sig));
            }
            Err(e) => return Err(e),
        };
        if let Some(sig) = stop.signal() {
            note!("fsynclab: interrupted by signal {sig} while preparing the target; {not_done}");
            drop(testbed);
            return Ok(Opened::Interrupted(sig));
        }
        Ok(Opened::Ready(Box::new(Session { stop, testbed })))
    }

    /// The stop every signal sets, which ends the measurement.
    pub(crate) fn stop(&self) -> &Stop {
        &self.stop
    }

    pub(crate) fn testbed(&self) -> &Prepared {
        &self.testbed
    }

    /// Measures `planned` in a new work directory on the testbed (kept afterwards with
    /// `keep`), telling `observer` what happens as it happens.
    pub(crate) fn measure(&self, planned: &Planned, keep: bool, observer: &mut dyn Observer) -> Result<Finished> {
        engine::run(planned, &self.testbed, keep, &self.stop, observer)
    }

    /// Measures `planned` as [`Session::measure`] does, with its progress on stderr (not
    /// when `quiet`) and `exporter`'s live lines on stdout; with `stop_when_unread`, a
    /// reader of stdout that goes away ends the run instead of it measuring for nobody.
    pub(crate) fn measure_shown(
        &self,
        planned: &Planned,
        keep: bool,
        exporter: &mut dyn Exporter,
        quiet: bool,
        stop_when_unread: bool,
    ) -> Shown {
        let mut live = Live::new(exporter, quiet, stop_when_unread.then_some(&self.stop));
        let finished = self.measure(planned, keep, &mut live);
        live.finish();
        Shown {
            finished,
            stdout_closed: live.stdout_closed(),
        }
    }

    /// Undoes the testbed; returns the signal that came during the session, if one did.
    pub(crate) fn close(self: Box<Session>) -> Option<i32> {
        let Session { stop, testbed } = *self;
        drop(testbed);
        stop.signal()
    }
}
