//! The kinds of failure the command line tells apart: bad input (exit status 2, one line
//! saying what is valid), a run `--expect` could not judge (125), and everything else (1).

use thiserror::Error;

/// The user asked for something that cannot be done as asked: unknown scenario or
/// parameter, malformed value, missing directory, not enough space. Exit status 2.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// A run with `--expect` that could not be made (a kernel that does not exist or did not
/// boot, a testbed refused, a figure the run lacks): exit status 125, which `git bisect
/// run` reads as "cannot test this commit" rather than as good or bad.
#[derive(Debug, Error)]
#[error("the run could not be made, so --expect cannot decide (exit status 125)")]
pub struct NotMade;

/// The exit status `--expect` gives a run that could not be made.
pub const NOT_MADE: i32 = 125;

/// The exit status for an error: 125 when the chain holds [`NotMade`], 2 when any cause in
/// it is a [`Usage`] error, else 1.
pub fn exit_status(err: &anyhow::Error) -> i32 {
    if err.downcast_ref::<NotMade>().is_some() {
        NOT_MADE
    } else if err
        .chain()
        .any(|c| c.is::<Usage>() || c.is::<crate::params::ParamError>())
    {
        2
    } else {
        1
    }
}
