//! One home per subcommand: each module reads its arguments and does what the command
//! says, from parsed arguments to output and exit status. `app` dispatches to them.

pub(crate) mod compare;
pub(crate) mod exec;
pub(crate) mod matrix;
pub(crate) mod report;
pub(crate) mod reproduce;
pub(crate) mod runs;
pub(crate) mod select;
pub(crate) mod show;
pub(crate) mod store_copy;
pub(crate) mod suite;
