//! The one way to run: a [`session`] watches the signals and holds the testbed, and the
//! [`engine`] measures a planned scenario on it, phase by phase.

pub(crate) mod engine;
pub(crate) mod session;
