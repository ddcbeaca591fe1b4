//! The two kinds of failure the command line tells apart: bad input (exit status 2, one
//! line saying what is valid) and everything else (exit status 1).

use thiserror::Error;

/// The user asked for something that cannot be done as asked: unknown scenario or
/// parameter, malformed value, missing directory, not enough space. Exit status 2.
#[derive(Debug, Error)]
#[error("{0}")]
pub struct Usage(pub String);

/// The exit status for an error: 2 when any cause in the chain is a [`Usage`] error.
pub fn exit_status(err: &anyhow::Error) -> i32 {
    if err
        .chain()
        .any(|c| c.is::<Usage>() || c.is::<crate::params::ParamError>())
    {
        2
    } else {
        1
    }
}
