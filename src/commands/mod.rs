//! One home per subcommand: each module reads its arguments and does what the command
//! says, from parsed arguments to output and exit status. `app` only dispatches to them.
//!
//! - measuring: [`run`] (`run`, `load`, `probe`), [`suite`], [`exec`], [`matrix`] (with
//!   its farm schedulers), [`reproduce`]; [`kernel`] runs any of the first and `exec` on
//!   another kernel (`--kernel`)
//! - describing: [`list`], [`list_devices`], [`shell`] (completions and man pages)
//! - looking at results after the fact: [`runs`], [`show`], [`export`], [`compare`],
//!   [`report`] (the HTML page), [`explain`]; [`select`] reads what names runs on the
//!   command line
//! - watching running processes: [`watch`] (the BPF tracer, `explain::bpf`)
//! - the store and the machine: [`store_copy`] (`store copy`), [`cleanup`]

pub(crate) mod cleanup;
pub(crate) mod compare;
pub(crate) mod exec;
pub(crate) mod explain;
pub(crate) mod export;
pub(crate) mod kernel;
pub(crate) mod list;
pub(crate) mod list_devices;
pub(crate) mod matrix;
pub(crate) mod report;
pub(crate) mod reproduce;
pub(crate) mod run;
pub(crate) mod runs;
pub(crate) mod select;
pub(crate) mod shell;
pub(crate) mod show;
pub(crate) mod store_copy;
pub(crate) mod suite;
pub(crate) mod watch;
