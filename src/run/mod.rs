//! The one way to run: a [`session`] watches the signals and holds the testbed, and the
//! [`engine`] measures a planned scenario on it, phase by phase; a [`cell`] is one run made
//! that way and recorded (on another kernel through [`guest`]), every run recorded through
//! its one recording step; a command run whole on another kernel goes through
//! [`on_kernel`]; [`Progress`] counts a series of runs.

pub(crate) mod cell;
pub(crate) mod engine;
pub(crate) mod guest;
pub(crate) mod on_kernel;
mod progress;
pub(crate) mod session;

pub(crate) use progress::Progress;
