//! The one way to run: a [`session`] watches the signals and holds the testbed, and the
//! [`engine`] measures a planned scenario on it, phase by phase; a [`cell`] is one run made
//! that way and recorded (on another kernel through [`guest`]), and [`Progress`] counts a
//! series of them.

pub(crate) mod cell;
pub(crate) mod engine;
pub(crate) mod guest;
mod progress;
pub(crate) mod session;

pub(crate) use progress::Progress;
